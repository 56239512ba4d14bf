// Package httpserve is the one HTTP server setup of sampler -listen and
// policygen serve: bounds on connections, busy requests and time that keep
// its health checks answering beside any number of idle or slow visitors
// (docs/deploy.md; the busy answer is in docs/api.md).
package httpserve

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Limits bound what the visitors of a server can hold. At MaxConns, a new
// connection closes the one that has waited longest for a request; past
// MaxBusy requests outside the Always paths, a request is answered 503.
type Limits struct {
	MaxConns                      int
	MaxBusy                       int
	Always                        []string
	ReadHeader, Read, Write, Idle time.Duration // the http.Server timeouts
}

// DefaultLimits fit a scraper, a health check and a few people or jobs.
func DefaultLimits() Limits {
	return Limits{MaxConns: 32, MaxBusy: 16, Always: []string{"/healthz", "/metrics"},
		ReadHeader: 5 * time.Second, Read: 10 * time.Second, Write: 30 * time.Second, Idle: time.Minute}
}

// New returns a server of h within lim and the listener, on ln, to serve
// it on: srv.Serve(capped). srv.Shutdown closes the listener.
func New(ln net.Listener, h http.Handler, lim Limits) (srv *http.Server, capped net.Listener) {
	l := &listener{Listener: ln, max: lim.MaxConns, maxBusy: lim.MaxBusy, open: map[*conn]struct{}{}}
	l.changed = sync.NewCond(&l.mu)
	srv = &http.Server{
		Handler:           &bounded{h: h, always: lim.Always, l: l},
		ReadHeaderTimeout: lim.ReadHeader, ReadTimeout: lim.Read, WriteTimeout: lim.Write, IdleTimeout: lim.Idle,
		ConnState: l.track,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
	}
	return srv, l
}

type connKey struct{}

// listener hands out at most max connections.
type listener struct {
	net.Listener
	max, maxBusy int

	mu      sync.Mutex
	changed *sync.Cond
	open    map[*conn]struct{}
	busy    int // connections in a request that counts against maxBusy
	closed  bool
}

// conn is a connection the listener handed out.
type conn struct {
	net.Conn
	l *listener
	// Guarded by l.mu:
	waiting time.Time // since when it has waited for a request; zero while in one
	busy    bool      // in a request that counts against maxBusy
}

func (l *listener) Accept() (net.Conn, error) {
	l.mu.Lock()
	for len(l.open) >= l.max && l.longestWaiting() == nil && !l.closed {
		l.changed.Wait() // every one is in a request: new ones wait in the backlog
	}
	l.mu.Unlock()
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	c := &conn{Conn: nc, l: l}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.room(); err != nil {
		_ = nc.Close()
		return nil, err
	}
	c.waiting = time.Now()
	l.open[c] = struct{}{}
	return c, nil
}

// room returns, with l.mu held, once fewer than max connections are open.
func (l *listener) room() error {
	for len(l.open) >= l.max {
		if l.closed {
			return net.ErrClosed
		}
		if c := l.longestWaiting(); c != nil {
			_ = c.Conn.Close() // its server goroutine sees the close and ends
			l.forget(c)
			continue
		}
		l.changed.Wait()
	}
	return nil
}

func (l *listener) longestWaiting() *conn {
	var oldest *conn
	for c := range l.open {
		if !c.waiting.IsZero() && (oldest == nil || c.waiting.Before(oldest.waiting)) {
			oldest = c
		}
	}
	return oldest
}

// forget drops c, closed, from the open connections, with l.mu held.
func (l *listener) forget(c *conn) {
	delete(l.open, c)
	if c.busy {
		c.busy = false
		l.busy--
	}
	l.changed.Broadcast()
}

func (l *listener) Close() error {
	l.mu.Lock()
	l.closed = true
	l.changed.Broadcast()
	l.mu.Unlock()
	return l.Listener.Close()
}

// track follows the server's view of each connection: waiting for a
// request (new, idle) or in one (active).
func (l *listener) track(nc net.Conn, state http.ConnState) {
	c, ok := nc.(*conn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch state {
	case http.StateNew, http.StateIdle:
		c.waiting = time.Now()
	case http.StateActive:
		c.waiting = time.Time{}
	}
	if state != http.StateActive && c.busy {
		c.busy = false
		l.busy--
	}
	l.changed.Broadcast()
}

// takeBusy counts c's request against maxBusy, unless that many are.
func (l *listener) takeBusy(c *conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, open := l.open[c]; !open || l.busy >= l.maxBusy {
		return false
	}
	if !c.busy {
		c.busy = true
		l.busy++
	}
	return true
}

// Close closes the connection, then frees its place (forget is
// idempotent: a second Close, or one after room closed it, changes nothing).
func (c *conn) Close() error {
	err := c.Conn.Close()
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	c.l.forget(c)
	return err
}

// bounded serves h within the listener's busy bound.
type bounded struct {
	h      http.Handler
	always []string
	l      *listener
}

func (b *bounded) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c, _ := r.Context().Value(connKey{}).(*conn)
	if slices.Contains(b.always, r.URL.Path) {
		if r.ContentLength != 0 {
			dontWaitForBody(w)
		}
		b.h.ServeHTTP(w, r)
		return
	}
	if c == nil || !b.l.takeBusy(c) {
		dontWaitForBody(w)
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = fmt.Fprintf(w, `{"error":"busy: %d requests at once already; retry in a second","code":"busy"}`+"\n", b.l.maxBusy)
		return
	}
	b.h.ServeHTTP(w, r)
}

// dontWaitForBody closes the connection after the answer instead of
// reading the rest of the body (a slow client's, until the read timeout).
func dontWaitForBody(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}
