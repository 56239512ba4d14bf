package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/internal/syncbuf"
	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/policy/load"
	"github.com/lanewatch/lanewatch/store/file"
)

// counter is a lane that counts its requests and answers with answer.
func counter(t *testing.T, answer func(w http.ResponseWriter)) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	// The lane's URL carries a path of its own, and only requests on it
	// count: test binaries of other packages run beside this one, and a
	// daemon of theirs still probing a closed server whose port this one
	// reuses must not read as a request this test sent.
	prefix := fmt.Sprintf("/lane-%d", rand.Int64())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, prefix+"/") {
			http.NotFound(w, r)
			return
		}
		hits.Add(1)
		answer(w)
	}))
	t.Cleanup(srv.Close)
	srv.URL += prefix
	return srv, &hits
}

func okStream(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"ok\"}}]}\n\ndata: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
}

// budgetConfig writes a config: lanes name → URL, with quota group q for
// the lanes in grouped, on @every 1s.
func budgetConfig(t *testing.T, dir string, lanes [][2]string, quotas string, grouped map[string]string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "schedule: \"@every 1s\"\njitter: 0s\nstore: {kind: file, path: samples.lp}\nprobe: {timeout: 5s}\n%slanes:\n", quotas)
	for _, l := range lanes {
		q := ""
		if g := grouped[l[0]]; g != "" {
			q = ", quota: " + g
		}
		fmt.Fprintf(&b, "  - {name: %s, kind: free, api: openai, base_url: %q, model: m%s}\n", l[0], l[1], q)
	}
	b.WriteString("policy:\n  out: policies\n  classes:\n    - {name: interactive, deadline_s: 60, ceiling_tokens: 4000, est_tokens: 100}\n")
	p := filepath.Join(dir, "lanewatch.yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// daemonFor runs the daemon for d and returns its log.
func daemonFor(t *testing.T, cfg string, d time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if err := run(ctx, []string{"-config", cfg, "-log-format", "json"}, &stdout, &stderr, env); err != nil {
		t.Fatalf("daemon: %v\n%s", err, stderr.String())
	}
	return stderr.String()
}

// daemonUntil runs the daemon on cfg until its log shows rounds stored
// rounds, or for at most limit (a daemon that never gets there), and
// returns its log: a loaded machine may give fewer rounds in a fixed time.
func daemonUntil(t *testing.T, cfg string, rounds int, limit time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var daemonLog syncbuf.Buffer
	ran := make(chan error, 1)
	go func() { ran <- run(ctx, []string{"-config", cfg, "-log-format", "json"}, io.Discard, &daemonLog, env) }()
	deadline := time.Now().Add(limit)
	for strings.Count(daemonLog.String(), `"msg":"round stored"`) < rounds && time.Now().Before(deadline) {
		select {
		case err := <-ran:
			t.Fatalf("the daemon stopped before %d rounds: %v\n%s", rounds, err, daemonLog.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	if err := <-ran; err != nil {
		t.Fatalf("daemon: %v\n%s", err, daemonLog.String())
	}
	return daemonLog.String()
}

// awaySlotEdge waits, when the next half-hour slot edge (48 a day, UTC) is
// closer than need, until just past it, so that a test's rounds fall in one
// slot.
func awaySlotEdge(t *testing.T, need time.Duration) {
	now := time.Now().UTC()
	next := now.Truncate(30 * time.Minute).Add(30 * time.Minute)
	if wait := next.Sub(now); wait < need {
		t.Logf("waiting %s for the slot edge", wait.Round(time.Second))
		time.Sleep(wait + 2*time.Second)
	}
}

// Two lanes sharing probes_per_day: 48 get one request in 20 rounds of one
// slot, and none more after a restart; an unbudgeted lane of the same
// config is probed every round.
func TestBudgetSpendsOneProbePerSlot(t *testing.T) {
	if testing.Short() {
		t.Skip("20 one-second rounds")
	}
	t.Parallel()
	awaySlotEdge(t, 60*time.Second)
	a, hitsA := counter(t, okStream)
	b, hitsB := counter(t, okStream)
	c, hitsC := counter(t, okStream)
	cfg := budgetConfig(t, t.TempDir(), [][2]string{{"or-a", a.URL}, {"or-b", b.URL}, {"paid", c.URL}},
		"quotas:\n  - {name: openrouter, probes_per_day: 48}\n", map[string]string{"or-a": "openrouter", "or-b": "openrouter"})
	log := daemonFor(t, cfg, 20500*time.Millisecond)
	// The rounds that ran, from the daemon's own log: about 20, but on a
	// loaded machine the daemon's start-up eats into the 20.5 s and a round
	// longer than the 1 s interval skips the next one, so a fixed count
	// would fail with nothing wrong. The last round may be cut short by the
	// stop before the paid lane's probe starts, hence one less.
	rounds := strings.Count(log, `"msg":"round stored"`)
	if rounds < 10 {
		t.Fatalf("%d rounds stored in 20.5 s of @every 1s, want at least 10 for the test to say anything:\n%s", rounds, log)
	}
	if n := hitsA.Load() + hitsB.Load(); n != 1 {
		t.Fatalf("the budgeted lanes got %d requests in %d rounds, want 1:\n%s", n, rounds, log)
	}
	if n := hitsC.Load(); n < int64(rounds-1) {
		t.Errorf("the unbudgeted lane got %d requests in %d rounds, want one a round", n, rounds)
	}
	t.Logf("%d rounds stored; the unbudgeted lane got %d requests", rounds, hitsC.Load())
	before := hitsC.Load()
	// Restarted (the count comes from the store) until a round is stored, not
	// for a fixed 3.5 s that a slow start-up on a loaded machine may fill.
	daemonUntil(t, cfg, 1, 15*time.Second)
	if n := hitsA.Load() + hitsB.Load(); n != 1 {
		t.Fatalf("after a restart the budgeted lanes got %d requests in total, want still 1", n)
	}
	if hitsC.Load() <= before {
		t.Error("after a restart the unbudgeted lane was not probed")
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-config", cfg, "-once"}, &out, &bytes.Buffer{}, env); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"or-a: skipped: budget", "or-b: skipped: budget", "quota openrouter: "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("-once output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := run(context.Background(), []string{"-config", cfg, "-once", "-force"}, &out, &bytes.Buffer{}, env); err != nil {
		t.Fatal(err)
	}
	if n := hitsA.Load() + hitsB.Load(); n != 3 {
		t.Errorf("-once -force sent %d requests in total to the budgeted lanes, want 1 + 2", n)
	}
}

// A lane that answers 429 with Retry-After: 3600, or a 200 whose headers
// say no requests remain (each dialect), gets one request and no more, in
// the daemon's run and after a restart; the policy says quota_exhausted
// until the wait is over.
func TestBackoffAfterQuotaSpent(t *testing.T) {
	inAnHour := func() string { return time.Now().Add(time.Hour).UTC().Format(time.RFC3339) }
	cases := []struct {
		name   string
		answer func(w http.ResponseWriter)
	}{
		{"429 Retry-After", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "3600")
			http.Error(w, `{"error":{"type":"rate_limit_error"}}`, http.StatusTooManyRequests)
		}},
		{"openai dialect", func(w http.ResponseWriter) {
			w.Header().Set("x-ratelimit-remaining-requests", "0")
			w.Header().Set("x-ratelimit-reset-requests", "1h0m0s")
			okStream(w)
		}},
		{"anthropic dialect", func(w http.ResponseWriter) {
			w.Header().Set("anthropic-ratelimit-requests-remaining", "0")
			w.Header().Set("anthropic-ratelimit-requests-reset", inAnHour())
			okStream(w)
		}},
		{"openrouter dialect", func(w http.ResponseWriter) {
			w.Header().Set("x-ratelimit-remaining", "0")
			w.Header().Set("x-ratelimit-reset", fmt.Sprint(time.Now().Add(time.Hour).UnixMilli()))
			okStream(w)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv, hits := counter(t, c.answer)
			dir := t.TempDir()
			cfg := budgetConfig(t, dir, [][2]string{{"free", srv.URL}}, "", nil)
			log := daemonFor(t, cfg, 3200*time.Millisecond)
			if n := hits.Load(); n != 1 {
				t.Fatalf("%d requests in 3 rounds, want 1:\n%s", n, log)
			}
			var out bytes.Buffer
			if err := run(context.Background(), []string{"-config", cfg, "-once"}, &out, &bytes.Buffer{}, env); err != nil {
				t.Fatal(err)
			}
			if n := hits.Load(); n != 1 {
				t.Fatalf("after a restart %d requests in total, want still 1", n)
			}
			if !strings.Contains(out.String(), "free: skipped: quota until ") {
				t.Errorf("-once output lacks the back-off:\n%s", out.String())
			}
			// The policy of this hour, as policygen writes it.
			loaded, err := config.Load(cfg)
			if err != nil {
				t.Fatal(err)
			}
			st, err := file.Open(loaded.Store.Path, file.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			f, _, err := load.ForHour(context.Background(), st, loaded.PolicyParams(), time.Now(), nil)
			if err != nil {
				t.Fatal(err)
			}
			l := f.Lanes[0]
			want := time.Now().Add(time.Hour)
			if l.Eligible || l.Reason != policy.ReasonQuotaExhausted || l.Until.Before(want.Add(-time.Minute)) || l.Until.After(want.Add(time.Minute)) {
				t.Fatalf("policy lane %+v; want quota_exhausted until about %s", l, want.UTC().Format(time.RFC3339))
			}
		})
	}
}

// -once prints a probe that timed out before its first token as a lower
// bound (>1.0), never as a zero wait.
func TestOncePrintsCensoredWait(t *testing.T) {
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer hung.Close()
	dir := t.TempDir()
	cfg := budgetConfig(t, dir, [][2]string{{"free", hung.URL}}, "", nil)
	body, _ := os.ReadFile(cfg)
	if err := os.WriteFile(cfg, []byte(strings.Replace(string(body), "probe: {timeout: 5s}", "probe: {timeout: 1s}", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-config", cfg, "-once"}, &out, &bytes.Buffer{}, env); err != nil {
		t.Fatal(err)
	}
	var row []string
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[0] == "free" {
			row = f
		}
	}
	ps, hs := readStore(t, filepath.Join(dir, "samples.lp"))
	// The wait starts when the request is written, a little after the
	// 1s timeout's clock does (more on a loaded machine).
	if len(ps) != 1 || ps[0].QueueS < 0.5 || ps[0].QueueS > 1 || len(hs) != 1 || hs[0].WorstCensoredS != ps[0].QueueS {
		t.Fatalf("stored %+v and %+v; want the wait as the probe's queue_s and the hour's worst_censored_s", ps, hs)
	}
	if want := fmt.Sprintf(">%.1f", ps[0].QueueS); len(row) < 5 || row[2] != "timeout" || row[4] != want {
		t.Fatalf("-once output:\n%s\nwant the timeout's queue_s as %s (a lower bound)", out.String(), want)
	}
}

// `sampler import` of probe lines alone rebuilds the hourly records of the
// hours they touch, and says both counts.
func TestImportProbeLinesRebuildsHours(t *testing.T) {
	dir := t.TempDir()
	cfg := budgetConfig(t, dir, [][2]string{{"free", "http://127.0.0.1:1/v1"}}, "", nil)
	// An hour of yesterday: readStore reads the 48 hours either side of now.
	h := time.Now().UTC().Add(-24 * time.Hour).Truncate(time.Hour)
	var lines strings.Builder
	for i, q := range []float64{3, 7.5, 2} {
		fmt.Fprintf(&lines, "probe,kind=free,lane=free queue_s=%g,gen_s=1,headers_s=0.1,connect_s=0,tokens=8i,ok=true,outcome=\"ok\",status=200i %d\n",
			q, h.Add(time.Duration(7+20*i)*time.Minute).UnixNano())
	}
	src := filepath.Join(t.TempDir(), "probes.lp")
	if err := os.WriteFile(src, []byte(lines.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"import", "-config", cfg, src}, &out, &bytes.Buffer{}, env); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "imported 3 probe points") || !strings.Contains(out.String(), "rebuilt 1 queue_hourly points") {
		t.Errorf("import said:\n%s", out.String())
	}
	_, hs := readStore(t, filepath.Join(dir, "samples.lp"))
	if len(hs) != 1 || hs[0].Samples != 3 || hs[0].WorstQueueS != 7.5 {
		t.Fatalf("hourly records %+v; want one hour of 3 samples, worst 7.5", hs)
	}
}
