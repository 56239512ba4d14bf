package probe

import (
	"context"
	"net/http"
	"net/url"
	"strings"
)

// AnthropicVersion is the anthropic-version header the probe sends.
const AnthropicVersion = "2023-06-01"

type anthropicRequest struct {
	Model     string          `json:"model"`
	Messages  []openaiMessage `json:"messages"`
	MaxTokens int             `json:"max_tokens"`
	Stream    bool            `json:"stream"`
}

// newAnthropicRequest builds POST {base_url}/v1/messages. A base_url that
// ends in /v1 already (as an OpenAI-compatible one does) gets /messages
// only: https://api.anthropic.com and https://api.anthropic.com/v1 both
// post to https://api.anthropic.com/v1/messages.
func newAnthropicRequest(ctx context.Context, t Target) (*http.Request, error) {
	body := anthropicRequest{
		Model:     t.Model,
		Messages:  []openaiMessage{{Role: "user", Content: t.Prompt}},
		MaxTokens: t.MaxTokens,
		Stream:    true,
	}
	path := "/v1/messages"
	if endsInV1(t.BaseURL) {
		path = "/messages"
	}
	req, err := newJSONRequest(ctx, t.BaseURL, path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("anthropic-version", AnthropicVersion)
	if t.APIKey != "" {
		req.Header.Set("x-api-key", t.APIKey)
	}
	return req, nil
}

// endsInV1 reports whether the path of base ends in /v1 (a trailing slash
// aside).
func endsInV1(base string) bool {
	u, err := url.Parse(base)
	return err == nil && strings.HasSuffix(strings.TrimSuffix(u.Path, "/"), "/v1")
}

// anthropicEvent is the part of a Messages stream event the probe reads.
type anthropicEvent struct {
	Type  string `json:"type"`
	Delta struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Thinking    string `json:"thinking"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *struct {
		OutputTokens *int `json:"output_tokens"`
	} `json:"usage"`
}

// anthropicDecoder reads Messages stream events. message_stop ends the
// stream; message_delta with a stop_reason lets a clean close count as an
// end too. ping, message_start, content_block_start/stop and event types
// added later are ignored.
type anthropicDecoder struct{}

func (anthropicDecoder) event(ev Event, tl *tally) error {
	if ev.Type == "error" {
		return errorEvent(ev.Data)
	}
	var e anthropicEvent
	if err := decodeJSON(ev.Data, &e); err != nil {
		return err
	}
	typ := e.Type
	if typ == "" {
		typ = ev.Type
	}
	switch typ {
	case "error":
		return errorEvent(ev.Data)
	case "content_block_delta":
		if anthropicGenerated(e) {
			tl.deltas++
		}
	case "message_delta":
		if e.Usage != nil && e.Usage.OutputTokens != nil {
			tl.usage, tl.hasUsage = *e.Usage.OutputTokens, true
		}
		if e.Delta.StopReason != "" {
			tl.finished = true
		}
	case "message_stop":
		tl.done = true
	}
	return nil
}

// anthropicGenerated reports whether a content_block_delta carries
// generated output: text, thinking, or tool input.
func anthropicGenerated(e anthropicEvent) bool {
	switch e.Delta.Type {
	case "text_delta":
		return e.Delta.Text != ""
	case "thinking_delta":
		return e.Delta.Thinking != ""
	case "input_json_delta":
		return e.Delta.PartialJSON != ""
	}
	return false
}
