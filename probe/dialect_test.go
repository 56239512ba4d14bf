package probe

import (
	"context"
	"errors"
	"testing"
	"time"
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
		{"openai role, empty, content", openaiEvent, []in{
			msg(`{"choices":[{"delta":{"role":"assistant"}}]}`),
			msg(`{"choices":[{"delta":{"content":null}}],"usage":null}`),
			msg(`{"choices":[{"delta":{"content":"a"}}]}`),
			msg(`{"choices":[{"delta":{},"finish_reason":"length"}]}`),
			msg(` [DONE] `),
		}, tally{deltas: 1, done: true, finished: true}, nil, 2},
		{"openai usage chunk", openaiEvent, []in{
			msg(`{"choices":[{"delta":{"reasoning_content":"r"}}]}`),
			msg(`{"choices":[],"usage":{"completion_tokens":12}}`),
		}, tally{deltas: 1, usage: 12, hasUsage: true}, nil, 0},
		{"openai usage without completion tokens ignored", openaiEvent, []in{
			msg(`{"choices":[{"delta":{"content":"a"}}],"usage":{"prompt_tokens":3}}`),
		}, tally{deltas: 1}, nil, 0},
		{"openai empty data line skipped", openaiEvent, []in{msg("")}, tally{}, nil, -1},
		{"openai error null is no error", openaiEvent, []in{
			msg(`{"choices":[{"delta":{"content":"a"}}],"error":null}`)}, tally{deltas: 1}, nil, 0},
		{"openai error string", openaiEvent, []in{msg(`{"error":"boom"}`)}, tally{}, ErrErrorEvent, -1},
		{"openai content of the wrong type", openaiEvent, []in{
			msg(`{"choices":[{"delta":{"content":[1]}}]}`)}, tally{}, ErrMalformed, -1},
		{"anthropic start, ping, block start", anthropicEvent, []in{
			{"message_start", `{"type":"message_start","message":{"usage":{"output_tokens":1}}}`},
			{"ping", `{"type":"ping"}`},
			{"content_block_start", `{"type":"content_block_start","content_block":{"type":"text","text":""}}`},
			{"content_block_delta", `{"type":"content_block_delta","delta":{"type":"signature_delta","signature":"x"}}`},
		}, tally{}, nil, -1},
		{"anthropic tool input counts", anthropicEvent, []in{
			{"content_block_delta", `{"type":"content_block_delta","delta":{"type":"input_json_delta","partial_json":"{"}}`},
			{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":4}}`},
			{"message_stop", `{"type":"message_stop"}`},
		}, tally{deltas: 1, usage: 4, hasUsage: true, done: true, finished: true}, nil, 0},
		{"anthropic type from the event name", anthropicEvent, []in{
			{"content_block_delta", `{"delta":{"type":"text_delta","text":"a"}}`},
		}, tally{deltas: 1}, nil, 0},
		{"anthropic unknown event ignored", anthropicEvent, []in{
			{"future_event", `{"type":"future_event"}`}}, tally{}, nil, -1},
		{"anthropic error in data only", anthropicEvent, []in{
			msg(`{"type":"error","error":{"type":"api_error"}}`)}, tally{}, ErrErrorEvent, -1},
		{"anthropic invalid utf-8", anthropicEvent, []in{
			msg("{\"type\":\"ping\",\"x\":\"\xff\"}")}, tally{}, ErrInvalidUTF8, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tl tally
			var err error
			first := -1
			for i, e := range tt.events {
				before := tl.deltas
				if err = tt.dec(Event{Type: e.typ, Data: []byte(e.data)}, &tl); err != nil {
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

// Every request asks for an event stream and names the probe. Kills the
// Accept (and User-Agent) header dropped from newJSONRequest.
func TestRequestAsksForAnEventStream(t *testing.T) {
	for _, c := range []struct {
		api    API
		stream script
	}{{OpenAI, okOpenAIStream}, {Anthropic, okAnthropicStream}} {
		t.Run(string(c.api), func(t *testing.T) {
			rec := &recorder{next: c.stream}
			if _, err := Run(context.Background(), target(c.api, serve(t, rec))); err != nil {
				t.Fatalf("Run: %v", err)
			}
			r := rec.requests()[0]
			if got := r.header.Get("Accept"); got != "text/event-stream" {
				t.Errorf("Accept %q, want text/event-stream", got)
			}
			if got := r.header.Get("User-Agent"); got != "lanewatch-probe" {
				t.Errorf("User-Agent %q, want lanewatch-probe", got)
			}
		})
	}
}

// The server's usage is trusted up to the request's max_tokens, and never
// below 0; beyond that the counted deltas stand in (issue 18 item 6).
func TestTokensBoundedByMaxTokens(t *testing.T) {
	for _, c := range []struct {
		name   string
		tl     tally
		tokens int
		source TokensSource
	}{
		{"no usage: deltas", tally{deltas: 2}, 2, TokensDeltas},
		{"usage within the cap", tally{deltas: 2, usage: 5, hasUsage: true}, 5, TokensUsage},
		{"usage at the cap", tally{deltas: 2, usage: 12, hasUsage: true}, 12, TokensUsage},
		{"usage one over the cap", tally{deltas: 2, usage: 13, hasUsage: true}, 2, TokensDeltas},
		{"absurd usage", tally{deltas: 2, usage: 999999999, hasUsage: true}, 2, TokensDeltas},
		{"usage 0", tally{deltas: 2, usage: 0, hasUsage: true}, 0, TokensUsage},
		{"negative usage", tally{deltas: 2, usage: -1, hasUsage: true}, 2, TokensDeltas},
	} {
		t.Run(c.name, func(t *testing.T) {
			if n, src := c.tl.tokens(12); n != c.tokens || src != c.source {
				t.Fatalf("tokens(12) = %d %s, want %d %s", n, src, c.tokens, c.source)
			}
		})
	}
}

// A lane that claims 999999999 tokens for two content deltas, asked for at
// most 12, is measured by its deltas: 2 tokens over the 50 ms the server
// waits between them, about 40 tok/s (the claim gave 999590281). The client
// sees the gap only to within its own scheduling: a first delta read 0.5 ms
// late made it 49.5 ms in one CI run, so the bound is half the gap, 80 tok/s,
// still seven orders of magnitude below the claim.
func TestAbsurdUsageGivesWayToDeltas(t *testing.T) {
	const gap = 50 * time.Millisecond
	for _, c := range []struct {
		api   API
		steps []step
	}{
		{OpenAI, []step{{0, oaRole()}, {0, oaText("a")}, {gap, oaText("b")}, {0, oaFinish()}, {0, oaUsage(999999999)}, {0, oaDone}}},
		{Anthropic, []step{{0, anStart()}, {0, anBlock()}, {0, anText("a")}, {gap, anText("b")}, {0, anDelta(999999999)}, {0, anStop()}}},
	} {
		t.Run(string(c.api), func(t *testing.T) {
			tg := target(c.api, serve(t, script{steps: c.steps}))
			tg.MaxTokens = 12
			s, err := Run(context.Background(), tg)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if s.Tokens != 2 || s.TokensSource != TokensDeltas {
				t.Fatalf("tokens %d from %s, want 2 from deltas", s.Tokens, s.TokensSource)
			}
			if gen := s.GenS(); gen < gap.Seconds()/2 || float64(s.Tokens)/gen > 80 {
				t.Fatalf("gen_s %.4f, tok/s %.1f; want gen_s >= 0.025 and tok/s <= 80", gen, float64(s.Tokens)/gen)
			}
		})
	}
	// A sane count is still the server's.
	tg := target(OpenAI, serve(t, script{steps: []step{{0, oaText("a")}, {0, oaText("b")}, {0, oaUsage(12)}, {0, oaDone}}}))
	tg.MaxTokens = 12
	if s, err := Run(context.Background(), tg); err != nil || s.Tokens != 12 || s.TokensSource != TokensUsage {
		t.Fatalf("usage 12 of max 12: tokens %d from %s (%v), want 12 from usage", s.Tokens, s.TokensSource, err)
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
