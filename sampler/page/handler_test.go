package page

import (
	"context"
	"html/template"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestHandlerHTTP serves the page over real HTTP: what each method and path
// gets, with which headers.
func TestHandlerHTTP(t *testing.T) {
	p := testPage(tinyChart)
	mux := http.NewServeMux()
	mux.Handle("/", Handler(func(context.Context) Page { return p }))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	full := render(t, p)

	for _, tc := range []struct {
		method, path string
		code         int
		body         string // a prefix of the body; "" for none
		headers      map[string]string
	}{
		{"GET", "/", 200, full, map[string]string{
			"Content-Type":            "text/html; charset=utf-8",
			"Cache-Control":           "no-store",
			"Content-Security-Policy": ContentSecurityPolicy,
			"X-Content-Type-Options":  "nosniff",
			"Content-Length":          strconv.Itoa(len(full)),
		}},
		{"GET", "/?refresh=1", 200, full, nil},
		{"HEAD", "/", 200, "", map[string]string{"Content-Type": "text/html; charset=utf-8", "Content-Length": strconv.Itoa(len(full))}},
		{"POST", "/", 405, "method not allowed", map[string]string{"Allow": "GET, HEAD"}},
		{"DELETE", "/", 405, "method not allowed", nil},
		{"GET", "/index.html", 404, "404 page not found", map[string]string{"X-Content-Type-Options": "nosniff"}},
		{"GET", "/metrics", 404, "404 page not found", nil},
		{"GET", "/healthz", 200, "ok\n", nil},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, srv.URL+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			body, err := io.ReadAll(res.Body)
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != tc.code {
				t.Errorf("status %d, want %d", res.StatusCode, tc.code)
			}
			if !strings.HasPrefix(string(body), tc.body) || (tc.body == "" && len(body) > 0) {
				t.Errorf("body %.80q, want it to start with %.80q", body, tc.body)
			}
			for k, v := range tc.headers {
				if got := res.Header.Get(k); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
		})
	}
}

// clock is a settable time for the cache tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// get serves one GET / and returns the status and body.
func get(h http.Handler, ctx context.Context) (int, string) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil).WithContext(ctx))
	return rec.Code, rec.Body.String()
}

// TestHandlerCache: a page is loaded once per TTL, by the clock.
func TestHandlerCache(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []time.Duration // clock advance before each request
		loads []int64         // loads after each request
	}{
		{"5s",
			[]time.Duration{0, time.Second, 3*time.Second + 999*time.Millisecond, time.Millisecond, 4 * time.Second, time.Hour},
			[]int64{1, 1, 1, 2, 2, 3}},
		{"clock backwards",
			[]time.Duration{0, -time.Second, 0},
			[]int64{1, 2, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &clock{t: fixedNow}
			var loads atomic.Int64
			h := Handler(func(context.Context) Page {
				n := loads.Add(1)
				p := testPage(tinyChart)
				p.Site = "load-" + strconv.FormatInt(n, 10)
				return p
			}).(*handler)
			h.now = clk.now
			for i, d := range tc.steps {
				clk.add(d)
				code, body := get(h, context.Background())
				if code != 200 {
					t.Fatalf("request %d: status %d", i, code)
				}
				if got := loads.Load(); got != tc.loads[i] {
					t.Errorf("request %d: %d loads, want %d", i, got, tc.loads[i])
				}
				if want := "load-" + strconv.FormatInt(loads.Load(), 10); !strings.Contains(body, want) {
					t.Errorf("request %d: the page is not the newest load's (%s)", i, want)
				}
			}
		})
	}
}

// TestHandlerOneLoad: requests that find the page stale while a load runs
// wait for that load and serve its page; a request that gives up while
// waiting does not stop the others.
func TestHandlerOneLoad(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 10)
	var loads atomic.Int64
	h := Handler(func(context.Context) Page {
		loads.Add(1)
		started <- struct{}{}
		<-release
		return testPage(tinyChart)
	})
	var wg sync.WaitGroup
	codes := make([]int, 5)
	for i := range codes {
		wg.Go(func() { codes[i], _ = get(h, context.Background()) })
	}
	<-started
	// One more request gives up while it waits.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); get(h, ctx) }()
	cancel()
	<-done
	close(release)
	wg.Wait()
	if n := loads.Load(); n != 1 {
		t.Errorf("%d loads for 6 concurrent requests, want 1", n)
	}
	for i, c := range codes {
		if c != 200 {
			t.Errorf("request %d: status %d", i, c)
		}
	}
}

// TestHandlerCancelledLoad: a page loaded for a request that was cancelled
// meanwhile may be cut short, so it is not kept.
func TestHandlerCancelledLoad(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var loads atomic.Int64
	h := Handler(func(ctx context.Context) Page {
		if loads.Add(1) == 1 {
			cancel() // the first request's client goes away during the load
		}
		p := testPage(tinyChart)
		if err := ctx.Err(); err != nil {
			p.Healthy, p.Problem = false, "store: "+err.Error()
		}
		return p
	})
	get(h, ctx)
	code, body := get(h, context.Background())
	if code != 200 || strings.Contains(body, "context canceled") {
		t.Errorf("status %d; the cut-short page was served again: %v", code, strings.Contains(body, "context canceled"))
	}
	if n := loads.Load(); n != 2 {
		t.Errorf("%d loads, want 2", n)
	}
}

// TestHandlerRenderError: a render that fails half-way is a clean 500 with
// none of the page, and is not cached.
func TestHandlerRenderError(t *testing.T) {
	saved := page
	defer func() { page = saved }()
	page = template.Must(template.New("broken").Parse(`<!DOCTYPE html><p>{{.Site}}</p>{{.NoSuchField}}`))

	h := Handler(func(context.Context) Page { return testPage("") })
	code, body := get(h, context.Background())
	if code != http.StatusInternalServerError {
		t.Errorf("status %d, want 500", code)
	}
	if strings.Contains(body, "<p>") || strings.Contains(body, "DOCTYPE") {
		t.Errorf("half a page was sent: %q", body)
	}
	page = saved
	if code, body := get(h, context.Background()); code != 200 || !strings.HasPrefix(body, "<!DOCTYPE html>") {
		t.Errorf("after a failed render: status %d", code)
	}
}

func TestHandlerNilPageFields(t *testing.T) {
	// The zero Page renders: a sampler that knows nothing yet still has a page.
	code, body := get(Handler(func(context.Context) Page { return Page{} }), context.Background())
	if code != 200 || !strings.Contains(body, "This sampler owns no lanes.") {
		t.Errorf("status %d, body %.200q", code, body)
	}
}
