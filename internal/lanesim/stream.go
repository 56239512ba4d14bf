package lanesim

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"
)

// dialect writes one API's stream events; the Server owns queueing, pacing
// and faults.
type dialect interface {
	rateLimited() any                       // JSON body of a 429
	begin(sw *sseWriter) error              // once the slot is taken, before prefill
	token(sw *sseWriter, text string) error // one content delta
	fail(sw *sseWriter) error               // injected mid-stream error; the stream ends after it
	end(sw *sseWriter, emitted int) error   // normal end of stream, after emitted tokens
}

// replyLen is how many tokens a reply gets under the request's max_tokens
// (nil: no limit), and whether that limit cut it short.
func (s *Server) replyLen(limit *int) (n int, truncated bool) {
	if limit != nil && *limit < s.opts.Tokens {
		return *limit, true
	}
	return s.opts.Tokens, false
}

// serve runs one streamed request: fault draws, headers, the FIFO wait with
// keep-alive comments, prefill, paced tokens, end of stream.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, api string, id int64, n int, d dialect) {
	// Both drawn always: the n-th request meets the same faults.
	limited := s.draw((*rand.Rand).Float64) < s.opts.Fail429
	failMid := s.draw((*rand.Rand).Float64) < s.opts.FailMidstream
	log := s.opts.Logger.With("api", api, "id", id)
	if limited {
		s.rateLimited.Add(1)
		w.Header().Set("Retry-After", RetryAfter)
		writeJSON(w, http.StatusTooManyRequests, d.rateLimited())
		log.Debug("request rate limited (injected)")
		return
	}

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel) // Close ends open streams
	defer stop()

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	sw := &sseWriter{w: w, rc: http.NewResponseController(w)}
	if err := sw.flush(); err != nil {
		log.Debug("request ended before headers", "err", err)
		return
	}

	arrived := time.Now()
	if err := s.wait(ctx, sw, s.queue.join()); err != nil {
		log.Debug("request left the queue", "waited", time.Since(arrived), "err", err)
		return
	}
	defer s.queue.release()
	s.served.Add(1)
	queued := time.Since(arrived)

	emitted, err := s.reply(ctx, sw, n, failMid, d)
	switch {
	case err != nil:
		log.Debug("stream cut", "queued", queued, "tokens", emitted, "err", err)
	case failMid:
		s.midstreamFailures.Add(1)
		log.Debug("stream failed (injected)", "queued", queued, "tokens", emitted)
	default:
		log.Debug("stream done", "queued", queued, "tokens", emitted)
	}
}

// wait holds the request in the queue until its ticket is granted, with a
// ": queued" SSE comment (clients ignore it) at once and every KeepAlive.
func (s *Server) wait(ctx context.Context, sw *sseWriter, t *ticket) error {
	select {
	case <-t.ready:
		return nil
	default:
	}
	var tick <-chan time.Time // nil without keep-alive comments
	if s.opts.KeepAlive > 0 {
		tk := time.NewTicker(s.opts.KeepAlive)
		defer tk.Stop()
		tick = tk.C
	}
	for {
		if tick != nil {
			if err := sw.write(": queued\n\n"); err != nil {
				s.queue.leave(t)
				return err
			}
		}
		select {
		case <-t.ready:
			return nil
		case <-tick:
		case <-ctx.Done():
			s.queue.leave(t)
			return ctx.Err()
		}
	}
}

// reply writes one reply of n tokens (failMid: half, at least one, then an
// error event) and returns the tokens written.
func (s *Server) reply(ctx context.Context, sw *sseWriter, n int, failMid bool, d dialect) (int, error) {
	if err := d.begin(sw); err != nil {
		return 0, err
	}
	if !sleep(ctx, s.opts.Prefill) {
		return 0, ctx.Err()
	}
	stopAt := n
	if failMid {
		stopAt = min(n, max(1, n/2))
	}
	for i := range stopAt {
		if i > 0 && !sleep(ctx, s.opts.TokenInterval) {
			return i, ctx.Err()
		}
		if err := d.token(sw, "tok "); err != nil {
			return i, err
		}
	}
	if failMid {
		return stopAt, d.fail(sw)
	}
	return stopAt, d.end(sw, stopAt)
}

// sseWriter writes server-sent events and flushes each one.
type sseWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (sw *sseWriter) flush() error {
	if err := sw.rc.Flush(); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	return nil
}

func (sw *sseWriter) write(s string) error {
	if _, err := sw.w.Write([]byte(s)); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return sw.flush()
}

// event writes an event named name ("": unnamed) whose data is v as JSON.
func (sw *sseWriter) event(name string, v any) error {
	data, _ := json.Marshal(v) // cannot fail: maps and structs of strings and ints
	if name != "" {
		name = "event: " + name + "\n"
	}
	return sw.write(name + "data: " + string(data) + "\n\n")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// decodeBody reads a JSON request body of at most 1 MiB.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("request body: %w", err)
	}
	return nil
}

// promptTokens is a rough count of the prompt's tokens: a token per 4 bytes.
func promptTokens(raw json.RawMessage) int {
	return max(1, len(raw)/4)
}
