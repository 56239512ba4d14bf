package lanesim

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

type openAIRequest struct {
	Model               string          `json:"model"`
	Messages            json.RawMessage `json:"messages"`
	Stream              bool            `json:"stream"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

func openAIError(typ, code, msg string) any {
	return map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": code, "param": nil}}
}

func (s *Server) handleOpenAI(w http.ResponseWriter, r *http.Request) {
	var req openAIRequest
	if err := decodeBody(w, r, &req); err != nil {
		writeJSON(w, http.StatusBadRequest, openAIError("invalid_request_error", "invalid_json", err.Error()))
		return
	}
	limit := req.MaxTokens
	if req.MaxCompletionTokens != nil {
		limit = req.MaxCompletionTokens
	}
	var msgs []json.RawMessage
	var problem string
	switch {
	case req.Model == "":
		problem = "model is required"
	case json.Unmarshal(req.Messages, &msgs) != nil || len(msgs) == 0:
		problem = "messages must be a non-empty array"
	case !req.Stream:
		problem = "lanesim only streams: set \"stream\": true"
	case limit != nil && *limit < 1:
		problem = "max_tokens must be at least 1"
	}
	if problem != "" {
		writeJSON(w, http.StatusBadRequest, openAIError("invalid_request_error", "invalid_request", problem))
		return
	}
	n, truncated := s.replyLen(limit)
	id := s.seq.Add(1)
	s.serve(w, r, "openai", id, n, &openAIStream{
		id:        "chatcmpl-lanesim-" + strconv.FormatInt(id, 10),
		created:   time.Now().Unix(),
		model:     req.Model,
		usage:     req.StreamOptions != nil && req.StreamOptions.IncludeUsage,
		prompt:    promptTokens(req.Messages),
		truncated: truncated,
	})
}

// openAIStream writes chat.completion.chunk events.
type openAIStream struct {
	id        string
	created   int64
	model     string
	usage     bool
	prompt    int
	truncated bool
}

type oaChunk struct {
	ID      string     `json:"id"`
	Object  string     `json:"object"`
	Created int64      `json:"created"`
	Model   string     `json:"model"`
	Choices []oaChoice `json:"choices"`
	Usage   *oaUsage   `json:"usage,omitempty"`
}

type oaChoice struct {
	Index        int     `json:"index"`
	Delta        oaDelta `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

type oaDelta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

type oaUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func (o *openAIStream) chunk(choices []oaChoice) oaChunk {
	return oaChunk{ID: o.id, Object: "chat.completion.chunk", Created: o.created, Model: o.model, Choices: choices}
}

func (o *openAIStream) rateLimited() any {
	return openAIError("rate_limit_error", "rate_limit_exceeded", "lanesim: rate limit reached (injected); retry after "+RetryAfter+"s")
}

// begin sends the role-only chunk (empty content, as OpenAI does).
func (o *openAIStream) begin(sw *sseWriter) error {
	empty := ""
	return sw.event("", o.chunk([]oaChoice{{Delta: oaDelta{Role: "assistant", Content: &empty}}}))
}

func (o *openAIStream) token(sw *sseWriter, text string) error {
	return sw.event("", o.chunk([]oaChoice{{Delta: oaDelta{Content: &text}}}))
}

func (o *openAIStream) fail(sw *sseWriter) error {
	return sw.event("", openAIError("server_error", "internal_error", "lanesim: generation failed mid-stream (injected)"))
}

func (o *openAIStream) end(sw *sseWriter, emitted int) error {
	reason := "stop"
	if o.truncated {
		reason = "length"
	}
	if err := sw.event("", o.chunk([]oaChoice{{FinishReason: &reason}})); err != nil {
		return err
	}
	if o.usage {
		c := o.chunk([]oaChoice{})
		c.Usage = &oaUsage{PromptTokens: o.prompt, CompletionTokens: emitted, TotalTokens: o.prompt + emitted}
		if err := sw.event("", c); err != nil {
			return err
		}
	}
	return sw.write("data: [DONE]\n\n")
}
