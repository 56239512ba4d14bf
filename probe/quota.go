package probe

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

const (
	maxAhead  = 365 * 24 * time.Hour // a reset further away is ignored
	dateSlack = time.Second          // how far in the past a whole-second time may still mean now
)

// quota is what a response's rate-limit headers say, relative to the moment
// the headers arrived. A field is set only when its header was valid.
type quota struct {
	remaining  int64
	known      bool
	reset      time.Duration
	resetKnown bool
	retry      time.Duration
	retryKnown bool
}

// quotaDialect names the remaining and reset headers of a family of APIs.
type quotaDialect struct {
	remaining, reset string
	parseReset       func(v string, wall time.Time) (time.Duration, bool)
}

// quotaDialects in the order they are tried: the first with a valid count
// or reset supplies both.
var quotaDialects = []quotaDialect{
	// Anthropic: a count and an RFC 3339 time.
	{"anthropic-ratelimit-requests-remaining", "anthropic-ratelimit-requests-reset", parseRFC3339},
	// OpenAI, Groq: a count and a Go-style duration such as 6m0s or 2m59.56s.
	{"x-ratelimit-remaining-requests", "x-ratelimit-reset-requests", parseDelay},
	// OpenRouter and others: a count and a Unix time in seconds or milliseconds.
	{"x-ratelimit-remaining", "x-ratelimit-reset", parseUnix},
}

// parseQuota reads the rate-limit headers of a response that arrived at
// wall; garbage, negative and absurd values are ignored.
func parseQuota(h http.Header, wall time.Time) quota {
	var q quota
	for _, d := range quotaDialects {
		if h.Get(d.remaining) == "" && h.Get(d.reset) == "" {
			continue // most responses: no time.Parse error to allocate
		}
		q.remaining, q.known = parseCount(h.Get(d.remaining))
		q.reset, q.resetKnown = d.parseReset(h.Get(d.reset), wall)
		if q.known || q.resetKnown {
			break
		}
	}
	if v := h.Get("Retry-After"); v != "" {
		q.retry, q.retryKnown = parseRetryAfter(v, wall)
	}
	return q
}

// quota fills the Sample's rate-limit fields, as durations from Start.
func (r *run) quota(h http.Header) {
	q := parseQuota(h, r.s.Headers.Round(0))
	offset := max(r.s.Headers.Sub(r.s.Start), 0)
	r.s.QuotaRemaining, r.s.QuotaKnown = q.remaining, q.known
	if q.resetKnown {
		r.s.QuotaReset = offset + q.reset
	}
	if q.retryKnown {
		r.s.RetryAfterWait = offset + q.retry
	}
}

// parseCount reads a non-negative decimal integer.
func parseCount(v string) (int64, bool) {
	v = strings.TrimSpace(v)
	if v == "" || len(v) > 18 || strings.Trim(v, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

// parseDelay reads a relative reset: a Go-style duration (6m0s, 1.5s, 20ms,
// 1h2m3s) or plain decimal seconds.
func parseDelay(v string, _ time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if s, ok := decimal(v); ok {
		return ahead(s * float64(time.Second))
	}
	if v == "" || v[0] == '-' || v[0] == '+' {
		return 0, false
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, false
	}
	return ahead(float64(d))
}

// parseRFC3339 reads an absolute RFC 3339 time.
func parseRFC3339(v string, wall time.Time) (time.Duration, bool) {
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(v))
	if err != nil {
		return 0, false
	}
	return until(t, wall)
}

// parseUnix reads a Unix time in seconds, or milliseconds from 1e11 up;
// below 1e9 (2001) it is seconds from now.
func parseUnix(v string, wall time.Time) (time.Duration, bool) {
	n, ok := decimal(strings.TrimSpace(v))
	switch {
	case !ok:
		return 0, false
	case n < 1e9:
		return ahead(n * float64(time.Second))
	case n >= 1e11:
		n /= 1000
	}
	secs := n - float64(wall.UnixNano())/1e9
	if secs < -dateSlack.Seconds() {
		return 0, false
	}
	return ahead(max(secs, 0) * float64(time.Second))
}

// parseRetryAfter reads Retry-After: delay-seconds or an HTTP date.
func parseRetryAfter(v string, wall time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if s, ok := decimal(v); ok {
		return ahead(s * float64(time.Second))
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return until(t, wall)
}

// until is t - wall unless t is in the past or absurdly far.
func until(t, wall time.Time) (time.Duration, bool) {
	if t.Before(wall.Add(-dateSlack)) || t.After(wall.Add(maxAhead)) {
		return 0, false
	}
	return max(t.Sub(wall), 0), true
}

// ahead turns nanoseconds into a duration if they are within [0, maxAhead].
func ahead(ns float64) (time.Duration, bool) {
	if !(ns >= 0 && ns <= float64(maxAhead)) { // also rejects NaN
		return 0, false
	}
	return time.Duration(ns), true
}

// decimal reads digits with an optional fraction ("12", "1.5"), nothing else.
func decimal(v string) (float64, bool) {
	whole, frac, dot := strings.Cut(v, ".")
	if whole == "" || len(whole) > 20 || strings.Trim(whole, "0123456789") != "" ||
		dot && (frac == "" || len(frac) > 9 || strings.Trim(frac, "0123456789") != "") {
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	return f, err == nil
}
