// Package probe measures one streamed LLM request against a lane: how long the
// request waits in the lane's queue before the first generated token, how long
// generation takes, and how many tokens were emitted. It never retries, never
// logs and never stores: it returns a Sample and leaves the rest to the caller.
package probe

import "time"

// API names the wire dialect a lane speaks.
type API string

const (
	OpenAI    API = "openai"    // POST {base_url}/chat/completions, SSE
	Anthropic API = "anthropic" // POST {base_url}/v1/messages, SSE
)

// Target is everything one probe needs. The API key is resolved by the caller
// from the environment; it is sent only in the request header.
type Target struct {
	Lane         string
	Kind         string // free | paid
	API          API
	BaseURL      string
	Model        string
	APIKey       string // never logged, never stored, never in an error
	Prompt       string
	MaxTokens    int
	Timeout      time.Duration // whole-probe bound; the caller's ctx may be shorter
	IncludeUsage bool          // openai: send stream_options.include_usage
	MaxBytes     int64         // cap on response bytes read (0: default 4 MiB)
	MaxLine      int           // cap on one SSE line (0: default 256 KiB)
}

// Outcome is the closed set of probe results.
type Outcome string

const (
	OK          Outcome = "ok"
	Timeout     Outcome = "timeout"
	RateLimited Outcome = "rate_limited"
	HTTPError   Outcome = "http_error"
	ConnError   Outcome = "conn_error"
	StreamError Outcome = "stream_error"
	Empty       Outcome = "empty"
)

// TokensSource says where Sample.Tokens came from.
type TokensSource string

const (
	TokensUsage  TokensSource = "usage"  // server-reported usage, at most the request's max_tokens
	TokensDeltas TokensSource = "deltas" // counted content deltas: no usage, or one out of range
)

// Sample is the result of one probe: timestamps of one monotonic clock,
// durations as methods (0 for a phase not reached). The queue starts at
// Sent, when the request was on the wire: connecting is the probe's cost.
type Sample struct {
	Lane string
	Kind string

	Start        time.Time // just before the request is sent: the point's timestamp
	DNSStart     time.Time // httptrace DNSStart (zero for an IP address or a reused connection)
	DNSDone      time.Time // httptrace DNSDone
	ConnectStart time.Time // httptrace ConnectStart of the first dial attempt
	Connected    time.Time // httptrace ConnectDone (zero if the connection was reused)
	TLSStart     time.Time // httptrace TLSHandshakeStart (zero over plain http)
	TLSDone      time.Time // httptrace TLSHandshakeDone, even if the handshake failed
	Reused       bool      // httptrace GotConn: the connection was not dialed for this probe
	Sent         time.Time // the request is on the wire: start of the last write before httptrace WroteRequest
	Headers      time.Time // response headers received
	FirstToken   time.Time // first non-empty content or reasoning delta
	End          time.Time // end of stream, or the moment the probe gave up (a timeout: its deadline)

	Tokens       int
	TokensSource TokensSource

	Outcome     Outcome
	Status      int    // HTTP status, 0 if none
	RetryAfter  string // Retry-After header of a non-2xx response, verbatim if printable and short
	HeadersSeen bool   // for timeouts: had the headers arrived?
	Detail      string // short human detail of a failure; never holds secrets or generated text

	// Rate-limit headers of every response (quotaDialects, Retry-After),
	// as durations from Start.
	QuotaRemaining int64         // requests left in the lane's window, if QuotaKnown
	QuotaKnown     bool          // a remaining-requests header was present and valid
	QuotaReset     time.Duration // Start → the window's reset (0: unknown)
	RetryAfterWait time.Duration // Start → the moment Retry-After allows a retry (0: unknown)
}

func seconds(from, to time.Time) float64 {
	if from.IsZero() || to.IsZero() {
		return 0
	}
	return to.Sub(from).Seconds()
}

// QueueS is Sent → first generated token, in seconds (0 without a token):
// never below the wait the server imposed.
func (s Sample) QueueS() float64 { return seconds(s.Sent, s.FirstToken) }

// Wait is the queue wait to record for any probe, in seconds, and whether
// it is exact: QueueS after a first token; Sent → End, a lower bound, for a
// timeout before one; else 0.
func (s Sample) Wait() (seconds float64, exact bool) {
	switch {
	case !s.FirstToken.IsZero():
		return s.QueueS(), true
	case s.Outcome == Timeout && !s.Sent.IsZero() && !s.End.IsZero():
		return s.End.Sub(s.Sent).Seconds(), false
	}
	return 0, true
}

// GenS is first generated token → end of stream, in seconds.
func (s Sample) GenS() float64 { return seconds(s.FirstToken, s.End) }

// HeadersS is Sent → response headers, in seconds.
func (s Sample) HeadersS() float64 { return seconds(s.Sent, s.Headers) }

// SentS is Start → request written, in seconds.
func (s Sample) SentS() float64 { return seconds(s.Start, s.Sent) }

// ConnectS is DNS + TCP connect + TLS handshake, in seconds (0 reused).
func (s Sample) ConnectS() float64 {
	if s.Reused {
		return 0
	}
	return seconds(s.DNSStart, s.DNSDone) + seconds(s.ConnectStart, s.Connected) + seconds(s.TLSStart, s.TLSDone)
}

// QuotaWait is the later of RetryAfterWait and QuotaReset, 0 when neither
// is known; QuotaReset alone does not mean the quota is spent.
func (s Sample) QuotaWait() time.Duration { return max(s.RetryAfterWait, s.QuotaReset) }

// OK reports whether the probe produced at least one token and ended cleanly.
func (s Sample) OK() bool { return s.Outcome == OK }
