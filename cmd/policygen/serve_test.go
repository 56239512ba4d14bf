package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/crowdtest"
	"github.com/lanewatch/lanewatch/policy"
)

// startServe runs policygen serve on a free port until the test ends and
// returns its base URL.
func startServe(t *testing.T, e *env, args ...string) string {
	t.Helper()
	pr, pw := io.Pipe()
	e.stdin, e.stdout, e.stderr = strings.NewReader(""), io.Discard, pw
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.run(ctx, append([]string{"serve", "-listen", "127.0.0.1:0"}, args...)); pw.Close() }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "policygen serve listening on ")
	if err != nil || !ok {
		cancel()
		t.Fatalf("policygen serve said %q (%v); exit: %v", line, err, <-done)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("policygen serve: %v", err)
		}
	})
	return url
}

// POST /api/v1/book answers byte for byte what policygen book -config F
// -class NAME -hour H prints, on every shared test vector, and its ledger
// keys are what policygen book -policy FILE -class NAME prints, the lane
// and its endpoint following them.
func TestServeBookSameAsBook(t *testing.T) {
	now := time.Date(2026, 11, 30, 14, 25, 0, 0, time.UTC)
	fx := newLaneFixture(t, "UTC")
	url := startServe(t, &env{now: func() time.Time { return now }, lookupEnv: func(string) (string, bool) { return "", false }}, "-config", fx.config)
	for i, path := range vectorFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			v := readVector(t, path)
			in, err := policy.DecodeBookInput(v.Input, true)
			if err != nil {
				t.Fatal(err)
			}
			// The vector's policy as the book of an hour's file.
			hour := fmt.Sprintf("2026-12-%02dT%02d", 1+i/24, i%24)
			file := fx.write(t, fx.out, hour, nil, nil)
			rewrite(t, file, func(f *policy.File) { f.Classes[0].Book = in.Policy })
			var raw struct {
				Attempts json.RawMessage `json:"attempts"`
			}
			if err := json.Unmarshal(v.Input, &raw); err != nil {
				t.Fatal(err)
			}
			body := `{"attempts":` + string(raw.Attempts) + `}`
			cli := runOK(t, &env{}, body, "book", "-config", fx.config, "-class", "interactive", "-hour", hour)
			ledger := runOK(t, &env{}, body, "book", "-policy", file, "-class", "interactive")
			resp, err := http.Post(url+"/api/v1/book?class=interactive&hour="+hour, "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(got) != cli.stdout {
				t.Errorf("API %d %q\npolicygen book -config %q", resp.StatusCode, got, cli.stdout)
			}
			if keys := strings.TrimSuffix(ledger.stdout, "}\n") + `,"lane":`; !strings.HasPrefix(string(got), keys) {
				t.Errorf("API %q\ndoes not start with policygen book -policy's keys %q", got, keys)
			}
		})
	}
}

// The API's lane is policygen lane -format json's, key for key, fallback
// included.
func TestServeLaneSameAsLane(t *testing.T) {
	now := time.Date(2026, 11, 30, 14, 25, 0, 0, time.UTC)
	fx := newLaneFixture(t, "UTC")
	file := fx.write(t, fx.out, "2026-11-30T14", []string{"free", "paid"}, []string{"paid"})
	rewrite(t, file, func(f *policy.File) { f.Classes[1].Book.PaidLane = "paid" })
	e := laneEnv(t, now)
	url := startServe(t, e, "-config", fx.config)
	cli := runOK(t, laneEnv(t, now), "", "lane", "-config", fx.config, "-class", "batch", "-format", "json")
	resp, err := http.Get(url + "/api/v1/lane?class=batch")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var a, b map[string]any
	if err := json.Unmarshal(got, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(cli.stdout), &b); err != nil {
		t.Fatal(err)
	}
	for k, v := range b {
		if fmt.Sprint(a[k]) != fmt.Sprint(v) {
			t.Errorf("%s: API %v, policygen lane %v", k, a[k], v)
		}
	}
	fb, _ := a["fallback"].(map[string]any)
	if fb["lane"] != "paid" || fb["base_url"] != "https://paid.example/it's/v1" || len(a) != len(b) || len(a) != 10 {
		t.Errorf("API lane %s: want the paid fallback and the same ten keys as policygen lane", got)
	}
	for _, s := range []string{freeSecret, paidSecret} {
		if strings.Contains(string(got), s) {
			t.Errorf("a key reached the answer")
		}
	}
}

func TestServeUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"serve"}, 2, "serve: -config is required"},
		{[]string{"serve", "-config", "x.yaml", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"serve", "-config", filepath.Join(t.TempDir(), "none.yaml")}, 1, "none.yaml"},
	} {
		r := (&env{}).exec(t, "", tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d %q, want %d %q", tc.args, r.code, r.stderr, tc.code, tc.want)
		}
	}
}

// rewrite changes the policy file at path through edit.
func rewrite(t *testing.T, path string, edit func(*policy.File)) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := policy.ParseFile(data)
	if err != nil {
		t.Fatal(err)
	}
	edit(&f)
	if data, err = policy.Marshal(f); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The API answers beside any crowd of visitors: keep-alive clients left
// idle and clients that never finish their headers leave it serving, and
// clients that never finish their body take at most the busy bound, the
// rest answered 503 at once. With the connection cap alone, 32 idle
// clients held every connection for the idle timeout (60 s).
func TestServeAnswersBesideIdleAndSlowVisitors(t *testing.T) {
	now := time.Date(2026, 11, 30, 14, 25, 0, 0, time.UTC)
	fx := newLaneFixture(t, "UTC")
	fx.write(t, fx.out, "2026-11-30T14", []string{"free", "paid"}, nil)
	url := startServe(t, &env{now: func() time.Time { return now }}, "-config", fx.config)
	addr := strings.TrimPrefix(url, "http://")
	crowdtest.Gather(t, addr, crowdtest.Crowd{Idle: 64, IdlePath: "/api/v1/policy", SlowHeaders: 32})
	for _, path := range []string{"/api/v1/policy", "/api/v1/lane?class=interactive"} {
		if code := crowdtest.Get(t, url+path); code != http.StatusOK {
			t.Errorf("GET %s beside idle and slow-header visitors = %d, want 200", path, code)
		}
	}
	crowdtest.Gather(t, addr, crowdtest.Crowd{SlowBodies: 32, BodyPath: "/api/v1/book?class=interactive"})
	if code := crowdtest.Get(t, url+"/api/v1/policy"); code != http.StatusOK && code != http.StatusServiceUnavailable {
		t.Errorf("GET /api/v1/policy beside slow-body visitors = %d, want 200 or 503 (busy)", code)
	}
}
