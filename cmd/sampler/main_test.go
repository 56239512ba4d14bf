package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/sampler"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
)

const (
	secretKey  = "sk-test-SECRET-4f1c9a"
	secretText = "PURPLE-ELEPHANT-GENERATED"
	prompt     = "lanewatch probe prompt ZEBRA-77"
)

// sseServer streams an OpenAI chat completion: headers at once, the first
// token after delay, then tokens tokens. It records the keys it was sent.
func sseServer(t *testing.T, delay time.Duration, tokens int, status int) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if status != http.StatusOK {
			http.Error(w, `{"error":{"message":"overloaded"}}`, status)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fl := w.(http.Flusher)
		fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n")
		fl.Flush()
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		for i := 0; i < tokens; i++ {
			fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":\"%s \"}}]}\n\n", secretText)
			fl.Flush()
			time.Sleep(5 * time.Millisecond)
		}
		fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"completion_tokens\":%d}}\n\n", tokens)
		fmt.Fprint(w, "data: [DONE]\n\n")
		fl.Flush()
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// writeConfig writes a config with one lane per server URL and returns its path.
func writeConfig(t *testing.T, dir, schedule string, lanes map[string]string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "schedule: %q\njitter: 0s\nstore: {kind: file, path: samples.lp}\nprobe: {prompt: %q, max_tokens: 8, timeout: 10s}\nlanes:\n", schedule, prompt)
	for _, name := range []string{"free", "paid", "broken"} {
		u, ok := lanes[name]
		if !ok {
			continue
		}
		kind := "free"
		if name == "paid" {
			kind = "paid"
		}
		fmt.Fprintf(&b, "  - {name: %s, kind: %s, api: openai, base_url: %q, model: m, api_key_env: LW_TEST_KEY}\n", name, kind, u)
	}
	b.WriteString("policy: {out: policies}\n")
	p := filepath.Join(dir, "lanewatch.yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func env(k string) (string, bool) {
	if k == "LW_TEST_KEY" {
		return secretKey, true
	}
	return "", false
}

func readStore(t *testing.T, path string) ([]store.Probe, []store.Hourly) {
	t.Helper()
	st, err := file.Open(path, file.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	from, to := time.Now().Add(-48*time.Hour), time.Now().Add(48*time.Hour)
	ps, err := store.ReadProbes(context.Background(), st, store.Between(from, to))
	if err != nil {
		t.Fatal(err)
	}
	hs, err := store.ReadHourly(context.Background(), st, store.Between(from, to))
	if err != nil {
		t.Fatal(err)
	}
	return ps, hs
}

func TestOnceStoresEveryProbe(t *testing.T) {
	// Both rounds in one hour: across an hour's turn each lane has two
	// hourly records of one sample, not one of two.
	awaySlotEdge(t, 10*time.Second)
	ok, _ := sseServer(t, 150*time.Millisecond, 4, http.StatusOK)
	bad, _ := sseServer(t, 0, 0, http.StatusServiceUnavailable)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "7,27,47 * * * *", map[string]string{"free": ok.URL, "broken": bad.URL})

	var stdout, stderr bytes.Buffer
	for round := 1; round <= 2; round++ {
		stdout.Reset()
		if err := run(context.Background(), []string{"-config", cfg, "-once"}, &stdout, &stderr, env); err != nil {
			t.Fatalf("round %d: %v (a failed probe is data, not an error)", round, err)
		}
	}
	out := stdout.String()
	for _, want := range []string{"lane", "outcome", "queue_s", "free", "ok", "broken", "http_error", "503"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	probes, hourly := readStore(t, filepath.Join(dir, "samples.lp"))
	if len(probes) != 4 {
		t.Fatalf("stored %d probes, want 4 (2 lanes × 2 rounds): %+v", len(probes), probes)
	}
	for _, p := range probes {
		switch p.Lane {
		case "free":
			if !p.OK || p.Outcome != "ok" || p.Tokens != 4 || p.QueueS < 0.15 || p.QueueS > 2 {
				t.Errorf("free probe wrong: %+v", p)
			}
		case "broken":
			if p.OK || p.Outcome != "http_error" || p.Status != 503 {
				t.Errorf("broken probe wrong: %+v", p)
			}
		}
	}
	byLane := map[string]store.Hourly{}
	for _, h := range hourly {
		byLane[h.Lane] = h
	}
	if h := byLane["free"]; h.Samples != 2 || h.Failures != 0 || !h.Eligible || h.WorstQueueS < 0.15 {
		t.Errorf("free hourly = %+v, want 2 samples, eligible, worst >= 0.15", h)
	}
	if h := byLane["broken"]; h.Samples != 2 || h.Failures != 2 || h.Eligible {
		t.Errorf("broken hourly = %+v, want 2 failures, not eligible", h)
	}
}

// No API key, prompt or generated text may reach stdout, stderr, logs or the store.
func TestSecretsStayOut(t *testing.T) {
	ok, _ := sseServer(t, 10*time.Millisecond, 3, http.StatusOK)
	bad, _ := sseServer(t, 0, 0, http.StatusTooManyRequests)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "@every 1s", map[string]string{"free": ok.URL, "broken": bad.URL})
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"-config", cfg, "-once", "-log-level", "debug"}, &stdout, &stderr, env); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	defer cancel()
	if err := run(ctx, []string{"-config", cfg, "-log-format", "json", "-log-level", "debug"}, &stdout, &stderr, env); err != nil {
		t.Fatal(err)
	}
	store, err := os.ReadFile(filepath.Join(dir, "samples.lp"))
	if err != nil {
		t.Fatal(err)
	}
	for name, blob := range map[string]string{"stdout": stdout.String(), "stderr": stderr.String(), "store": string(store)} {
		for _, secret := range []string{secretKey, secretText, prompt} {
			if strings.Contains(blob, secret) {
				t.Errorf("%s contains %q", name, secret)
			}
		}
	}
	if !strings.Contains(string(store), "rate_limited") {
		t.Errorf("store lacks the 429 probe:\n%s", store)
	}
}

func TestDaemonStoresTheRoundInFlightOnShutdown(t *testing.T) {
	slow, hits := sseServer(t, 1500*time.Millisecond, 2, http.StatusOK)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "@every 1s", map[string]string{"free": slow.URL})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var stdout, stderr bytes.Buffer
	go func() { done <- run(ctx, []string{"-config", cfg}, &stdout, &stderr, env) }()
	// Cancel as soon as the first probe is in flight.
	deadline := time.Now().Add(10 * time.Second)
	for hits.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if hits.Load() == 0 {
		t.Fatal("no round started within 10s")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("daemon did not stop")
	}
	probes, hourly := readStore(t, filepath.Join(dir, "samples.lp"))
	if len(probes) != 1 || !probes[0].OK || len(hourly) != 1 {
		t.Fatalf("the in-flight round was not stored whole: probes %+v hourly %+v\nlog:\n%s", probes, hourly, stderr.String())
	}
	if hits.Load() != 1 {
		t.Errorf("rounds overlapped or continued after shutdown: %d requests", hits.Load())
	}
}

// servingDaemon starts a daemon on one healthy lane, "@every 1s", in a
// folder of its own, serving HTTP on a free port; it returns the daemon,
// the address and the folder. The test ends it.
func servingDaemon(t *testing.T) (*daemon, string, string) {
	t.Helper()
	ok, _ := sseServer(t, 10*time.Millisecond, 2, http.StatusOK)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "@every 1s", map[string]string{"free": ok.URL})
	d, err := newDaemon(context.Background(), cfg, "", mustLogger(t), env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.close)
	addr, stop, err := d.serve("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return d, addr, dir
}

func TestMetricsAndHealth(t *testing.T) {
	d, addr, _ := servingDaemon(t)
	if _, err := d.round(context.Background(), false, false); err != nil {
		t.Fatal(err)
	}
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	_, body := get("/metrics")
	for _, want := range []string{
		`lanewatch_probes_total{lane="free",outcome="ok"} 1`,
		`lanewatch_last_queue_seconds{lane="free"}`,
		`lanewatch_round_duration_seconds_count 1`,
		`lanewatch_spool_points 0`,
		`lanewatch_store_errors_total 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if code, body := get("/healthz"); code != 200 || !strings.Contains(body, "ok: 1 rounds") {
		t.Errorf("/healthz = %d %q", code, body)
	}
	if code, body := get("/"); code != 200 || !strings.Contains(body, "<html") || !strings.Contains(body, ">free<") {
		t.Errorf("status page = %d, want the HTML page naming lane free:\n%.500s", code, body)
	}
	if code, _ := get("/nope"); code != 404 {
		t.Errorf("/nope = %d, want 404", code)
	}
}

// The daemon logs when the next round runs, at start and after each round,
// and /healthz says it.
func TestDaemonSaysWhenTheNextRoundRuns(t *testing.T) {
	d, addr, _ := servingDaemon(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- d.run(ctx) }()
	time.Sleep(1500 * time.Millisecond)
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "next round at ") {
		t.Errorf("/healthz = %q, want the next round", body)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	badCfg := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(badCfg, []byte("lanes:\n  - {name: a, kind: cheap}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	okCfg := writeConfig(t, dir, "@every 1s", map[string]string{"free": "http://127.0.0.1:1/v1"})
	cases := []struct {
		name string
		args []string
		env  func(string) (string, bool)
		code int
		want string
	}{
		{"no config flag", []string{"-once"}, env, 2, "-config is required"},
		{"unknown flag", []string{"-config", okCfg, "-bogus"}, env, 2, "bogus"},
		{"stray argument", []string{"-config", okCfg, "extra"}, env, 2, `unexpected argument "extra"`},
		{"bad log format", []string{"-config", okCfg, "-log-format", "xml"}, env, 2, "-log-format"},
		{"missing file", []string{"-config", filepath.Join(dir, "nope.yaml"), "-once"}, env, 1, "no such file"},
		{"bad config", []string{"-config", badCfg, "-once"}, env, 1, `lanes[0].kind: want free or paid, got "cheap"`},
		{"unset key variable", []string{"-config", okCfg, "-once"}, func(string) (string, bool) { return "", false }, 1, "LW_TEST_KEY is not set"},
		{"empty key variable", []string{"-config", okCfg, "-once"}, func(string) (string, bool) { return "", true }, 1, "LW_TEST_KEY is empty"},
		{"import without files", []string{"import", "-config", okCfg}, env, 2, "at least one"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), c.args, &stdout, &stderr, c.env)
			var line bytes.Buffer
			code := exitCode(err, &line)
			if code != c.code {
				t.Fatalf("exit %d, want %d (err %v)", code, c.code, err)
			}
			msg := line.String()
			if !strings.Contains(msg, c.want) || strings.Count(msg, "\n") != 1 {
				t.Errorf("stderr line %q, want one line containing %q", msg, c.want)
			}
		})
	}
}

func mustLogger(t *testing.T) *slog.Logger {
	t.Helper()
	l, err := newLogger(testWriter{t}, "text", "debug")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Ctrl-C during -once stops at once and stores the probe it cut short as
// cancelled (not a lane failure): its request was sent and counts.
func TestOnceStopsAtTheSignal(t *testing.T) {
	slow, hits := sseServer(t, 8*time.Second, 2, http.StatusOK)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "@every 1s", map[string]string{"free": slow.URL})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for hits.Load() == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	var stdout, stderr bytes.Buffer
	start := time.Now()
	err := run(ctx, []string{"-config", cfg, "-once"}, &stdout, &stderr, env)
	if !errors.Is(err, sampler.ErrInterrupted) {
		t.Fatalf("err %v, want sampler.ErrInterrupted", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("-once took %s after the signal; the lane's wait is 8s", d)
	}
	probes, _ := readStore(t, filepath.Join(dir, "samples.lp"))
	if len(probes) != 1 || probes[0].Outcome != store.OutcomeCancelled || probes[0].OK {
		t.Errorf("an interrupted round stored %+v, want its one probe cancelled", probes)
	}
}

// A 429's Retry-After is shown in the -once notes and logged by the daemon.
func TestRetryAfterIsShown(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "17")
		http.Error(w, `{"error":{"type":"rate_limit_error"}}`, http.StatusTooManyRequests)
	}))
	defer srv.Close()
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "@every 1s", map[string]string{"free": srv.URL})
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"-config", cfg, "-once"}, &stdout, &stderr, env); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "free: rate_limited, Retry-After 17") {
		t.Errorf("-once output lacks the Retry-After note:\n%s", stdout.String())
	}
	// A daemon on a fresh store: the 429 is logged with its Retry-After,
	// then the lane backs off, logged once however many rounds skip it.
	// It runs until its log shows three stored rounds (the 429, then two
	// that the back-off skipped the lane in, so a back-off logged every
	// round shows twice), not for a fixed 3.5 s a loaded machine may not
	// give two rounds in; the deadline only ends a daemon that never gets
	// there.
	cfg = writeConfig(t, t.TempDir(), "@every 1s", map[string]string{"free": srv.URL})
	log := daemonUntil(t, cfg, 3, 30*time.Second)
	if !strings.Contains(log, `"retry_after":"17"`) {
		t.Errorf("daemon log lacks retry_after:\n%s", log)
	}
	if n := strings.Count(log, "lane backs off"); n != 1 {
		t.Errorf("the back-off was logged %d times, want once:\n%s", n, log)
	}
	if n := strings.Count(log, `"msg":"round stored"`); n < 2 {
		t.Errorf("%d rounds ran, want at least 2:\n%s", n, log)
	}
}
