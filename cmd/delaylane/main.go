// Command delaylane is an exact-delay stand-in lane for the probe's accuracy
// benchmark (probe.BenchmarkQueueError), run as its own process so the
// benchmark measures the probe across a real process boundary.
//
// For every POST it reads the whole request, then at once sends the headers
// and a role-only OpenAI chunk, and writes the first content token exactly
// -delay after it read the request (timer to within 2 ms, then nanosleep),
// followed by a finish chunk and [DONE]. It records, per request model, when
// it had read the request and when it began writing the token, on the
// system's CLOCK_MONOTONIC (Linux; 0 elsewhere), and how long it held the
// request (the difference, on its own clock). GET /stats returns those as
// JSON ({"model": {"read_ns", "wrote_ns", "held_ns"}}) and forgets them.
//
// Once listening it prints "delaylane listening on http://HOST:PORT". It
// stops on SIGINT or SIGTERM.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/lanewatch/lanewatch/internal/monoclock"
)

const (
	role  = `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}` + "\n\n"
	token = `data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":null}]}` + "\n\n" +
		`data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n" +
		"data: [DONE]\n\n"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "delaylane:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("delaylane", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on")
	delay := fs.Duration("delay", 200*time.Millisecond, "request read → first content token")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", *listen)
	if err != nil {
		return err
	}
	l := &lane{delay: *delay, held: map[string]record{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", l.stats)
	mux.HandleFunc("POST /", l.serve)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	fmt.Printf("delaylane listening on http://%s\n", ln.Addr())
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	return srv.Close()
}

type lane struct {
	delay time.Duration
	mu    sync.Mutex
	held  map[string]record // by request model
}

// record is one request's timing, in ns.
type record struct {
	Read  int64 `json:"read_ns"`  // request read, CLOCK_MONOTONIC
	Wrote int64 `json:"wrote_ns"` // token write began, CLOCK_MONOTONIC
	Held  int64 `json:"held_ns"`  // read → token write
}

func (l *lane) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	read := time.Now()
	if err != nil {
		return
	}
	var req struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(body, &req)
	w.Header().Set("Content-Type", "text/event-stream")
	rc := http.NewResponseController(w)
	_, _ = io.WriteString(w, role)
	_ = rc.Flush()
	sleepUntil(read.Add(l.delay))
	wrote := time.Now()
	l.mu.Lock() // before the write: the client may ask for /stats at once
	l.held[req.Model] = record{Read: monoclock.Ns(read), Wrote: monoclock.Ns(wrote), Held: int64(wrote.Sub(read))}
	l.mu.Unlock()
	_, _ = io.WriteString(w, token)
	_ = rc.Flush()
}

func (l *lane) stats(w http.ResponseWriter, _ *http.Request) {
	l.mu.Lock()
	held := l.held
	l.held = map[string]record{}
	l.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(held)
}

// sleepUntil sleeps until t. Go's timers wake up to a millisecond late on
// Linux (epoll waits whole milliseconds), so the last 2 ms are slept with
// nanosleep where the system has it.
func sleepUntil(t time.Time) {
	if d := time.Until(t) - 2*time.Millisecond; d > 0 {
		time.Sleep(d)
	}
	for d := time.Until(t); d > 0; d = time.Until(t) {
		fineSleep(d)
	}
}
