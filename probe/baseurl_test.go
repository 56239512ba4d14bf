package probe

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// base_url and /v1 (issue 20, item 4): an anthropic base_url works with or
// without /v1 (as the Anthropic SDKs take it, or as an OpenAI-compatible one
// is written); an openai base_url is taken as the OpenAI SDKs take it, and a
// 404 from one without a version segment names the base_url to try.
func TestBaseURLAndV1(t *testing.T) {
	var mu sync.Mutex
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = r.URL.Path
		mu.Unlock()
		http.NotFound(w, r)
	}))
	defer srv.Close()
	cases := []struct {
		api        API
		base, path string
		hint       string // "" for no hint
	}{
		{Anthropic, "", "/v1/messages", ""},
		{Anthropic, "/", "/v1/messages", ""},
		{Anthropic, "/v1", "/v1/messages", ""},
		{Anthropic, "/v1/", "/v1/messages", ""},
		{Anthropic, "/proxy", "/proxy/v1/messages", ""},
		{Anthropic, "/proxy/v1", "/proxy/v1/messages", ""},
		{OpenAI, "/v1", "/v1/chat/completions", ""},
		{OpenAI, "/v1/", "/v1/chat/completions", ""},
		{OpenAI, "/api/v1", "/api/v1/chat/completions", ""},
		{OpenAI, "/v1beta/openai", "/v1beta/openai/chat/completions", ""},
		{OpenAI, "/api/paas/v4", "/api/paas/v4/chat/completions", ""},
		{OpenAI, "", "/chat/completions", "/v1"},
		{OpenAI, "/", "/chat/completions", "/v1"},
		{OpenAI, "/api", "/api/chat/completions", "/api/v1"},
	}
	for _, c := range cases {
		t.Run(string(c.api)+" "+c.base, func(t *testing.T) {
			s, err := Run(context.Background(), target(c.api, srv.URL+c.base))
			if err == nil || s.Status != http.StatusNotFound {
				t.Fatalf("status %d, err %v: want a 404", s.Status, err)
			}
			mu.Lock()
			path := got
			mu.Unlock()
			if path != c.path {
				t.Errorf("POST %s, want %s", path, c.path)
			}
			want := "http 404 from POST " + srv.URL + c.path
			if c.hint != "" {
				want += "; no /v1 in base_url: try " + srv.URL + c.hint
			}
			if s.Detail != want {
				t.Errorf("Detail %q, want %q", s.Detail, want)
			}
			if strings.Contains(s.Detail, testKey) {
				t.Errorf("the key reached the Detail: %q", s.Detail)
			}
		})
	}
}
