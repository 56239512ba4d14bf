package probe

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"

	"github.com/lanewatch/lanewatch/internal/redact"
)

// Defaults applied to zero Target fields.
const (
	DefaultTimeout   = 120 * time.Second
	DefaultMaxBytes  = 4 << 20
	DefaultMaxLine   = 256 << 10
	DefaultMaxTokens = 16
	DefaultPrompt    = "Reply with the single word: ok"
)

// withDefaults gives zero and negative fields the defaults.
func (t Target) withDefaults() Target {
	orDefault(&t.Timeout, DefaultTimeout)
	orDefault(&t.MaxBytes, DefaultMaxBytes)
	orDefault(&t.MaxLine, DefaultMaxLine)
	orDefault(&t.MaxTokens, DefaultMaxTokens)
	t.Prompt = cmp.Or(t.Prompt, DefaultPrompt)
	return t
}

func orDefault[T int | int64 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// Run sends one streamed request to the lane on a fresh connection and
// measures it, within t.Timeout and ctx. The Sample is always filled; the
// error is nil iff the Outcome is OK, and otherwise an *Error.
func Run(ctx context.Context, t Target) (Sample, error) {
	t = t.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, t.Timeout)
	defer cancel()
	r := &run{t: t, s: Sample{Lane: t.Lane, Kind: t.Kind}}
	return r.finish(r.probe(ctx))
}

// run is the state of one probe.
type run struct {
	t        Target
	s        Sample
	tl       tally
	streamed bool   // the body was read as an event stream
	url      string // the URL POSTed, redacted, for a Detail

	mu sync.Mutex // guards ct, set from httptrace callbacks and markConn
	ct connTrace
}

// connTrace is what the httptrace callbacks and the connection saw.
type connTrace struct {
	dnsStart, dnsDone       time.Time
	connectStart, connected time.Time
	tlsStart, tlsDone       time.Time
	gotConn, reused         bool
	writeStart              time.Time // start of the latest write to the connection
	sent                    time.Time
}

func (r *run) probe(ctx context.Context) error {
	req, dec, err := newRequest(httptrace.WithClientTrace(ctx, r.trace()), r.t)
	if err != nil {
		return err
	}
	r.url = redact.URL(req.URL.String()) // the config's URL: safe to name in a Detail
	tr := r.transport(req.URL.Scheme)
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, CheckRedirect: noRedirects}

	r.s.Start = time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return r.sendError(ctx, err)
	}
	defer func() { _ = resp.Body.Close() }()
	r.s.Headers = time.Now()
	r.s.Status = resp.StatusCode
	r.quota(resp.Header)
	body, err := r.checkResponse(resp)
	if err != nil {
		return err
	}
	return r.stream(ctx, body, dec)
}

// trace records the connection's phases. Only the first DNS lookup, dial
// and handshake count (a dual-stack dial may try a second address).
func (r *run) trace() *httptrace.ClientTrace {
	stamp := func(t *time.Time) { // a field of r.ct
		now := time.Now()
		r.mu.Lock()
		defer r.mu.Unlock()
		if t.IsZero() {
			*t = now
		}
	}
	return &httptrace.ClientTrace{
		DNSStart:     func(httptrace.DNSStartInfo) { stamp(&r.ct.dnsStart) },
		DNSDone:      func(httptrace.DNSDoneInfo) { stamp(&r.ct.dnsDone) },
		ConnectStart: func(_, _ string) { stamp(&r.ct.connectStart) },
		ConnectDone: func(_, _ string, err error) {
			if err == nil {
				stamp(&r.ct.connected)
			}
		},
		TLSHandshakeStart: func() { stamp(&r.ct.tlsStart) },
		TLSHandshakeDone:  func(tls.ConnectionState, error) { stamp(&r.ct.tlsDone) },
		GotConn: func(info httptrace.GotConnInfo) {
			r.mu.Lock()
			defer r.mu.Unlock()
			if !r.ct.gotConn { // did this probe dial at all?
				r.ct.gotConn, r.ct.reused = true, info.Reused
			}
		},
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			now := time.Now()
			r.mu.Lock()
			defer r.mu.Unlock()
			if info.Err != nil {
				return
			}
			// The start of the last write, not this callback, which may
			// come late: the server may read the request from then on.
			r.ct.sent = cmp.Or(r.ct.writeStart, now)
		},
	}
}

// finish completes the Sample and builds the error for a failed probe.
func (r *run) finish(err error) (Sample, error) {
	s := &r.s
	if s.End.IsZero() {
		s.End = time.Now()
	}
	r.mu.Lock()
	ct := r.ct
	r.mu.Unlock()
	s.DNSStart, s.DNSDone, s.ConnectStart, s.Connected = ct.dnsStart, ct.dnsDone, ct.connectStart, ct.connected
	s.TLSStart, s.TLSDone, s.Reused, s.Sent = ct.tlsStart, ct.tlsDone, ct.reused, ct.sent
	s.HeadersSeen = !s.Headers.IsZero()
	if r.streamed {
		s.Tokens, s.TokensSource = r.tl.tokens(r.t.MaxTokens)
	}
	if err == nil && r.tl.deltas == 0 {
		err = fail(Empty, nil, "stream ended with no content")
	}
	if err == nil {
		s.Outcome = OK
		return *s, nil
	}
	var f *Error
	if !errors.As(err, &f) {
		f = fail(ConnError, err, "unclassified failure")
	}
	s.Outcome = f.Outcome
	s.Detail = scrub(f.Detail, r.t.APIKey)
	if scrub(s.RetryAfter, r.t.APIKey) != s.RetryAfter {
		s.RetryAfter = ""
	}
	f.Lane, f.Status, f.RetryAfter, f.HeadersSeen, f.Detail = s.Lane, s.Status, s.RetryAfter, s.HeadersSeen, s.Detail
	return *s, f
}

// timeout is the failure for a probe whose context ended, ending the
// Sample at the deadline when that was the cause.
func (r *run) timeout(ctx context.Context) *Error {
	now := time.Now()
	r.s.End = now
	verb := "deadline exceeded"
	if errors.Is(ctx.Err(), context.Canceled) {
		verb = "canceled"
	} else if dl, ok := ctx.Deadline(); ok {
		// now.Add keeps the monotonic clock even if dl has only a wall one.
		if over := now.Sub(dl); over > 0 && now.Add(-over).After(r.s.Start) {
			r.s.End = now.Add(-over)
		}
	}
	elapsed := r.s.End.Sub(r.s.Start).Seconds()
	switch {
	case r.s.Headers.IsZero():
		return fail(Timeout, ctx.Err(), "%s after %.1fs, before response headers", verb, elapsed)
	case r.s.FirstToken.IsZero():
		return fail(Timeout, ctx.Err(), "%s after %.1fs, headers seen, no token yet", verb, elapsed)
	}
	return fail(Timeout, ctx.Err(), "%s after %.1fs, mid-generation", verb, elapsed)
}

func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 && s[i] != '\t' || s[i] == 0x7f {
			return false
		}
	}
	return true
}
