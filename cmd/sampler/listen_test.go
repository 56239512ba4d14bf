package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/crowdtest"
	"github.com/lanewatch/lanewatch/internal/httpserve"
)

// limitedDaemon is servingDaemon with the HTTP limits given.
func limitedDaemon(t *testing.T, lim httpserve.Limits) (*daemon, string) {
	t.Helper()
	ok, _ := sseServer(t, 10*time.Millisecond, 2, http.StatusOK)
	cfg := writeConfig(t, t.TempDir(), "@every 1h", map[string]string{"free": ok.URL})
	d, err := newDaemon(context.Background(), cfg, "", mustLogger(t), env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.close)
	d.httpLimits = lim
	addr, stop, err := d.serve("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return d, addr
}

// closedBy waits up to limit for the server to close c and says whether it
// did.
func closedBy(c net.Conn, r io.Reader, limit time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(limit))
	_, err := io.Copy(io.Discard, r)
	return err == nil || !errors.Is(err, os.ErrDeadlineExceeded)
}

// Visitors holding more connections than the cap cannot stop a round from
// being stored, and are closed when they send nothing; /healthz answers
// beside them. (internal/httpserve tests that no more than the cap are
// open at once.)
func TestListenerCapsVisitors(t *testing.T) {
	const maxConns = 4
	d, addr := limitedDaemon(t, httpserve.Limits{MaxConns: maxConns, MaxBusy: 2, Always: []string{"/healthz"},
		ReadHeader: 300 * time.Millisecond, Read: time.Second, Write: 2 * time.Second, Idle: 300 * time.Millisecond})
	var held []net.Conn
	for range 5 * maxConns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	r, err := d.round(context.Background(), false, false)
	if err != nil || len(r.Samples) != 1 || len(r.Recorded.Hourly) != 1 {
		t.Fatalf("round beside %d held connections: %+v, %v; want one probe stored with its hour", len(held), r, err)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatalf("/healthz beside %d held connections: %v", len(held), err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "ok: 1 rounds") {
		t.Errorf("/healthz = %d %q, want ok after one round", resp.StatusCode, body)
	}
	for i, c := range held {
		if !closedBy(c, c, 5*time.Second) {
			t.Errorf("held connection %d still open after 5 s of silence", i)
		}
	}
}

// A keep-alive connection left idle after its request is closed after the
// idle timeout, not kept for the next visitor.
func TestListenerClosesIdleConnections(t *testing.T) {
	const idle = 300 * time.Millisecond
	_, addr := limitedDaemon(t, httpserve.Limits{MaxConns: 4, MaxBusy: 2, ReadHeader: 5 * time.Second, Read: 5 * time.Second,
		Write: 5 * time.Second, Idle: idle})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Timed from before the request: the server starts the idle timeout
	// after writing its response, so the close is at least idle after
	// this, however late the client reads that response on a loaded
	// machine (timed from the client's read, a read 150 ms late would
	// make the close look early). A close at once after the response,
	// instead of after the idle timeout, is still caught.
	start := time.Now()
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: sampler\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("/healthz = %d (close %v), want 200 on a kept-alive connection", resp.StatusCode, resp.Close)
	}
	if !closedBy(c, br, 5*time.Second) {
		t.Fatalf("idle connection still open after 5 s, want it closed after %s", idle)
	}
	if d := time.Since(start); d < idle/2 {
		t.Errorf("connection closed after %s, before the idle timeout %s", d, idle)
	}
}

// The daemon serves within the default limits, whose write deadline
// leaves the status page's store timeout room, and whose paths served
// beyond the busy bound are the Kubernetes probes'.
func TestDaemonHTTPLimits(t *testing.T) {
	d, _, _ := servingDaemon(t)
	lim := d.httpLimits
	if !reflect.DeepEqual(lim, httpserve.DefaultLimits()) {
		t.Errorf("daemon limits %+v, want the defaults %+v", lim, httpserve.DefaultLimits())
	}
	if lim.Write <= statusLoadTimeout {
		t.Errorf("write timeout %s, want longer than the status page's load timeout %s", lim.Write, statusLoadTimeout)
	}
	if !reflect.DeepEqual(lim.Always, []string{"/healthz", "/metrics"}) {
		t.Errorf("paths served beyond the busy bound %q, want the readiness and liveness probes' /healthz and /metrics", lim.Always)
	}
}

// /healthz and /metrics, the Kubernetes probes, answer beside any crowd of
// visitors: keep-alive clients left idle (a pooled client), clients that
// never finish their headers or their body. With the connection cap alone,
// 32 idle clients held every connection for the idle timeout (60 s) and
// the probes restarted the pod.
func TestHealthAnswersBesideIdleAndSlowVisitors(t *testing.T) {
	_, addr := limitedDaemon(t, httpserve.DefaultLimits())
	crowdtest.Gather(t, addr, crowdtest.Crowd{Idle: 64, SlowHeaders: 32, SlowBodies: 32, BodyPath: "/api/v1/book?class=interactive"})
	for _, path := range []string{"/healthz", "/metrics", "/healthz"} {
		if code := crowdtest.Get(t, "http://"+addr+path); code != http.StatusOK {
			t.Errorf("GET %s = %d, want 200", path, code)
		}
	}
}
