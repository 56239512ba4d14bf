package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
)

type openaiMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type openaiStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type openaiRequest struct {
	Model         string               `json:"model"`
	Messages      []openaiMessage      `json:"messages"`
	MaxTokens     int                  `json:"max_tokens"`
	Stream        bool                 `json:"stream"`
	StreamOptions *openaiStreamOptions `json:"stream_options,omitempty"`
}

// newOpenAIRequest builds POST {base_url}/chat/completions.
func newOpenAIRequest(ctx context.Context, t Target) (*http.Request, error) {
	body := openaiRequest{
		Model:     t.Model,
		Messages:  []openaiMessage{{Role: "user", Content: t.Prompt}},
		MaxTokens: t.MaxTokens,
		Stream:    true,
	}
	if t.IncludeUsage {
		body.StreamOptions = &openaiStreamOptions{IncludeUsage: true}
	}
	req, err := newJSONRequest(ctx, t.BaseURL, "/chat/completions", body)
	if err != nil {
		return nil, err
	}
	if t.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+t.APIKey)
	}
	return req, nil
}

// openaiChunk is the part of a chat.completion.chunk the probe reads.
type openaiChunk struct {
	Choices []struct {
		Delta struct {
			Content          string `json:"content"`
			ReasoningContent string `json:"reasoning_content"`
			Reasoning        string `json:"reasoning"`
		} `json:"delta"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		CompletionTokens *int `json:"completion_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// openaiDecoder reads chat completion chunks. "[DONE]" ends the stream; a
// chunk with a finish_reason lets a clean close count as an end too.
type openaiDecoder struct{}

func (openaiDecoder) event(ev Event, tl *tally) error {
	data := bytes.TrimSpace(ev.Data)
	if bytes.Equal(data, []byte("[DONE]")) {
		tl.done = true
		return nil
	}
	if ev.Type == "error" {
		return errorEvent(data)
	}
	if len(data) == 0 {
		return nil
	}
	var c openaiChunk
	if err := decodeJSON(data, &c); err != nil {
		return err
	}
	if isSet(c.Error) {
		return errorEvent(data)
	}
	for _, ch := range c.Choices {
		d := ch.Delta
		if d.Content != "" || d.ReasoningContent != "" || d.Reasoning != "" {
			tl.deltas++
		}
		if ch.FinishReason != "" {
			tl.finished = true
		}
	}
	if c.Usage != nil && c.Usage.CompletionTokens != nil {
		tl.usage, tl.hasUsage = *c.Usage.CompletionTokens, true
	}
	return nil
}
