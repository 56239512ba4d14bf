package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/lanewatch/lanewatch/internal/httpserve"
	"github.com/lanewatch/lanewatch/policy"
)

// The keys' values: no answer may hold them.
const (
	freeSecret = "sk-free-SECRET-123"
	paidSecret = "sk-ant-SECRET-456"
)

var testLanes = []Lane{
	{Lane: "free", Kind: "free", API: "openai", BaseURL: "http://127.0.0.1:1/v1", Model: "m-free", APIKeyEnv: "LW_TEST_FREE_KEY"},
	{Lane: "paid", Kind: "paid", API: "anthropic", BaseURL: "https://paid.example/v1", Model: "claude", APIKeyEnv: "LW_TEST_PAID_KEY"},
}

// testFile is a policy file of hour whose interactive class runs on lanes
// and whose book falls back to paid when paidEligible.
func testFile(hour, basis string, lanes []string, paidEligible bool) policy.File {
	return policy.File{Records: 16, Hour: hour, Timezone: "UTC", Basis: basis,
		Lanes: []policy.Lane{
			{Name: "free", Kind: "free", Eligible: true, Reason: policy.ReasonOK, NextQueueS: 40, TokPerS: 40, Samples: 24,
				LastSample: time.Date(2026, 11, 30, 14, 47, 3, 0, time.UTC)},
			{Name: "paid", Kind: "paid", Eligible: paidEligible, Reason: map[bool]string{true: policy.ReasonOK, false: policy.ReasonProbeFailed}[paidEligible],
				NextQueueS: 1.25, TokPerS: 160, Samples: 24, Failures: 1},
		},
		Classes: []policy.Class{{Name: "interactive", DeadlineS: 60, CeilingTokens: 4000, EstTokens: 800, Lanes: lanes,
			Book: policy.BookPolicy{DeadlineS: 60, CeilingTokens: 4000, NextQueueS: 40, NextGenS: 12, NextEstTokens: 800,
				PaidQueueS: 1.25, PaidUSDPer1k: 0.002, FreeEligible: true, PaidEligible: paidEligible, FreeLane: "free", PaidLane: "paid"}}},
	}
}

// calibratedFile is testFile of a calibrated live file whose interactive
// class runs on free, then paid, with cut-over c.
func calibratedFile(hour string, c policy.Cutover) policy.File {
	f := testFile(hour, policy.BasisLive, []string{"free", "paid"}, true)
	f.Rule, f.Coverage = policy.RuleCalibrated, policy.DefaultCoverage
	f.Classes[0].Coverage = policy.DefaultCoverage
	f.Classes[0].Cutover = &c
	return f
}

func writeFile(t *testing.T, dir string, f policy.File) {
	t.Helper()
	data, err := policy.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, f.Hour+".yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// spec is docs/openapi.yaml with a router over it.
type spec struct {
	doc    *openapi3.T
	router routers.Router
}

func loadSpec(t *testing.T) spec {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromFile("../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	doc.Servers = nil // route on paths alone, whatever the test server's address
	r, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return spec{doc, r}
}

// check validates one exchange against the document: the request's route
// and parameters, and the response's status, content type and body.
func (s spec) check(t reporter, req *http.Request, reqBody []byte, status int, header http.Header, body []byte) {
	t.Helper()
	req = req.Clone(context.Background())
	req.Body = io.NopCloser(bytes.NewReader(reqBody))
	route, params, err := s.router.FindRoute(req)
	if err != nil {
		if status != http.StatusNotFound && status != http.StatusMethodNotAllowed {
			t.Errorf("%s %s: not in docs/openapi.yaml: %v", req.Method, req.URL, err)
		}
		checkError(t, body)
		return
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{ExcludeRequestBody: status == http.StatusRequestEntityTooLarge || status == http.StatusBadRequest,
			ExcludeRequestQueryParams: status == http.StatusBadRequest, MultiError: true}}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: status, Header: header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}}
	out.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		t.Errorf("%s %s: %d %s: not as docs/openapi.yaml says: %v", req.Method, req.URL, status, body, err)
	}
}

func checkError(t reporter, body []byte) {
	t.Helper()
	var e map[string]string
	if err := json.Unmarshal(body, &e); err != nil || e["error"] == "" || e["code"] == "" || len(e) != 2 {
		t.Errorf("error body %s: want {\"error\": ..., \"code\": ...}", body)
	}
}

// reporter is what check needs of a *testing.T.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

// fakeT records a failure instead of failing the test.
type fakeT struct {
	*testing.T
	failed bool
}

func (f *fakeT) Errorf(string, ...any) { f.failed = true }

// policySchema is policy/policy.schema.json.
func policySchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(policy.SchemaJSON))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("policy.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("policy.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

func TestHandler(t *testing.T) {
	t.Setenv("LW_TEST_FREE_KEY", freeSecret)
	t.Setenv("LW_TEST_PAID_KEY", paidSecret)
	dir := t.TempDir()
	writeFile(t, dir, testFile("2026-11-30T14", policy.BasisLive, []string{"free", "paid"}, true))
	writeFile(t, dir, testFile("2026-11-30T15", policy.BasisForecast, nil, true))
	writeFile(t, dir, testFile("2026-11-30T16", policy.BasisForecast, []string{"paid"}, false))
	writeFile(t, dir, testFile("2026-11-30T17", policy.BasisForecast, []string{"ghost"}, true))
	if err := os.WriteFile(filepath.Join(dir, "2026-11-30T18.yaml"), []byte("hour: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, calibratedFile("2026-11-30T19", policy.Cutover{AfterS: 12.5, FreeFirst: true}))
	writeFile(t, dir, calibratedFile("2026-11-30T20", policy.Cutover{AfterS: 3.25}))
	ghost := testFile("2026-11-30T21", policy.BasisForecast, []string{"free"}, true)
	ghost.Classes[0].Book.PaidLane = "ghost"
	writeFile(t, dir, ghost)
	now := time.Date(2026, 11, 30, 14, 25, 0, 0, time.UTC)
	srv := httptest.NewServer(Handler(Options{Folder: Folder{Dir: dir}, Lanes: testLanes, Now: func() time.Time { return now }}))
	defer srv.Close()
	sp := loadSpec(t)
	sch := policySchema(t)
	before := snapshot(t, dir)
	defer func() {
		if after := snapshot(t, dir); after != before {
			t.Errorf("the API changed its folder:\n%s\nwas\n%s", after, before)
		}
	}()

	free := `"lane":"free","kind":"free","api":"openai","base_url":"http://127.0.0.1:1/v1","model":"m-free","api_key_env":"LW_TEST_FREE_KEY"`
	paid := `"lane":"paid","kind":"paid","api":"anthropic","base_url":"https://paid.example/v1","model":"claude","api_key_env":"LW_TEST_PAID_KEY"`
	attempt := `{"attempts":[{"queue_s":35,"gen_s":9,"emitted_tokens":220,"shipped":false}]}`
	cases := []struct {
		name, method, path, body string
		status                   int
		code                     string // of an error
		want                     string // the whole body of a 200, "" to skip
	}{
		{"policy, current hour", "GET", "/api/v1/policy", "", 200, "", ""},
		{"policy, an hour", "GET", "/api/v1/policy?hour=2026-11-30T16", "", 200, "", ""},
		{"policy, HEAD", "HEAD", "/api/v1/policy", "", 200, "", ""},
		{"policy, no file", "GET", "/api/v1/policy?hour=2026-12-01T00", "", 404, "no_policy", ""},
		{"policy, bad hour", "GET", "/api/v1/policy?hour=2026-11-30%2014", "", 400, "bad_request", ""},
		{"policy, unknown parameter", "GET", "/api/v1/policy?hours=1", "", 400, "bad_request", ""},
		{"policy, repeated parameter", "GET", "/api/v1/policy?hour=2026-11-30T14&hour=2026-11-30T15", "", 400, "bad_request", ""},
		{"policy, bad file", "GET", "/api/v1/policy?hour=2026-11-30T18", "", 503, "unavailable", ""},
		{"policy, POST", "POST", "/api/v1/policy", "", 405, "method_not_allowed", ""},
		{"lane", "GET", "/api/v1/lane?class=interactive", "", 200, "",
			`{` + free + `,"hour":"2026-11-30T14","class":"interactive","cutover_after_s":null,"fallback":{` + paid + `}}` + "\n"},
		{"lane, paid not eligible: no fallback", "GET", "/api/v1/lane?class=interactive&hour=2026-11-30T16", "", 200, "",
			`{` + paid + `,"hour":"2026-11-30T16","class":"interactive","cutover_after_s":null,"fallback":null}` + "\n"},
		{"lane, calibrated: the file's cut-over", "GET", "/api/v1/lane?class=interactive&hour=2026-11-30T19", "", 200, "",
			`{` + free + `,"hour":"2026-11-30T19","class":"interactive","cutover_after_s":12.5,"fallback":{` + paid + `}}` + "\n"},
		{"lane, calibrated, not free first: straight to the fallback", "GET", "/api/v1/lane?class=interactive&hour=2026-11-30T20", "", 200, "",
			`{` + paid + `,"hour":"2026-11-30T20","class":"interactive","cutover_after_s":null,"fallback":{` + paid + `}}` + "\n"},
		{"policy, calibrated with a cut-over", "GET", "/api/v1/policy?hour=2026-11-30T19", "", 200, "", ""},
		{"lane, none fits", "GET", "/api/v1/lane?class=interactive&hour=2026-11-30T15", "", 404, "no_lane", ""},
		{"lane, unknown class", "GET", "/api/v1/lane?class=batch", "", 404, "no_class", ""},
		{"lane, no class", "GET", "/api/v1/lane", "", 400, "bad_request", ""},
		{"lane, lane not configured", "GET", "/api/v1/lane?class=interactive&hour=2026-11-30T17", "", 503, "unavailable", ""},
		{"next", "GET", "/api/v1/next?class=interactive", "", 200, "",
			`{"class":"interactive","hour":"2026-11-30T14","start":"2026-11-30T14:00:00Z","basis":"live","lanes":["free","paid"]}` + "\n"},
		{"next, no class fits anywhere", "GET", "/api/v1/next?class=batch", "", 503, "unavailable", ""}, // reaches the bad file
		{"next, DELETE", "DELETE", "/api/v1/next?class=interactive", "", 405, "method_not_allowed", ""},
		{"book", "POST", "/api/v1/book?class=interactive", attempt, 200, "",
			`{"action":"cut_over","why":"free retry does not fit; one paid attempt does","spent_s":44,"remaining_s":16,"spent_tokens":220,"projected_tokens":1020,"sunk_usd_if_those_tokens_were_paid":0.0004,"lane":"paid","endpoint":{` + paid + `}}` + "\n"},
		{"book, first call: the free lane fits, with its endpoint", "POST", "/api/v1/book?class=interactive", `{"attempts":[]}`, 200, "",
			`{"action":"retry_free","why":"remaining clock covers one more free attempt","spent_s":0,"remaining_s":60,"spent_tokens":0,"projected_tokens":800,"sunk_usd_if_those_tokens_were_paid":0,"lane":"free","endpoint":{` + free + `}}` + "\n"},
		{"book, shipped: stop, no lane", "POST", "/api/v1/book?class=interactive", `{"attempts":[{"queue_s":2,"gen_s":3,"emitted_tokens":10,"shipped":true}]}`, 200, "",
			`{"action":"stop","why":"a previous attempt already shipped","spent_s":5,"remaining_s":55,"spent_tokens":10,"projected_tokens":810,"sunk_usd_if_those_tokens_were_paid":0,"lane":null,"endpoint":null}` + "\n"},
		{"book, an attempt ended in an error: no free retry, cut over", "POST", "/api/v1/book?class=interactive", `{"attempts":[{"queue_s":1,"gen_s":0,"emitted_tokens":0,"shipped":false,"error":true}]}`, 200, "",
			`{"action":"cut_over","why":"an attempt ended in an error: no free retry; one paid attempt fits","spent_s":1,"remaining_s":59,"spent_tokens":0,"projected_tokens":800,"sunk_usd_if_those_tokens_were_paid":0,"lane":"paid","endpoint":{` + paid + `}}` + "\n"},
		{"book, paid lane not configured", "POST", "/api/v1/book?class=interactive&hour=2026-11-30T21", attempt, 503, "unavailable", ""},
		{"book, running inside the cut-over", "POST", "/api/v1/book?class=interactive&hour=2026-11-30T19", `{"attempts":[],"running_s":12.5}`, 200, "",
			`{"action":"wait","why":"` + policy.WhyRunningWait + `","elapsed_s":12.5,"lane":"free","endpoint":{` + free + `}}` + "\n"},
		{"book, running past the cut-over", "POST", "/api/v1/book?class=interactive&hour=2026-11-30T19", `{"attempts":[],"running_s":12.51}`, 200, "",
			`{"action":"cut_over","why":"` + policy.WhyRunningCut + `","elapsed_s":12.51,"lane":"paid","endpoint":{` + paid + `}}` + "\n"},
		{"book, running, not free first", "POST", "/api/v1/book?class=interactive&hour=2026-11-30T20", `{"attempts":[],"running_s":0}`, 200, "",
			`{"action":"cut_over","why":"` + policy.WhyRunningNotFirst + `","elapsed_s":0,"lane":"paid","endpoint":{` + paid + `}}` + "\n"},
		{"book, running without a cut-over", "POST", "/api/v1/book?class=interactive", `{"attempts":[],"running_s":1}`, 400, "bad_request", ""},
		{"book, first call", "POST", "/api/v1/book?class=interactive&hour=2026-11-30T15", `{"attempts":[]}`, 200, "", ""},
		{"book, policy in the body", "POST", "/api/v1/book?class=interactive", `{"attempts":[],"policy":{}}`, 400, "bad_request", ""},
		{"book, bad attempt", "POST", "/api/v1/book?class=interactive", `{"attempts":[{"queue_s":-1,"gen_s":0,"emitted_tokens":0,"shipped":false}]}`, 400, "bad_request", ""},
		{"book, empty body", "POST", "/api/v1/book?class=interactive", "", 400, "bad_request", ""},
		{"book, too large", "POST", "/api/v1/book?class=interactive", strings.Repeat(" ", policy.MaxBookInput+1), 413, "too_large", ""},
		{"book, unknown class", "POST", "/api/v1/book?class=batch", attempt, 404, "no_class", ""},
		{"book, GET", "GET", "/api/v1/book?class=interactive", "", 405, "method_not_allowed", ""},
		{"unknown path", "GET", "/api/v1/lanes", "", 404, "not_found", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if tc.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			for _, s := range []string{freeSecret, paidSecret} {
				if bytes.Contains(body, []byte(s)) {
					t.Errorf("a key reached the answer: %s", body)
				}
			}
			if tc.method == "HEAD" {
				return
			}
			if tc.status != 200 {
				var e map[string]string
				if json.Unmarshal(body, &e) != nil || e["code"] != tc.code {
					t.Errorf("body %s, want code %q", body, tc.code)
				}
			}
			if strings.Contains(tc.name, "not configured") && !strings.Contains(string(body), `lane \"ghost\" of class \"interactive\" is not in the config`) {
				t.Errorf("body %s, want the lane named", body)
			}
			if tc.want != "" && string(body) != tc.want {
				t.Errorf("body\n%s\nwant\n%s", body, tc.want)
			}
			if tc.status == 200 && strings.HasPrefix(tc.path, "/api/v1/policy") {
				inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				if err := sch.Validate(inst); err != nil {
					t.Errorf("policy JSON does not validate against policy/policy.schema.json: %v", err)
				}
			}
			sp.check(t, req, []byte(tc.body), resp.StatusCode, resp.Header, body)
		})
	}
}

// /api/v1/next reads the forecasts: it skips hours that do not fit, and
// says plainly when there are no files at all.
func TestNext(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, testFile("2026-11-30T13", policy.BasisLive, []string{"free"}, true)) // past
	writeFile(t, dir, testFile("2026-11-30T14", policy.BasisLive, nil, true))
	writeFile(t, dir, testFile("2026-11-30T15", policy.BasisForecast, nil, true))
	writeFile(t, dir, testFile("2026-11-30T16", policy.BasisForecast, []string{"paid"}, true))
	// Not policy files: a site's view and a temp file.
	for _, name := range []string{"2026-11-30T15.fra1.yaml", ".2026-11-30T15.yaml.tmp-1"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("junk"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Date(2026, 11, 30, 14, 59, 0, 0, time.UTC)
	d := Folder{Dir: dir}
	n, err := d.Next(now, "interactive")
	if err != nil || n.Hour != "2026-11-30T16" || n.Basis != policy.BasisForecast || n.Start != "2026-11-30T16:00:00Z" {
		t.Errorf("Next = %+v, %v", n, err)
	}
	_, err = d.Next(now, "batch")
	if e, ok := err.(*NoNextError); !ok || e.Files != 3 {
		t.Errorf("batch: %v, want none of 3 files", err)
	}
	// An hour whose decision starts free on a lane that does not fit alone
	// (none listed) is one a job can run in (policy.Class.Start).
	f := calibratedFile("2026-11-30T15", policy.Cutover{AfterS: 40, FreeFirst: true})
	f.Basis, f.Classes[0].Lanes = policy.BasisForecast, nil
	writeFile(t, dir, f)
	if n, err := d.Next(now, "interactive"); err != nil || n.Hour != "2026-11-30T15" {
		t.Errorf("Next with a free-first decision at 15h = %+v, %v", n, err)
	}
	_, err = Folder{Dir: filepath.Join(dir, "none")}.Next(now, "interactive")
	if e, ok := err.(*NoNextError); !ok || e.Files != 0 || !strings.Contains(err.Error(), "policygen -config F -day") {
		t.Errorf("no folder: %v", err)
	}
}

// The document check is not vacuous: answers that stray from the document
// fail it.
func TestSpecCatchesWrongAnswers(t *testing.T) {
	sp := loadSpec(t)
	for _, tc := range []struct {
		path   string
		status int
		body   string
	}{
		{"/api/v1/lane?class=x", 200, `{"lane":"free"}`},
		{"/api/v1/next?class=x", 200, `{"class":"x","hour":"h","start":"s","basis":"live","lanes":[],"extra":1}`},
		{"/api/v1/lane?class=x", 404, `{"error":"x"}`},
		{"/api/v1/policy", 418, `{"error":"x","code":"bad_request"}`},
	} {
		req := httptest.NewRequest("GET", tc.path, nil)
		h := http.Header{"Content-Type": {"application/json"}}
		ft := &fakeT{T: t}
		sp.check(ft, req, nil, tc.status, h, []byte(tc.body))
		if !ft.failed {
			t.Errorf("%s %d %s passed the document check", tc.path, tc.status, tc.body)
		}
	}
}

// snapshot lists a folder's files with their sizes and times.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %d %s\n", e.Name(), info.Size(), info.ModTime().Format(time.RFC3339Nano))
	}
	return b.String()
}

// The answer of a server past its busy bound (internal/httpserve, which
// sampler -listen and policygen serve put in front of the API) is in the
// document: 503, code busy.
func TestBusyAnswerIsInTheSpec(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lim := httpserve.DefaultLimits()
	lim.MaxBusy = 0 // every request outside /healthz and /metrics is one too many
	srv, capped := httpserve.New(ln, Handler(Options{Folder: Folder{Dir: t.TempDir()}, Lanes: testLanes}), lim)
	go func() { _ = srv.Serve(capped) }()
	defer srv.Close()
	req, err := http.NewRequest("GET", "http://"+ln.Addr().String()+"/api/v1/lane?class=interactive", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), `"code":"busy"`) {
		t.Fatalf("%d %s, want 503 busy", resp.StatusCode, body)
	}
	loadSpec(t).check(t, req, nil, resp.StatusCode, resp.Header, body)
}
