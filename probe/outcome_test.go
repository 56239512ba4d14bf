package probe

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// scenario is one server behaviour and the outcome a probe must report.
type scenario struct {
	name        string
	api         API
	sc          script                   // the server, unless url is set
	handler     http.Handler             // a custom server, unless url is set
	url         func(testing.TB) string  // a custom address
	tweak       func(*Target)            //
	cancelAfter time.Duration            // the caller cancels
	want        Outcome                  //
	status      int                      //
	headersSeen bool                     //
	retryAfter  string                   //
	cause       error                    // errors.Is target
	detail      string                   // substring of Detail
	check       func(*testing.T, Sample) // extra assertions
	_           struct{}                 //
}

// shortTimeout is the timeout of the stall scenarios. Within it the
// probe must connect, send and see the headers (and, for "stall after
// first token", a token) before the stall: under -race, beside this
// test's other parallel scenarios (megabyte lines, a gzip bomb) on a
// loaded 2-core machine, that can take a few hundred milliseconds, so
// it is a second, which costs the test that second once (the scenarios
// run in parallel).
const shortTimeout = time.Second

func short(t *Target) { t.Timeout = shortTimeout }

// endlessEmpty keeps the stream alive with role-only chunks and empty
// content deltas (OpenAI) or pings and empty text deltas (Anthropic), and
// never sends a token: none of it may end the queue.
func endlessEmpty(api API) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		chunks := []string{
			"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n",
			"data: {\"choices\":[{\"delta\":{\"content\":\"\"}}]}\n\n",
		}
		if api == Anthropic {
			chunks = []string{
				"event: ping\ndata: {\"type\":\"ping\"}\n\n",
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"\"}}\n\n",
			}
		}
		for i := 0; wait(r, 5*time.Millisecond); i++ {
			_, _ = fmt.Fprint(w, chunks[i%len(chunks)])
			_ = rc.Flush()
		}
	}
}

// endlessComments keeps the stream alive with comments and never sends a token.
var endlessComments = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	rc := http.NewResponseController(w)
	for wait(r, 10*time.Millisecond) {
		_, _ = fmt.Fprint(w, ": still queued\n\n")
		_ = rc.Flush()
	}
})

// tlsURL is a TLS server whose certificate no system root signs.
func tlsURL(t testing.TB) string {
	srv := httptest.NewUnstartedServer(okOpenAIStream)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL
}

// redirectLoop redirects every request to itself.
var redirectLoop = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, r.URL.Path, http.StatusTemporaryRedirect)
})

func scenarios() []scenario {
	jsonCT := map[string]string{"Content-Type": "application/json"}
	okOpenAI := []step{{0, oaRole()}, {0, oaText(genText)}, {0, oaFinish()}, {0, oaUsage(3)}, {0, oaDone}}
	return []scenario{
		{name: "ok openai", api: OpenAI, sc: script{steps: okOpenAI}, want: OK, status: 200, headersSeen: true},
		{name: "ok anthropic", api: Anthropic, sc: script{steps: []step{
			{0, anStart()}, {0, anBlock()}, {0, anText(genText)}, {0, anDelta(1)}, {0, anStop()}}},
			want: OK, status: 200, headersSeen: true},
		{name: "ok openai finish then clean close", api: OpenAI, sc: script{steps: []step{
			{0, oaText(genText)}, {0, oaFinish()}}}, want: OK, status: 200, headersSeen: true},
		{name: "ok openai gzip", api: OpenAI, sc: script{gzip: true,
			header: map[string]string{"Content-Encoding": "gzip"}, steps: okOpenAI},
			want: OK, status: 200, headersSeen: true},

		{name: "429 seconds", api: OpenAI, sc: script{status: 429,
			header: map[string]string{"Content-Type": "application/json", "Retry-After": "7"},
			steps:  []step{{0, errorBody("rate_limit_error")}}},
			want: RateLimited, status: 429, headersSeen: true, retryAfter: "7", cause: ErrStatus, detail: "http 429: rate_limit_error"},
		{name: "429 http-date anthropic", api: Anthropic, sc: script{status: 429,
			header: map[string]string{"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}},
			want: RateLimited, status: 429, headersSeen: true, retryAfter: "Wed, 21 Oct 2015 07:28:00 GMT", cause: ErrStatus},

		{name: "429 echoing the key in Retry-After", api: Anthropic, sc: script{status: 429,
			header: map[string]string{"Retry-After": testKey}},
			want: RateLimited, status: 429, headersSeen: true, retryAfter: "", cause: ErrStatus},
		{name: "429 rate-limit headers echoing the key", api: OpenAI, sc: script{status: 429,
			header: map[string]string{"x-ratelimit-remaining-requests": testKey, "x-ratelimit-reset-requests": genText,
				"anthropic-ratelimit-requests-reset": testKey, "x-ratelimit-reset": genText, "Retry-After": "3"}},
			want: RateLimited, status: 429, headersSeen: true, retryAfter: "3", cause: ErrStatus,
			check: func(t *testing.T, s Sample) {
				if s.QuotaKnown || s.QuotaReset != 0 || s.RetryAfterWait < 3*time.Second {
					t.Errorf("quota known %v, reset %v, retry-after wait %v", s.QuotaKnown, s.QuotaReset, s.RetryAfterWait)
				}
			}},
		{name: "503 with Retry-After", api: OpenAI, sc: script{status: 503,
			header: map[string]string{"Content-Type": "application/json", "Retry-After": "120"},
			steps:  []step{{0, errorBody("overloaded_error")}}},
			want: HTTPError, status: 503, headersSeen: true, retryAfter: "120", cause: ErrStatus, detail: "http 503: overloaded_error"},
		{name: "503", api: OpenAI, sc: script{status: 503, header: jsonCT, steps: []step{{0, errorBody("server_error")}}},
			want: HTTPError, status: 503, headersSeen: true, cause: ErrStatus, detail: "http 503: server_error"},
		{name: "529 anthropic overloaded", api: Anthropic, sc: script{status: 529, header: jsonCT,
			steps: []step{{0, errorBody("overloaded_error")}}},
			want: HTTPError, status: 529, headersSeen: true, cause: ErrStatus, detail: "overloaded_error"},
		{name: "200 with JSON error body", api: OpenAI, sc: script{header: jsonCT,
			steps: []step{{0, errorBody("invalid_request_error")}}},
			want: HTTPError, status: 200, headersSeen: true, cause: ErrNotStream, detail: "invalid_request_error"},
		{name: "200 JSON body labelled event-stream", api: Anthropic, sc: script{
			steps: []step{{0, errorBody("not_found_error")}}},
			want: HTTPError, status: 200, headersSeen: true, cause: ErrNotStream, detail: "JSON body"},
		{name: "200 html", api: OpenAI, sc: script{header: map[string]string{"Content-Type": "text/html"},
			steps: []step{{0, "<html>" + genText + "</html>"}}},
			want: HTTPError, status: 200, headersSeen: true, cause: ErrNotStream, detail: "text/html"},
		{name: "brotli encoding", api: OpenAI, sc: script{header: map[string]string{"Content-Encoding": "br"},
			steps: okOpenAI}, want: HTTPError, status: 200, headersSeen: true, cause: ErrEncoding},

		{name: "refused connection", api: OpenAI, url: refusedURL, want: ConnError, detail: "refused"},
		{name: "tls unknown authority", api: Anthropic, url: tlsURL, want: ConnError, detail: "certificate"},
		{name: "redirect to itself", api: Anthropic, handler: redirectLoop, want: HTTPError, status: 307, headersSeen: true,
			cause: ErrStatus, detail: "/v1/messages; redirect to http://"},
		{name: "bad base url", api: OpenAI, url: func(testing.TB) string { return "ftp://example.com" },
			want: ConnError, cause: ErrInvalidTarget},
		{name: "unknown api", api: "grpc", sc: script{steps: okOpenAI}, want: ConnError, cause: ErrInvalidTarget},

		{name: "stall before headers", api: OpenAI, sc: script{headerWait: time.Hour}, tweak: short,
			want: Timeout, cause: context.DeadlineExceeded, detail: "before response headers"},
		{name: "stall after headers", api: OpenAI, sc: script{steps: []step{{0, oaRole()}}, stall: true}, tweak: short,
			want: Timeout, status: 200, headersSeen: true, cause: context.DeadlineExceeded, detail: "no token yet"},
		{name: "stall after first token", api: Anthropic, sc: script{steps: []step{{0, anStart()}, {0, anText(genText)}},
			stall: true}, tweak: short, want: Timeout, status: 200, headersSeen: true, detail: "mid-generation",
			check: func(t *testing.T, s Sample) {
				if s.FirstToken.IsZero() || s.Tokens != 1 {
					t.Errorf("first token %v, tokens %d; want set, 1", s.FirstToken, s.Tokens)
				}
			}},
		{name: "endless comments", api: OpenAI, handler: endlessComments, tweak: short,
			want: Timeout, status: 200, headersSeen: true, cause: context.DeadlineExceeded},
		{name: "endless empty deltas openai", api: OpenAI, handler: endlessEmpty(OpenAI), tweak: short,
			want: Timeout, status: 200, headersSeen: true, cause: context.DeadlineExceeded, detail: "no token yet"},
		{name: "endless empty deltas anthropic", api: Anthropic, handler: endlessEmpty(Anthropic), tweak: short,
			want: Timeout, status: 200, headersSeen: true, cause: context.DeadlineExceeded, detail: "no token yet"},
		{name: "stall before headers gzip", api: OpenAI, sc: script{gzip: true,
			header: map[string]string{"Content-Encoding": "gzip"}, stall: true}, tweak: short,
			want: Timeout, status: 200, headersSeen: true},
		{name: "caller cancels", api: OpenAI, sc: script{steps: []step{{0, oaRole()}}, stall: true},
			cancelAfter: 500 * time.Millisecond, want: Timeout, status: 200, headersSeen: true, // headers first: see shortTimeout
			cause: context.Canceled, detail: "canceled"},

		{name: "openai error chunk", api: OpenAI, sc: script{steps: []step{{0, oaText(genText)},
			{0, "data: " + errorBody("server_error") + "\n\n"}}},
			want: StreamError, status: 200, headersSeen: true, cause: ErrErrorEvent, detail: "server_error"},
		{name: "openai error event", api: OpenAI, sc: script{steps: []step{{0, oaRole()},
			{0, "event: error\ndata: " + errorBody("server_overloaded") + "\n\n"}}},
			want: StreamError, status: 200, headersSeen: true, cause: ErrErrorEvent, detail: "server_overloaded"},
		{name: "anthropic error event", api: Anthropic, sc: script{steps: []step{{0, anStart()}, {0, anText(genText)},
			{0, "event: error\ndata: " + errorBody("overloaded_error") + "\n\n"}}},
			want: StreamError, status: 200, headersSeen: true, cause: ErrErrorEvent, detail: "overloaded_error"},
		{name: "garbage lines", api: OpenAI, sc: script{steps: []step{{0, "hello " + genText + "\nnot sse\n\n"}}},
			want: StreamError, status: 200, headersSeen: true, cause: ErrNoTerminal},
		{name: "garbage in a data line", api: Anthropic, sc: script{steps: []step{{0, "data: " + genText + "\n\n"}}},
			want: StreamError, status: 200, headersSeen: true, cause: ErrMalformed},
		{name: "invalid json", api: OpenAI, sc: script{steps: []step{{0, `data: {"choices":[{"delta":{"content":"` + genText + "\n\n"}}},
			want: StreamError, status: 200, headersSeen: true, cause: ErrMalformed},
		{name: "invalid utf-8", api: OpenAI, sc: script{steps: []step{{0, `data: {"choices":[{"delta":{"content":"` + genText + "\xff\xfe\"}}]}\n\n"}}},
			want: StreamError, status: 200, headersSeen: true, cause: ErrInvalidUTF8},
		{name: "over-long line", api: OpenAI, sc: script{steps: []step{{0, "data: " + strings.Repeat(genText, 200_000) + "\n\n"}}},
			tweak: func(t *Target) { t.MaxBytes = 32 << 20 },
			want:  StreamError, status: 200, headersSeen: true, cause: ErrLineTooLong},
		{name: "byte cap", api: OpenAI, sc: script{steps: []step{{0, strings.Repeat(oaText(genText), 100)}}},
			tweak: func(t *Target) { t.MaxBytes = 2048 },
			want:  StreamError, status: 200, headersSeen: true, cause: ErrTooLarge},
		{name: "gzip bomb over byte cap", api: OpenAI, sc: script{gzip: true, header: map[string]string{"Content-Encoding": "gzip"},
			steps: []step{{0, ": " + strings.Repeat("0", 1<<20) + "\n\n"}}},
			tweak: func(t *Target) { t.MaxBytes = 64 << 10; t.MaxLine = 2 << 20 },
			want:  StreamError, status: 200, headersSeen: true, cause: ErrTooLarge},
		{name: "closes mid-token", api: OpenAI, sc: script{steps: []step{{0, oaText(genText)},
			{0, `data: {"choices":[{"delta":{"content":"` + genText}}},
			want: StreamError, status: 200, headersSeen: true, cause: ErrTruncated},
		{name: "connection dropped", api: Anthropic, sc: script{steps: []step{{0, anStart()}, {0, anText(genText)}}, kill: true},
			want: StreamError, status: 200, headersSeen: true, cause: ErrTruncated},
		{name: "closed without terminal event", api: Anthropic, sc: script{steps: []step{{0, anStart()}, {0, anText(genText)}}},
			want: StreamError, status: 200, headersSeen: true, cause: ErrNoTerminal},
		{name: "corrupt gzip", api: OpenAI, sc: script{header: map[string]string{"Content-Encoding": "gzip"}, steps: okOpenAI},
			want: StreamError, status: 200, headersSeen: true, cause: gzip.ErrHeader},

		{name: "empty openai", api: OpenAI, sc: script{steps: []step{{0, oaRole()}, {0, oaText("")},
			{0, oaFinish()}, {0, oaUsage(0)}, {0, oaDone}}},
			want: Empty, status: 200, headersSeen: true},
		{name: "empty anthropic", api: Anthropic, sc: script{steps: []step{{0, anStart()}, {0, anPing()}, {0, anBlock()},
			{0, anText("")}, {0, anBlockStop()}, {0, anDelta(0)}, {0, anStop()}}},
			want: Empty, status: 200, headersSeen: true},
	}
}

// runScenario starts the scenario's server and probes it once.
func runScenario(t *testing.T, sc scenario) (Sample, error) {
	t.Helper()
	var url string
	switch {
	case sc.url != nil:
		url = sc.url(t)
	case sc.handler != nil:
		url = serve(t, sc.handler)
	default:
		url = serve(t, sc.sc)
	}
	tg := target(sc.api, url)
	if sc.tweak != nil {
		sc.tweak(&tg)
	}
	ctx := context.Background()
	if sc.cancelAfter > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		timer := time.AfterFunc(sc.cancelAfter, cancel)
		defer timer.Stop()
	}
	return Run(ctx, tg)
}

func TestOutcomes(t *testing.T) {
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			s, err := runScenario(t, sc)
			if s.Outcome != sc.want {
				t.Fatalf("outcome %s (%s), want %s", s.Outcome, s.Detail, sc.want)
			}
			checkError(t, s, err)
			if s.Status != sc.status || s.HeadersSeen != sc.headersSeen || s.RetryAfter != sc.retryAfter {
				t.Errorf("status %d, headers seen %v, retry-after %q; want %d, %v, %q",
					s.Status, s.HeadersSeen, s.RetryAfter, sc.status, sc.headersSeen, sc.retryAfter)
			}
			if sc.cause != nil && !errors.Is(err, sc.cause) {
				t.Errorf("error %v does not wrap %v", err, sc.cause)
			}
			if !strings.Contains(s.Detail, sc.detail) {
				t.Errorf("detail %q lacks %q", s.Detail, sc.detail)
			}
			if s.Start.IsZero() != (s.Outcome == ConnError && s.Status == 0 && errors.Is(err, ErrInvalidTarget)) {
				t.Errorf("start %v for outcome %s", s.Start, s.Outcome)
			}
			if s.End.IsZero() || len(s.Detail) > maxDetail+3 {
				t.Errorf("end %v, detail %d bytes", s.End, len(s.Detail))
			}
			if sc.check != nil {
				sc.check(t, s)
			}
		})
	}
}

// checkError asserts the error contract: nil iff OK, else an *Error that
// agrees with the Sample.
func checkError(t *testing.T, s Sample, err error) {
	t.Helper()
	if s.Outcome == OK {
		if err != nil || s.Detail != "" {
			t.Errorf("ok sample with err %v, detail %q", err, s.Detail)
		}
		return
	}
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("err %v (%T) is not a *probe.Error", err, err)
	}
	if pe.Outcome != s.Outcome || pe.Status != s.Status || pe.RetryAfter != s.RetryAfter ||
		pe.HeadersSeen != s.HeadersSeen || pe.Detail != s.Detail || pe.Lane != s.Lane {
		t.Errorf("error %+v disagrees with sample %+v", pe, s)
	}
	if s.Detail == "" {
		t.Errorf("failed sample without detail")
	}
}

// TestNoLeaks proves that for every outcome the API key and the generated
// text appear nowhere in the Sample, nor in the error or its causes, even
// when the server echoes both back in error bodies and events.
func TestNoLeaks(t *testing.T) {
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			s, err := runScenario(t, sc)
			texts := []string{fmt.Sprintf("%+v", s), fmt.Sprintf("%#v", s)}
			for e := err; e != nil; e = errors.Unwrap(e) {
				texts = append(texts, e.Error(), fmt.Sprintf("%+v", e))
			}
			for _, text := range texts {
				for _, secret := range []string{testKey, genText, "GENER"} {
					if strings.Contains(text, secret) {
						t.Errorf("%q found in %q", secret, text)
					}
				}
			}
		})
	}
}

// A server's own error type is named in a Detail only when the APIs document
// it: a token-shaped string could still echo the prompt.
func TestDetailNamesOnlyKnownErrorTypes(t *testing.T) {
	for _, typ := range []string{"PROMPTMARK-a64", "echo_" + genText} {
		t.Run(typ, func(t *testing.T) {
			url := serve(t, script{status: 400, header: map[string]string{"Content-Type": "application/json"},
				steps: []step{{0, errorBody(typ)}}})
			s, _ := Run(context.Background(), target(OpenAI, url))
			if s.Outcome != HTTPError || strings.Contains(s.Detail, typ) {
				t.Errorf("outcome %s, detail %q repeats the server's string", s.Outcome, s.Detail)
			}
		})
	}
}

// An HTTP error names the URL that was POSTed (never a key or a query), so
// a base_url missing its /v1 is plain from the 404, which names the fix.
func TestHTTPErrorNamesTheURL(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	s, err := Run(context.Background(), Target{Lane: "l", API: OpenAI, BaseURL: srv.URL, Model: "m", APIKey: "sk-secret-123", Timeout: 5 * time.Second})
	want := "http 404 from POST " + srv.URL + "/chat/completions; no /v1 in base_url: try " + srv.URL + "/v1"
	if err == nil || s.Detail != want {
		t.Fatalf("Detail %q, want %q", s.Detail, want)
	}
	if strings.Contains(err.Error(), "sk-secret-123") {
		t.Fatalf("the key reached the error: %v", err)
	}
}
