// Package lanesim is a local stand-in for a shared LLM lane, and generates
// the probe history of such lanes (History) for demos, tests and backtests.
//
// The lane speaks the OpenAI chat completions and Anthropic Messages
// streaming APIs and puts a real FIFO queue in front of a fixed number of
// generation slots, so the time to the first token comes from load, with
// seeded injected faults (429s, errors mid-stream).
package lanesim

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a Server, used as given; start from DefaultOptions.
type Options struct {
	Slots         int           // generation slots; fewer than 1 means 1
	Prefill       time.Duration // slot taken → first token
	TokenInterval time.Duration // between two tokens
	Tokens        int           // tokens per reply, capped by the request's max_tokens
	KeepAlive     time.Duration // ": queued" comment period while waiting; 0: none

	// Background load: synthetic jobs that queue for a slot like requests do.
	Background       float64       // arrivals per real minute at multiplier 1; 0: off
	BackgroundHold   time.Duration // how long each job holds its slot
	BackgroundBuffer int           // most background jobs waiting at once; more are dropped
	Curve            Curve         // multiplier by simulated hour of day (UTC)
	HourLength       time.Duration // real duration of one simulated hour; 0: real time
	ClockOffset      time.Duration // added to the real clock to get the simulated one

	// Faults, drawn per request from a source seeded with Seed.
	Fail429       float64 // probability of 429 with Retry-After: 7
	FailMidstream float64 // probability of an error event half-way through the reply
	Seed          uint64  // 0: seeded from the clock

	Logger *slog.Logger // nil: discard
}

// DefaultOptions returns the options lanesim runs with when no flag is given.
func DefaultOptions() Options {
	return Options{
		Slots:            1,
		Prefill:          50 * time.Millisecond,
		TokenInterval:    20 * time.Millisecond,
		Tokens:           8,
		KeepAlive:        time.Second,
		BackgroundHold:   5 * time.Second,
		BackgroundBuffer: 64,
	}
}

// RetryAfter is the Retry-After value of injected 429 responses.
const RetryAfter = "7"

// Server is one simulated lane. Its zero value is not usable; call New.
type Server struct {
	opts  Options
	queue *fifo
	clock simClock

	ctx    context.Context // cancelled by Close: ends streams and background jobs
	cancel context.CancelFunc
	wg     sync.WaitGroup // background generator and jobs

	rngMu sync.Mutex
	rng   *rand.Rand

	seq               atomic.Int64 // request ids
	served            atomic.Int64
	rateLimited       atomic.Int64
	midstreamFailures atomic.Int64
	bgStarted         atomic.Int64
	bgDropped         atomic.Int64
	bgWaiting         atomic.Int64
}

// New builds a Server and starts its background load generator, if any.
// Call Close to stop it.
func New(opts Options) *Server {
	opts.Slots = max(opts.Slots, 1)
	opts.Tokens = max(opts.Tokens, 0)
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	seed := opts.Seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		opts:   opts,
		queue:  &fifo{slots: opts.Slots, free: opts.Slots},
		clock:  newSimClock(time.Now(), opts.ClockOffset, opts.HourLength),
		ctx:    ctx,
		cancel: cancel,
		rng:    rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
	}
	if opts.Background > 0 && opts.BackgroundHold > 0 {
		s.wg.Go(s.runLoad)
	}
	return s
}

// Close ends every open stream and the background load; it is idempotent
// (concurrent Waits are safe: only runLoad, itself in wg, adds to wg).
func (s *Server) Close() {
	s.cancel()
	s.wg.Wait()
}

// Handler serves both APIs (stream: true only) and GET /healthz, the Stats
// as JSON.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.handleOpenAI)
	mux.HandleFunc("POST /v1/messages", s.handleAnthropic)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, s.Stats()) })
	return mux
}

// Stats is a snapshot of the lane.
type Stats struct {
	Slots             int     `json:"slots"`
	Busy              int     `json:"busy"`   // slots held (requests and background jobs)
	Queued            int     `json:"queued"` // requests and background jobs waiting
	Served            int64   `json:"served"` // requests that got a slot
	RateLimited       int64   `json:"rate_limited"`
	MidstreamFailures int64   `json:"midstream_failures"`
	BackgroundStarted int64   `json:"background_started"` // background jobs that arrived and queued
	BackgroundDropped int64   `json:"background_dropped"` // arrivals dropped: buffer full
	SimHour           float64 `json:"sim_hour"`           // simulated hour of day, UTC
	LoadMultiplier    float64 `json:"load_multiplier"`    // curve value at SimHour
}

// Stats returns a snapshot of the queue and the counters.
func (s *Server) Stats() Stats {
	busy, queued := s.queue.counts()
	hour := s.clock.hour(time.Now())
	return Stats{
		Slots:             s.opts.Slots,
		Busy:              busy,
		Queued:            queued,
		Served:            s.served.Load(),
		RateLimited:       s.rateLimited.Load(),
		MidstreamFailures: s.midstreamFailures.Load(),
		BackgroundStarted: s.bgStarted.Load(),
		BackgroundDropped: s.bgDropped.Load(),
		SimHour:           hour,
		LoadMultiplier:    s.opts.Curve.At(hour),
	}
}

// draw takes one variate, f, from the seeded source.
func (s *Server) draw(f func(*rand.Rand) float64) float64 {
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	return f(s.rng)
}

// sleep waits for d or until ctx ends; it reports whether the full d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	select {
	case <-time.After(d): // an unreferenced timer is collected (Go 1.23)
		return true
	case <-ctx.Done():
		return false
	}
}
