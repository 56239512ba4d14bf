package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"
)

// tally is what a decoder learns from the stream so far.
type tally struct {
	deltas   int  // non-empty content or reasoning deltas
	usage    int  // server-reported output tokens, if hasUsage
	hasUsage bool //
	done     bool // terminal event seen ([DONE], message_stop)
	finished bool // the model reported a stop reason
}

// tokens returns the token count and where it came from: the server's
// usage within [0, maxTokens], else the counted deltas.
func (tl tally) tokens(maxTokens int) (int, TokensSource) {
	if tl.hasUsage && tl.usage >= 0 && tl.usage <= maxTokens {
		return tl.usage, TokensUsage
	}
	return tl.deltas, TokensDeltas
}

// decoder applies one SSE event of a dialect to the tally. Its errors are
// *Error values whose details never quote the event's data.
type decoder func(ev Event, tl *tally) error

// chatRequest is the body both APIs take: stream_options (OpenAI's) only
// with include_usage.
type chatRequest struct {
	Model         string         `json:"model"`
	Messages      []chatMessage  `json:"messages"`
	MaxTokens     int            `json:"max_tokens"`
	Stream        bool           `json:"stream"`
	StreamOptions *streamOptions `json:"stream_options,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// newRequest builds the lane's streaming POST and picks the decoder of its
// stream: {base_url}/chat/completions (OpenAI), {base_url}/v1/messages
// (Anthropic; /messages after a base_url ending in /v1).
func newRequest(ctx context.Context, t Target) (*http.Request, decoder, error) {
	body := chatRequest{Model: t.Model, Messages: []chatMessage{{Role: "user", Content: t.Prompt}}, MaxTokens: t.MaxTokens, Stream: true}
	u, err := url.Parse(t.BaseURL)
	var path string
	var dec decoder
	switch t.API {
	case OpenAI:
		path, dec = "/chat/completions", openaiEvent
		if t.IncludeUsage {
			body.StreamOptions = &streamOptions{true}
		}
	case Anthropic:
		path, dec = "/v1/messages", anthropicEvent
		if err == nil && strings.HasSuffix(strings.TrimSuffix(u.Path, "/"), "/v1") {
			path = "/messages"
		}
	default:
		return nil, nil, fail(ConnError, ErrInvalidTarget, "unknown api %q", safeToken(string(t.API)))
	}
	if !validHeaderValue(t.APIKey) {
		return nil, nil, fail(ConnError, ErrInvalidTarget, "api key holds control characters")
	}
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, nil, fail(ConnError, ErrInvalidTarget, "base_url is not an http(s) URL")
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawPath = ""
	b, err := json.Marshal(body)
	if err != nil {
		return nil, nil, fail(ConnError, ErrInvalidTarget, "encode request body")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(b))
	if err != nil {
		return nil, nil, fail(ConnError, ErrInvalidTarget, "build request")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("User-Agent", "lanewatch-probe")
	switch {
	case t.API == Anthropic:
		req.Header.Set("anthropic-version", AnthropicVersion)
		if t.APIKey != "" {
			req.Header.Set("x-api-key", t.APIKey)
		}
	case t.APIKey != "":
		req.Header.Set("Authorization", "Bearer "+t.APIKey)
	}
	return req, dec, nil
}

// decodeJSON decodes one data line. Invalid UTF-8, which encoding/json would
// silently replace, is an error here.
func decodeJSON(data []byte, v any) error {
	if !utf8.Valid(data) {
		return fail(StreamError, ErrInvalidUTF8, "invalid UTF-8 in a data line")
	}
	if err := json.Unmarshal(data, v); err != nil {
		if json.Valid(data) {
			return fail(StreamError, ErrMalformed, "unexpected JSON shape in a data line")
		}
		return fail(StreamError, ErrMalformed, "malformed JSON in a data line")
	}
	return nil
}

func isSet(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}

// errorEvent turns an in-stream error into a failure naming its type.
func errorEvent(data []byte) error {
	if tok := errorType(data); tok != "" {
		return fail(StreamError, ErrErrorEvent, "error event: %s", tok)
	}
	return fail(StreamError, ErrErrorEvent, "error event")
}

// errorType extracts a safe error type or code from an OpenAI or Anthropic
// error body, or "" if there is none. Messages are never read.
func errorType(data []byte) string {
	var body struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &body) != nil || !isSet(body.Error) {
		return ""
	}
	var e struct {
		Type any `json:"type"`
		Code any `json:"code"`
	}
	if json.Unmarshal(body.Error, &e) != nil {
		return ""
	}
	for _, v := range []any{e.Type, e.Code} {
		if s, ok := v.(string); ok && knownErrorTypes[s] {
			return s
		}
	}
	return ""
}

// knownErrorTypes are the documented error types and codes, the only ones
// that reach a Detail (a server's own string could echo the prompt).
var knownErrorTypes = map[string]bool{
	"invalid_request_error": true, "authentication_error": true, "permission_error": true,
	"not_found_error": true, "rate_limit_error": true, "api_error": true,
	"overloaded_error": true, "request_too_large": true, "billing_error": true,
	"timeout_error": true, "server_error": true, "insufficient_quota": true,
	"rate_limit_exceeded": true, "model_not_found": true, "invalid_api_key": true,
	"context_length_exceeded": true, "server_overloaded": true,
}
