package examples

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/api"
	"github.com/lanewatch/lanewatch/hours"
	"github.com/lanewatch/lanewatch/internal/missingtool"
	"github.com/lanewatch/lanewatch/lanesim"
	"github.com/lanewatch/lanewatch/policy"
)

// need returns the path of a command (on $PATH) or a file (a path with a
// slash) the test needs, or skips (fails under CI=true) without it.
func need(t *testing.T, what, path string) string {
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
	missingtool.Skip(t, what, "", fmt.Sprintf("%v; this example is not run", err))
	return ""
}

// world is two stand-in lanes, free and paid, a policy for the current and
// the next hour, and the API over them.
type world struct {
	apiURL string
	env    []string
}

const freeKey, paidKey = "sk-example-free-SECRET", "sk-example-paid-SECRET"

// newWorld starts the lanes (the free one takes freePrefill to its first
// token) and the API. The book makes a free retry not fit after one
// abandoned attempt, so the ledger answers cut_over; fits lists the
// class's lanes.
func newWorld(t *testing.T, freePrefill time.Duration, fits []string) world {
	t.Helper()
	lane := func(prefill time.Duration) string {
		o := lanesim.DefaultOptions()
		o.Prefill, o.TokenInterval, o.Tokens, o.KeepAlive, o.Seed = prefill, 5*time.Millisecond, 6, 200*time.Millisecond, 1
		sim := lanesim.New(o)
		srv := httptest.NewServer(sim.Handler())
		t.Cleanup(func() { sim.Close(); srv.Close() })
		return srv.URL + "/v1"
	}
	lanes := []api.Endpoint{
		{Name: "free", Kind: "free", API: "openai", BaseURL: lane(freePrefill), Model: "free-model", APIKeyEnv: "LW_EXAMPLE_FREE_KEY"},
		{Name: "paid", Kind: "paid", API: "openai", BaseURL: lane(20 * time.Millisecond), Model: "paid-model", APIKeyEnv: "LW_EXAMPLE_PAID_KEY"},
	}
	dir := t.TempDir()
	now := time.Now()
	for _, h := range []time.Time{now, now.Add(time.Hour)} { // the test may cross an hour
		f := policy.File{Hour: hours.Label(h, time.UTC), Timezone: "UTC", Basis: policy.BasisLive,
			Lanes: []policy.Lane{
				{Name: "free", Kind: "free", Eligible: true, Reason: policy.ReasonOK, NextQueueS: 58, TokPerS: 40, Samples: 3},
				{Name: "paid", Kind: "paid", Eligible: true, Reason: policy.ReasonOK, NextQueueS: 1.25, TokPerS: 160, Samples: 3},
			},
			Classes: []policy.Class{{Name: "interactive", DeadlineS: 60, CeilingTokens: 4000, EstTokens: 100, Lanes: fits,
				Book: policy.BookPolicy{DeadlineS: 60, CeilingTokens: 4000, NextQueueS: 58, NextGenS: 2.5, NextEstTokens: 100,
					PaidQueueS: 1.25, PaidUSDPer1k: 0.002, FreeEligible: true, PaidEligible: true, FreeLane: "free", PaidLane: "paid"}}},
		}
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
	return world{apiURL: srv.URL, env: append(os.Environ(), "LW_EXAMPLE_FREE_KEY="+freeKey, "LW_EXAMPLE_PAID_KEY="+paidKey)}
}

type outcome struct {
	Lane     string   `json:"lane"`
	Text     string   `json:"text"`
	Attempts int      `json:"attempts"`
	Actions  []string `json:"actions"`
}

var cases = []struct {
	name        string
	freePrefill time.Duration
	fits        []string
	code        int
	want        outcome
}{
	{"free lane answers", 20 * time.Millisecond, []string{"free", "paid"}, 0, outcome{Lane: "free", Attempts: 1, Actions: []string{}}},
	{"no first token by the cut-over: book, cut over", 30 * time.Second, []string{"free", "paid"}, 0, outcome{Lane: "paid", Attempts: 2, Actions: []string{"cut_over"}}},
	{"no lane fits: exit 3", 20 * time.Millisecond, nil, 3, outcome{}},
}

// run runs one example command in each case's world.
func run(t *testing.T, cmd func(apiURL string) *exec.Cmd) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.freePrefill, tc.fits)
			c := cmd(w.apiURL)
			c.Env = append(c.Env, w.env...)
			var stdout, stderr bytes.Buffer
			c.Stdout, c.Stderr = &stdout, &stderr
			start := time.Now()
			err := c.Run()
			code := 0
			if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s", code, tc.code, stdout.String(), stderr.String())
			}
			if strings.Contains(stdout.String()+stderr.String(), "SECRET") {
				t.Errorf("a key reached the output")
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
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("took %v: the abandoned attempt was not cut at the timeout", d)
			}
		})
	}
}

func TestTypeScript(t *testing.T) {
	node := need(t, "node", "node")
	tsc := need(t, "typescript (npm ci --prefix interop)", "../interop/node_modules/typescript/bin/tsc")
	need(t, "the openai npm package (npm ci --prefix interop)", "../interop/node_modules/openai/package.json")
	out := t.TempDir()
	if b, err := exec.Command(node, tsc, "-p", "typescript/tsconfig.json", "--outDir", out).CombinedOutput(); err != nil {
		t.Fatalf("tsc: %v\n%s", err, b)
	}
	modules, err := filepath.Abs("../interop/node_modules")
	if err != nil {
		t.Fatal(err)
	}
	run(t, func(apiURL string) *exec.Cmd {
		c := exec.Command(node, filepath.Join(out, "lanewatch-job.js"), "--api", apiURL, "--class", "interactive", "--timeout", "3")
		c.Env = []string{"NODE_PATH=" + modules}
		return c
	})
}

func TestPython(t *testing.T) {
	py := need(t, "python3", "python3")
	run(t, func(apiURL string) *exec.Cmd {
		return exec.Command(py, "python/lanewatch_job.py", "--api", apiURL, "--class", "interactive", "--timeout", "3")
	})
}
