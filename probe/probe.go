package probe

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"
)

// Defaults applied to zero Target fields.
const (
	DefaultTimeout   = 120 * time.Second
	DefaultMaxBytes  = 4 << 20
	DefaultMaxLine   = 256 << 10
	DefaultMaxTokens = 16
	DefaultPrompt    = "Reply with the single word: ok"
)

// withDefaults fills zero fields with the defaults.
func (t Target) withDefaults() Target {
	if t.Timeout <= 0 {
		t.Timeout = DefaultTimeout
	}
	if t.MaxBytes <= 0 {
		t.MaxBytes = DefaultMaxBytes
	}
	if t.MaxLine <= 0 {
		t.MaxLine = DefaultMaxLine
	}
	if t.MaxTokens <= 0 {
		t.MaxTokens = DefaultMaxTokens
	}
	if t.Prompt == "" {
		t.Prompt = DefaultPrompt
	}
	return t
}

// Run sends one streamed request to the lane and measures it. It never
// retries. The Sample is always filled; the error is nil iff the Outcome is
// OK, and otherwise an *Error. The whole probe is bounded by t.Timeout
// (DefaultTimeout if zero) and by ctx. Each probe dials a fresh connection,
// so Connected always measures a connect.
func Run(ctx context.Context, t Target) (Sample, error) {
	t = t.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, t.Timeout)
	defer cancel()
	r := &run{t: t, s: Sample{Lane: t.Lane, Kind: t.Kind}}
	err := r.probe(ctx)
	return r.finish(err)
}

// run is the state of one probe.
type run struct {
	t        Target
	s        Sample
	tl       tally
	streamed bool // the body was read as an event stream

	mu        sync.Mutex // guards connected and sent, set from httptrace callbacks
	connected time.Time
	sent      time.Time
}

func (r *run) probe(ctx context.Context) error {
	d, ok := dialectFor(r.t.API)
	if !ok {
		return fail(ConnError, ErrInvalidTarget, "unknown api %q", safeToken(string(r.t.API)))
	}
	if !validHeaderValue(r.t.APIKey) {
		return fail(ConnError, ErrInvalidTarget, "api key holds control characters")
	}
	req, err := d.newRequest(httptrace.WithClientTrace(ctx, r.trace()), r.t)
	if err != nil {
		return err
	}
	tr := newTransport(req.URL.Scheme)
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, CheckRedirect: checkRedirect}

	r.s.Start = time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return r.sendError(ctx, resp, err)
	}
	defer func() { _ = resp.Body.Close() }()
	r.s.Headers = time.Now()
	r.s.Status = resp.StatusCode
	body, err := r.checkResponse(resp)
	if err != nil {
		return err
	}
	return r.stream(ctx, body, d.decoder)
}

func (r *run) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		ConnectDone: func(_, _ string, err error) {
			now := time.Now()
			r.mu.Lock()
			defer r.mu.Unlock()
			if err == nil && r.connected.IsZero() {
				r.connected = now
			}
		},
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			now := time.Now()
			r.mu.Lock()
			defer r.mu.Unlock()
			if info.Err == nil {
				r.sent = now // after a redirect: the request that was answered
			}
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
	s.Connected, s.Sent = r.connected, r.sent
	r.mu.Unlock()
	s.HeadersSeen = !s.Headers.IsZero()
	if r.streamed {
		s.Tokens, s.TokensSource = r.tl.tokens()
	}
	if err == nil && r.tl.deltas == 0 {
		err = fail(Empty, nil, "stream ended with no content")
	}
	if err == nil {
		s.Outcome = OK
		return *s, nil
	}
	var f *failure
	if !errors.As(err, &f) {
		f = fail(ConnError, err, "unclassified failure")
	}
	s.Outcome = f.outcome
	s.Detail = scrub(f.detail, r.t.APIKey)
	if scrub(s.RetryAfter, r.t.APIKey) != s.RetryAfter {
		s.RetryAfter = ""
	}
	return *s, &Error{
		Lane: s.Lane, Outcome: s.Outcome, Status: s.Status, RetryAfter: s.RetryAfter,
		HeadersSeen: s.HeadersSeen, Detail: s.Detail, Err: f.err,
	}
}

// timeout is the failure for a probe whose context ended.
func (r *run) timeout(ctx context.Context) *failure {
	elapsed := time.Since(r.s.Start).Seconds()
	verb := "deadline exceeded"
	if errors.Is(ctx.Err(), context.Canceled) {
		verb = "canceled"
	}
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
