package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// connCounter wraps the -listen server's capped listener and follows its
// connections: how many are open now and at most. A connection counts from
// its Accept to its Close, which comes before the cap's slot is released,
// so the count never runs ahead of the cap (the server's ConnState hook
// reports a close after the slot is free, and a new connection could be
// seen first).
type connCounter struct {
	mu        sync.Mutex
	open, max int
}

func (c *connCounter) wrap(ln net.Listener) net.Listener { return countingListener{ln, c} }

type countingListener struct {
	net.Listener
	c *connCounter
}

func (l countingListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.c.mu.Lock()
	l.c.open++
	l.c.max = max(l.c.max, l.c.open)
	l.c.mu.Unlock()
	return &countedConn{Conn: conn, c: l.c}, nil
}

type countedConn struct {
	net.Conn
	c    *connCounter
	once sync.Once
}

func (cc *countedConn) Close() error {
	cc.once.Do(func() {
		cc.c.mu.Lock()
		cc.c.open--
		cc.c.mu.Unlock()
	})
	return cc.Conn.Close()
}

func (c *connCounter) peak() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.max
}

// limitedDaemon is servingDaemon with the HTTP limits given.
func limitedDaemon(t *testing.T, lim httpLimits) (*daemon, string) {
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

// Visitors holding more connections than the cap do not get more served
// connections than the cap, cannot stop a round from being stored, and
// are closed when they send nothing; /healthz answers once they are.
func TestListenerCapsVisitors(t *testing.T) {
	var conns connCounter
	const maxConns = 4
	d, addr := limitedDaemon(t, httpLimits{maxConns: maxConns, readHeader: 300 * time.Millisecond, read: time.Second,
		write: 2 * time.Second, idleTime: 300 * time.Millisecond, wrap: conns.wrap})
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
	if p := conns.peak(); p > maxConns {
		t.Errorf("%d connections served at once, want at most the cap %d", p, maxConns)
	}
}

// A keep-alive connection left idle after its request is closed after the
// idle timeout, not kept for the next visitor.
func TestListenerClosesIdleConnections(t *testing.T) {
	const idle = 300 * time.Millisecond
	_, addr := limitedDaemon(t, httpLimits{maxConns: 4, readHeader: 5 * time.Second, read: 5 * time.Second,
		write: 5 * time.Second, idleTime: idle})
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

// The default limits bound every deadline and leave the status page's
// store timeout room within the write deadline.
func TestDefaultHTTPLimits(t *testing.T) {
	lim := defaultHTTPLimits()
	for name, v := range map[string]time.Duration{"read header": lim.readHeader, "read": lim.read, "write": lim.write, "idle": lim.idleTime} {
		if v <= 0 {
			t.Errorf("%s timeout %s, want one", name, v)
		}
	}
	if lim.maxConns <= 0 {
		t.Errorf("connection cap %d, want one", lim.maxConns)
	}
	if lim.write <= statusLoadTimeout {
		t.Errorf("write timeout %s, want longer than the status page's load timeout %s", lim.write, statusLoadTimeout)
	}
}
