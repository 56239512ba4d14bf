package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var raceSampler struct {
	once sync.Once
	path string
	cost time.Duration
	out  []byte
	err  error
}

// raceSamplerBin builds the sampler with -race once per test run.
func raceSamplerBin(t *testing.T) string {
	t.Helper()
	raceSampler.once.Do(func() {
		dir := filepath.Join(binDir, "race")
		start := time.Now()
		raceSampler.out, raceSampler.err = goBuild(dir+string(filepath.Separator), "-race", "./cmd/sampler")
		raceSampler.cost = time.Since(start)
		raceSampler.path = filepath.Join(dir, "sampler")
	})
	if raceSampler.err != nil {
		t.Fatalf("go build -race ./cmd/sampler: %v\n%s", raceSampler.err, raceSampler.out)
	}
	return raceSampler.path
}

// procStats is what the sampler's /metrics says about its process.
type procStats struct {
	goroutines int
	rss        float64 // bytes
	heap       float64 // go_memstats_heap_inuse_bytes
}

func scrape(t *testing.T, addr string) procStats {
	t.Helper()
	body := httpGet(t, "http://"+addr+"/metrics")
	var s procStats
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		f, err := strconv.ParseFloat(val, 64)
		if err != nil {
			continue
		}
		switch name {
		case "go_goroutines":
			s.goroutines = int(f)
		case "process_resident_memory_bytes":
			s.rss = f
		case "go_memstats_heap_inuse_bytes":
			s.heap = f
		}
	}
	if s.goroutines == 0 || s.rss == 0 {
		t.Fatalf("/metrics lacks go_goroutines or process_resident_memory_bytes:\n%s", body)
	}
	return s
}

// settle is how long after a stored round its probes' connection
// goroutines may take to go; a sample counts only from then on.
const settle = 250 * time.Millisecond

// settled samples the process every 50 ms from settle after a round
// stored at stored until the next round's start at next: a probe's
// connection goroutines take a moment to go once its round is stored. Only
// a sample whose answer came before next is returned (the daemon answered
// it before the next round could start); a slow round (a loaded machine)
// leaves fewer or none.
func settled(t *testing.T, addr string, stored, next time.Time) []procStats {
	t.Helper()
	var got []procStats
	for at := stored.Add(settle); ; at = at.Add(50 * time.Millisecond) {
		time.Sleep(time.Until(at))
		if !time.Now().Before(next) {
			return got
		}
		s := scrape(t, addr)
		if !time.Now().Before(next) {
			return got
		}
		got = append(got, s)
	}
}

// soaker is one sampler daemon of the soak and its /metrics address.
type soaker struct {
	label string
	d     *daemon
	addr  string
}

func startSoaker(t *testing.T, label, path, cfg string) *soaker {
	t.Helper()
	d := startDaemon(t, path, []string{"-config", cfg, "-log-format", "json", "-listen", "127.0.0.1:0"}, nil)
	var served struct{ Addr string }
	if err := json.Unmarshal([]byte(d.waitLine(t, `"serving metrics"`, 20*time.Second)), &served); err != nil {
		t.Fatal(err)
	}
	return &soaker{label: label, d: d, addr: served.Addr}
}

// betweenRounds samples the daemon between rounds, settle after a stored
// round and before the round after it starts (the time its "next round"
// line, logged right after "round stored", gives), until it has two
// samples, and keeps the lowest goroutine count, RSS and heap. A window too
// short for any sample adds none and the next round's window is tried, up
// to 20 rounds: the samples never overlap a round, however slow the
// machine.
func (s *soaker) betweenRounds(t *testing.T) procStats {
	t.Helper()
	const tries = 20
	var got []procStats
	for range tries {
		s.d.drain()
		s.d.waitLine(t, `"msg":"round stored"`, 30*time.Second)
		stored := time.Now()
		var line struct{ At time.Time }
		if err := json.Unmarshal([]byte(s.d.waitLine(t, `"msg":"next round"`, 30*time.Second)), &line); err != nil {
			t.Fatal(err)
		}
		// RFC 3339 in the log has whole seconds: line.At is at or before
		// the next round's start.
		got = append(got, settled(t, s.addr, stored, line.At)...)
		if len(got) >= 2 {
			best := got[0]
			for _, st := range got[1:] {
				best.goroutines = min(best.goroutines, st.goroutines)
				best.rss = min(best.rss, st.rss)
				best.heap = min(best.heap, st.heap)
			}
			return best
		}
		t.Logf("%s: the round stored %s before the next one started, %d samples so far; sampling between later rounds",
			s.label, line.At.Sub(stored).Round(time.Millisecond), len(got))
	}
	t.Fatalf("%s: %d rounds left %s and time for only %d samples before the next round", s.label, tries, settle, len(got))
	return procStats{}
}

// TestSoak runs two sampler daemons side by side, one built with -race and
// one plain, against 20 lanes each (lanesim with injected 429s and
// mid-stream errors, refused connections, lanes that hang until their
// timeout) on "@every 1s" for LANEWATCH_SOAK_ROUNDS rounds (default 15; 180
// with LANEWATCH_SOAK=1). From their own /metrics, after warm-up and at the
// end: goroutines grow by at most 5 (both), heap in use and the plain
// build's RSS by at most 25 % or 8 MiB. The race build's RSS is only
// reported: the race runtime's shadow memory grows with every goroutine it
// has seen. Every round is stored and the race detector reports nothing.
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs two daemons for many one-second rounds")
	}
	def := 15
	if os.Getenv("LANEWATCH_SOAK") == "1" {
		def = 180
	}
	rounds := envInt(t, "LANEWATCH_SOAK_ROUNDS", def)
	const warmup = 6
	raceBin := raceSamplerBin(t)
	t.Logf("go build -race ./cmd/sampler took %s", raceSampler.cost.Round(time.Millisecond))

	o := fastSim(64)
	o.Fail429, o.FailMidstream = 0.1, 0.1
	sim := simLane(t, o)
	stop := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Never answers: the probe times out. Reading the body first lets
		// the server notice the client going away (r.Context ends).
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(stop) }) // runs first
	closed := closedPort(t)

	var lanes []laneSpec
	for i := range 8 {
		lanes = append(lanes, openaiLane(fmt.Sprintf("sim-o%d", i), "free", sim, ""), anthropicLane(fmt.Sprintf("sim-a%d", i), "paid", sim, ""))
	}
	for i := range 2 {
		lanes = append(lanes, openaiLane(fmt.Sprintf("refused-%d", i), "free", "http://"+closed, ""))
		l := openaiLane(fmt.Sprintf("hang-%d", i), "free", hang.URL, "")
		l.timeout = "400ms"
		lanes = append(lanes, l)
	}
	dir := t.TempDir()
	var soakers []*soaker
	for _, b := range []struct{ label, path string }{{"race", raceBin}, {"plain", bin("sampler")}} {
		cfg := writeConfig(t, filepath.Join(dir, b.label, "lanewatch.yaml"), cfgSpec{
			schedule: "@every 1s", storeAt: filepath.Join(dir, b.label, "samples.lp"), lanes: lanes})
		soakers = append(soakers, startSoaker(t, b.label, b.path, cfg))
	}
	race := soakers[0]

	start := time.Now()
	for range warmup {
		race.d.waitLine(t, `"msg":"round stored"`, 30*time.Second)
	}
	before := map[string]procStats{}
	for _, s := range soakers {
		before[s.label] = s.betweenRounds(t)
	}
	for i := range rounds {
		race.d.waitLine(t, `"msg":"round stored"`, 30*time.Second)
		if rounds >= 60 && (i+1)%30 == 0 && i+1 < rounds {
			for _, s := range soakers {
				st := scrape(t, s.addr)
				t.Logf("%s, after %d rounds: goroutines %d, RSS %.1f MiB, heap in use %.1f MiB", s.label, warmup+i+1, st.goroutines, st.rss/mib, st.heap/mib)
			}
		}
	}
	after := map[string]procStats{}
	for _, s := range soakers {
		after[s.label] = s.betweenRounds(t)
	}
	elapsed := time.Since(start)
	for _, s := range soakers {
		_ = s.d.cmd.Process.Signal(syscall.SIGTERM)
	}

	grows := func(from, to float64) bool { return to > from+max(from/4, 8*mib) }
	for _, s := range soakers {
		code := s.d.wait(t, 60*time.Second)
		stderr := s.d.Stderr()
		b, a := before[s.label], after[s.label]
		if strings.Contains(stderr, "WARNING: DATA RACE") {
			t.Errorf("%s: the race detector reported a race:\n%s", s.label, stderr)
		}
		if code != 0 {
			t.Errorf("%s: exit %d after SIGTERM", s.label, code)
		}
		if n := strings.Count(stderr, `"msg":"round not stored"`); n > 0 {
			t.Errorf("%s: %d rounds not stored", s.label, n)
		}
		for _, o := range []string{"rate_limited", "timeout", "conn_error", "stream_error"} {
			if !strings.Contains(stderr, `"outcome":"`+o+`"`) {
				t.Errorf("%s: no %s probe in the log: that failure path was not exercised", s.label, o)
			}
		}
		if a.goroutines > b.goroutines+5 {
			t.Errorf("%s: goroutines grew from %d to %d over %d rounds (tolerance +5)", s.label, b.goroutines, a.goroutines, rounds)
		}
		if grows(b.heap, a.heap) {
			t.Errorf("%s: heap in use grew from %.1f to %.1f MiB over %d rounds", s.label, b.heap/mib, a.heap/mib, rounds)
		}
		if s.label == "plain" && grows(b.rss, a.rss) {
			t.Errorf("%s: RSS grew from %.1f to %.1f MiB over %d rounds", s.label, b.rss/mib, a.rss/mib, rounds)
		}
		t.Logf("soak %s: %d lanes, %d rounds after %d warm-up rounds in %s: goroutines %d -> %d, RSS %.1f -> %.1f MiB, heap in use %.1f -> %.1f MiB",
			s.label, len(lanes), rounds, warmup, elapsed.Round(time.Second), b.goroutines, a.goroutines, b.rss/mib, a.rss/mib, b.heap/mib, a.heap/mib)
	}
}

const mib = 1 << 20

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}
