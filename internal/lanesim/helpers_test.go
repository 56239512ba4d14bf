package lanesim

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// sseEvent is one event as a client saw it, stamped when its blank line arrived.
type sseEvent struct {
	name    string // "event:" field; "" for unnamed events
	data    string
	comment string // text of a ": comment" line, for comment-only events
	at      time.Time
}

// result is one streamed request as a client saw it.
type result struct {
	status     int
	header     http.Header
	body       string // non-SSE bodies
	start      time.Time
	headers    time.Time
	firstToken time.Time // first non-empty content delta
	events     []sseEvent
}

func (r result) queue() time.Duration { return r.firstToken.Sub(r.start) }

// start builds a Server with opts and an httptest server in front of it,
// both closed at the end of the test.
func start(t *testing.T, opts Options) (*Server, *httptest.Server) {
	t.Helper()
	s := New(opts)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		s.Close()
		ts.Close()
	})
	return s, ts
}

const (
	openaiPath    = "/v1/chat/completions"
	anthropicPath = "/v1/messages"
)

func openaiBody(extra string) string {
	return `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]` + extra + `}`
}

func anthropicBody(extra string) string {
	return `{"model":"m","stream":true,"max_tokens":64,"messages":[{"role":"user","content":"hi"}]` + extra + `}`
}

// do posts body to path and reads the whole response, timing each event.
func do(ts *httptest.Server, path, body string) (result, error) {
	req, err := http.NewRequest(http.MethodPost, ts.URL+path, strings.NewReader(body))
	if err != nil {
		return result{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	if path == anthropicPath {
		req.Header.Set("anthropic-version", "2023-06-01")
	}
	res := result{start: time.Now()}
	resp, err := ts.Client().Do(req)
	if err != nil {
		return res, err
	}
	defer resp.Body.Close()
	res.headers = time.Now()
	res.status = resp.StatusCode
	res.header = resp.Header
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, err := io.ReadAll(resp.Body)
		res.body = string(b)
		return res, err
	}
	br := bufio.NewReader(resp.Body)
	var ev sseEvent
	var pending bool
	for {
		line, err := br.ReadString('\n')
		if err == io.EOF {
			return res, nil
		}
		if err != nil {
			return res, err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if pending {
				ev.at = time.Now()
				res.events = append(res.events, ev)
				if res.firstToken.IsZero() && isContent(ev) {
					res.firstToken = ev.at
				}
			}
			ev, pending = sseEvent{}, false
		case strings.HasPrefix(line, ":"):
			ev.comment, pending = strings.TrimSpace(line[1:]), true
		case strings.HasPrefix(line, "event:"):
			ev.name, pending = strings.TrimSpace(line[len("event:"):]), true
		case strings.HasPrefix(line, "data:"):
			ev.data, pending = strings.TrimSpace(line[len("data:"):]), true
		default:
			return res, fmt.Errorf("unexpected SSE line %q", line)
		}
	}
}

// isContent reports whether ev carries generated text in either dialect.
func isContent(ev sseEvent) bool {
	var v struct {
		Type    string `json:"type"`
		Choices []struct {
			Delta struct {
				Content string `json:"content"`
			} `json:"delta"`
		} `json:"choices"`
		Delta struct {
			Text string `json:"text"`
		} `json:"delta"`
	}
	if ev.data == "" || json.Unmarshal([]byte(ev.data), &v) != nil {
		return false
	}
	if len(v.Choices) > 0 && v.Choices[0].Delta.Content != "" {
		return true
	}
	return v.Type == "content_block_delta" && v.Delta.Text != ""
}

// waitFor polls cond every few milliseconds for up to 3 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// near fails the test unless got is within [want-below, want+above].
func near(t *testing.T, what string, got, want, below, above time.Duration) {
	t.Helper()
	if got < want-below || got > want+above {
		t.Errorf("%s = %v, want %v (-%v/+%v)", what, got.Round(time.Millisecond), want, below, above)
	}
}
