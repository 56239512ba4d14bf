package probe

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// wall is the headers' arrival in the parser tests: 2026-03-01T12:00:00Z.
var wall = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestParseQuota(t *testing.T) {
	const unknown = time.Duration(-1)
	unix := func(d time.Duration) string { return strconv.FormatInt(wall.Add(d).Unix(), 10) }
	unixMs := func(d time.Duration) string { return strconv.FormatInt(wall.Add(d).UnixMilli(), 10) }
	rfc3339 := func(d time.Duration) string { return wall.Add(d).Format(time.RFC3339Nano) }
	httpDate := func(d time.Duration) string { return wall.Add(d).Format(http.TimeFormat) }
	tests := []struct {
		name      string
		header    map[string]string
		remaining int64 // -1: unknown
		reset     time.Duration
		retry     time.Duration
	}{
		{"none", nil, -1, unknown, unknown},

		// OpenAI, Groq: a count and a Go-style duration.
		{"openai 6m0s", map[string]string{"x-ratelimit-remaining-requests": "59", "x-ratelimit-reset-requests": "6m0s"},
			59, 6 * time.Minute, unknown},
		{"openai 1.5s", map[string]string{"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1.5s"},
			0, 1500 * time.Millisecond, unknown},
		{"openai 20ms", map[string]string{"x-ratelimit-reset-requests": "20ms"}, -1, 20 * time.Millisecond, unknown},
		{"openai 1h2m3s", map[string]string{"x-ratelimit-reset-requests": "1h2m3s"}, -1, time.Hour + 2*time.Minute + 3*time.Second, unknown},
		{"groq 2m59.56s", map[string]string{"x-ratelimit-remaining-requests": "14399", "x-ratelimit-reset-requests": "2m59.56s"},
			14399, 2*time.Minute + 59560*time.Millisecond, unknown},
		{"openai 0s", map[string]string{"x-ratelimit-reset-requests": "0s"}, -1, 0, unknown},
		{"openai plain seconds", map[string]string{"x-ratelimit-reset-requests": "12"}, -1, 12 * time.Second, unknown},
		{"openai negative", map[string]string{"x-ratelimit-remaining-requests": "-1", "x-ratelimit-reset-requests": "-1s"},
			-1, unknown, unknown},
		{"openai garbage", map[string]string{"x-ratelimit-remaining-requests": "lots", "x-ratelimit-reset-requests": "soon"},
			-1, unknown, unknown},
		{"openai absurd", map[string]string{"x-ratelimit-remaining-requests": "99999999999999999999", "x-ratelimit-reset-requests": "9000h"},
			-1, unknown, unknown},
		{"openai signed or fractional count", map[string]string{"x-ratelimit-remaining-requests": "+5", "x-ratelimit-reset-requests": "+5s"},
			-1, unknown, unknown},
		{"openai fractional count", map[string]string{"x-ratelimit-remaining-requests": "4.0"}, -1, unknown, unknown},
		{"openai count, bad reset", map[string]string{"x-ratelimit-remaining-requests": "3", "x-ratelimit-reset-requests": "1d"},
			3, unknown, unknown},

		// Anthropic: a count and an RFC 3339 time.
		{"anthropic", map[string]string{"anthropic-ratelimit-requests-remaining": "49", "anthropic-ratelimit-requests-reset": rfc3339(30 * time.Second)},
			49, 30 * time.Second, unknown},
		{"anthropic fraction and zone", map[string]string{"anthropic-ratelimit-requests-reset": "2026-03-01T13:00:30.25+01:00"},
			-1, 30*time.Second + 250*time.Millisecond, unknown},
		{"anthropic just past", map[string]string{"anthropic-ratelimit-requests-reset": rfc3339(-500 * time.Millisecond)}, -1, 0, unknown},
		{"anthropic long past", map[string]string{"anthropic-ratelimit-requests-reset": rfc3339(-time.Hour)}, -1, unknown, unknown},
		{"anthropic absurd", map[string]string{"anthropic-ratelimit-requests-reset": rfc3339(400 * 24 * time.Hour)}, -1, unknown, unknown},
		{"anthropic garbage", map[string]string{"anthropic-ratelimit-requests-remaining": "x", "anthropic-ratelimit-requests-reset": "tomorrow"},
			-1, unknown, unknown},
		{"anthropic wins over openai", map[string]string{
			"anthropic-ratelimit-requests-remaining": "7", "anthropic-ratelimit-requests-reset": rfc3339(time.Minute),
			"x-ratelimit-remaining-requests": "8", "x-ratelimit-reset-requests": "2m0s"},
			7, time.Minute, unknown},
		{"a bad dialect falls through", map[string]string{
			"anthropic-ratelimit-requests-remaining": "many", "x-ratelimit-remaining-requests": "8", "x-ratelimit-reset-requests": "2m0s"},
			8, 2 * time.Minute, unknown},

		// OpenRouter and others: a count and a Unix time, seconds or milliseconds.
		{"unix seconds", map[string]string{"x-ratelimit-remaining": "19", "x-ratelimit-reset": unix(time.Minute)}, 19, time.Minute, unknown},
		{"unix milliseconds", map[string]string{"x-ratelimit-remaining": "0", "x-ratelimit-reset": unixMs(61500 * time.Millisecond)},
			0, 61500 * time.Millisecond, unknown},
		{"unix milliseconds with a fraction", map[string]string{"x-ratelimit-reset": unixMs(time.Second) + ".5"},
			-1, time.Second + 500*time.Microsecond, unknown},
		{"seconds from now", map[string]string{"x-ratelimit-reset": "60"}, -1, time.Minute, unknown},
		{"unix past", map[string]string{"x-ratelimit-reset": unix(-time.Hour)}, -1, unknown, unknown},
		{"unix milliseconds past", map[string]string{"x-ratelimit-reset": unixMs(-time.Hour)}, -1, unknown, unknown},
		{"unix absurd", map[string]string{"x-ratelimit-reset": "32503680000"}, -1, unknown, unknown}, // year 3000
		{"unix garbage", map[string]string{"x-ratelimit-remaining": "1e3", "x-ratelimit-reset": "1e12"}, -1, unknown, unknown},
		{"unix not a number", map[string]string{"x-ratelimit-reset": "NaN"}, -1, unknown, unknown},
		{"unix inf", map[string]string{"x-ratelimit-reset": "Inf"}, -1, unknown, unknown},
		{"unix negative", map[string]string{"x-ratelimit-reset": "-60"}, -1, unknown, unknown},
		{"unix huge", map[string]string{"x-ratelimit-reset": "99999999999999999999999999"}, -1, unknown, unknown},

		// Retry-After: delay-seconds or an HTTP date.
		{"retry seconds", map[string]string{"Retry-After": "7"}, -1, unknown, 7 * time.Second},
		{"retry zero", map[string]string{"Retry-After": "0"}, -1, unknown, 0},
		{"retry fraction", map[string]string{"Retry-After": "1.5"}, -1, unknown, 1500 * time.Millisecond},
		{"retry http date", map[string]string{"Retry-After": httpDate(2 * time.Minute)}, -1, unknown, 2 * time.Minute},
		{"retry rfc 850 date", map[string]string{"Retry-After": "Sunday, 01-Mar-26 12:00:09 GMT"}, -1, unknown, 9 * time.Second},
		{"retry date past", map[string]string{"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, -1, unknown, unknown},
		{"retry negative", map[string]string{"Retry-After": "-3"}, -1, unknown, unknown},
		{"retry garbage", map[string]string{"Retry-After": "soon"}, -1, unknown, unknown},
		{"retry absurd", map[string]string{"Retry-After": "31536001"}, -1, unknown, unknown},
		{"retry and quota", map[string]string{"Retry-After": "20", "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "30s"},
			0, 30 * time.Second, 20 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			q := parseQuota(h, wall)
			if got, want := q.known, tt.remaining >= 0; got != want || want && q.remaining != tt.remaining {
				t.Errorf("remaining %d (known %v), want %d", q.remaining, q.known, tt.remaining)
			}
			check := func(what string, got time.Duration, known bool, want time.Duration) {
				if known != (want != unknown) || known && (got < want-time.Microsecond || got > want+time.Microsecond) {
					t.Errorf("%s %v (known %v), want %v (-1ns: unknown)", what, got, known, want)
				}
			}
			check("reset", q.reset, q.resetKnown, tt.reset)
			check("retry", q.retry, q.retryKnown, tt.retry)
		})
	}
}

// TestQuotaFromServer reads rate-limit headers off a 200 stream and a 429 and
// checks they become durations from Start.
func TestQuotaFromServer(t *testing.T) {
	okSteps := []step{{0, oaRole()}, {0, oaText(genText)}, {0, oaDone}}
	tests := []struct {
		name      string
		header    func() map[string]string // built when the server answers
		status    int
		want      Outcome
		remaining int64 // -1: unknown
		reset     time.Duration
		retry     time.Duration
		slack     time.Duration // for absolute times
	}{
		{"openai 200", func() map[string]string {
			return map[string]string{"x-ratelimit-remaining-requests": "42", "x-ratelimit-reset-requests": "2m59.56s"}
		}, 200, OK, 42, 2*time.Minute + 59560*time.Millisecond, 0, 0},
		{"anthropic 429", func() map[string]string {
			return map[string]string{"anthropic-ratelimit-requests-remaining": "0",
				"anthropic-ratelimit-requests-reset": time.Now().Add(30 * time.Second).Format(time.RFC3339Nano),
				"Retry-After":                        "20", "Content-Type": "application/json"}
		}, 429, RateLimited, 0, 30 * time.Second, 20 * time.Second, 500 * time.Millisecond},
		{"openrouter 200 milliseconds", func() map[string]string {
			return map[string]string{"x-ratelimit-remaining": "3",
				"x-ratelimit-reset": strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10)}
		}, 200, OK, 3, time.Hour, 0, 500 * time.Millisecond},
		{"garbage 429", func() map[string]string {
			return map[string]string{"x-ratelimit-remaining-requests": testKey, "x-ratelimit-reset-requests": genText,
				"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}
		}, 429, RateLimited, -1, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				sc := script{status: tt.status, header: tt.header()}
				if tt.status == 200 {
					sc.steps = okSteps
				}
				sc.ServeHTTP(w, r)
			}))
			s, _ := Run(context.Background(), target(OpenAI, url))
			if s.Outcome != tt.want {
				t.Fatalf("outcome %s (%s), want %s", s.Outcome, s.Detail, tt.want)
			}
			if got, want := s.QuotaKnown, tt.remaining >= 0; got != want || want && s.QuotaRemaining != tt.remaining {
				t.Errorf("remaining %d (known %v), want %d", s.QuotaRemaining, s.QuotaKnown, tt.remaining)
			}
			offset := s.Headers.Sub(s.Start)
			check := func(what string, got, want time.Duration) {
				if want == 0 {
					if got != 0 {
						t.Errorf("%s %v, want 0 (unknown)", what, got)
					}
					return
				}
				if d := got - offset - want; d < -tt.slack || d > tt.slack {
					t.Errorf("%s %v, want start → headers %v + %v (±%v)", what, got, offset, want, tt.slack)
				}
			}
			check("reset", s.QuotaReset, tt.reset)
			check("retry-after", s.RetryAfterWait, tt.retry)
			if s.QuotaWait() != max(s.QuotaReset, s.RetryAfterWait) {
				t.Errorf("QuotaWait() = %v with reset %v, retry-after %v", s.QuotaWait(), s.QuotaReset, s.RetryAfterWait)
			}
		})
	}
}

func TestQuotaWait(t *testing.T) {
	for _, tt := range []struct{ reset, retry, want time.Duration }{
		{0, 0, 0}, {time.Second, 0, time.Second}, {0, 2 * time.Second, 2 * time.Second},
		{3 * time.Second, 2 * time.Second, 3 * time.Second}, {time.Second, 2 * time.Second, 2 * time.Second},
	} {
		if got := (Sample{QuotaReset: tt.reset, RetryAfterWait: tt.retry}).QuotaWait(); got != tt.want {
			t.Errorf("reset %v, retry-after %v: QuotaWait() = %v, want %v", tt.reset, tt.retry, got, tt.want)
		}
	}
}

// FuzzQuota feeds any values to every rate-limit header: the parser never
// panics, and whatever it keeps is a non-negative count and durations within
// [0, 1 year].
func FuzzQuota(f *testing.F) {
	f.Add("59", "6m0s", "7")
	f.Add("0", "2m59.56s", "Wed, 21 Oct 2015 07:28:00 GMT")
	f.Add("3", "1772366460000", "1.5")
	f.Add("x", "2026-03-01T12:00:30.25+01:00", "-1")
	f.Fuzz(func(t *testing.T, remaining, reset, retry string) {
		for _, d := range quotaDialects {
			h := http.Header{}
			h.Set(d.remaining, remaining)
			h.Set(d.reset, reset)
			h.Set("Retry-After", retry)
			q := parseQuota(h, wall)
			if q.known && q.remaining < 0 || !q.known && q.remaining != 0 {
				t.Fatalf("%s: remaining %d known %v", d.remaining, q.remaining, q.known)
			}
			for _, v := range []struct {
				d     time.Duration
				known bool
			}{{q.reset, q.resetKnown}, {q.retry, q.retryKnown}} {
				if v.d < 0 || v.d > maxAhead || !v.known && v.d != 0 {
					t.Fatalf("%s: duration %v known %v out of range", d.reset, v.d, v.known)
				}
			}
		}
	})
}

// A remaining count without its reset header is still a count, and a reset
// without a count still a reset.
func TestQuotaHalfADialect(t *testing.T) {
	for _, c := range []struct {
		name   string
		header map[string]string
		want   quota
	}{
		{"remaining only", map[string]string{"x-ratelimit-remaining-requests": "5"}, quota{remaining: 5, known: true}},
		{"reset only", map[string]string{"x-ratelimit-reset-requests": "6m0s"}, quota{reset: 6 * time.Minute, resetKnown: true}},
		{"anthropic remaining only", map[string]string{"anthropic-ratelimit-requests-remaining": "0"}, quota{remaining: 0, known: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range c.header {
				h.Set(k, v)
			}
			if got := parseQuota(h, wall); got != c.want {
				t.Fatalf("parseQuota = %+v, want %+v", got, c.want)
			}
		})
	}
}

// The first dialect with a valid count or reset supplies both: a count is
// never paired with another window's reset.
func TestQuotaDialectsNotMixed(t *testing.T) {
	h := http.Header{}
	h.Set("anthropic-ratelimit-requests-remaining", "3")
	h.Set("x-ratelimit-reset-requests", "6m0s")
	if got, want := parseQuota(h, wall), (quota{remaining: 3, known: true}); got != want {
		t.Fatalf("parseQuota = %+v, want %+v (the anthropic count alone)", got, want)
	}
}

// parseCount takes 1 to 18 digits, nothing else.
func TestParseCount(t *testing.T) {
	for _, c := range []struct {
		in    string
		n     int64
		known bool
	}{
		{"", 0, false}, {" 7 ", 7, true}, {"0", 0, true},
		{"123456789012345678", 123456789012345678, true}, // 18 digits
		{"1234567890123456789", 0, false},                // 19
		{"-1", 0, false}, {"+1", 0, false}, {"1e3", 0, false}, {"0x1f", 0, false},
	} {
		if n, ok := parseCount(c.in); n != c.n || ok != c.known {
			t.Errorf("parseCount(%q) = %d, %v; want %d, %v", c.in, n, ok, c.n, c.known)
		}
	}
}

// decimal takes 1 to 20 digits with an optional fraction of 1 to 9 digits:
// no sign, exponent, hex, inf or nan, which strconv.ParseFloat would take.
func TestDecimal(t *testing.T) {
	for _, c := range []struct {
		in string
		f  float64
		ok bool
	}{
		{"12", 12, true}, {"1.5", 1.5, true}, {"0.000000001", 1e-9, true},
		{"12345678901234567890", 12345678901234567890, true}, // 20 digits
		{"123456789012345678901", 0, false},                  // 21
		{"1.123456789", 1.123456789, true},                   // 9 fraction digits
		{"1.1234567890", 0, false},                           // 10
		{"", 0, false}, {".5", 0, false}, {"5.", 0, false},
		{"1e5", 0, false}, {"1.5e3", 0, false}, {"0x10", 0, false}, {"inf", 0, false}, {"NaN", 0, false},
		{"-1", 0, false}, {"+1", 0, false}, {"1.-5", 0, false},
	} {
		if f, ok := decimal(c.in); f != c.f || ok != c.ok {
			t.Errorf("decimal(%q) = %v, %v; want %v, %v", c.in, f, ok, c.f, c.ok)
		}
	}
}

// ahead accepts [0, maxAhead] nanoseconds.
func TestAhead(t *testing.T) {
	for _, c := range []struct {
		ns float64
		ok bool
	}{{0, true}, {1, true}, {float64(maxAhead), true}, {float64(maxAhead) + 1e6, false}, {-1, false}, {math.NaN(), false}} {
		if d, ok := ahead(c.ns); ok != c.ok || ok && d != time.Duration(c.ns) {
			t.Errorf("ahead(%v) = %v, %v; want ok %v", c.ns, d, ok, c.ok)
		}
	}
}

// A Unix reset up to dateSlack (1 s) in the past means now; further back
// it is stale. wall is on a whole second.
func TestParseUnixSlack(t *testing.T) {
	unix := func(d time.Duration) string { return strconv.FormatInt(wall.Add(d).Unix(), 10) }
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{unix(0), 0, true},
		{unix(-time.Second), 0, true},
		{unix(-2 * time.Second), 0, false},
		{unix(90 * time.Second), 90 * time.Second, true},
		{strconv.FormatInt(wall.Add(-time.Second).UnixMilli(), 10), 0, true},
		{strconv.FormatInt(wall.Add(-1001*time.Millisecond).UnixMilli(), 10), 0, false},
	} {
		if d, ok := parseUnix(c.in, wall); d != c.want || ok != c.ok {
			t.Errorf("parseUnix(%s) = %v, %v; want %v, %v", c.in, d, ok, c.want, c.ok)
		}
	}
}
