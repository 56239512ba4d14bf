package probe

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// seen is what a server received.
type seen struct {
	method, path string
	header       http.Header
	body         map[string]any
}

// recorder answers with a scripted stream and records each request.
type recorder struct {
	next http.Handler
	mu   sync.Mutex
	reqs []seen
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(b, &body)
	rc.mu.Lock()
	rc.reqs = append(rc.reqs, seen{r.Method, r.URL.Path, r.Header.Clone(), body})
	rc.mu.Unlock()
	rc.next.ServeHTTP(w, r)
}

func (rc *recorder) requests() []seen {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]seen(nil), rc.reqs...)
}

var (
	okOpenAIStream    = script{steps: []step{{0, oaText(genText)}, {0, oaDone}}}
	okAnthropicStream = script{steps: []step{{0, anText(genText)}, {0, anStop()}}}
)

func TestRequestShape(t *testing.T) {
	tests := []struct {
		name       string
		api        API
		base       string // path appended to the server URL
		key        string
		usage      bool
		wantPath   string
		wantHeader map[string]string // "" means absent
		wantUsage  bool              // stream_options.include_usage present and true
	}{
		{"openai with usage", OpenAI, "/v1", testKey, true, "/v1/chat/completions",
			map[string]string{"Authorization": "Bearer " + testKey, "X-Api-Key": "", "Anthropic-Version": ""}, true},
		{"openai without usage", OpenAI, "/v1/", testKey, false, "/v1/chat/completions",
			map[string]string{"Authorization": "Bearer " + testKey}, false},
		{"openai without key", OpenAI, "", "", true, "/chat/completions",
			map[string]string{"Authorization": ""}, true},
		{"anthropic", Anthropic, "", testKey, true, "/v1/messages",
			map[string]string{"X-Api-Key": testKey, "Anthropic-Version": "2023-06-01", "Authorization": ""}, false},
		{"anthropic without key", Anthropic, "/", "", false, "/v1/messages",
			map[string]string{"X-Api-Key": "", "Anthropic-Version": "2023-06-01"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			stream := okOpenAIStream
			if tt.api == Anthropic {
				stream = okAnthropicStream
			}
			rec := &recorder{next: stream}
			tg := target(tt.api, serve(t, rec)+tt.base)
			tg.APIKey, tg.IncludeUsage = tt.key, tt.usage
			if _, err := Run(context.Background(), tg); err != nil {
				t.Fatalf("Run: %v", err)
			}
			reqs := rec.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1 (a probe never retries)", len(reqs))
			}
			r := reqs[0]
			if r.method != http.MethodPost || r.path != tt.wantPath {
				t.Errorf("%s %s, want POST %s", r.method, r.path, tt.wantPath)
			}
			for k, want := range tt.wantHeader {
				if got := r.header.Get(k); got != want {
					t.Errorf("header %s = %q, want %q", k, got, want)
				}
			}
			if ct := r.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("content-type %q", ct)
			}
			checkBody(t, r.body, tt.usage && tt.api == OpenAI)
		})
	}
}

func checkBody(t *testing.T, body map[string]any, wantUsage bool) {
	t.Helper()
	if body["model"] != "m1" || body["stream"] != true || body["max_tokens"] != float64(8) {
		t.Errorf("body model/stream/max_tokens = %v/%v/%v", body["model"], body["stream"], body["max_tokens"])
	}
	msgs, _ := body["messages"].([]any)
	if len(msgs) != 1 {
		t.Fatalf("messages = %v", body["messages"])
	}
	msg, _ := msgs[0].(map[string]any)
	if msg["role"] != "user" || msg["content"] != "say ok" {
		t.Errorf("message = %v", msg)
	}
	so, present := body["stream_options"]
	if present != wantUsage {
		t.Fatalf("stream_options present = %v, want %v", present, wantUsage)
	}
	if present {
		if opts, _ := so.(map[string]any); opts["include_usage"] != true {
			t.Errorf("stream_options = %v", so)
		}
	}
}

// TestRedirectToAnotherHost: a redirect to another origin is refused before
// the second server is contacted, so it never sees a credential.
func TestRedirectToAnotherHost(t *testing.T) {
	for _, api := range []API{OpenAI, Anthropic} {
		for _, code := range []int{301, 302, 303, 307, 308} {
			t.Run(string(api)+"/"+http.StatusText(code), func(t *testing.T) {
				t.Parallel()
				other := &recorder{next: okOpenAIStream}
				otherURL := serve(t, other)
				first := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					http.Redirect(w, r, otherURL+r.URL.Path, code)
				}))
				s, err := Run(context.Background(), target(api, first))
				if s.Outcome != ConnError || s.Status != code || !errors.Is(err, ErrRedirectHost) {
					t.Errorf("outcome %s status %d err %v; want conn_error %d redirect refused", s.Outcome, s.Status, err, code)
				}
				for _, r := range other.requests() {
					if r.header.Get("Authorization") != "" || r.header.Get("X-Api-Key") != "" {
						t.Errorf("second host got a credential")
					}
				}
				if n := len(other.requests()); n != 0 {
					t.Errorf("second host got %d requests, want 0", n)
				}
			})
		}
	}
}

// TestRedirectSameHost: a same-origin 307/308 is followed with the body and
// the key intact.
func TestRedirectSameHost(t *testing.T) {
	for _, code := range []int{307, 308} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			rec := &recorder{next: okOpenAIStream}
			url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasPrefix(r.URL.Path, "/old/") {
					http.Redirect(w, r, "/new/"+strings.TrimPrefix(r.URL.Path, "/old/"), code)
					return
				}
				rec.ServeHTTP(w, r)
			}))
			s, err := Run(context.Background(), target(OpenAI, url+"/old"))
			if err != nil || s.Outcome != OK {
				t.Fatalf("outcome %s err %v", s.Outcome, err)
			}
			reqs := rec.requests()
			if len(reqs) != 1 || reqs[0].path != "/new/chat/completions" {
				t.Fatalf("requests %+v", reqs)
			}
			if reqs[0].header.Get("Authorization") != "Bearer "+testKey {
				t.Errorf("key not forwarded on a same-origin redirect")
			}
			checkBody(t, reqs[0].body, true)
		})
	}
}
