package probe

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// Secrets the leak test looks for: the key sent, and text the model "generates".
const (
	testKey = "sk-test-SECRET-4f9a0b"
	genText = "GENERATED-TEXT-7c1e"
)

// step is one write of a scripted server: wait, then write and flush.
type step struct {
	wait time.Duration
	data string
}

// script is an exact-timing SSE server: it sends headers (after headerWait),
// then each step with its delay, flushing after each.
type script struct {
	status     int               // 0: 200
	header     map[string]string // Content-Type defaults to text/event-stream; "" deletes
	headerWait time.Duration
	steps      []step
	gzip       bool // compress the body with gzip, flushing per step
	stall      bool // after the steps, hold the response open until the client leaves
	kill       bool // after the steps, drop the connection without ending the body
	log        *stepLog
}

// stepLog records when a script server started writing each step, on the
// test's own monotonic clock, so timing tests can compare the probe's
// timestamps with what the server really did.
type stepLog struct {
	mu   sync.Mutex
	read time.Time // when the server had read the whole request
	at   []time.Time
}

func (l *stepLog) markRead() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.read = time.Now()
}

func (l *stepLog) readAt() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.read
}

func (l *stepLog) mark() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.at = append(l.at, time.Now())
}

func (l *stepLog) times() []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Time(nil), l.at...)
}

// wait sleeps d or until the client leaves; it reports whether the client is still there.
func wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return r.Context().Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

func (sc script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	sc.log.markRead()
	if !wait(r, sc.headerWait) {
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for k, v := range sc.header {
		if v == "" {
			w.Header().Del(k)
			continue
		}
		w.Header().Set(k, v)
	}
	status := sc.status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	var out io.Writer = w
	var zw *gzip.Writer
	if sc.gzip {
		zw = gzip.NewWriter(w)
		out = zw
	}
	for _, s := range sc.steps {
		if !wait(r, s.wait) {
			return
		}
		sc.log.mark() // before the write: the client cannot read it earlier
		_, _ = io.WriteString(out, s.data)
		if zw != nil {
			_ = zw.Flush()
		}
		_ = rc.Flush()
	}
	switch {
	case sc.stall:
		<-r.Context().Done()
	case sc.kill:
		if conn, _, err := rc.Hijack(); err == nil {
			_ = conn.Close()
		}
	case zw != nil:
		_ = zw.Close()
	}
}

func serve(t testing.TB, h http.Handler) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// refusedURL is an address that was listened on and then closed.
func refusedURL(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return "http://" + addr
}

func jsonData(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return "data: " + string(b) + "\n\n"
}

type m = map[string]any

// OpenAI chunks.
func oaRole() string {
	return jsonData(m{"choices": []m{{"delta": m{"role": "assistant", "content": ""}}}})
}
func oaText(s string) string {
	return jsonData(m{"choices": []m{{"delta": m{"content": s}, "finish_reason": nil}}})
}
func oaReasoning(field, s string) string { return jsonData(m{"choices": []m{{"delta": m{field: s}}}}) }
func oaFinish() string {
	return jsonData(m{"choices": []m{{"delta": m{}, "finish_reason": "stop"}}, "usage": nil})
}
func oaUsage(n int) string {
	return jsonData(m{"choices": []m{}, "usage": m{"prompt_tokens": 9, "completion_tokens": n}})
}

const oaDone = "data: [DONE]\n\n"

// Anthropic events.
func anEvent(typ string, v m) string {
	v["type"] = typ
	b, _ := json.Marshal(v)
	return "event: " + typ + "\ndata: " + string(b) + "\n\n"
}
func anStart() string {
	return anEvent("message_start", m{"message": m{"id": "msg_1", "role": "assistant", "usage": m{"input_tokens": 9, "output_tokens": 1}}})
}
func anPing() string { return anEvent("ping", m{}) }
func anBlock() string {
	return anEvent("content_block_start", m{"index": 0, "content_block": m{"type": "text", "text": ""}})
}
func anText(s string) string {
	return anEvent("content_block_delta", m{"index": 0, "delta": m{"type": "text_delta", "text": s}})
}
func anThinking(s string) string {
	return anEvent("content_block_delta", m{"index": 0, "delta": m{"type": "thinking_delta", "thinking": s}})
}
func anBlockStop() string { return anEvent("content_block_stop", m{"index": 0}) }
func anDelta(tokens int) string {
	v := m{"delta": m{"stop_reason": "end_turn"}}
	if tokens >= 0 {
		v["usage"] = m{"output_tokens": tokens}
	}
	return anEvent("message_delta", v)
}
func anStop() string { return anEvent("message_stop", m{}) }

// errorBody is a JSON error that echoes the key and some generated text, as
// a careless server might: none of it may reach a Sample or an error.
func errorBody(typ string) string {
	return fmt.Sprintf(`{"type":"error","error":{"type":%q,"message":"key %s said %s"}}`, typ, testKey, genText)
}

func target(api API, url string) Target {
	return Target{
		Lane: "lane1", Kind: "free", API: api, BaseURL: url, Model: "m1",
		APIKey: testKey, Prompt: "say ok", MaxTokens: 8, Timeout: 5 * time.Second,
		IncludeUsage: true,
	}
}

func ms(d float64) string { return fmt.Sprintf("%.1fms", d*1000) }
