package httpserve

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/crowdtest"
)

// counter follows the connections the raw listener accepted and their
// closes: how many are open now and at most.
type counter struct {
	mu        sync.Mutex
	open, max int
}

type countingListener struct {
	net.Listener
	c *counter
}

func (l countingListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.c.mu.Lock()
	l.c.open++
	l.c.max = max(l.c.max, l.c.open)
	l.c.mu.Unlock()
	return &countedConn{Conn: nc, c: l.c}, nil
}

type countedConn struct {
	net.Conn
	c    *counter
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

func (c *counter) peak() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.max
}

// fixture is a server within limits: /healthz and /metrics (ok), /ok
// (ok, reading no body), /block (says on entered that a GET entered, then
// answers once release is closed) and /read (reads its body, then ok).
type fixture struct {
	url     string
	l       *listener
	release chan struct{}
	entered chan struct{}
}

func testServer(t *testing.T, lim Limits, count *counter) *fixture {
	t.Helper()
	f := &fixture{release: make(chan struct{}), entered: make(chan struct{}, 1000)}
	mux := http.NewServeMux()
	ok := func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") }
	mux.HandleFunc("/healthz", ok)
	mux.HandleFunc("/metrics", ok)
	mux.HandleFunc("/ok", ok)
	mux.HandleFunc("/block", func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet { // the tests' own, not a crowd's POST
			f.entered <- struct{}{}
		}
		select {
		case <-f.release:
		case <-r.Context().Done():
		}
		ok(w, r)
	})
	mux.HandleFunc("/read", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		ok(w, r)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.url = "http://" + ln.Addr().String()
	if count != nil {
		ln = countingListener{ln, count}
	}
	srv, capped := New(ln, mux, lim)
	f.l = capped.(*listener)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(capped) }()
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		select {
		case err := <-done:
			if !errors.Is(err, http.ErrServerClosed) {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Serve did not return 10 s after Close")
		}
	})
	return f
}

// waiting is how many connections wait for a request now.
func (f *fixture) waiting() int {
	f.l.mu.Lock()
	defer f.l.mu.Unlock()
	n := 0
	for c := range f.l.open {
		if !c.waiting.IsZero() {
			n++
		}
	}
	return n
}

// busy is how many requests count against MaxBusy now.
func (f *fixture) busy() int {
	f.l.mu.Lock()
	defer f.l.mu.Unlock()
	return f.l.busy
}

// testLimits are the default limits with the cap and busy bound given,
// and timeouts long enough that only the bounds close a connection.
func testLimits(maxConns, maxBusy int) Limits {
	lim := DefaultLimits()
	lim.MaxConns, lim.MaxBusy = maxConns, maxBusy
	lim.ReadHeader, lim.Read, lim.Write, lim.Idle = time.Minute, time.Minute, time.Minute, 10*time.Minute
	return lim
}

// closedWithin says whether the server closed c within limit.
func closedWithin(c net.Conn, r io.Reader, limit time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(limit))
	_, err := io.Copy(io.Discard, r)
	return !errors.Is(err, os.ErrDeadlineExceeded)
}

// request sends a GET of path on c and reads the answer.
func request(t *testing.T, c net.Conn, br *bufio.Reader, path string) *http.Response {
	t.Helper()
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: t\r\n\r\n", path); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	_ = c.SetReadDeadline(time.Time{})
	return resp
}

func dial(t *testing.T, url string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

// Whatever crowd of visitors comes, in whatever order, never more than
// MaxConns connections are served (MaxConns+1 open, for the moment it
// takes to make room), and once it is there /healthz and /metrics answer
// 200, after every wave: idle keep-alive clients, clients that never
// finish their headers, or their body (on a busy path or on /healthz),
// requests held in the handler or refused as one too many.
func TestHealthAnswersAndTheCapHoldsWhateverTheCrowd(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, seed>>1))
	for round := range 4 {
		maxConns := 4 + r.IntN(13)
		maxBusy := 1 + r.IntN(maxConns-2)
		var count counter
		f := testServer(t, testLimits(maxConns, maxBusy), &count)
		addr := strings.TrimPrefix(f.url, "http://")
		for wave := range 5 {
			c := crowdtest.Crowd{Idle: r.IntN(3 * maxConns), IdlePath: []string{"/ok", "/healthz"}[r.IntN(2)],
				SlowHeaders: r.IntN(3 * maxConns), SlowBodies: r.IntN(3 * maxConns),
				BodyPath: []string{"/read", "/block", "/healthz"}[r.IntN(3)]}
			blocked := r.IntN(2 * maxBusy)
			answered := make(chan struct{}, blocked)
			for range blocked {
				go func() {
					resp, err := http.Get(f.url + "/block")
					if err == nil {
						resp.Body.Close()
					}
					answered <- struct{}{}
				}()
			}
			for range blocked { // each held in the handler, or answered (refused)
				select {
				case <-f.entered:
				case <-answered:
				}
			}
			crowdtest.Gather(t, addr, c)
			for _, path := range []string{"/healthz", "/metrics"} {
				if code := crowdtest.Get(t, f.url+path); code != http.StatusOK {
					t.Fatalf("seed %d round %d (%d conns, %d busy) wave %d, crowd %+v and %d blocked: GET %s = %d, want 200",
						seed, round, maxConns, maxBusy, wave, c, blocked, path, code)
				}
			}
		}
		close(f.release)
		if p := count.peak(); p > maxConns+1 {
			t.Fatalf("seed %d round %d: %d connections open at once, want at most the cap %d and the one making room", seed, round, p, maxConns)
		}
	}
}

// When a connection comes at the cap, the one that has waited longest for
// a request is closed to make room, and one in a request is not; when
// every one is in a request, a new one waits and is served once one is
// done.
func TestTheLongestWaitingMakesRoom(t *testing.T) {
	f := testServer(t, testLimits(3, 3), nil)
	// The server sees a connection idle a moment after its answer: wait
	// for it, so that a has waited longer than b in its eyes too.
	idle := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); f.waiting() < n; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d connections waiting for a request 10 s on, want %d", f.waiting(), n)
			}
		}
	}
	a, ar := dial(t, f.url)
	request(t, a, ar, "/ok")
	idle(1)
	b, br := dial(t, f.url)
	request(t, b, br, "/ok")
	idle(2)
	block := func(c net.Conn) {
		t.Helper()
		if _, err := io.WriteString(c, "GET /block HTTP/1.1\r\nHost: t\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		<-f.entered
	}
	c, cr := dial(t, f.url)
	block(c) // the cap: a and b idle, c in a request
	d, dr := dial(t, f.url)
	if !closedWithin(a, ar, 5*time.Second) {
		t.Fatalf("a new connection at the cap: the one idle the longest is still open")
	}
	block(d)
	e, er := dial(t, f.url)
	if !closedWithin(b, br, 5*time.Second) {
		t.Fatalf("a new connection at the cap: the one idle the longest is still open")
	}
	block(e) // c, d and e in a request: the next waits
	got := make(chan *http.Response, 1)
	go func() {
		resp, err := (&http.Client{Timeout: 20 * time.Second}).Get(f.url + "/ok")
		if err != nil {
			t.Errorf("GET /ok once the held requests were done: %v", err)
		}
		got <- resp
	}()
	close(f.release)
	for i, held := range []struct {
		c net.Conn
		r *bufio.Reader
	}{{c, cr}, {d, dr}, {e, er}} {
		_ = held.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(held.r, nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("held request %d: %v, %v; want 200 once released", i, resp, err)
		}
	}
	if resp := <-got; resp != nil && resp.StatusCode != http.StatusOK {
		t.Errorf("GET /ok = %d, want 200", resp.StatusCode)
	}
}

// Past MaxBusy requests outside the Always paths, a request is answered
// 503 at once with Retry-After, and its connection closed; /healthz and
// /metrics are still served. A request counts until its connection is done
// with it: one whose handler returned without reading a slowly sent body
// still counts while the server reads the rest.
func TestBusyRequestsAreRefusedAtOnce(t *testing.T) {
	f := testServer(t, testLimits(8, 2), nil)
	held, heldr := dial(t, f.url)
	if _, err := io.WriteString(held, "GET /block HTTP/1.1\r\nHost: t\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	<-f.entered
	slow, _ := dial(t, f.url)
	if _, err := io.WriteString(slow, "POST /ok HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); f.busy() < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests counted 10 s after the held and the slow one came, want 2", f.busy())
		}
	}
	resp, err := http.Get(f.url + "/ok")
	if err != nil {
		t.Fatal(err)
	}
	var body struct{ Error, Code string }
	err = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" || !resp.Close ||
		resp.Header.Get("Content-Type") != "application/json" || err != nil || body.Code != "busy" ||
		body.Error != "busy: 2 requests at once already; retry in a second" {
		t.Errorf("third request: %d, Retry-After %q, close %v, %q %+v (%v); want 503, 1, closed, the API's error with code busy",
			resp.StatusCode, resp.Header.Get("Retry-After"), resp.Close, resp.Header.Get("Content-Type"), body, err)
	}
	for _, path := range []string{"/healthz", "/metrics"} {
		if code := crowdtest.Get(t, f.url+path); code != http.StatusOK {
			t.Errorf("GET %s beside the busy requests = %d, want 200", path, code)
		}
	}
	close(f.release)
	_ = held.SetReadDeadline(time.Now().Add(10 * time.Second))
	if r, err := http.ReadResponse(heldr, nil); err != nil || r.StatusCode != http.StatusOK {
		t.Errorf("held request: %v, %v", r, err)
	}
	// The held one stops counting once its connection is idle, after its
	// answer.
	for deadline := time.Now().Add(10 * time.Second); f.busy() > 1 && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
	}
	if b := f.busy(); b != 1 {
		t.Errorf("%d requests counted after the held one was answered, want 1: the slow body's", b)
	}
}

// A body sent to an Always path is not waited for: the answer comes and
// the connection closes at once, not at the read timeout.
func TestAlwaysPathsDoNotWaitForABody(t *testing.T) {
	lim := testLimits(4, 2)
	f := testServer(t, lim, nil)
	c, cr := dial(t, f.url)
	if _, err := io.WriteString(c, "POST /healthz HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(cr, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /healthz with a slow body: %v, %v; want 200", resp, err)
	}
	if !closedWithin(c, resp.Body, 10*time.Second) {
		t.Errorf("connection still open 10 s after the answer (read timeout %s)", lim.Read)
	}
}
