// Package probe measures one streamed LLM request against a lane: how long the
// request waits in the lane's queue before the first generated token, how long
// generation takes, and how many tokens were emitted. It never retries, never
// logs and never stores: it returns a Sample and leaves the rest to the caller.
package probe

import (
	"time"
)

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

// Outcomes lists every Outcome in a stable order.
var Outcomes = []Outcome{OK, Timeout, RateLimited, HTTPError, ConnError, StreamError, Empty}

// TokensSource says where Sample.Tokens came from.
type TokensSource string

const (
	TokensUsage  TokensSource = "usage"  // server-reported usage
	TokensDeltas TokensSource = "deltas" // counted content deltas
)

// Sample is the result of one probe. Times are raw timestamps taken from one
// monotonic clock (time.Now with its monotonic reading); durations are methods.
// A zero timestamp means the phase was not reached.
type Sample struct {
	Lane string
	Kind string

	Start      time.Time // just before the request is sent
	Connected  time.Time // httptrace ConnectDone (zero if the connection was reused)
	Sent       time.Time // httptrace WroteRequest: the request is on the wire
	Headers    time.Time // response headers received
	FirstToken time.Time // first non-empty content or reasoning delta
	End        time.Time // end of stream, or the moment the probe gave up

	Tokens       int
	TokensSource TokensSource

	Outcome     Outcome
	Status      int    // HTTP status, 0 if none
	RetryAfter  string // Retry-After header of a 429, verbatim
	HeadersSeen bool   // for timeouts: had the headers arrived?
	Detail      string // short human detail of a failure; never holds secrets or generated text
}

func seconds(from, to time.Time) float64 {
	if from.IsZero() || to.IsZero() {
		return 0
	}
	return to.Sub(from).Seconds()
}

// QueueS is start → first generated token, in seconds (0 if no token came).
func (s Sample) QueueS() float64 { return seconds(s.Start, s.FirstToken) }

// GenS is first generated token → end of stream, in seconds.
func (s Sample) GenS() float64 { return seconds(s.FirstToken, s.End) }

// HeadersS is start → response headers, in seconds.
func (s Sample) HeadersS() float64 { return seconds(s.Start, s.Headers) }

// SentS is start → request written, in seconds.
func (s Sample) SentS() float64 { return seconds(s.Start, s.Sent) }

// ServerQueueS is request written → first generated token, in seconds: the
// queue as the server saw it, without the client's connect and scheduling.
func (s Sample) ServerQueueS() float64 { return seconds(s.Sent, s.FirstToken) }

// ConnectS is start → connection established, in seconds.
func (s Sample) ConnectS() float64 { return seconds(s.Start, s.Connected) }

// OK reports whether the probe produced at least one token and ended cleanly.
func (s Sample) OK() bool { return s.Outcome == OK }
