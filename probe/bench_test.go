package probe

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/monoclock"
)

// benchDelay is the exact delay of the benchmark's lane.
const benchDelay = 200 * time.Millisecond

// BenchmarkQueueError probes N lanes in one round against `lanesim -exact`,
// an exact-delay lane built and started here as its own process: it sends
// headers and a role-only chunk at once and the first token exactly 200 ms
// after it read each request. It reports, in ms over every probe of every
// round:
//
//   - err: queue_s − 200 ms, the measurement error as the sampler sees it;
//   - late: how late the server's token write was (its own read → write,
//     minus 200 ms), a share of err that is the test server's, not the probe's;
//   - in: Sent → the server had read the request, and out: the server began
//     writing the token → FirstToken, on the machine's shared monotonic clock
//     (Linux only): err = in + late + out;
//   - round-s: seconds per round, the price of bounding or spreading.
//
// It fails if any queue_s is below what the server really held the request.
//
//	go test -run '^$' -bench QueueError -benchtime 5x ./probe
func BenchmarkQueueError(b *testing.B) {
	url := startDelayLane(b, benchDelay)
	cases := []struct {
		lanes, bound int
		gap          time.Duration // Spread(lanes, lanes*gap)
	}{
		// Every probe at once.
		{1, 0, 0}, {16, 0, 0}, {50, 0, 0}, {200, 0, 0}, {500, 0, 0},
		// The sampler's default until now: 16 in flight, started at once.
		{200, 16, 0}, {500, 16, 0},
		// The recommendation: a start every 2 ms, at most 64 in flight.
		{16, 64, 2 * time.Millisecond}, {50, 64, 2 * time.Millisecond},
		{200, 64, 2 * time.Millisecond}, {500, 64, 2 * time.Millisecond},
		// Spread starts without a bound, and a closer spread.
		{200, 0, 2 * time.Millisecond}, {500, 0, 2 * time.Millisecond}, {500, 64, time.Millisecond},
	}
	for _, c := range cases {
		name := fmt.Sprintf("lanes=%d", c.lanes)
		if c.bound > 0 {
			name += fmt.Sprintf(",concurrency=%d", c.bound)
		}
		if c.gap > 0 {
			name += fmt.Sprintf(",gap=%s", c.gap)
		}
		b.Run(name, func(b *testing.B) {
			var errs, late, in, out []float64
			var took time.Duration
			round := 0
			for b.Loop() {
				round++
				start := time.Now()
				e := probeLanes(b, url, fmt.Sprintf("%s/r%d", name, round), c.lanes, c.bound, time.Duration(c.lanes)*c.gap)
				took += time.Since(start)
				errs, late = append(errs, e.err...), append(late, e.late...)
				in, out = append(in, e.in...), append(out, e.out...)
			}
			report(b, errs, "err")
			report(b, late, "late")
			if monoclock.Ns(time.Now()) != 0 {
				report(b, in, "in")
				report(b, out, "out")
			}
			b.ReportMetric(took.Seconds()/float64(round), "round-s")
		})
	}
}

// report sorts xs (ms) and reports its min, median, p99 and max.
func report(b *testing.B, xs []float64, what string) {
	slices.Sort(xs)
	b.ReportMetric(xs[0], what+"-min-ms")
	b.ReportMetric(xs[len(xs)/2], what+"-median-ms")
	b.ReportMetric(xs[len(xs)*99/100], what+"-p99-ms")
	b.ReportMetric(xs[len(xs)-1], what+"-max-ms")
}

// probeLanes runs one probe per lane, at most bound at once when bound > 0,
// starting probe i no earlier than i*spread/lanes into the round. It returns
// each probe's error (queue_s − delay) and its parts, in ms.
func probeLanes(b *testing.B, url, round string, lanes, bound int, spread time.Duration) (e errParts) {
	if bound <= 0 {
		bound = lanes
	}
	samples := make([]Sample, lanes)
	sem := make(chan struct{}, bound)
	var wg sync.WaitGroup
	var failed sync.Once
	start, at := time.Now(), Spread(lanes, spread)
	for i := range lanes {
		time.Sleep(time.Until(start.Add(at[i])))
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			tg := target(OpenAI, url)
			tg.Lane, tg.Model = fmt.Sprintf("lane%d", i), fmt.Sprintf("%s/%d", round, i)
			s, err := Run(context.Background(), tg)
			if err != nil {
				failed.Do(func() { b.Errorf("lane %d: %v", i, err) })
			}
			samples[i] = s
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	held := delayLaneStats(b, url)
	for i, s := range samples {
		h, ok := held[fmt.Sprintf("%s/%d", round, i)]
		if !ok {
			b.Fatalf("lane %d: the server has no record of it", i)
		}
		if q := s.QueueS(); q < time.Duration(h.Held).Seconds() {
			b.Fatalf("lane %d: queue_s %.6f s below the %.6f s the server held it", i, q, time.Duration(h.Held).Seconds())
		}
		e.err = append(e.err, (s.QueueS()-benchDelay.Seconds())*1000)
		e.late = append(e.late, float64(time.Duration(h.Held)-benchDelay)/1e6)
		e.in = append(e.in, float64(h.Read-monoclock.Ns(s.Sent))/1e6)
		e.out = append(e.out, float64(monoclock.Ns(s.FirstToken)-h.Wrote)/1e6)
	}
	return e
}

// errParts are the per-probe errors of a round and their parts, in ms.
type errParts struct{ err, late, in, out []float64 }

// startDelayLane builds cmd/lanesim, starts it as `lanesim -exact delay`
// and returns its base URL for the OpenAI dialect. The process is killed at
// the end of the benchmark.
func startDelayLane(b *testing.B, delay time.Duration) string {
	b.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		b.Skip("no go command to build cmd/lanesim")
	}
	bin := filepath.Join(b.TempDir(), "lanesim")
	build := exec.Command(goBin, "build", "-o", bin, "github.com/lanewatch/lanewatch/cmd/lanesim")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build cmd/lanesim: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-exact", delay.String(), "-log-level", "warn")
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "lanesim listening on ")
	if err != nil || !ok {
		b.Fatalf("lanesim -exact did not start: %q %v", line, err)
	}
	return url + "/v1"
}

// delayRecord is `lanesim -exact`'s record of one request, in ns
// (lanesim.ExactRecord, which this package's tests cannot import).
type delayRecord struct {
	Read  int64 `json:"read_ns"`  // request read, CLOCK_MONOTONIC
	Wrote int64 `json:"wrote_ns"` // token write began, CLOCK_MONOTONIC
	Held  int64 `json:"held_ns"`  // read → token write
}

// delayLaneStats fetches and clears the server's records by request model.
func delayLaneStats(b *testing.B, url string) map[string]delayRecord {
	resp, err := http.Get(strings.TrimSuffix(url, "/v1") + "/stats")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var recs map[string]delayRecord
	if err := json.NewDecoder(resp.Body).Decode(&recs); err != nil {
		b.Fatal(err)
	}
	return recs
}

// BenchmarkReadPath is the client's work per stream once the bytes are in:
// SSE parsing and dialect decoding of a 16-token OpenAI stream (role chunk,
// 16 content chunks, finish, usage, [DONE]) from memory. The first token is
// stamped before its chunk's JSON is decoded, so this cost reaches queue_s
// only through CPU that other probes in flight share.
//
//	go test -run '^$' -bench ReadPath -benchmem ./probe
func BenchmarkReadPath(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(oaRole())
	for range 16 {
		sb.WriteString(oaText("tok "))
	}
	sb.WriteString(oaFinish() + oaUsage(16) + oaDone)
	stream := sb.String()
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		r := &run{t: Target{}.withDefaults()}
		if err := r.stream(context.Background(), strings.NewReader(stream), openaiEvent); err != nil || r.tl.deltas != 16 {
			b.Fatalf("stream: %v, %d deltas", err, r.tl.deltas)
		}
	}
}
