package lanesim

import (
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/lanewatch/lanewatch/internal/monoclock"
)

// ExactRecord is how Exact held one request, in ns.
type ExactRecord struct {
	Read  int64 `json:"read_ns"`  // request read, on CLOCK_MONOTONIC (Linux; 0 elsewhere)
	Wrote int64 `json:"wrote_ns"` // first token's write began, on CLOCK_MONOTONIC
	Held  int64 `json:"held_ns"`  // read → first token written, on the server's clock
}

const (
	exactRole  = `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}` + "\n\n"
	exactToken = `data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":null}]}` + "\n\n" +
		`data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n" +
		"data: [DONE]\n\n"
)

// Exact is a lane whose first token comes exactly delay after the request
// was read, for the probe's accuracy benchmark (lanesim -exact). GET /stats
// returns, and forgets, the ExactRecord of each request by model.
func Exact(delay time.Duration) http.Handler {
	var mu sync.Mutex
	held := map[string]ExactRecord{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		recs := held
		held = map[string]ExactRecord{}
		mu.Unlock()
		writeJSON(w, http.StatusOK, recs)
	})
	mux.HandleFunc("POST /", func(w http.ResponseWriter, r *http.Request) {
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
		_, _ = io.WriteString(w, exactRole)
		_ = rc.Flush()
		monoclock.SleepUntil(read.Add(delay))
		wrote := time.Now()
		mu.Lock() // before the write: the client may ask for /stats at once
		held[req.Model] = ExactRecord{Read: monoclock.Ns(read), Wrote: monoclock.Ns(wrote), Held: int64(wrote.Sub(read))}
		mu.Unlock()
		_, _ = io.WriteString(w, exactToken)
		_ = rc.Flush()
	})
	return mux
}
