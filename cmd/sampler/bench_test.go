package main

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
	"syscall"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
)

// BenchmarkShards1000 measures what sharding does to timing accuracy: a
// 1,000-lane config split over 4 sampler processes on this machine, each
// running one -once round of its 250 lanes at the same time, against one
// exact-delay lane (lanesim -exact) in its own process — beside a
// single process probing 250 lanes alone. Error = stored queue_s − the time
// the server held the request (read → first token written), per probe. It
// reports each process's median, p99 and max error and peak RSS.
//
//	go test -run '^$' -bench Shards1000 -benchtime 1x ./cmd/sampler
func BenchmarkShards1000(b *testing.B) {
	dir := b.TempDir()
	samplerBin := filepath.Join(dir, "sampler")
	delayBin := filepath.Join(dir, "lanesim")
	for pkg, out := range map[string]string{"github.com/lanewatch/lanewatch/cmd/sampler": samplerBin, "github.com/lanewatch/lanewatch/cmd/lanesim": delayBin} {
		if o, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
			b.Fatalf("build %s: %v\n%s", pkg, err, o)
		}
	}
	url := startDelay(b, delayBin)
	config := func(name string, lanes int) string {
		var sb strings.Builder
		fmt.Fprintf(&sb, "schedule: \"@every 1h\"\njitter: 0s\nstore: {kind: file, path: %s.lp}\nprobe: {timeout: 20s, max_tokens: 4}\nlanes:\n", name)
		for i := range lanes {
			fmt.Fprintf(&sb, "  - {name: l%04d, kind: free, api: openai, base_url: %q, model: l%04d}\n", i, url, i)
		}
		p := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(p, []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
		return p
	}
	type run struct {
		label string
		cmd   *exec.Cmd
		store string
		start time.Time
		wall  time.Duration
	}
	exec1 := func(label, cfg, store string, extra ...string) *run {
		cmd := exec.Command(samplerBin, append([]string{"-config", cfg, "-once"}, extra...)...)
		cmd.Stdout, cmd.Stderr = nil, nil
		return &run{label: label, cmd: cmd, store: store}
	}
	measure := func(runs []*run) {
		for _, r := range runs {
			r.start = time.Now()
			if err := r.cmd.Start(); err != nil {
				b.Fatal(err)
			}
		}
		for _, r := range runs {
			if err := r.cmd.Wait(); err != nil {
				b.Fatalf("%s: %v", r.label, err)
			}
			r.wall = time.Since(r.start)
		}
		held := delayStats(b, url)
		for _, r := range runs {
			st, err := file.Open(r.store, file.Options{ReadOnly: true})
			if err != nil {
				b.Fatal(err)
			}
			ps, err := store.ReadProbes(context.Background(), st, store.Between(time.Now().Add(-time.Hour), time.Now().Add(time.Hour)))
			_ = st.Close()
			if err != nil {
				b.Fatal(err)
			}
			var errs []float64
			for _, p := range ps {
				h, ok := held[p.Lane]
				if !ok || !p.OK {
					b.Fatalf("%s: lane %s: no server record or failed (%s)", r.label, p.Lane, p.Outcome)
				}
				e := (p.QueueS - float64(h)/1e9) * 1000
				if e < 0 {
					b.Fatalf("%s: lane %s read %.3f ms below the server's hold", r.label, p.Lane, -e)
				}
				errs = append(errs, e)
			}
			slices.Sort(errs)
			rss := r.cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss / 1024
			b.Logf("%-22s %4d probes  median %6.2f ms  p99 %6.2f ms  max %6.2f ms  wall %5.2fs  peak RSS %d MiB",
				r.label, len(errs), q(errs, 0.5), q(errs, 0.99), errs[len(errs)-1], r.wall.Seconds(), rss)
			b.ReportMetric(q(errs, 0.5), "median-ms/"+strings.ReplaceAll(r.label, " ", "-"))
		}
	}
	alone := config("alone", 250)
	measure([]*run{exec1("250 lanes, 1 process", alone, filepath.Join(dir, "alone.lp"))})
	var shards []*run
	for i := range 4 {
		cfg := config(fmt.Sprintf("shard%d", i), 1000)
		shards = append(shards, exec1(fmt.Sprintf("1000 lanes, shard %d/4", i), cfg, filepath.Join(dir, fmt.Sprintf("shard%d.lp", i)), "-shard", fmt.Sprintf("%d/4", i)))
	}
	measure(shards)
}

func q(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(int(p*float64(len(sorted))), len(sorted)-1)]
}

func startDelay(b *testing.B, bin string) string {
	cmd := exec.Command(bin, "-exact", "200ms", "-log-level", "warn")
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, _ := bufio.NewReader(out).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "lanesim listening on ")
	if !ok {
		b.Fatalf("lanesim -exact: %q", line)
	}
	return url + "/v1"
}

// delayStats returns, by model (= lane), how long the server held each
// request, in ns, and clears its records.
func delayStats(b *testing.B, url string) map[string]int64 {
	resp, err := http.Get(strings.TrimSuffix(url, "/v1") + "/stats")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var recs map[string]struct {
		Held int64 `json:"held_ns"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&recs); err != nil {
		b.Fatal(err)
	}
	out := map[string]int64{}
	for k, v := range recs {
		out[k] = v.Held
	}
	return out
}
