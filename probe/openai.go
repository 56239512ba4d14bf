package probe

import (
	"bytes"
	"encoding/json"
)

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

// openaiEvent reads a chat completion chunk. "[DONE]" ends the stream; a
// chunk with a finish_reason lets a clean close count as an end too.
func openaiEvent(ev Event, tl *tally) error {
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
