package lanesim

import (
	"encoding/json"
	"net/http"
	"strconv"
)

type anthropicRequest struct {
	Model     string          `json:"model"`
	Messages  json.RawMessage `json:"messages"`
	Stream    bool            `json:"stream"`
	MaxTokens *int            `json:"max_tokens"`
}

func anthropicError(typ, msg string) any {
	return map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
}

func (s *Server) handleAnthropic(w http.ResponseWriter, r *http.Request) {
	var req anthropicRequest
	if err := decodeBody(w, r, &req); err != nil {
		writeJSON(w, http.StatusBadRequest, anthropicError("invalid_request_error", err.Error()))
		return
	}
	var msgs []json.RawMessage
	var problem string
	switch {
	case r.Header.Get("anthropic-version") == "":
		problem = "anthropic-version: header is required"
	case req.Model == "":
		problem = "model: field required"
	case json.Unmarshal(req.Messages, &msgs) != nil || len(msgs) == 0:
		problem = "messages: must be a non-empty array"
	case req.MaxTokens == nil:
		problem = "max_tokens: field required"
	case *req.MaxTokens < 1:
		problem = "max_tokens: must be at least 1"
	case !req.Stream:
		problem = "lanesim only streams: set \"stream\": true"
	}
	if problem != "" {
		writeJSON(w, http.StatusBadRequest, anthropicError("invalid_request_error", problem))
		return
	}
	n, truncated := s.replyLen(req.MaxTokens)
	id := s.seq.Add(1)
	s.serve(w, r, "anthropic", id, n, &anthropicStream{
		id:        "msg_lanesim_" + strconv.FormatInt(id, 10),
		model:     req.Model,
		prompt:    promptTokens(req.Messages),
		truncated: truncated,
	})
}

// anthropicStream writes Messages API stream events.
type anthropicStream struct {
	id        string
	model     string
	prompt    int
	truncated bool
}

func (a *anthropicStream) rateLimited() any {
	return anthropicError("rate_limit_error", "lanesim: rate limit reached (injected); retry after "+RetryAfter+"s")
}

// events sends each event in turn, named by its type.
func events(sw *sseWriter, evs ...map[string]any) error {
	for _, ev := range evs {
		if err := sw.event(ev["type"].(string), ev); err != nil {
			return err
		}
	}
	return nil
}

// begin sends message_start, content_block_start and a ping.
func (a *anthropicStream) begin(sw *sseWriter) error {
	return events(sw, map[string]any{
		"type": "message_start",
		"message": map[string]any{
			"id": a.id, "type": "message", "role": "assistant", "model": a.model,
			"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": a.prompt, "output_tokens": 1},
		},
	}, map[string]any{
		"type": "content_block_start", "index": 0,
		"content_block": map[string]any{"type": "text", "text": ""},
	}, map[string]any{"type": "ping"})
}

func (a *anthropicStream) token(sw *sseWriter, text string) error {
	return events(sw, map[string]any{
		"type": "content_block_delta", "index": 0,
		"delta": map[string]any{"type": "text_delta", "text": text},
	})
}

func (a *anthropicStream) fail(sw *sseWriter) error {
	return sw.event("error", anthropicError("overloaded_error", "lanesim: overloaded mid-stream (injected)"))
}

func (a *anthropicStream) end(sw *sseWriter, emitted int) error {
	reason := "end_turn"
	if a.truncated {
		reason = "max_tokens"
	}
	return events(sw, map[string]any{"type": "content_block_stop", "index": 0}, map[string]any{
		"type":  "message_delta",
		"delta": map[string]any{"stop_reason": reason, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": emitted},
	}, map[string]any{"type": "message_stop"})
}
