package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// A hostile lane echoes what it was sent (the Authorization and x-api-key
// headers, the request body with the prompt) back in every place a probe
// might copy into a Detail, a log line or the store: error bodies, error
// types, Retry-After, SSE error events, malformed data lines. Where it
// streams, the generated text is a marker the tests search for too.
type hostileMode string

const (
	echo401      hostileMode = "echo401"        // 401, JSON error whose message echoes everything
	keyAsType    hostileMode = "key_as_type"    // 400, the key itself as the error type and code
	echo429      hostileMode = "echo429"        // 429, Retry-After = the key, body echoes everything
	sseError     hostileMode = "sse_error"      // 200 stream: generated text, then an error event echoing everything
	okGen        hostileMode = "ok_gen"         // 200 stream of generated text, clean end
	malformed    hostileMode = "malformed"      // 200 stream: generated text, then a broken data line echoing everything
	json200      hostileMode = "json200"        // 200 application/json body echoing everything
	crossRedirct hostileMode = "cross_redirect" // 307 to another origin (whose path echoes the prompt) that records the headers it gets
	typeIsPrompt hostileMode = "type_is_prompt" // 400, the prompt marker as the error type
)

// hostile is one hostile lane server.
type hostile struct {
	mode      hostileMode
	gen       string // generated text marker
	promptMrk string // the marker inside the prompt
	key       string
	srv       *httptest.Server
	collector *httptest.Server // cross_redirect only: the other origin

	requests    atomic.Int64
	sawKey      atomic.Int64 // requests that carried the key
	sawPrompt   atomic.Int64 // request bodies that carried the prompt marker
	leakedToCol atomic.Int64 // requests at the collector that carried the key
}

func newHostile(t *testing.T, mode hostileMode, key, promptMarker, gen string) *hostile {
	t.Helper()
	h := &hostile{mode: mode, key: key, promptMrk: promptMarker, gen: gen}
	if mode == crossRedirct {
		h.collector = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.Contains(r.Header.Get("Authorization")+r.Header.Get("x-api-key"), key) {
				h.leakedToCol.Add(1)
			}
			w.WriteHeader(http.StatusTeapot)
		}))
		t.Cleanup(h.collector.Close)
	}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	return h
}

// lane is a lane config pointing at the server, with the dialect api.
func (h *hostile) lane(name, api, keyEnv string) laneSpec {
	if api == "anthropic" {
		return anthropicLane(name, "free", h.srv.URL, keyEnv)
	}
	return openaiLane(name, "free", h.srv.URL, keyEnv)
}

func (h *hostile) serve(w http.ResponseWriter, r *http.Request) {
	h.requests.Add(1)
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	auth, xkey := r.Header.Get("Authorization"), r.Header.Get("x-api-key")
	if strings.Contains(auth+xkey, h.key) {
		h.sawKey.Add(1)
	}
	if strings.Contains(string(body), h.promptMrk) {
		h.sawPrompt.Add(1)
	}
	anthropic := strings.HasSuffix(r.URL.Path, "/v1/messages")
	echo := fmt.Sprintf("you sent Authorization=%q x-api-key=%q body=%s; generated so far: %s", auth, xkey, body, h.gen)

	errJSON := func(typ string) []byte {
		var v any
		if anthropic {
			v = map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": echo}}
		} else {
			v = map[string]any{"error": map[string]any{"type": typ, "code": typ, "message": echo, "param": string(body)}}
		}
		b, _ := json.Marshal(v)
		return b
	}
	writeJSON := func(code int, b []byte) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write(b)
	}

	switch h.mode {
	case echo401:
		w.Header().Set("WWW-Authenticate", "Bearer realm="+auth)
		writeJSON(http.StatusUnauthorized, errJSON("authentication_error"))
		return
	case keyAsType:
		writeJSON(http.StatusBadRequest, errJSON(h.key))
		return
	case typeIsPrompt:
		writeJSON(http.StatusBadRequest, errJSON(h.promptMrk))
		return
	case echo429:
		w.Header().Set("Retry-After", h.key)
		writeJSON(http.StatusTooManyRequests, errJSON("rate_limit_error"))
		return
	case json200:
		writeJSON(http.StatusOK, errJSON("server_error"))
		return
	case crossRedirct:
		http.Redirect(w, r, h.collector.URL+r.URL.Path+"/"+h.promptMrk, http.StatusTemporaryRedirect)
		return
	}

	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	ev := func(typ, data string) {
		if typ != "" {
			fmt.Fprintf(w, "event: %s\n", typ)
		}
		fmt.Fprintf(w, "data: %s\n\n", data)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	mustJSON := func(v any) string {
		b, _ := json.Marshal(v)
		return string(b)
	}
	// Generated text first, so a probe that kept it would have it.
	if anthropic {
		ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"usage":{"input_tokens":5,"output_tokens":1}}}`)
		ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		for range 3 {
			ev("content_block_delta", mustJSON(map[string]any{"type": "content_block_delta", "index": 0,
				"delta": map[string]any{"type": "text_delta", "text": h.gen + " "}}))
		}
	} else {
		ev("", `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`)
		for range 3 {
			ev("", mustJSON(map[string]any{"id": "c1", "object": "chat.completion.chunk",
				"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": h.gen + " "}}}}))
		}
	}
	switch h.mode {
	case sseError:
		if anthropic {
			ev("error", string(errJSON("overloaded_error")))
		} else {
			ev("", string(errJSON("server_error")))
		}
	case malformed:
		ev("", `{"choices":[{"delta":{"content":"`+echo+`"}}`)
	case okGen:
		if anthropic {
			ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
			ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}`)
			ev("message_stop", `{"type":"message_stop"}`)
		} else {
			ev("", `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
			ev("", `{"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`)
			ev("", "[DONE]")
		}
	}
}
