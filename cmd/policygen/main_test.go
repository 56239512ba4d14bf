package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// childEnv names the variable that turns the test binary into a policygen
// child that stops in the middle of writing a policy file (see
// TestKilledMidWriteKeepsOldFile).
const childEnv = "POLICYGEN_TEST_CHILD_ARGS"

func TestMain(m *testing.M) {
	if args := os.Getenv(childEnv); args != "" {
		e := &env{stdin: os.Stdin, stdout: io.Discard, stderr: os.Stderr, lookupEnv: os.LookupEnv, now: time.Now,
			writeHook: func(stage, tmp string) error {
				if stage == "partial" {
					fmt.Printf("partial %s\n", tmp)
					time.Sleep(time.Minute) // the parent kills us here
				}
				return nil
			}}
		os.Exit(exitCode(e.run(context.Background(), strings.Split(args, "\x1f")), os.Stderr))
	}
	os.Exit(m.Run())
}

const configTmpl = `timezone: %s
store:
  kind: file
  path: data/samples.lp
lanes:
  - name: free
    kind: free
    api: openai
    base_url: http://127.0.0.1:1/v1
    model: m
  - name: paid
    kind: paid
    api: anthropic
    base_url: http://127.0.0.1:2
    model: m
policy:
  out: policies
  rule: max
  lookback_days: 7
  classes:
    - name: interactive
      deadline_s: 60
      ceiling_tokens: 4000
      est_tokens: 800
      paid_usd_per_1k: 0.002
`

// fixture is a config and an embedded store in a temp dir.
type fixture struct {
	dir, config, store, out string
	loc                     *time.Location
}

func newFixture(t *testing.T, tz string) *fixture {
	t.Helper()
	dir := t.TempDir()
	loc, err := time.LoadLocation(tz)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{dir: dir, config: filepath.Join(dir, "lanewatch.yaml"), store: filepath.Join(dir, "data", "samples.lp"), out: filepath.Join(dir, "policies"), loc: loc}
	if err := os.WriteFile(f.config, fmt.Appendf(nil, configTmpl, tz), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// round is one sampler round: a probe per lane and the hourly points so far.
type round struct {
	at        time.Time
	freeQueue float64
	freeOK    bool
}

// seed writes rounds the way the sampler does: each round's probes, then the
// hour's aggregate so far for each lane (which replaces the previous one).
func (f *fixture) seed(t *testing.T, rounds []round) {
	t.Helper()
	st, err := file.Open(f.store, file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sofar := map[string][]store.Probe{}
	for _, r := range rounds {
		hour := store.HourStart(r.at, f.loc)
		free := store.Probe{Lane: "free", Kind: "free", Time: r.at, QueueS: r.freeQueue, GenS: 0.4, HeadersS: 0.1, Tokens: 16, OK: r.freeOK, Outcome: "ok", Status: 200}
		if !r.freeOK {
			free.Outcome, free.Status, free.QueueS, free.GenS, free.Tokens = "http_error", 503, 0, 0, 0
		}
		paid := store.Probe{Lane: "paid", Kind: "paid", Time: r.at.Add(time.Second), QueueS: 1.25, GenS: 0.1, HeadersS: 0.1, Tokens: 16, OK: true, Outcome: "ok", Status: 200}
		var hourly []store.Hourly
		for _, p := range []store.Probe{free, paid} {
			k := p.Lane + hour.String()
			sofar[k] = append(sofar[k], p)
			hourly = append(hourly, store.Aggregate(p.Lane, p.Kind, "", hour, sofar[k]))
		}
		if err := st.Write(context.Background(), store.Batch{Probes: []store.Probe{free, paid}, Hourly: hourly}); err != nil {
			t.Fatal(err)
		}
	}
}

// history returns three rounds an hour (at :07, :27, :47) for days
// -daysBefore..0 relative to the day of target, up to target. The free lane queues
// 20 s, 40 s three days before at target's hour of day, 15 s in target's
// hour itself.
func history(loc *time.Location, target time.Time, daysBefore int) []round {
	var rs []round
	tl := target.In(loc)
	for d := -daysBefore; d <= 0; d++ {
		for h := range 24 {
			start := time.Date(tl.Year(), tl.Month(), tl.Day()+d, h, 0, 0, 0, loc)
			if start.Hour() != h {
				continue // a DST gap
			}
			q := 20.0
			switch {
			case d == 0 && h == tl.Hour():
				q = 15
			case d == -3 && h == tl.Hour():
				q = 40
			}
			for _, m := range []int{7, 27, 47} {
				at := start.Add(time.Duration(m)*time.Minute + 3*time.Second)
				if !at.After(target) {
					rs = append(rs, round{at: at, freeQueue: q - float64(47-m)/47, freeOK: true})
				}
			}
		}
	}
	return rs
}

type result struct {
	code           int
	stdout, stderr string
}

func (e *env) exec(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	e.stdin, e.stdout, e.stderr = strings.NewReader(stdin), &out, &errb
	if e.lookupEnv == nil {
		e.lookupEnv = func(string) (string, bool) { return "", false }
	}
	if e.now == nil {
		e.now = func() time.Time { t.Fatal("the clock was read"); return time.Time{} }
	}
	code := exitCode(e.run(context.Background(), args), &errb)
	return result{code, out.String(), errb.String()}
}

func runOK(t *testing.T, e *env, stdin string, args ...string) result {
	t.Helper()
	r := e.exec(t, stdin, args...)
	if r.code != 0 {
		t.Fatalf("policygen %v: exit %d\n%s", args, r.code, r.stderr)
	}
	return r
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs:\n%s", path, got)
	}
}

func validateSchema(t *testing.T, data []byte) {
	t.Helper()
	raw, err := os.Open(filepath.Join("..", "..", "policy", "policy.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	doc, err := jsonschema.UnmarshalJSON(raw)
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
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(v)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Fatalf("policy file does not validate: %v", err)
	}
}

func TestHourWritesPolicyFile(t *testing.T) {
	for _, tc := range []struct {
		tz, hour, golden string
	}{
		{"UTC", "2026-11-30T14", "hour_utc.yaml"},
		{"America/New_York", "2026-03-09T02", "hour_new_york_after_spring_forward.yaml"},
		{"Asia/Kolkata", "2026-06-15T09", "hour_kolkata.yaml"},
	} {
		t.Run(tc.tz, func(t *testing.T) {
			fx := newFixture(t, tc.tz)
			h, err := store.ParseHour(tc.hour, fx.loc)
			if err != nil {
				t.Fatal(err)
			}
			fx.seed(t, history(fx.loc, h.Add(50*time.Minute), 9))
			e := &env{}
			r := runOK(t, e, "", "-config", fx.config, "-hour", tc.hour)
			path := filepath.Join(fx.out, tc.hour+".yaml")
			if r.stdout != path+"\n" {
				t.Fatalf("stdout %q, want the path %s", r.stdout, path)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tc.golden, data)
			validateSchema(t, data)
			f, err := policy.ParseFile(data)
			if err != nil {
				t.Fatal(err)
			}
			free := f.Lanes[0]
			// 40 s three days back beats the 15 s of the hour itself; every
			// lookback day has the hour except 2026-03-08 in New York.
			wantSamples := 8 * 3
			if tc.tz == "America/New_York" {
				wantSamples = 7 * 3
			}
			if !free.Eligible || free.NextQueueS != 40 || free.Samples != wantSamples || free.TokPerS != 40 {
				t.Fatalf("free lane: %+v", free)
			}
			if got := free.LastSample; !got.Equal(h.Add(47*time.Minute + 3*time.Second).Truncate(time.Second)) {
				t.Fatalf("last_sample %v", got)
			}
			// Two runs on the same data: identical bytes.
			runOK(t, e, "", "-config", fx.config, "-hour", tc.hour)
			again, _ := os.ReadFile(path)
			if !bytes.Equal(again, data) {
				t.Fatal("a second run wrote different bytes")
			}
		})
	}
}

func TestHourDefaultsToNowInConfigZone(t *testing.T) {
	fx := newFixture(t, "America/New_York")
	now := time.Date(2026, 11, 30, 19, 30, 0, 0, time.UTC) // 14:30 EST
	fx.seed(t, history(fx.loc, now, 2))
	e := &env{now: func() time.Time { return now }}
	r := runOK(t, e, "", "-config", fx.config, "-out", filepath.Join(fx.dir, "elsewhere"))
	want := filepath.Join(fx.dir, "elsewhere", "2026-11-30T14.yaml")
	if strings.TrimSpace(r.stdout) != want {
		t.Fatalf("stdout %q, want %s", r.stdout, want)
	}
}

func TestHourWithFailedProbe(t *testing.T) {
	fx := newFixture(t, "UTC")
	h := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	rs := history(time.UTC, h.Add(-3*time.Hour), 2) // nothing since 11:00
	rs = append(rs, round{at: h.Add(7 * time.Minute), freeQueue: 5, freeOK: true}, round{at: h.Add(27 * time.Minute), freeOK: false})
	fx.seed(t, rs)
	r := runOK(t, &env{}, "", "-config", fx.config, "-hour", "2026-11-30T14", "-print")
	if !strings.HasPrefix(r.stdout, "# wrote "+filepath.Join(fx.out, "2026-11-30T14.yaml")+"\n# generated by lanewatch policygen") {
		t.Fatalf("-print output:\n%s", r.stdout)
	}
	f, err := policy.ParseFile([]byte(r.stdout))
	if err != nil {
		t.Fatal(err)
	}
	if l := f.Lanes[0]; l.Eligible || l.Reason != policy.ReasonProbeFailed || l.Failures != 1 {
		t.Fatalf("free: %+v", l)
	}
	b, _ := f.Book("interactive")
	if b.FreeEligible || !b.PaidEligible {
		t.Fatalf("book: %+v", b)
	}
	// A retry on an ineligible free lane is never retry_free.
	if d := policy.Book(nil, b); d.Action != policy.CutOver {
		t.Fatalf("ledger: %+v", d)
	}
}

func TestDayWritesForecasts(t *testing.T) {
	fx := newFixture(t, "America/New_York")
	day := time.Date(2026, 3, 8, 12, 0, 0, 0, fx.loc) // 23 hours long
	fx.seed(t, history(fx.loc, day.Add(-13*time.Hour), 8))
	r := runOK(t, &env{}, "", "-config", fx.config, "-day", "2026-03-08")
	paths := strings.Fields(r.stdout)
	if len(paths) != 24 {
		t.Fatalf("%d files, want 24:\n%s", len(paths), r.stdout)
	}
	for i, p := range paths {
		want := filepath.Join(fx.out, fmt.Sprintf("2026-03-08T%02d.yaml", i))
		if p != want {
			t.Fatalf("file %d: %s, want %s", i, p, want)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		f, err := policy.ParseFile(data)
		if err != nil || f.Basis != policy.BasisForecast {
			t.Fatalf("%s: %v %+v", p, err, f)
		}
		if i == 2 {
			checkGolden(t, "day_new_york_spring_forward_02.yaml", data)
			validateSchema(t, data)
		}
	}
}

func TestWriteFaultKeepsOldFile(t *testing.T) {
	for _, stage := range []string{"partial", "synced"} {
		t.Run(stage, func(t *testing.T) {
			fx := newFixture(t, "UTC")
			h := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
			fx.seed(t, history(time.UTC, h.Add(10*time.Minute), 1))
			runOK(t, &env{}, "", "-config", fx.config, "-hour", "2026-11-30T14")
			path := filepath.Join(fx.out, "2026-11-30T14.yaml")
			old, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			fx.seed(t, []round{{at: h.Add(27 * time.Minute), freeQueue: 59, freeOK: true}}) // new data: new bytes
			fault := errors.New("disk on fire")
			sawTemp := false
			e := &env{writeHook: func(s, tmp string) error {
				if s != stage {
					return nil
				}
				if _, err := os.Stat(tmp); err == nil {
					sawTemp = true
				}
				return fault
			}}
			r := e.exec(t, "", "-config", fx.config, "-hour", "2026-11-30T14")
			if r.code != 1 || !strings.Contains(r.stderr, "disk on fire") || strings.Count(r.stderr, "\n") != 1 {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			if !sawTemp {
				t.Fatal("the hook did not see the temp file")
			}
			now, _ := os.ReadFile(path)
			if !bytes.Equal(now, old) {
				t.Fatal("the old policy file changed")
			}
			entries, _ := os.ReadDir(fx.out)
			if len(entries) != 1 {
				t.Fatalf("files left in %s: %v", fx.out, entries)
			}
			// Without the fault the new data lands.
			runOK(t, &env{}, "", "-config", fx.config, "-hour", "2026-11-30T14")
			if now, _ := os.ReadFile(path); bytes.Equal(now, old) || !bytes.Contains(now, []byte("next_queue_s: 59")) {
				t.Fatalf("new file:\n%s", now)
			}
		})
	}
}

// TestKilledMidWriteKeepsOldFile SIGKILLs a policygen child (this test binary
// in child mode) while it is half-way through writing the temp file.
func TestKilledMidWriteKeepsOldFile(t *testing.T) {
	fx := newFixture(t, "UTC")
	h := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	fx.seed(t, history(time.UTC, h.Add(10*time.Minute), 1))
	runOK(t, &env{}, "", "-config", fx.config, "-hour", "2026-11-30T14")
	path := filepath.Join(fx.out, "2026-11-30T14.yaml")
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fx.seed(t, []round{{at: h.Add(27 * time.Minute), freeQueue: 59, freeOK: true}})

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+strings.Join([]string{"-config", fx.config, "-hour", "2026-11-30T14"}, "\x1f"))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "partial ") {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("child did not reach the write: %q %v\n%s", line, err, stderr.String())
	}
	tmp := strings.TrimSpace(strings.TrimPrefix(line, "partial "))
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = cmd.Wait()

	if now, _ := os.ReadFile(path); !bytes.Equal(now, old) {
		t.Fatal("the old policy file changed")
	}
	part, err := os.ReadFile(tmp)
	if err != nil || len(part) == 0 || len(part) >= len(old) {
		t.Fatalf("want the killed child's partial temp file: %d bytes, %v", len(part), err)
	}
	// A later run replaces the file; an hour-old leftover temp file goes.
	past := time.Now().Add(-2 * staleTemp)
	if err := os.Chtimes(tmp, past, past); err != nil {
		t.Fatal(err)
	}
	runOK(t, &env{}, "", "-config", fx.config, "-hour", "2026-11-30T14")
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stale temp file still there: %v", err)
	}
	if now, _ := os.ReadFile(path); !bytes.Contains(now, []byte("next_queue_s: 59")) {
		t.Fatalf("new file:\n%s", now)
	}
}

func TestBadConfigAndStore(t *testing.T) {
	fx := newFixture(t, "UTC")
	bad := filepath.Join(fx.dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("timezone: Mars/Olympus\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// store.path under a regular file: the error names the path (issue 20).
	notDir := filepath.Join(fx.dir, "notdir.yaml")
	cfgText, err := os.ReadFile(fx.config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(notDir, []byte(strings.Replace(string(cfgText), "path: data/samples.lp", "path: lanewatch.yaml/samples.lp", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"store path not a directory", []string{"-config", notDir, "-hour", "2026-11-30T14"},
			"store: open samples file: not a directory (store.path " + filepath.Join(fx.dir, "lanewatch.yaml", "samples.lp") + ")"},
		{"missing config", []string{"-config", filepath.Join(fx.dir, "nope.yaml"), "-hour", "2026-11-30T14"}, "no such file"},
		{"bad config", []string{"-config", bad, "-hour", "2026-11-30T14"}, "timezone"},
		{"bad policy file", []string{"book", "-policy", fx.config, "-class", "interactive"}, "policy file"},
		{"unknown class", []string{"book", "-policy", writePolicy(t, fx), "-class", "nightly"}, `class "nightly": not in the policy file`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := (&env{}).exec(t, `{"attempts": []}`, tc.args...)
			if r.code != 1 || !strings.Contains(r.stderr, tc.want) || strings.Count(r.stderr, "\n") != 1 {
				t.Fatalf("exit %d, stderr %q; want 1 and one line with %q", r.code, r.stderr, tc.want)
			}
		})
	}
}

func writePolicy(t *testing.T, fx *fixture) string {
	t.Helper()
	p, err := policy.Marshal(policy.File{Hour: "2026-11-30T14", Timezone: "UTC", Basis: "live", Classes: []policy.Class{{Name: "interactive", Book: policy.BookPolicy{DeadlineS: 60}}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(fx.dir, "p.yaml")
	if err := os.WriteFile(path, p, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestBadUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no config", nil, "-config is required"},
		{"unknown flag", []string{"-config", "x", "-frobnicate"}, "flag provided but not defined"},
		{"stray argument", []string{"-config", "x", "now"}, `unexpected argument "now"`},
		{"hour and day", []string{"-config", "x", "-hour", "2026-11-30T14", "-day", "2026-11-30"}, "exclude each other"},
		{"book policy without class", []string{"book", "-policy", "p.yaml"}, "-policy and -class go together"},
		{"book class without policy", []string{"book", "-class", "interactive"}, "-policy and -class go together"},
		{"book argument", []string{"book", "attempts.json"}, "input comes on stdin"},
		{"book unknown flag", []string{"book", "-x"}, "flag provided but not defined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := (&env{}).exec(t, "", tc.args...)
			if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", r.code, r.stderr, tc.want)
			}
		})
	}
	t.Run("bad hour values", func(t *testing.T) {
		fx := newFixture(t, "America/New_York")
		for _, tc := range []struct{ flag, val, want string }{
			{"-hour", "2026-11-30", "want YYYY-MM-DDTHH"},
			{"-hour", "2026-03-08T02", "does not exist in America/New_York"},
			{"-day", "2026-11-30T14", "want YYYY-MM-DD"},
		} {
			r := (&env{}).exec(t, "", "-config", fx.config, tc.flag, tc.val)
			if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("%s %s: exit %d, stderr %q", tc.flag, tc.val, r.code, r.stderr)
			}
		}
	})
	t.Run("bad hour with a store that is down", func(t *testing.T) {
		// The flags are checked before the store is opened: a usage error
		// stays a usage error, whatever the store's state.
		cfg := filepath.Join(t.TempDir(), "down.yaml")
		yaml := "store: {kind: influx, url: \"http://127.0.0.1:1\", bucket: lanewatch}\n" +
			"lanes:\n  - {name: free, kind: free, api: openai, base_url: \"http://127.0.0.1:1/v1\", model: m}\n"
		if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"-day", "junk"}, {"-hour", "junk"}} {
			r := (&env{}).exec(t, "", append([]string{"-config", cfg}, args...)...)
			if r.code != 2 || !strings.Contains(r.stderr, args[0]+":") {
				t.Errorf("%v: exit %d, stderr %q; want 2 and the flag named", args, r.code, r.stderr)
			}
		}
	})
	t.Run("help", func(t *testing.T) {
		r := (&env{}).exec(t, "", "-h")
		if r.code != 0 || !strings.Contains(r.stderr, "usage: policygen -config F") {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
		// Every form a subcommand's own -h gives is in the overview.
		for _, sub := range []string{"book", "lane", "serve", "swings", "backtest"} {
			sr := (&env{}).exec(t, "", sub, "-h")
			for _, line := range strings.Split(sr.stderr, "\n") {
				form := strings.TrimSpace(strings.TrimPrefix(line, "usage:"))
				if !strings.HasPrefix(form, "policygen "+sub) {
					continue
				}
				if words := strings.Fields(form); !strings.Contains(r.stderr, strings.Join(words[:min(len(words), 4)], " ")) {
					t.Errorf("policygen -h lacks %q (from policygen %s -h)", form, sub)
				}
			}
		}
	})
}

func TestRunWiring(t *testing.T) {
	v := readVector(t, vectorFiles(t)[0])
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"book"}, bytes.NewReader(v.Input), &out, &errb, os.LookupEnv)
	if err != nil || errb.Len() != 0 {
		t.Fatalf("run: %v, stderr %q", err, errb.String())
	}
	sameJSON(t, out.Bytes(), v.Expected)
}

func TestStoreWarningsAreOneLineAndNotFatal(t *testing.T) {
	fx := newFixture(t, "UTC")
	h := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	fx.seed(t, history(time.UTC, h.Add(50*time.Minute), 1))
	lp, err := os.OpenFile(fx.store, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The bad record is of the hour read (a line outside the read's window
	// is passed over unparsed).
	if _, err := fmt.Fprintf(lp, "queue_hourly,kind=free,lane=free worst_queue_s=\"x\" %d\nnot line protocol\n", h.UnixNano()); err != nil {
		t.Fatal(err)
	}
	if err := lp.Close(); err != nil {
		t.Fatal(err)
	}
	r := runOK(t, &env{}, "", "-config", fx.config, "-hour", "2026-11-30T14")
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if len(lines) < 2 {
		t.Fatalf("want a warning per corrupt line, stderr %q", r.stderr)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "policygen: warning: skipped corrupt line") || !strings.Contains(l, `path="`+fx.store+`"`) {
			t.Fatalf("warning line %q", l)
		}
	}
}
