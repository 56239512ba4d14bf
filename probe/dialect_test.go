package probe

import (
	"errors"
	"testing"
)

// TestDecoders feeds event sequences straight to the dialect decoders.
func TestDecoders(t *testing.T) {
	type in struct{ typ, data string }
	msg := func(data string) in { return in{"message", data} }
	tests := []struct {
		name     string
		dec      decoder
		events   []in
		want     tally
		wantErr  error
		firstTok int // index of the event that brings the first token, -1 none
	}{
		{"openai role, empty, content", openaiDecoder{}, []in{
			msg(`{"choices":[{"delta":{"role":"assistant"}}]}`),
			msg(`{"choices":[{"delta":{"content":null}}],"usage":null}`),
			msg(`{"choices":[{"delta":{"content":"a"}}]}`),
			msg(`{"choices":[{"delta":{},"finish_reason":"length"}]}`),
			msg(` [DONE] `),
		}, tally{deltas: 1, done: true, finished: true}, nil, 2},
		{"openai usage chunk", openaiDecoder{}, []in{
			msg(`{"choices":[{"delta":{"reasoning_content":"r"}}]}`),
			msg(`{"choices":[],"usage":{"completion_tokens":12}}`),
		}, tally{deltas: 1, usage: 12, hasUsage: true}, nil, 0},
		{"openai usage without completion tokens ignored", openaiDecoder{}, []in{
			msg(`{"choices":[{"delta":{"content":"a"}}],"usage":{"prompt_tokens":3}}`),
		}, tally{deltas: 1}, nil, 0},
		{"openai empty data line skipped", openaiDecoder{}, []in{msg("")}, tally{}, nil, -1},
		{"openai error null is no error", openaiDecoder{}, []in{
			msg(`{"choices":[{"delta":{"content":"a"}}],"error":null}`)}, tally{deltas: 1}, nil, 0},
		{"openai error string", openaiDecoder{}, []in{msg(`{"error":"boom"}`)}, tally{}, ErrErrorEvent, -1},
		{"openai content of the wrong type", openaiDecoder{}, []in{
			msg(`{"choices":[{"delta":{"content":[1]}}]}`)}, tally{}, ErrMalformed, -1},
		{"anthropic start, ping, block start", anthropicDecoder{}, []in{
			{"message_start", `{"type":"message_start","message":{"usage":{"output_tokens":1}}}`},
			{"ping", `{"type":"ping"}`},
			{"content_block_start", `{"type":"content_block_start","content_block":{"type":"text","text":""}}`},
			{"content_block_delta", `{"type":"content_block_delta","delta":{"type":"signature_delta","signature":"x"}}`},
		}, tally{}, nil, -1},
		{"anthropic tool input counts", anthropicDecoder{}, []in{
			{"content_block_delta", `{"type":"content_block_delta","delta":{"type":"input_json_delta","partial_json":"{"}}`},
			{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":4}}`},
			{"message_stop", `{"type":"message_stop"}`},
		}, tally{deltas: 1, usage: 4, hasUsage: true, done: true, finished: true}, nil, 0},
		{"anthropic type from the event name", anthropicDecoder{}, []in{
			{"content_block_delta", `{"delta":{"type":"text_delta","text":"a"}}`},
		}, tally{deltas: 1}, nil, 0},
		{"anthropic unknown event ignored", anthropicDecoder{}, []in{
			{"future_event", `{"type":"future_event"}`}}, tally{}, nil, -1},
		{"anthropic error in data only", anthropicDecoder{}, []in{
			msg(`{"type":"error","error":{"type":"api_error"}}`)}, tally{}, ErrErrorEvent, -1},
		{"anthropic invalid utf-8", anthropicDecoder{}, []in{
			msg("{\"type\":\"ping\",\"x\":\"\xff\"}")}, tally{}, ErrInvalidUTF8, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tl tally
			var err error
			first := -1
			for i, e := range tt.events {
				before := tl.deltas
				if err = tt.dec.event(Event{Type: e.typ, Data: []byte(e.data)}, &tl); err != nil {
					break
				}
				if before == 0 && tl.deltas > 0 {
					first = i
				}
			}
			if tt.wantErr == nil && err != nil || !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if tl != tt.want || first != tt.firstTok {
				t.Errorf("tally %+v first token at %d, want %+v at %d", tl, first, tt.want, tt.firstTok)
			}
		})
	}
}

func TestErrorType(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"anthropic", `{"type":"error","error":{"type":"overloaded_error","message":"x"}}`, "overloaded_error"},
		{"openai code only", `{"error":{"message":"x","type":null,"code":"model_not_found"}}`, "model_not_found"},
		{"numeric code", `{"error":{"code":500,"message":"x"}}`, ""},
		{"unsafe type", `{"error":{"type":"has spaces and <html>"}}`, ""},
		{"too long", `{"error":{"type":"` + string(make([]byte, 60)) + `"}}`, ""},
		{"not json", `<html>`, ""},
		{"no error", `{"choices":[]}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errorType([]byte(tt.in)); got != tt.want {
				t.Errorf("errorType = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestScrub(t *testing.T) {
	tests := []struct{ name, in, key, want string }{
		{"key removed", "bad sk-1 here", "sk-1", "bad [redacted] here"},
		{"no key set", "bad sk-1 here", "", "bad sk-1 here"},
		{"long cut", string(make([]byte, 200)), "", string(make([]byte, maxDetail)) + "..."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := scrub(tt.in, tt.key); got != tt.want {
				t.Errorf("scrub = %q, want %q", got, tt.want)
			}
		})
	}
}
