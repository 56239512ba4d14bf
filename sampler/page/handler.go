package page

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// TTL is how long Handler serves a page it rendered before it loads a new
// one.
const TTL = 5 * time.Second

// ContentSecurityPolicy lets nothing load and no script run; the inline
// <style>, the inline SVG's style attributes and the data: favicon are
// allowed.
const ContentSecurityPolicy = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the status page at "/" for GET and HEAD; any other path is
// 404 (so that a mux's more specific patterns, /metrics and /healthz, are
// not shadowed when it is mounted at "/") and any other method 405.
//
// load is called with the request's context to build the page, which is
// kept for the TTL. One load runs at a time: requests that find the page
// stale wait for it and serve its result. A page whose request was
// cancelled while it loaded is not kept. A render error is a clean 500,
// never half a page.
func Handler(load func(ctx context.Context) Page) http.Handler {
	return &handler{load: load, now: time.Now, sem: make(chan struct{}, 1)}
}

type handler struct {
	load func(ctx context.Context) Page
	now  func() time.Time // time.Now but in tests
	sem  chan struct{}    // held while a load runs

	mu   sync.Mutex
	body []byte    // the last page rendered, nil when none
	at   time.Time // when its load started
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("X-Content-Type-Options", "nosniff")
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hd.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := h.page(r.Context())
	if err != nil {
		if r.Context().Err() != nil {
			return // the client has gone
		}
		http.Error(w, "the status page could not be rendered: "+err.Error(), http.StatusInternalServerError)
		return
	}
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Cache-Control", "no-store")
	hd.Set("Content-Security-Policy", ContentSecurityPolicy)
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// page returns the rendered page: the cached one while it is fresh, else a
// new one.
func (h *handler) page(ctx context.Context) ([]byte, error) {
	if b := h.fresh(); b != nil {
		return b, nil
	}
	select {
	case h.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-h.sem }()
	if b := h.fresh(); b != nil { // loaded while this request waited
		return b, nil
	}
	start := h.now()
	p := h.load(ctx)
	var buf bytes.Buffer
	if err := Render(&buf, p); err != nil {
		return nil, err
	}
	if ctx.Err() == nil {
		h.mu.Lock()
		h.body, h.at = buf.Bytes(), start
		h.mu.Unlock()
	}
	return buf.Bytes(), nil
}

// fresh returns the cached page if it is younger than the TTL.
func (h *handler) fresh() []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	if age := h.now().Sub(h.at); h.body == nil || age < 0 || age >= TTL {
		return nil
	}
	return h.body
}
