package lanesim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/stalls"
)

func fastOptions() Options {
	o := DefaultOptions()
	o.Prefill = 0
	o.TokenInterval = time.Millisecond
	o.Tokens = 5
	o.KeepAlive = 0
	return o
}

// oaEvent is the part of an OpenAI chunk the tests check.
type oaEvent struct {
	Object  string `json:"object"`
	Choices []struct {
		Delta struct {
			Role    *string `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
		Type    string `json:"type"`
	} `json:"error"`
}

func decodeOpenAI(t *testing.T, events []sseEvent) (chunks []oaEvent, done bool) {
	t.Helper()
	for i, ev := range events {
		if ev.comment != "" && ev.data == "" {
			continue // keep-alive
		}
		if ev.name != "" {
			t.Fatalf("event %d: unexpected named event %+v in an OpenAI stream", i, ev)
		}
		if done {
			t.Fatalf("event %d after [DONE]: %q", i, ev.data)
		}
		if ev.data == "[DONE]" {
			done = true
			continue
		}
		var c oaEvent
		if err := json.Unmarshal([]byte(ev.data), &c); err != nil {
			t.Fatalf("event %d: %v: %q", i, err, ev.data)
		}
		chunks = append(chunks, c)
	}
	return chunks, done
}

// checkOpenAI checks a whole OpenAI stream: role-only chunk, n "tok " deltas,
// a finish chunk, an optional usage chunk, [DONE].
func checkOpenAI(t *testing.T, events []sseEvent, n int, finish string, usage bool) {
	t.Helper()
	chunks, done := decodeOpenAI(t, events)
	if !done {
		t.Error("stream did not end with data: [DONE]")
	}
	want := 1 + n + 1
	if usage {
		want++
	}
	if len(chunks) != want {
		t.Fatalf("got %d JSON chunks, want %d", len(chunks), want)
	}
	first := chunks[0]
	if len(first.Choices) != 1 || first.Choices[0].Delta.Role == nil || *first.Choices[0].Delta.Role != "assistant" ||
		first.Choices[0].Delta.Content == nil || *first.Choices[0].Delta.Content != "" {
		t.Errorf("first chunk is not role-only with empty content: %+v", first)
	}
	for i, c := range chunks[1 : 1+n] {
		if c.Object != "chat.completion.chunk" || len(c.Choices) != 1 || c.Choices[0].Delta.Content == nil ||
			*c.Choices[0].Delta.Content != "tok " || c.Choices[0].FinishReason != nil {
			t.Errorf("content chunk %d = %+v", i, c)
		}
	}
	fin := chunks[1+n]
	if len(fin.Choices) != 1 || fin.Choices[0].FinishReason == nil || *fin.Choices[0].FinishReason != finish ||
		fin.Choices[0].Delta.Content != nil {
		t.Errorf("finish chunk = %+v, want finish_reason %q and no content", fin, finish)
	}
	for i, c := range chunks[:1+n] {
		if c.Usage != nil {
			t.Errorf("chunk %d carries usage", i)
		}
	}
	if usage {
		u := chunks[len(chunks)-1]
		if len(u.Choices) != 0 || u.Usage == nil || u.Usage.CompletionTokens != n ||
			u.Usage.TotalTokens != u.Usage.PromptTokens+n || u.Usage.PromptTokens < 1 {
			t.Errorf("usage chunk = %+v, want choices [] and completion_tokens %d", u, n)
		}
	}
}

// checkAnthropic checks a whole Messages stream event by event.
func checkAnthropic(t *testing.T, events []sseEvent, n int, stop string) {
	t.Helper()
	want := []string{"message_start", "content_block_start", "ping"}
	for range n {
		want = append(want, "content_block_delta")
	}
	want = append(want, "content_block_stop", "message_delta", "message_stop")
	var names []string
	for i, ev := range events {
		names = append(names, ev.name)
		var v struct {
			Type  string `json:"type"`
			Delta struct {
				Type       string `json:"type"`
				Text       string `json:"text"`
				StopReason string `json:"stop_reason"`
			} `json:"delta"`
			Usage struct {
				OutputTokens int `json:"output_tokens"`
			} `json:"usage"`
			Message struct {
				Role string `json:"role"`
			} `json:"message"`
		}
		if err := json.Unmarshal([]byte(ev.data), &v); err != nil {
			t.Fatalf("event %d (%s): %v: %q", i, ev.name, err, ev.data)
		}
		if v.Type != ev.name {
			t.Errorf("event %d: named %q, data type %q", i, ev.name, v.Type)
		}
		switch ev.name {
		case "message_start":
			if v.Message.Role != "assistant" {
				t.Errorf("message_start role = %q", v.Message.Role)
			}
		case "content_block_delta":
			if v.Delta.Type != "text_delta" || v.Delta.Text != "tok " {
				t.Errorf("delta %d = %+v", i, v.Delta)
			}
		case "message_delta":
			if v.Usage.OutputTokens != n || v.Delta.StopReason != stop {
				t.Errorf("message_delta output_tokens %d stop %q, want %d %q", v.Usage.OutputTokens, v.Delta.StopReason, n, stop)
			}
		}
	}
	if !slices.Equal(names, want) {
		t.Errorf("events = %v\nwant %v", names, want)
	}
}

func TestStreamShapes(t *testing.T) {
	tests := []struct {
		name  string
		path  string
		body  string
		check func(t *testing.T, events []sseEvent)
	}{
		{"openai", openaiPath, openaiBody(""), func(t *testing.T, ev []sseEvent) { checkOpenAI(t, ev, 5, "stop", false) }},
		{"openai include_usage", openaiPath, openaiBody(`,"stream_options":{"include_usage":true}`),
			func(t *testing.T, ev []sseEvent) { checkOpenAI(t, ev, 5, "stop", true) }},
		{"openai max_tokens cuts the reply", openaiPath, openaiBody(`,"max_tokens":3,"stream_options":{"include_usage":true}`),
			func(t *testing.T, ev []sseEvent) { checkOpenAI(t, ev, 3, "length", true) }},
		{"openai max_completion_tokens", openaiPath, openaiBody(`,"max_completion_tokens":2`),
			func(t *testing.T, ev []sseEvent) { checkOpenAI(t, ev, 2, "length", false) }},
		{"openai max_tokens above the reply", openaiPath, openaiBody(`,"max_tokens":50`),
			func(t *testing.T, ev []sseEvent) { checkOpenAI(t, ev, 5, "stop", false) }},
		{"anthropic", anthropicPath, anthropicBody(""), func(t *testing.T, ev []sseEvent) { checkAnthropic(t, ev, 5, "end_turn") }},
		{"anthropic max_tokens cuts the reply", anthropicPath, strings.Replace(anthropicBody(""), `"max_tokens":64`, `"max_tokens":2`, 1),
			func(t *testing.T, ev []sseEvent) { checkAnthropic(t, ev, 2, "max_tokens") }},
	}
	_, ts := start(t, fastOptions())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := do(ts, tt.path, tt.body)
			if err != nil {
				t.Fatal(err)
			}
			if res.status != http.StatusOK {
				t.Fatalf("status %d: %s", res.status, res.body)
			}
			if ct := res.header.Get("Content-Type"); ct != "text/event-stream" {
				t.Errorf("Content-Type = %q", ct)
			}
			tt.check(t, res.events)
		})
	}
}

func TestZeroTokensIsAnEmptyReply(t *testing.T) {
	o := fastOptions()
	o.Tokens = 0
	_, ts := start(t, o)
	for _, tc := range []struct{ name, path, body string }{
		{"openai", openaiPath, openaiBody(`,"stream_options":{"include_usage":true}`)},
		{"anthropic", anthropicPath, anthropicBody("")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := do(ts, tc.path, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			if !res.firstToken.IsZero() {
				t.Error("an empty reply carried content")
			}
			if tc.path == openaiPath {
				checkOpenAI(t, res.events, 0, "stop", true)
			} else {
				checkAnthropic(t, res.events, 0, "end_turn")
			}
		})
	}
}

// TestQueueFromLoad: with one slot and a reply that holds it for T, each
// request in line gets its first token T after the one before, in the order
// they arrived, while headers and ": queued" comments come at once.
func TestQueueFromLoad(t *testing.T) {
	const (
		prefill  = 100 * time.Millisecond
		interval = 50 * time.Millisecond
		tokens   = 4
		hold     = prefill + (tokens-1)*interval // T: slot held per reply
	)
	for _, tc := range []struct {
		name string
		path string
		body string
		n    int
	}{
		{"openai two requests", openaiPath, openaiBody(""), 2},
		{"openai four requests keep FIFO order", openaiPath, openaiBody(""), 4},
		{"anthropic three requests keep FIFO order", anthropicPath, anthropicBody(""), 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions()
			o.Slots, o.Prefill, o.TokenInterval, o.Tokens = 1, prefill, interval, tokens
			o.KeepAlive = 40 * time.Millisecond
			s, ts := start(t, o)

			results := make([]result, tc.n)
			errs := make([]error, tc.n)
			var wg sync.WaitGroup
			stopWatch := stalls.Watch()
			for i := range tc.n {
				wg.Go(func() { results[i], errs[i] = do(ts, tc.path, tc.body) })
				// Let request i reach the queue before i+1 is sent, so the
				// arrival order is known.
				waitFor(t, fmt.Sprintf("request %d to arrive", i), func() bool {
					st := s.Stats()
					return st.Busy+st.Queued >= i+1
				})
			}
			wg.Wait()
			// The upper bounds are set by the server's sleeps and the
			// client's reads, both late by the machine's stalls (at load
			// 8-9, 8 of 90 runs failed them, by 40-220 ms): each takes three
			// of the worst stall seen on top, nothing on a quiet machine,
			// where they fail a first request that queued or a slot held
			// twice as long.
			slack := 3 * stopWatch()
			for i, err := range errs {
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
			}

			near(t, "first request's queue", results[0].queue(), prefill, 5*time.Millisecond, 150*time.Millisecond+slack)
			for i := 1; i < tc.n; i++ {
				// The gap is between two client-side reads, and a first
				// token read late (a loaded machine) shortens it by as much:
				// its lower bound is half a hold, which still fails a broken
				// FIFO (a negative gap) or two replies at once. The exact
				// bound is on request i's first token itself: its slot came
				// at least i holds after request 0's, which came after
				// request 0 was sent, so it is at least prefill + i holds
				// after that, whatever the scheduling (a slot freed a token
				// early fails it).
				gap := results[i].firstToken.Sub(results[i-1].firstToken)
				near(t, fmt.Sprintf("request %d first token after request %d's", i, i-1), gap, hold, hold/2, 200*time.Millisecond+slack)
				if since, want := results[i].firstToken.Sub(results[0].start), prefill+time.Duration(i)*hold; since < want {
					t.Errorf("request %d: first token %v after request 0 was sent, want at least %v (prefill + %d holds)", i, since, want, i)
				}
				r := results[i]
				if hd := r.headers.Sub(r.start); hd > hold/2 {
					t.Errorf("request %d: headers after %v, want them before its slot frees (%v)", i, hd, hold)
				}
				if len(r.events) == 0 || r.events[0].comment != "queued" {
					t.Errorf("request %d: first event %+v, want a \": queued\" comment", i, r.events[:min(1, len(r.events))])
				}
			}
			if st := s.Stats(); st.Served != int64(tc.n) || st.Busy != 0 || st.Queued != 0 {
				t.Errorf("stats after the run = %+v", st)
			}
		})
	}
}

// TestSlotsServeInParallel: with as many slots as requests nobody queues.
// Queueing is seen exactly, not by the clock: the server sends a request
// that has to wait a ": queued" comment at once (KeepAlive > 0), before any
// slot could free, so a request that waited for another's slot has one,
// however late the machine ran. A 150 ms bound alone could not tell: a
// request queued behind one 100 ms prefill would first see a token at about
// 240 ms, under it. The timing bound stays for a slot that serves slowly
// (a prefill run twice, or slots that take turns without a queue), widened
// by three of the stalls seen during the run as TestQueueFromLoad's are.
func TestSlotsServeInParallel(t *testing.T) {
	o := DefaultOptions()
	o.Slots, o.Prefill, o.TokenInterval, o.Tokens = 3, 100*time.Millisecond, 20*time.Millisecond, 3
	s, ts := start(t, o)
	var wg sync.WaitGroup
	results := make([]result, 3)
	errs := make([]error, 3)
	stopWatch := stalls.Watch()
	for i := range 3 {
		wg.Go(func() { results[i], errs[i] = do(ts, openaiPath, openaiBody("")) })
	}
	wg.Wait()
	slack := 3 * stopWatch()
	for i, r := range results {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		for _, ev := range r.events {
			if ev.comment == "queued" {
				t.Errorf("request %d waited for a slot (a \": queued\" comment) with a slot per request", i)
				break
			}
		}
		near(t, fmt.Sprintf("request %d queue", i), r.queue(), o.Prefill, 5*time.Millisecond, 150*time.Millisecond+slack)
	}
	if st := s.Stats(); st.Served != 3 {
		t.Errorf("stats after the run = %+v, want 3 served", st)
	}
}

func TestFaults(t *testing.T) {
	tests := []struct {
		name  string
		opts  func(*Options)
		path  string
		body  string
		check func(t *testing.T, r result, st Stats)
	}{
		{"openai 429", func(o *Options) { o.Fail429 = 1 }, openaiPath, openaiBody(""), func(t *testing.T, r result, st Stats) {
			var v struct {
				Error struct{ Type, Message string }
			}
			if err := json.Unmarshal([]byte(r.body), &v); err != nil || v.Error.Type != "rate_limit_error" {
				t.Errorf("429 body %q (%v)", r.body, err)
			}
			if st.RateLimited != 1 || st.Served != 0 {
				t.Errorf("stats %+v", st)
			}
		}},
		{"anthropic 429", func(o *Options) { o.Fail429 = 1 }, anthropicPath, anthropicBody(""), func(t *testing.T, r result, _ Stats) {
			var v struct {
				Type  string
				Error struct{ Type string }
			}
			if err := json.Unmarshal([]byte(r.body), &v); err != nil || v.Type != "error" || v.Error.Type != "rate_limit_error" {
				t.Errorf("429 body %q (%v)", r.body, err)
			}
		}},
		{"openai midstream error", func(o *Options) { o.FailMidstream = 1 }, openaiPath, openaiBody(`,"stream_options":{"include_usage":true}`), func(t *testing.T, r result, st Stats) {
			chunks, done := decodeOpenAI(t, r.events)
			if done {
				t.Error("a failed stream ended with [DONE]")
			}
			// role chunk, half of 6 tokens, then the error
			if len(chunks) != 1+3+1 {
				t.Fatalf("got %d chunks, want 5", len(chunks))
			}
			last := chunks[len(chunks)-1]
			if last.Error == nil || last.Error.Type != "server_error" || len(last.Choices) != 0 {
				t.Errorf("last chunk = %+v, want an error object", last)
			}
			if st.MidstreamFailures != 1 {
				t.Errorf("stats %+v", st)
			}
		}},
		{"anthropic midstream error", func(o *Options) { o.FailMidstream = 1 }, anthropicPath, anthropicBody(""), func(t *testing.T, r result, _ Stats) {
			var names []string
			for _, ev := range r.events {
				names = append(names, ev.name)
			}
			want := []string{"message_start", "content_block_start", "ping",
				"content_block_delta", "content_block_delta", "content_block_delta", "error"}
			if !slices.Equal(names, want) {
				t.Fatalf("events %v, want %v", names, want)
			}
			var v struct {
				Type  string
				Error struct{ Type string }
			}
			if err := json.Unmarshal([]byte(r.events[len(r.events)-1].data), &v); err != nil || v.Type != "error" || v.Error.Type != "overloaded_error" {
				t.Errorf("error event data %q (%v)", r.events[len(r.events)-1].data, err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := fastOptions()
			o.Tokens = 6
			tt.opts(&o)
			s, ts := start(t, o)
			r, err := do(ts, tt.path, tt.body)
			if err != nil {
				t.Fatal(err)
			}
			if o.Fail429 == 1 {
				if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") != "7" {
					t.Errorf("status %d Retry-After %q, want 429 and 7", r.status, r.header.Get("Retry-After"))
				}
			} else if r.status != http.StatusOK {
				t.Errorf("status %d, want 200", r.status)
			}
			tt.check(t, r, s.Stats())
		})
	}
}

// TestSeedIsDeterministic: the same seed gives the same faults in the same order.
func TestSeedIsDeterministic(t *testing.T) {
	pattern := func(seed uint64) string {
		o := fastOptions()
		o.Tokens, o.Fail429, o.Seed = 1, 0.5, seed
		_, ts := start(t, o)
		var b strings.Builder
		for range 24 {
			r, err := do(ts, openaiPath, openaiBody(""))
			if err != nil {
				t.Fatal(err)
			}
			b.WriteString(map[bool]string{true: "x", false: "."}[r.status == http.StatusTooManyRequests])
		}
		return b.String()
	}
	a, b, c := pattern(42), pattern(42), pattern(43)
	if a != b {
		t.Errorf("seed 42 gave %s then %s", a, b)
	}
	if !strings.Contains(a, "x") || !strings.Contains(a, ".") {
		t.Errorf("P=0.5 over 24 requests gave %s", a)
	}
	if a == c {
		t.Errorf("seeds 42 and 43 gave the same pattern %s", a)
	}
}

func TestBadRequests(t *testing.T) {
	tests := []struct {
		name, method, path, body string
		noVersion                bool
		status                   int
		want                     string // in the body
	}{
		{"openai non-stream", "POST", openaiPath, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, false, 400, "stream"},
		{"openai bad json", "POST", openaiPath, `{"model":`, false, 400, "request body"},
		{"openai no messages", "POST", openaiPath, `{"model":"m","stream":true,"messages":[]}`, false, 400, "messages"},
		{"openai no model", "POST", openaiPath, `{"stream":true,"messages":[{"role":"user","content":"hi"}]}`, false, 400, "model"},
		{"openai max_tokens 0", "POST", openaiPath, openaiBody(`,"max_tokens":0`), false, 400, "max_tokens"},
		{"anthropic non-stream", "POST", anthropicPath, `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, false, 400, "stream"},
		{"anthropic without max_tokens", "POST", anthropicPath, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`, false, 400, "max_tokens"},
		{"anthropic without version header", "POST", anthropicPath, anthropicBody(""), true, 400, "anthropic-version"},
		{"GET on completions", "GET", openaiPath, "", false, 405, ""},
		{"unknown path", "POST", "/v1/completions", "{}", false, 404, ""},
	}
	_, ts := start(t, fastOptions())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, ts.URL+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if !tt.noVersion {
				req.Header.Set("anthropic-version", "2023-06-01")
			}
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
			if tt.want == "" {
				return
			}
			var v map[string]any
			if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
				t.Fatalf("error body is not JSON: %v", err)
			}
			if b, _ := json.Marshal(v["error"]); !strings.Contains(string(b), tt.want) {
				t.Errorf("error %s does not mention %q", b, tt.want)
			}
		})
	}
}

func TestHealthz(t *testing.T) {
	o := fastOptions()
	o.Slots = 3
	_, ts := start(t, o)
	resp, err := ts.Client().Get(ts.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st Stats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || st.Slots != 3 || st.LoadMultiplier != 1 {
		t.Errorf("status %d stats %+v", resp.StatusCode, st)
	}
}

// TestCloseEndsStreams: Close cuts a stream that is generating and one that
// is waiting in the queue, so http.Server.Shutdown is not held up.
func TestCloseEndsStreams(t *testing.T) {
	o := DefaultOptions()
	o.Prefill, o.TokenInterval, o.Tokens = 0, time.Hour, 3
	s, ts := start(t, o)
	done := make(chan result, 2)
	for i := range 2 {
		go func() {
			r, _ := do(ts, openaiPath, openaiBody(""))
			done <- r
		}()
		waitFor(t, fmt.Sprintf("request %d to arrive", i), func() bool {
			st := s.Stats()
			return st.Busy+st.Queued >= i+1
		})
	}
	closed := time.Now()
	s.Close()
	s.Close() // idempotent
	for range 2 {
		select {
		case r := <-done:
			if _, fin := decodeOpenAI(t, r.events); fin {
				t.Error("a cut stream ended with [DONE]")
			}
		case <-time.After(3 * time.Second):
			t.Fatal("stream still open 3s after Close")
		}
	}
	if d := time.Since(closed); d > time.Second {
		t.Errorf("streams took %v to end after Close", d)
	}
	if st := s.Stats(); st.Busy != 0 || st.Queued != 0 {
		t.Errorf("slots not released after Close: %+v", st)
	}
}
