package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
)

// The benchmark history: a year of three rounds an hour for 50 lanes in the
// embedded store, 1.31 million probe points and as many hourly points (the
// sampler rewrites a lane-hour's point after each round), ending in benchHour.
const (
	benchLanes = 50
	benchDays  = 365
	benchHour  = "2026-11-30T14"
)

// benchHistory returns a folder holding lanewatch.yaml and data/samples.lp,
// generated once and cached in the temp dir under a name made of the
// parameters (delete the folder to regenerate).
func benchHistory(tb testing.TB) string {
	tb.Helper()
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("lanewatch-policygen-bench-v2-%dlanes-%ddays-%s", benchLanes, benchDays, benchHour))
	ready := filepath.Join(dir, "ready")
	if _, err := os.Stat(ready); err == nil {
		return dir
	}
	if err := os.RemoveAll(dir); err != nil {
		tb.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	var cfg strings.Builder
	cfg.WriteString("timezone: UTC\nstore:\n  kind: file\n  path: data/samples.lp\nlanes:\n")
	for i := range benchLanes {
		kind := "free"
		if i%5 == 4 {
			kind = "paid"
		}
		fmt.Fprintf(&cfg, "  - {name: lane-%02d, kind: %s, api: openai, base_url: \"http://127.0.0.1:1/v1\", model: m}\n", i, kind)
	}
	cfg.WriteString(`policy:
  out: policies
  lookback_days: 7
  classes:
    - {name: interactive, deadline_s: 60, ceiling_tokens: 4000, est_tokens: 800, paid_usd_per_1k: 0.002}
    - {name: batch, deadline_s: 900, ceiling_tokens: 20000, est_tokens: 4000, paid_usd_per_1k: 0.001}
    - {name: nightly, deadline_s: 3600, ceiling_tokens: 100000, est_tokens: 16000, paid_usd_per_1k: 0.0005}
`)
	if err := os.WriteFile(filepath.Join(dir, "lanewatch.yaml"), []byte(cfg.String()), 0o644); err != nil {
		tb.Fatal(err)
	}

	start := time.Now()
	st, err := file.Open(filepath.Join(dir, "data", "samples.lp"), file.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	end, _ := time.Parse("2006-01-02T15", benchHour)
	first := end.Truncate(24*time.Hour).AddDate(0, 0, -benchDays+1)
	rng := rand.New(rand.NewPCG(42, 365))
	var probes []store.Probe
	var hourly []store.Hourly
	nProbes := 0
	for day := first; !day.After(end); day = day.AddDate(0, 0, 1) {
		probes, hourly = probes[:0], hourly[:0]
		for h := range 24 {
			hour := day.Add(time.Duration(h) * time.Hour)
			if hour.After(end) {
				break
			}
			diurnal := 10 * (1 + math.Sin(float64(h)/24*2*math.Pi))
			var sofar [benchLanes][]store.Probe
			for _, m := range []int{7, 27, 47} {
				at := hour.Add(time.Duration(m)*time.Minute + time.Duration(rng.Int64N(int64(30*time.Second))))
				for i := range benchLanes {
					kind := "free"
					if i%5 == 4 {
						kind = "paid"
					}
					p := store.Probe{Lane: fmt.Sprintf("lane-%02d", i), Kind: kind, Time: at.Add(time.Duration(rng.Int64N(int64(time.Second)))),
						QueueS: ns(float64(i%7) + diurnal + rng.Float64()*20), GenS: ns(0.2 + rng.Float64()), HeadersS: ns(0.05 + rng.Float64()/10),
						Tokens: 16, OK: true, Outcome: "ok", Status: 200}
					if rng.IntN(100) == 0 {
						p.OK, p.Outcome, p.Status, p.QueueS, p.GenS, p.Tokens = false, "timeout", 0, 0, 0, 0
					}
					probes = append(probes, p)
					sofar[i] = append(sofar[i], p)
					hourly = append(hourly, store.Aggregate(p.Lane, p.Kind, "", hour, sofar[i]))
				}
			}
		}
		nProbes += len(probes)
		if err := st.Write(context.Background(), store.Batch{Probes: probes, Hourly: hourly}); err != nil {
			tb.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(ready, nil, 0o644); err != nil {
		tb.Fatal(err)
	}
	fi, _ := os.Stat(filepath.Join(dir, "data", "samples.lp"))
	tb.Logf("generated %d probe points and as many hourly points (%d MiB) in %s: %s", nProbes, fi.Size()>>20, time.Since(start).Round(time.Second), dir)
	return dir
}

// ns is x seconds as the sampler stores a measured duration: whole
// nanoseconds, in seconds.
func ns(x float64) float64 { return time.Duration(x * 1e9).Seconds() }

// benchRules are the rules the year benchmarks run under: the worst-of
// rule with the lookback the history was generated for (7 days), and the
// calibrated rule with its default window (14 days).
var benchRules = []struct{ rule, policy string }{
	{"max", "  rule: max\n  lookback_days: 7\n"},
	{"calibrated", "  rule: calibrated\n  lookback_days: 14\n"},
}

// benchConfig writes the benchmark history's config under rule (one of
// benchRules) beside it and returns its path.
func benchConfig(b *testing.B, dir, rule string) string {
	b.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "lanewatch.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range benchRules {
		if r.rule == rule {
			data = []byte(strings.Replace(string(data), "  lookback_days: 7\n", r.policy, 1))
		}
	}
	path := filepath.Join(dir, "lanewatch-"+rule+".yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkPolicyHourYear times run() for `policygen -hour` on the year of
// history, in process, under each rule.
func BenchmarkPolicyHourYear(b *testing.B) {
	dir := benchHistory(b)
	for _, r := range benchRules {
		b.Run("rule="+r.rule, func(b *testing.B) {
			args := []string{"-config", benchConfig(b, dir, r.rule), "-hour", benchHour, "-out", b.TempDir()}
			b.ReportAllocs()
			for b.Loop() {
				e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: os.Stderr, lookupEnv: os.LookupEnv, now: time.Now}
				if err := e.run(context.Background(), args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPolicyHourYearBinary runs the built policygen binary on the year
// of history under each rule and reports its wall time and peak RSS (from
// rusage).
func BenchmarkPolicyHourYearBinary(b *testing.B) {
	dir := benchHistory(b)
	bin := buildPolicygen(b)
	for _, r := range benchRules {
		b.Run("rule="+r.rule, func(b *testing.B) {
			benchBinary(b, bin, "-config", benchConfig(b, dir, r.rule), "-hour", benchHour, "-out", b.TempDir())
		})
	}
}

// buildPolicygen builds this command for a benchmark and returns its path.
func buildPolicygen(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "policygen")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// lastCPU is the user + system time of the last runBinary, for
// benchBinary: a figure a loaded machine's wall time hides.
var lastCPU time.Duration

// runBinary runs bin with args, its output discarded but for stderr, and
// returns its wall time and peak RSS in KiB (rusage; KiB on Linux).
func runBinary(b *testing.B, bin string, args ...string) (time.Duration, int64) {
	b.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatal(err)
	}
	wall := time.Since(t0)
	lastCPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if ru == nil {
		return wall, 0
	}
	return wall, ru.Maxrss
}

// benchBinary runs bin with args once per benchmark iteration and reports
// the mean wall time and the peak RSS.
func benchBinary(b *testing.B, bin string, args ...string) {
	b.Helper()
	var wall, cpu time.Duration
	var peak int64
	n := 0
	for b.Loop() {
		w, rss := runBinary(b, bin, args...)
		cpu += lastCPU
		wall += w
		peak = max(peak, rss)
		n++
	}
	b.ReportMetric(wall.Seconds()/float64(n), "wall-s/run")
	b.ReportMetric(cpu.Seconds()/float64(n), "cpu-s/run")
	b.ReportMetric(float64(peak)/1024, "peak-RSS-MiB")
}
