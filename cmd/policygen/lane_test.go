package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/api"
	"github.com/lanewatch/lanewatch/policy"
)

// laneConfig has two lanes with key variables, a paid one whose URL and
// model need quoting in sh, and two classes.
const laneConfig = `timezone: %s
lanes:
  - name: free
    kind: free
    api: openai
    base_url: http://127.0.0.1:1/v1
    model: m-free
    api_key_env: LW_TEST_FREE_KEY
  - name: paid
    kind: paid
    api: anthropic
    base_url: "https://paid.example/it's/v1"
    model: "claude x $(reboot)"
    api_key_env: LW_TEST_PAID_KEY
  - name: plain
    kind: free
    api: openai
    base_url: http://127.0.0.1:3/v1
    model: m
policy:
  out: policies
  classes:
    - name: interactive
      deadline_s: 60
      ceiling_tokens: 4000
      est_tokens: 800
      paid_usd_per_1k: 0.002
    - name: batch
      deadline_s: 600
      ceiling_tokens: 4000
      est_tokens: 800
      paid_usd_per_1k: 0.002
`

// The cut-over and fallback lines of a lane without either (-format env,
// dotenv).
const (
	noFallbackExport = "export LANEWATCH_CUTOVER_AFTER_S=\nexport LANEWATCH_FALLBACK_LANE=\nexport LANEWATCH_FALLBACK_API=\n" +
		"export LANEWATCH_FALLBACK_BASE_URL=\nexport LANEWATCH_FALLBACK_MODEL=\nexport LANEWATCH_FALLBACK_API_KEY_ENV=\n"
	noFallbackDotenv = "LANEWATCH_CUTOVER_AFTER_S=\nLANEWATCH_FALLBACK_LANE=\nLANEWATCH_FALLBACK_API=\n" +
		"LANEWATCH_FALLBACK_BASE_URL=\nLANEWATCH_FALLBACK_MODEL=\nLANEWATCH_FALLBACK_API_KEY_ENV=\n"
)

// The keys' values: no output or error may ever hold them.
const (
	freeSecret = "sk-free-SECRET-123"
	paidSecret = "sk-ant-SECRET-456"
)

type laneFixture struct {
	dir, config, out string
	loc              *time.Location
}

func newLaneFixture(t *testing.T, tz string) *laneFixture {
	t.Helper()
	dir := t.TempDir()
	loc, err := time.LoadLocation(tz)
	if err != nil {
		t.Fatal(err)
	}
	f := &laneFixture{dir: dir, config: filepath.Join(dir, "lanewatch.yaml"), out: filepath.Join(dir, "policies"), loc: loc}
	if err := os.WriteFile(f.config, fmt.Appendf(nil, laneConfig, tz), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// write writes the policy file of hour (a label) with the given classes'
// lanes; the lanes' figures say free failed its probe and paid queues 55 s.
func (f *laneFixture) write(t *testing.T, dir, hour string, interactive, batch []string) string {
	t.Helper()
	file := policy.File{Hour: hour, Timezone: f.loc.String(), Basis: policy.BasisLive,
		Lanes: []policy.Lane{
			{Name: "free", Kind: "free", Eligible: false, Reason: policy.ReasonProbeFailed, NextQueueS: 35, TokPerS: 40, Samples: 3, Failures: 1},
			{Name: "paid", Kind: "paid", Eligible: true, Reason: policy.ReasonOK, NextQueueS: 55, TokPerS: 41.5, Samples: 3},
			{Name: "plain", Kind: "free", Eligible: false, Reason: policy.ReasonNeverSampled},
		},
		Classes: []policy.Class{
			{Name: "interactive", DeadlineS: 60, CeilingTokens: 4000, EstTokens: 800, Lanes: interactive,
				Book: policy.BookPolicy{DeadlineS: 60, CeilingTokens: 4000, NextQueueS: 35, NextGenS: 20, NextEstTokens: 800, PaidQueueS: 55, PaidUSDPer1k: 0.002, PaidEligible: true}},
			{Name: "batch", DeadlineS: 600, CeilingTokens: 4000, EstTokens: 800, Lanes: batch,
				Book: policy.BookPolicy{DeadlineS: 600, CeilingTokens: 4000, NextQueueS: 35, NextGenS: 20, NextEstTokens: 800, PaidQueueS: 55, PaidUSDPer1k: 0.002, PaidEligible: true}},
		},
	}
	data, err := policy.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, hour+".yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// laneEnv is an env whose clock reads now and whose lookupEnv holds the keys
// and fails the test if the lane command asks for one.
func laneEnv(t *testing.T, now time.Time) *env {
	return &env{
		now: func() time.Time { return now },
		lookupEnv: func(k string) (string, bool) {
			t.Errorf("policygen lane read the environment variable %q", k)
			v, ok := map[string]string{"LW_TEST_FREE_KEY": freeSecret, "LW_TEST_PAID_KEY": paidSecret}[k]
			return v, ok
		},
	}
}

func TestLane(t *testing.T) {
	t.Setenv("LW_TEST_FREE_KEY", freeSecret)
	t.Setenv("LW_TEST_PAID_KEY", paidSecret)
	now := time.Date(2026, 11, 30, 14, 25, 0, 0, time.UTC)
	fx := newLaneFixture(t, "UTC")
	fx.write(t, fx.out, "2026-11-30T14", []string{"free", "paid"}, []string{"paid", "free"})
	fx.write(t, fx.out, "2026-11-30T15", nil, []string{"paid"})
	other := filepath.Join(fx.dir, "elsewhere")
	fx.write(t, other, "2026-11-30T14", []string{"plain"}, []string{"plain"})
	bad := filepath.Join(fx.dir, "bad")
	if err := os.MkdirAll(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "2026-11-30T14.yaml"), []byte("hour: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wrongHour := filepath.Join(fx.dir, "wronghour")
	fx.write(t, wrongHour, "2026-11-30T13", []string{"free"}, nil)
	if err := os.Rename(filepath.Join(wrongHour, "2026-11-30T13.yaml"), filepath.Join(wrongHour, "2026-11-30T14.yaml")); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(fx.dir, "stale")
	fx.write(t, stale, "2026-11-30T14", []string{"gone"}, nil)

	cfg := []string{"lane", "-config", fx.config}
	cases := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string // substring; "" means stderr must be empty
	}{
		{"name (default)", []string{"-class", "interactive"}, 0, "free\n", ""},
		{"name, second class", []string{"-class", "batch", "-format", "name"}, 0, "paid\n", ""},
		{"json", []string{"-class", "batch", "-format", "json"}, 0,
			`{"lane":"paid","kind":"paid","api":"anthropic","base_url":"https://paid.example/it's/v1","model":"claude x $(reboot)","api_key_env":"LW_TEST_PAID_KEY","hour":"2026-11-30T14","class":"batch","cutover_after_s":null,"fallback":null}` + "\n", ""},
		{"env, bare values", []string{"-class", "interactive", "-format", "env"}, 0,
			"export LANEWATCH_LANE=free\nexport LANEWATCH_KIND=free\nexport LANEWATCH_API=openai\nexport LANEWATCH_BASE_URL=http://127.0.0.1:1/v1\nexport LANEWATCH_MODEL=m-free\n" +
				"export LANEWATCH_API_KEY_ENV=LW_TEST_FREE_KEY\nexport LANEWATCH_HOUR=2026-11-30T14\nexport LANEWATCH_CLASS=interactive\n" + noFallbackExport, ""},
		{"dotenv, bare values", []string{"-class", "interactive", "-format", "dotenv"}, 0,
			"LANEWATCH_LANE=free\nLANEWATCH_KIND=free\nLANEWATCH_API=openai\nLANEWATCH_BASE_URL=http://127.0.0.1:1/v1\nLANEWATCH_MODEL=m-free\n" +
				"LANEWATCH_API_KEY_ENV=LW_TEST_FREE_KEY\nLANEWATCH_HOUR=2026-11-30T14\nLANEWATCH_CLASS=interactive\n" + noFallbackDotenv, ""},
		{"env, quoted values", []string{"-class", "batch", "-format", "env"}, 0,
			"export LANEWATCH_LANE=paid\nexport LANEWATCH_KIND=paid\nexport LANEWATCH_API=anthropic\nexport LANEWATCH_BASE_URL='https://paid.example/it'\\''s/v1'\nexport LANEWATCH_MODEL='claude x $(reboot)'\n" +
				"export LANEWATCH_API_KEY_ENV=LW_TEST_PAID_KEY\nexport LANEWATCH_HOUR=2026-11-30T14\nexport LANEWATCH_CLASS=batch\n" + noFallbackExport, ""},
		{"dotenv, quoted values", []string{"-class", "batch", "-format", "dotenv"}, 0,
			"LANEWATCH_LANE=paid\nLANEWATCH_KIND=paid\nLANEWATCH_API=anthropic\nLANEWATCH_BASE_URL='https://paid.example/it'\\''s/v1'\nLANEWATCH_MODEL='claude x $(reboot)'\n" +
				"LANEWATCH_API_KEY_ENV=LW_TEST_PAID_KEY\nLANEWATCH_HOUR=2026-11-30T14\nLANEWATCH_CLASS=batch\n" + noFallbackDotenv, ""},
		{"env, no key variable", []string{"-class", "interactive", "-format", "env", "-dir", other}, 0,
			"export LANEWATCH_LANE=plain\nexport LANEWATCH_KIND=free\nexport LANEWATCH_API=openai\nexport LANEWATCH_BASE_URL=http://127.0.0.1:3/v1\nexport LANEWATCH_MODEL=m\n" +
				"export LANEWATCH_API_KEY_ENV=\nexport LANEWATCH_HOUR=2026-11-30T14\nexport LANEWATCH_CLASS=interactive\n" + noFallbackExport, ""},
		{"dotenv, no key variable", []string{"-class", "interactive", "-format", "dotenv", "-dir", other}, 0,
			"LANEWATCH_LANE=plain\nLANEWATCH_KIND=free\nLANEWATCH_API=openai\nLANEWATCH_BASE_URL=http://127.0.0.1:3/v1\nLANEWATCH_MODEL=m\n" +
				"LANEWATCH_API_KEY_ENV=\nLANEWATCH_HOUR=2026-11-30T14\nLANEWATCH_CLASS=interactive\n" + noFallbackDotenv, ""},
		{"-dir", []string{"-class", "batch", "-dir", other}, 0, "plain\n", ""},
		{"-hour", []string{"-class", "batch", "-hour", "2026-11-30T15"}, 0, "paid\n", ""},
		{"no lane fits", []string{"-class", "interactive", "-hour", "2026-11-30T15", "-format", "json"}, 3, "",
			`policygen: lane: no lane fits class "interactive" in 2026-11-30T15: free: probe_failed; paid: does not fit the 60 s deadline (55 s queue + 19.28 s to generate 800 tokens); plain: never_sampled` + "\n"},
		{"missing file", []string{"-class", "batch", "-hour", "2026-11-30T16"}, 1, "",
			"no policy file for 2026-11-30T16: " + filepath.Join(fx.out, "2026-11-30T16.yaml") + " does not exist (policygen -config " + fx.config + " -hour 2026-11-30T16 writes it)"},
		{"missing file, current hour", []string{"-class", "batch", "-dir", filepath.Join(fx.dir, "empty")}, 1, "",
			"does not exist (policygen -config " + fx.config + " writes it)"},
		{"wrong class", []string{"-class", "nope"}, 1, "", `class "nope": not in the policy file for 2026-11-30T14 (classes: interactive, batch)`},
		{"bad policy file", []string{"-class", "batch", "-dir", bad}, 1, "", filepath.Join(bad, "2026-11-30T14.yaml") + ": policy file:"},
		{"file of another hour", []string{"-class", "interactive", "-dir", wrongHour}, 1, "", `holds hour "2026-11-30T13", want "2026-11-30T14"`},
		{"lane not in the config", []string{"-class", "interactive", "-dir", stale}, 1, "", `lane "gone" of class "interactive" is not in the config`},
		{"no class", nil, 2, "", "lane: -class is required"},
		{"bad format", []string{"-class", "batch", "-format", "yaml"}, 2, "", `lane: -format: want name, json, env or dotenv, got "yaml"`},
		{"bad hour", []string{"-class", "batch", "-hour", "2026-11-30 14"}, 2, "", "want YYYY-MM-DDTHH"},
		{"stray argument", []string{"-class", "batch", "now"}, 2, "", `unexpected argument "now"`},
		{"unknown flag", []string{"-class", "batch", "-x"}, 2, "", "flag provided but not defined: -x"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := laneEnv(t, now).exec(t, "", append(cfg, tc.args...)...)
			if r.code != tc.code || r.stdout != tc.stdout {
				t.Fatalf("exit %d, stdout %q, stderr %q\nwant exit %d, stdout %q", r.code, r.stdout, r.stderr, tc.code, tc.stdout)
			}
			switch {
			case tc.stderr == "" && r.stderr != "":
				t.Errorf("stderr %q, want none", r.stderr)
			case tc.stderr != "" && (!strings.Contains(r.stderr, tc.stderr) || strings.Count(r.stderr, "\n") != 1):
				t.Errorf("stderr %q, want one line with %q", r.stderr, tc.stderr)
			}
			for _, secret := range []string{freeSecret, paidSecret} {
				if strings.Contains(r.stdout+r.stderr, secret) {
					t.Errorf("a key's value reached the output: %q %q", r.stdout, r.stderr)
				}
			}
			if tc.code == 0 && strings.HasSuffix(tc.args[len(tc.args)-1], "json") {
				var v map[string]any
				if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || len(v) != 10 {
					t.Errorf("json %q: %v", r.stdout, err)
				}
			}
		})
	}
}

// The env lines give back the values through sh, and each is one line.
func TestLaneEnvThroughShell(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	for _, v := range []string{"", "plain", "a b", "it's", `"$HOME"`, "$(false)`x`", `back\slash`, "x;y|z&", "~/home", "*", "é ü", "a=b,c:d@e%f+g"} {
		q, err := shellValue(v)
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(sh, "-c", "X="+q+"\nprintf '%s' \"$X\"").Output()
		if err != nil || string(out) != v {
			t.Errorf("sh read %q back as %q (%v) from %s", v, out, err, q)
		}
	}
	for _, v := range []string{"a\nLANEWATCH_LANE=evil", "a\rb", "nul\x00", "\x1b[31m"} {
		if _, err := shellValue(v); err == nil {
			t.Errorf("%q: want a control character error", v)
		}
	}
}

// The default hour is the current hour in the config's zone, not in UTC.
func TestLaneHourInConfigZone(t *testing.T) {
	for _, tc := range []struct {
		tz    string
		now   time.Time
		label string
	}{
		{"Asia/Kolkata", time.Date(2026, 11, 30, 9, 10, 0, 0, time.UTC), "2026-11-30T14"},
		{"America/New_York", time.Date(2026, 12, 1, 3, 59, 0, 0, time.UTC), "2026-11-30T22"},
	} {
		t.Run(tc.tz, func(t *testing.T) {
			fx := newLaneFixture(t, tc.tz)
			fx.write(t, fx.out, tc.label, []string{"free"}, []string{"free"})
			// The file the README's old `date -u` recipe would pick.
			fx.write(t, fx.out, tc.now.UTC().Format("2006-01-02T15"), []string{"paid"}, []string{"paid"})
			r := laneEnv(t, tc.now).exec(t, "", "lane", "-config", fx.config, "-class", "batch", "-format", "json")
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			var v api.Choice
			if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
				t.Fatal(err)
			}
			if v.Lane.Lane != "free" || v.Hour != tc.label {
				t.Fatalf("got %+v, want lane free in %s", v, tc.label)
			}
		})
	}
}

// A policy file is read with a cap, not whole.
func TestLaneFileTooLarge(t *testing.T) {
	fx := newLaneFixture(t, "UTC")
	path := fx.write(t, fx.out, "2026-11-30T14", []string{"free"}, nil)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, "#"+strings.Repeat("x", api.MaxPolicyFile)+"\n"...)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r := laneEnv(t, time.Time{}).exec(t, "", "lane", "-config", fx.config, "-class", "interactive", "-hour", "2026-11-30T14")
	if r.code != 1 || !strings.Contains(r.stderr, fmt.Sprintf("policy file %s: larger than 1048576 bytes", path)) {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
}

// whyNoLane gives a reason for exactly the lanes policy.Classes leaves out
// of a class, with the policy's own rounding, over random lanes.
func TestWhyNoLaneAgreesWithThePolicy(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for range 3000 {
		// Boundaries are likely: 3 tokens at 0.3 tok/s take 10 s (in floating
		// point a hair over), after a 50 s queue, against a 60 s deadline.
		p := policy.Params{Classes: []policy.ClassSpec{{Name: "c", DeadlineS: []float64{60, float64(rng.IntN(120))}[rng.IntN(2)], EstTokens: rng.IntN(4) * 3}}}
		var lanes []policy.Lane
		for i := range 3 {
			l := policy.Lane{Name: fmt.Sprintf("l%d", i), Kind: []string{policy.KindFree, policy.KindPaid}[rng.IntN(2)],
				Eligible: rng.IntN(4) > 0, Samples: rng.IntN(3), NextQueueS: []float64{50, float64(rng.IntN(120))}[rng.IntN(2)],
				TokPerS: []float64{0, 0.3, 1e-320, float64(rng.IntN(50)) / 10}[rng.IntN(4)]}
			if !l.Eligible {
				l.Reason = policy.ReasonProbeFailed
			}
			p.Lanes = append(p.Lanes, policy.LaneSpec{Name: l.Name, Kind: l.Kind})
			lanes = append(lanes, l)
		}
		c := policy.Classes(p, lanes)[0]
		f := policy.File{Lanes: lanes, Classes: []policy.Class{c}}
		why := api.WhyNoLane(f, c)
		for _, l := range lanes {
			listed := slices.Contains(c.Lanes, l.Name)
			said := strings.Contains(why, l.Name+": not listed for the class")
			if listed != said || strings.Contains(why, "Inf") || strings.Contains(why, "NaN") {
				t.Fatalf("lane %+v, class %+v: listed %v, but whyNoLane says %q", l, c, listed, why)
			}
		}
	}
}

// -next names the first hour from the current one on whose file lists a
// lane for the class, the same answer as api.Folder.Next.
func TestLaneNext(t *testing.T) {
	now := time.Date(2026, 11, 30, 14, 25, 0, 0, time.UTC)
	fx := newLaneFixture(t, "UTC")
	fx.write(t, fx.out, "2026-11-30T13", []string{"free"}, []string{"free"}) // past: never the answer
	fx.write(t, fx.out, "2026-11-30T14", nil, []string{"paid"})
	fx.write(t, fx.out, "2026-11-30T15", nil, nil)
	fx.write(t, fx.out, "2026-11-30T16", []string{"paid", "free"}, nil)
	empty := filepath.Join(fx.dir, "empty")
	cfg := []string{"lane", "-config", fx.config, "-next"}
	cases := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"name", []string{"-class", "interactive"}, 0, "2026-11-30T16\n", ""},
		{"current hour fits", []string{"-class", "batch"}, 0, "2026-11-30T14\n", ""},
		{"json", []string{"-class", "interactive", "-format", "json"}, 0,
			`{"class":"interactive","hour":"2026-11-30T16","start":"2026-11-30T16:00:00Z","basis":"live","lanes":["paid","free"]}` + "\n", ""},
		{"env", []string{"-class", "interactive", "-format", "env"}, 0,
			"export LANEWATCH_NEXT_HOUR=2026-11-30T16\nexport LANEWATCH_NEXT_START=2026-11-30T16:00:00Z\nexport LANEWATCH_CLASS=interactive\n", ""},
		{"unknown class fits nowhere", []string{"-class", "nope"}, 3, "", `class "nope" fits in none of the 3 policy files from 2026-11-30T14 on`},
		{"no files", []string{"-class", "interactive", "-dir", empty}, 1, "", "no policy files from 2026-11-30T14 on"},
		{"with -hour", []string{"-class", "interactive", "-hour", "2026-11-30T15"}, 2, "", "-next and -hour exclude each other"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := laneEnv(t, now).exec(t, "", append(cfg, tc.args...)...)
			if r.code != tc.code || r.stdout != tc.stdout {
				t.Fatalf("exit %d, stdout %q, stderr %q\nwant exit %d, stdout %q", r.code, r.stdout, r.stderr, tc.code, tc.stdout)
			}
			if (tc.stderr == "") != (r.stderr == "") || !strings.Contains(r.stderr, tc.stderr) {
				t.Errorf("stderr %q, want %q", r.stderr, tc.stderr)
			}
		})
	}
}

// The export lines reach a child process of the shell that evals them.
func TestLaneEnvExported(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	now := time.Date(2026, 11, 30, 14, 25, 0, 0, time.UTC)
	fx := newLaneFixture(t, "UTC")
	fx.write(t, fx.out, "2026-11-30T14", []string{"free"}, []string{"paid"})
	r := laneEnv(t, now).exec(t, "", "lane", "-config", fx.config, "-class", "batch", "-format", "env")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	out, err := exec.Command(sh, "-c", r.stdout+`sh -c 'printf "%s|%s" "$LANEWATCH_LANE" "$LANEWATCH_MODEL"'`).Output()
	if err != nil || string(out) != "paid|claude x $(reboot)" {
		t.Errorf("child saw %q (%v)", out, err)
	}
}

// A value that env or dotenv lines cannot carry (a control character: a
// newline would start a variable of its own in $GITHUB_ENV) is refused in
// one line naming the variable, with nothing on stdout; json carries it.
func TestLaneEnvRefusesAControlCharacter(t *testing.T) {
	now := time.Date(2026, 11, 30, 14, 25, 0, 0, time.UTC)
	fx := newLaneFixture(t, "UTC")
	data, err := os.ReadFile(fx.config)
	if err != nil {
		t.Fatal(err)
	}
	data = []byte(strings.Replace(string(data), `model: "claude x $(reboot)"`, `model: "claude\tx"`, 1))
	if err := os.WriteFile(fx.config, data, 0o644); err != nil {
		t.Fatal(err)
	}
	fx.write(t, fx.out, "2026-11-30T14", []string{"free"}, []string{"paid"})
	for _, format := range []string{"env", "dotenv"} {
		r := laneEnv(t, now).exec(t, "", "lane", "-config", fx.config, "-class", "batch", "-format", format)
		want := `policygen: lane: LANEWATCH_MODEL of lane "paid": holds a control character (use -format json)` + "\n"
		if r.code != 1 || r.stdout != "" || r.stderr != want {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 1, nothing, %q", format, r.code, r.stdout, r.stderr, want)
		}
	}
	if r := laneEnv(t, now).exec(t, "", "lane", "-config", fx.config, "-class", "batch", "-format", "json"); r.code != 0 || !strings.Contains(r.stdout, `"model":"claude\tx"`) {
		t.Errorf("json: exit %d, stdout %q", r.code, r.stdout)
	}
}
