package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
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

// A probe never follows a redirect: the lane got one request, which its
// budget booked, and a redirect followed would re-post the body (a 307 or
// 308) as a second, unbooked request, or carry the key to another host.
// The redirect is an http_error naming where it pointed: its URL without
// credentials or query, withheld when it repeats a word of the prompt of
// six characters or more, escaped or not (a server could echo the prompt
// there).
func TestRedirectNotFollowed(t *testing.T) {
	other := &recorder{next: okOpenAIStream}
	otherURL := serve(t, other)
	for _, c := range []struct {
		name     string
		location func(self string) string // the Location, given the first server's URL
		want     string                   // the Detail's tail
	}{
		{"to itself", func(string) string { return "/chat/completions" }, "redirect to {self}/chat/completions"},
		{"same origin", func(string) string { return "/v2/chat/completions?k=" + testKey }, "redirect to {self}/v2/chat/completions"},
		{"another host", func(string) string { return otherURL + "/chat/completions" }, "redirect to " + otherURL + "/chat/completions"},
		{"another host with credentials", func(string) string {
			return strings.Replace(otherURL, "://", "://u:"+testKey+"@", 1) + "/x#" + testKey
		}, "redirect to " + otherURL + "/x"},
		{"echoing the prompt", func(string) string { return otherURL + "/PROMPTMARK-a64" }, "redirect to a Location that repeats the prompt (withheld)"},
		{"echoing the prompt escaped", func(string) string { return otherURL + "/PROMPTM%41RK-a64" }, "redirect to a Location that repeats the prompt (withheld)"},
		{"echoing a six-letter word", func(string) string { return otherURL + "/x/sixlet" }, "redirect to a Location that repeats the prompt (withheld)"},
		{"a shorter word of the prompt", func(string) string { return otherURL + "/reply" }, "redirect to " + otherURL + "/reply"},
		{"no Location", func(string) string { return "" }, "redirect without a Location"},
	} {
		for _, code := range []int{300, 301, 302, 303, 307, 308, 399} { // the 3xx range, its ends too
			t.Run(c.name+"/"+fmt.Sprint(code), func(t *testing.T) {
				var posts atomic.Int64
				var self string
				self = serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					posts.Add(1)
					_, _ = io.Copy(io.Discard, r.Body)
					if loc := c.location(self); loc != "" {
						w.Header().Set("Location", loc)
					}
					w.WriteHeader(code)
				}))
				tg := target(OpenAI, self)
				tg.Prompt = "Reply with ok, PROMPTMARK-a64 sixlet"
				s, err := Run(context.Background(), tg)
				if n := posts.Load(); n != 1 {
					t.Errorf("the lane got %d POSTs, want 1", n)
				}
				want := fmt.Sprintf("http %d from POST %s/chat/completions; ", code, self) + strings.ReplaceAll(c.want, "{self}", self)
				if s.Outcome != HTTPError || s.Status != code || !errors.Is(err, ErrStatus) || s.Detail != want {
					t.Errorf("outcome %s status %d err %v, detail\n%q; want http_error %d\n%q", s.Outcome, s.Status, err, s.Detail, code, want)
				}
				checkError(t, s, err)
				if strings.Contains(fmt.Sprint(s, err), testKey) {
					t.Errorf("the key reached the sample or the error")
				}
			})
		}
	}
	if n := len(other.requests()); n != 0 {
		t.Errorf("the other host got %d requests, want 0", n)
	}
}
