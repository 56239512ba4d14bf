package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Issue 18, finding 2, as reproduced: a budgeted lane that answers after
// 5 s, and `sampler -once` killed with SIGKILL or interrupted with SIGINT
// while its probe waits, again and again, then run to its end. Each request
// is booked before it leaves, so the lane gets one request per slot of its
// budget, not one per run.
func TestKilledAndInterruptedOnceSpendOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the sampler six times")
	}
	// The runs in one hour: the hits are counted by the hour the lane got
	// them in, the budget by the hour the sampler booked them in, and a
	// request booked just before the turn and received just after it
	// counted twice with the next hour's own.
	awayHourEdge(t, time.Minute)
	var mu sync.Mutex
	var hits []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits = append(hits, time.Now())
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"ok\"}}]}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	// 24 a day: one-hour slots from midnight, so one request an hour.
	yaml := fmt.Sprintf(`timezone: UTC
schedule: "@every 1m"
quotas:
  - {name: g, probes_per_day: 24}
store: {kind: file, path: samples.lp}
lanes:
  - {name: slow, kind: free, api: openai, base_url: %q, model: m, quota: g, timeout: 10s}
policy:
  out: policies
  classes:
    - {name: interactive, deadline_s: 60, ceiling_tokens: 4000, est_tokens: 800}
`, srv.URL+"/v1")
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(hits)
	}
	for i, sig := range []os.Signal{syscall.SIGKILL, syscall.SIGKILL, os.Interrupt, os.Interrupt, os.Interrupt, nil} {
		before := count()
		cmd := exec.Command(bin("sampler"), "-config", cfg, "-once")
		cmd.Dir = dir
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		deadline := time.After(15 * time.Second)
	wait:
		for {
			select {
			case <-exited:
				break wait
			case <-deadline:
				_ = cmd.Process.Kill()
				t.Fatalf("run %d: still running after 15 s", i)
			case <-time.After(10 * time.Millisecond):
				if sig != nil && count() > before {
					_ = cmd.Process.Signal(sig)
					<-exited
					break wait
				}
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	perHour := map[string]int{}
	for _, at := range hits {
		perHour[at.UTC().Format("2006-01-02T15")]++
	}
	for h, n := range perHour {
		if n > 1 {
			t.Errorf("the lane got %d requests in the hour %s:00Z, its budget allows 1 (all requests: %v)", n, h, hits)
		}
	}
	if len(hits) == 0 {
		t.Errorf("the lane got no request")
	}
}
