//go:build unix

package examples

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/api"
	"github.com/lanewatch/lanewatch/internal/lanesim"
	"github.com/lanewatch/lanewatch/internal/missingtool"
	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/store"
)

// need returns the path of a command (on $PATH) or a file (a path with a
// slash) the test needs, or skips (fails under CI=true) without it.
func need(t *testing.T, what, install, path string) string {
	t.Helper()
	var err error
	if strings.Contains(path, "/") {
		if _, err = os.Stat(path); err == nil {
			return path
		}
	} else {
		var p string
		if p, err = exec.LookPath(path); err == nil {
			return p
		}
	}
	missingtool.Skip(t, what, install, fmt.Sprintf("%v; this example is not run", err))
	return ""
}

// lane is a stand-in lane of a world: the dialect it speaks, the time to
// its first token, whether its base_url ends in /v1 (anthropic's may or
// may not, docs/config.md), whether it is down (refuses connections) and
// whether it refuses every key.
type lane struct {
	api     string
	prefill time.Duration
	v1      bool
	down    bool
	refuses bool
}

const freeKey, paidKey = "sk-example-free-SECRET", "sk-example-paid-SECRET"
const freeKeyEnv, paidKeyEnv = "LW_EXAMPLE_FREE_KEY", "LW_EXAMPLE_PAID_KEY"

// start starts l and returns its base_url. It calls hit on each request.
// It answers 401, quoting the key it got as some APIs do, to every request
// when l refuses, and to one without key as the dialect sends it (openai:
// Authorization: Bearer; anthropic: x-api-key, with anthropic-version
// 2023-06-01).
func (l lane) start(t *testing.T, key string, hit func()) string {
	t.Helper()
	if l.down {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		return "http://" + addr + "/v1"
	}
	o := lanesim.DefaultOptions()
	o.Prefill, o.TokenInterval, o.Tokens, o.KeepAlive, o.Seed = l.prefill, 5*time.Millisecond, 6, 200*time.Millisecond, 1
	sim := lanesim.New(o)
	h := sim.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hit()
		got, want, version := r.Header.Get("Authorization"), "Bearer "+key, true
		if l.api == "anthropic" {
			got, want, version = r.Header.Get("x-api-key"), key, r.Header.Get("anthropic-version") == "2023-06-01"
		}
		if got != want || !version || l.refuses {
			msg, _ := json.Marshal("incorrect API key provided: " + got)
			http.Error(w, `{"type":"error","error":{"type":"authentication_error","message":`+string(msg)+`}}`, http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { sim.Close(); srv.Close() })
	if l.v1 || l.api == "openai" {
		return srv.URL + "/v1"
	}
	return srv.URL
}

// world is two stand-in lanes, free and paid, a policy for the current and
// the next hour, and the API over them.
type world struct {
	apiURL string
	env    []string
	calls  [2]atomic.Int32 // requests to the free and the paid lane
	flood  chan struct{}   // closed when a lane gets more than maxCalls
	once   sync.Once
}

// maxCalls is more requests than any case sends a lane: a job past it
// tries the lane again and again, and is stopped.
const maxCalls = 5

// hit counts a request to lane i (0 free, 1 paid).
func (w *world) hit(i int) func() {
	return func() {
		if w.calls[i].Add(1) > maxCalls {
			w.once.Do(func() { close(w.flood) })
		}
	}
}

// newWorld starts tc's lanes and the API. Unless tc.retryFits, the book
// makes a free retry not fit after one failed attempt, so the ledger
// answers cut_over.
func newWorld(t *testing.T, tc jobCase) *world {
	t.Helper()
	w := &world{flood: make(chan struct{})}
	lanes := []api.Lane{
		{Lane: "free", Kind: "free", API: tc.free.api, BaseURL: tc.free.start(t, freeKey, w.hit(0)), Model: "free-model", APIKeyEnv: freeKeyEnv},
		{Lane: "paid", Kind: "paid", API: tc.paid.api, BaseURL: tc.paid.start(t, paidKey, w.hit(1)), Model: "paid-model", APIKeyEnv: paidKeyEnv},
	}
	nextQueueS := 58.0 // a free retry does not fit after a failed attempt
	if tc.retryFits {
		nextQueueS = 5
	}
	dir := t.TempDir()
	now := time.Now()
	for _, h := range []time.Time{now, now.Add(time.Hour)} { // the test may cross an hour
		c := policy.Class{Name: "interactive", DeadlineS: 60, CeilingTokens: 4000, EstTokens: 100, Lanes: tc.fits,
			Book: policy.BookPolicy{DeadlineS: 60, CeilingTokens: 4000, NextQueueS: nextQueueS, NextGenS: 2.5, NextEstTokens: 100,
				PaidQueueS: 1.25, PaidUSDPer1k: 0.002, FreeEligible: true, PaidEligible: true, FreeLane: "free", PaidLane: "paid"}}
		f := policy.File{Hour: store.HourLabel(h, time.UTC), Timezone: "UTC", Basis: policy.BasisLive,
			Lanes: []policy.Lane{
				{Name: "free", Kind: "free", Eligible: true, Reason: policy.ReasonOK, NextQueueS: 58, TokPerS: 40, Samples: 3},
				{Name: "paid", Kind: "paid", Eligible: true, Reason: policy.ReasonOK, NextQueueS: 1.25, TokPerS: 160, Samples: 3},
			}}
		if tc.cutS > 0 { // a calibrated file
			f.Rule, f.Coverage, c.Coverage = policy.RuleCalibrated, 0.9, 0.9
			// Free first whenever a lane fits; with none, the decision is
			// to send nothing (a free-first decision starts a job on the
			// free lane even when no lane is listed: policy.Class.Start).
			c.Cutover = &policy.Cutover{AfterS: tc.cutS, FreeFirst: len(tc.fits) > 0}
		}
		f.Classes = []policy.Class{c}
		data, err := policy.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f.Hour+".yaml"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(api.Handler(api.Options{Folder: api.Folder{Dir: dir}, Lanes: lanes}))
	t.Cleanup(srv.Close)
	if tc.apiDown {
		srv.Close()
	}
	w.apiURL, w.env = srv.URL, os.Environ()
	for _, kv := range []string{freeKeyEnv + "=" + freeKey, paidKeyEnv + "=" + paidKey} {
		if !strings.HasPrefix(kv, tc.unset+"=") {
			w.env = append(w.env, kv)
		}
	}
	return w
}

type outcome struct {
	Lane     string   `json:"lane"`
	Text     string   `json:"text"`
	Attempts int      `json:"attempts"`
	Actions  []string `json:"actions"`
}

var (
	openai    = lane{api: "openai", prefill: 20 * time.Millisecond}
	anthropic = lane{api: "anthropic", prefill: 20 * time.Millisecond}
	stalled   = 30 * time.Second // no first token before the cut-over
)

// jobCase is a world and what a job in it prints and exits with, and how
// many requests reach each lane: one per attempt, none hidden (no SDK
// retries), and no lane tried again after it failed with an error.
type jobCase struct {
	name       string
	free, paid lane
	fits       []string // the class's lanes
	cutS       float64  // the class's cutover_after_s; 0: none, the job waits its --timeout
	unset      string   // a key variable left out of the environment
	apiDown    bool     // the API refuses connections
	retryFits  bool     // the book lets the free lane retry (next_queue_s 5, not 58)
	code       int      // exit status
	want       outcome  // stdout, exit 0
	stderr     string   // in stderr (case aside), exit 1
	calls      [2]int32 // requests to the free and the paid lane
}

var both = []string{"free", "paid"}

var cases = []jobCase{
	{name: "the free lane answers before --timeout (no cutover_after_s)", free: openai, paid: anthropic, fits: both,
		want: outcome{Lane: "free", Attempts: 1, Actions: []string{}}, calls: [2]int32{1, 0}},
	{name: "no first token by the cut-over: book, cut over to an anthropic lane", free: lane{api: "openai", prefill: stalled}, paid: anthropic, fits: both, cutS: 3,
		want: outcome{Lane: "paid", Attempts: 2, Actions: []string{"cut_over"}}, calls: [2]int32{1, 1}},
	{name: "no first token by the cut-over on an anthropic lane (base_url with /v1): cut over to an openai lane", free: lane{api: "anthropic", prefill: stalled, v1: true}, paid: openai, fits: both, cutS: 3,
		want: outcome{Lane: "paid", Attempts: 2, Actions: []string{"cut_over"}}, calls: [2]int32{1, 1}},
	{name: "no first token by the cut-over, though a free retry would fit: cut over", free: lane{api: "openai", prefill: stalled}, paid: anthropic, fits: both, cutS: 3, retryFits: true,
		want: outcome{Lane: "paid", Attempts: 2, Actions: []string{"cut_over"}}, calls: [2]int32{1, 1}},
	{name: "the free lane is down, a free retry would fit: booked with its error, cut over", free: lane{api: "openai", down: true}, paid: anthropic, fits: both, cutS: 3, retryFits: true,
		want: outcome{Lane: "paid", Attempts: 2, Actions: []string{"cut_over"}}, calls: [2]int32{0, 1}},
	{name: "the free lane is down: book, cut over", free: lane{api: "openai", down: true}, paid: anthropic, fits: both, cutS: 3,
		want: outcome{Lane: "paid", Attempts: 2, Actions: []string{"cut_over"}}, calls: [2]int32{0, 1}},
	{name: "the paid lane refuses the key: one attempt on it, exit 1", free: lane{api: "openai", prefill: stalled}, paid: lane{api: "anthropic", refuses: true}, fits: both, cutS: 3,
		code: 1, stderr: "http 401", calls: [2]int32{1, 1}},
	{name: "no lane fits: exit 3", free: openai, paid: anthropic, cutS: 3, code: 3},
	{name: "the lane's key variable is not set: exit 1 naming it", free: openai, paid: anthropic, fits: both, cutS: 3, unset: freeKeyEnv,
		code: 1, stderr: freeKeyEnv},
	{name: "the API is down: exit 1", free: openai, paid: anthropic, fits: both, apiDown: true, code: 1, stderr: "refused"},
}

// run runs one example command in each case's world.
func run(t *testing.T, cmd func(apiURL string) *exec.Cmd) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc)
			c := cmd(w.apiURL)
			c.Env = append(c.Env, w.env...)
			var stdout, stderr bytes.Buffer
			c.Stdout, c.Stderr = &stdout, &stderr
			c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // bash, npm, node: stopped together
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			go func() {
				select {
				case <-w.flood:
					syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
				case <-exited:
				}
			}()
			err := c.Wait()
			close(exited)
			select {
			case <-w.flood:
				tail := stderr.String()
				tail = tail[max(0, len(tail)-2000):]
				t.Fatalf("a lane got more than %d requests: the job tried it again and again; stopped. stderr ends\n%s", maxCalls, tail)
			default:
			}
			code := 0
			if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			t.Logf("exit %d\nstdout: %s\nstderr: %s", code, strings.TrimSpace(stdout.String()), strings.TrimSpace(stderr.String()))
			out := stdout.String() + stderr.String()
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s", code, tc.code, stdout.String(), stderr.String())
			}
			if strings.Contains(out, "SECRET") {
				t.Errorf("a key reached the output")
			}
			if strings.Contains(out, "Traceback") {
				t.Errorf("a traceback, not one line:\n%s", stderr.String())
			}
			if tc.code == 1 && !strings.Contains(strings.ToLower(stderr.String()), strings.ToLower(tc.stderr)) {
				t.Errorf("stderr %q does not name %q", stderr.String(), tc.stderr)
			}
			if calls := [2]int32{w.calls[0].Load(), w.calls[1].Load()}; calls != tc.calls {
				t.Errorf("requests to the free and the paid lane: %v, want %v\nstderr %s", calls, tc.calls, stderr.String())
			}
			if tc.code != 0 {
				return
			}
			var got outcome
			if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
				t.Fatalf("stdout %q: %v\nstderr %s", stdout.String(), err, stderr.String())
			}
			if got.Lane != tc.want.Lane || got.Attempts != tc.want.Attempts || !slices.Equal(got.Actions, tc.want.Actions) || got.Text == "" {
				t.Errorf("got %+v, want %+v\nstderr %s", got, tc.want, stderr.String())
			}
		})
	}
}

// readmeAPI is the API's address in README.md's commands; the tests run
// them with their own API's instead.
const readmeAPI = "http://127.0.0.1:9465"

// readmeMarked finds the sh blocks of README.md marked
// "<!-- examples_test: NAME, in DIR -->": its indentation, NAME, DIR and
// the block's lines.
var readmeMarked = regexp.MustCompile("(?ms)^([ \t]*)<!-- examples_test: (\\w+), in (\\S+) -->\n[ \t]*```sh\n(.*?)\n[ \t]*```")

// readme returns a command that runs the sh block of README.md marked for
// name, in its folder (relative to the repository's root), with bash, as a
// reader pastes it: the block's lines without the indentation of the list
// item they are in, the API's address replaced by apiURL.
func readme(t *testing.T, name string) func(apiURL string) *exec.Cmd {
	t.Helper()
	bash := need(t, "bash", "", "bash")
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range readmeMarked.FindAllStringSubmatch(string(data), -1) {
		if m[2] != name {
			continue
		}
		lines := strings.Split(m[4], "\n")
		for i := range lines {
			lines[i] = strings.TrimPrefix(lines[i], m[1])
		}
		script := strings.Join(lines, "\n")
		if !strings.Contains(script, readmeAPI) {
			t.Fatalf("README.md's %s block does not call the API at %s:\n%s", name, readmeAPI, script)
		}
		return func(apiURL string) *exec.Cmd {
			c := exec.Command(bash, "-e", "-c", strings.ReplaceAll(script, readmeAPI, apiURL))
			c.Dir = filepath.Join("..", m[3])
			return c
		}
	}
	t.Fatalf("README.md: no sh block marked <!-- examples_test: %s, in DIR -->", name)
	return nil
}

func TestTypeScript(t *testing.T) {
	need(t, "node", "", "node")
	need(t, "npm", "apt-get install npm", "npm")
	need(t, "the example's npm packages", "npm ci in examples/typescript", "typescript/node_modules/.package-lock.json")
	run(t, readme(t, "typescript"))
}

func TestPython(t *testing.T) {
	need(t, "python3", "", "python3")
	run(t, readme(t, "python"))
}
