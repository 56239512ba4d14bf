package ci_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/lanesim"
	"github.com/lanewatch/lanewatch/internal/missingtool"
	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/store"
)

// apiRecipe is the sh block of docs/ci/README.md's API section.
func apiRecipe(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, _ := strings.Cut(string(data), "## Retry code in a job")
	m := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(after)
	if m == nil {
		t.Fatal("docs/ci/README.md: no sh block in the API section")
	}
	return m[1]
}

// The API recipe, run as written: policygen serve over the job's policy
// files, the Python client on a slow free lane and a quick paid one. It
// abandons the free attempt, books it, cuts over and succeeds; with no lane
// it says so and passes; without policy files it fails.
func TestAPIRecipe(t *testing.T) {
	for _, tool := range []string{"python3", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			missingtool.Skip(t, tool, "", "the API recipe is not run")
		}
	}
	bin := policygen(t)
	script := apiRecipe(t)
	lane := func(prefill time.Duration) string {
		o := lanesim.DefaultOptions()
		o.Prefill, o.TokenInterval, o.KeepAlive, o.Seed = prefill, 5*time.Millisecond, 200*time.Millisecond, 1
		sim := lanesim.New(o)
		srv := httptest.NewServer(sim.Handler())
		t.Cleanup(func() { sim.Close(); srv.Close() })
		return srv.URL + "/v1"
	}
	free, paid := lane(30*time.Second), lane(20*time.Millisecond)
	for _, tc := range []struct {
		name   string
		fits   []string // the class's lanes
		files  bool     // false: no policy files at all
		code   int
		stdout string // a substring
	}{
		{"abandon, book, cut over", []string{"free", "paid"}, true, 0, `"lane": "paid"`},
		{"no lane fits", []string{}, true, 0, "no lane fits class interactive this hour"},
		{"no policy files: fail closed", nil, false, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			dist := filepath.Join(dir, "dist")
			if err := os.MkdirAll(filepath.Join(dist, "policies"), 0o755); err != nil {
				t.Fatal(err)
			}
			cfg := strings.NewReplacer("FREE_URL", free, "PAID_URL", paid).Replace(apiConfig)
			if err := os.WriteFile(filepath.Join(dist, "lanewatch.yaml"), []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			artifact(t, filepath.Join(bin, "policygen"), filepath.Join(dist, "policygen"))
			if err := os.Chmod(filepath.Join(dist, "policygen"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(dir, "examples", "python"), 0o755); err != nil {
				t.Fatal(err)
			}
			artifact(t, filepath.Join(repoRoot, "examples", "python", "lanewatch_job.py"), filepath.Join(dir, "examples", "python", "lanewatch_job.py"))
			if tc.files {
				writeAPIPolicies(t, filepath.Join(dist, "policies"), tc.fits)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			ln.Close()
			cmd := exec.Command("bash", "-e", "-c", script)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "LANEWATCH_API_ADDR="+addr, "LANEWATCH_CLASS=interactive", "LANEWATCH_FIRST_TOKEN_S=3",
				"FREE_LANE_KEY=sk-free-test", "PAID_LANE_KEY=sk-paid-test")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err = cmd.Run()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code || !strings.Contains(stdout.String(), tc.stdout) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d, stdout with %q", code, stdout.String(), stderr.String(), tc.code, tc.stdout)
			}
			if tc.name == "abandon, book, cut over" {
				var out struct {
					Lane    string   `json:"lane"`
					Actions []string `json:"actions"`
				}
				if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || out.Lane != "paid" || len(out.Actions) != 1 || out.Actions[0] != "cut_over" {
					t.Errorf("job answer %q (%v), want paid after one cut_over", stdout.String(), err)
				}
			}
			if strings.Contains(stdout.String()+stderr.String(), "-test") {
				t.Errorf("a key reached the output")
			}
		})
	}
}

// apiConfig is the job's config: a free lane and a paid one on stand-in
// lanes, keys in the variables deploy/systemd/lanewatch.yaml uses.
const apiConfig = `timezone: UTC
lanes:
  - name: free
    kind: free
    api: openai
    base_url: FREE_URL
    model: free-model
    api_key_env: FREE_LANE_KEY
  - name: paid
    kind: paid
    api: openai
    base_url: PAID_URL
    model: paid-model
    api_key_env: PAID_LANE_KEY
policy:
  out: policies
  classes:
    - name: interactive
      deadline_s: 60
      ceiling_tokens: 4000
      est_tokens: 100
      paid_usd_per_1k: 0.002
`

// writeAPIPolicies writes this hour's and the next one's policy: the class
// runs on fits, and after one abandoned free attempt a free retry does not
// fit the book, a paid one does.
func writeAPIPolicies(t *testing.T, dir string, fits []string) {
	t.Helper()
	now := time.Now()
	for _, h := range []time.Time{now, now.Add(time.Hour)} {
		f := policy.File{Hour: store.HourLabel(h, time.UTC), Timezone: "UTC", Basis: policy.BasisLive,
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
}
