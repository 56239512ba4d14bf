package probe

import "cmp"

// AnthropicVersion is the anthropic-version header the probe sends.
const AnthropicVersion = "2023-06-01"

// anthropicMsg is the part of a Messages stream event the probe reads.
type anthropicMsg struct {
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

// anthropicEvent reads a Messages stream event; message_stop ends the
// stream, a stop_reason lets a clean close count as an end.
func anthropicEvent(ev Event, tl *tally) error {
	if ev.Type == "error" {
		return errorEvent(ev.Data)
	}
	var e anthropicMsg
	if err := decodeJSON(ev.Data, &e); err != nil {
		return err
	}
	switch cmp.Or(e.Type, ev.Type) {
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
func anthropicGenerated(e anthropicMsg) bool {
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
