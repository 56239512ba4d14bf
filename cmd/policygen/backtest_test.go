package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/influxtest"
	"github.com/lanewatch/lanewatch/internal/lanesim"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
	"github.com/lanewatch/lanewatch/store/influx"
)

// backtestConfig is the config of the backtest tests: two free lanes and a
// paid one, two classes; %s is the store section.
const backtestConfig = `timezone: UTC
store:
%s
lanes:
  - {name: free, kind: free, api: openai, base_url: "http://127.0.0.1:1/v1", model: m}
  - {name: free2, kind: free, api: openai, base_url: "http://127.0.0.1:1/v1", model: m}
  - {name: paid, kind: paid, api: anthropic, base_url: "http://127.0.0.1:2", model: m}
policy:
  out: policies
  rule: max
  lookback_days: 3
  classes:
    - {name: interactive, deadline_s: 60, ceiling_tokens: 4000, est_tokens: 800, paid_usd_per_1k: 0.002}
    - {name: batch, deadline_s: 900, ceiling_tokens: 20000, est_tokens: 4000, paid_usd_per_1k: 0.001}
`

// backtestHistory is 5 days of generated history (seed 11) from
// 2026-10-30; the tests score the last two with -end 2026-11-04T00.
var backtestHistory = lanesim.HistoryOptions{
	Start: time.Date(2026, 10, 30, 0, 0, 0, 0, time.UTC),
	Days:  5,
	Seed:  11,
	Lanes: []lanesim.HistoryLane{{Name: "free", Kind: "free"}, {Name: "free2", Kind: "free"}, {Name: "paid", Kind: "paid"}},
}

// recordHistory writes the test history into st the way lanesim history
// does.
func recordHistory(t *testing.T, st store.Store) {
	t.Helper()
	rec := store.NewRecorder(st, time.UTC)
	if err := lanesim.History(backtestHistory, func(day []store.Probe, _ []lanesim.ProbeTruth) error {
		_, err := rec.Record(context.Background(), day)
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// backtestFixture writes the config and, unless empty, a file store with
// the test history; it returns the config path.
func backtestFixture(t *testing.T, empty bool) string {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "lanewatch.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, backtestConfig, "  kind: file\n  path: data/samples.lp"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !empty {
		st, err := file.Open(filepath.Join(dir, "data", "samples.lp"), file.Options{})
		if err != nil {
			t.Fatal(err)
		}
		recordHistory(t, st)
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return cfg
}

var backtestNow = time.Date(2026, 11, 4, 0, 0, 0, 0, time.UTC)

func backtestRun(t *testing.T, args ...string) result {
	t.Helper()
	e := &env{now: func() time.Time { return backtestNow }}
	return e.exec(t, "", append([]string{"backtest"}, args...)...)
}

func TestBacktestGolden(t *testing.T) {
	cfg := backtestFixture(t, false)
	for _, format := range []string{"table", "csv", "json"} {
		t.Run(format, func(t *testing.T) {
			r := backtestRun(t, "-config", cfg, "-days", "2", "-lookback", "1,3", "-format", format)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			ext := map[string]string{"table": "txt", "csv": "csv", "json": "json"}[format]
			checkGolden(t, "backtest_"+format+"."+ext, []byte(r.stdout))
		})
	}
}

// TestBacktestJSONShape holds the JSON to the documented shape: the keys of
// the issue, in its order, then the additive ones.
func TestBacktestJSONShape(t *testing.T) {
	cfg := backtestFixture(t, false)
	r := backtestRun(t, "-config", cfg, "-days", "2", "-format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var doc struct {
		Calibration []struct {
			LookbackDays int               `json:"lookback_days"`
			Best         bool              `json:"best"`
			Lanes        []json.RawMessage `json:"lanes"`
			All          json.RawMessage   `json:"all"`
		} `json:"calibration"`
		Decisions []json.RawMessage `json:"decisions"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Calibration) != 1 || doc.Calibration[0].LookbackDays != 3 || !doc.Calibration[0].Best || len(doc.Calibration[0].Lanes) != 3 {
		t.Fatalf("calibration: %+v", doc.Calibration)
	}
	counts := []string{"probes", "ok", "covered", "coverage", "median_ratio", "p90_ratio", "false_eligible", "false_ineligible", "no_policy", "censored_uncovered"}
	if got, want := objectKeys(t, doc.Calibration[0].Lanes[0]), append([]string{"lane"}, counts...); !slices.Equal(got, want) {
		t.Errorf("lane keys %v\nwant %v", got, want)
	}
	if got := objectKeys(t, doc.Calibration[0].All); !slices.Equal(got, counts) {
		t.Errorf("all keys %v\nwant %v", got, counts)
	}
	want := []string{"class", "strategy", "jobs", "met", "met_pct", "median_time_s", "burned_free_tokens", "paid_usd", "attempts"}
	if len(doc.Decisions) != 6 {
		t.Fatalf("%d decisions, want 2 classes × 3 strategies", len(doc.Decisions))
	}
	if got := objectKeys(t, doc.Decisions[0]); !slices.Equal(got, want) {
		t.Errorf("decision keys %v\nwant %v", got, want)
	}
	// -hours adds the hours of day to every lane and to all.
	r = backtestRun(t, "-config", cfg, "-days", "2", "-format", "json", "-hours")
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if got := objectKeys(t, doc.Calibration[0].Lanes[0]); got[len(got)-1] != "hours" {
		t.Errorf("-hours: lane keys %v, want hours last", got)
	}
}

// objectKeys returns the keys of a JSON object, in order.
func objectKeys(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", raw)
	}
	var ks []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		ks = append(ks, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return ks
}

func TestBacktestHoursTable(t *testing.T) {
	cfg := backtestFixture(t, false)
	plain := backtestRun(t, "-config", cfg, "-days", "2").stdout
	hours := backtestRun(t, "-config", cfg, "-days", "2", "-hours").stdout
	if strings.Contains(plain, "\n  13 ") || !strings.Contains(hours, "\n  13 ") {
		t.Errorf("hour rows: want them only with -hours\n%s", hours)
	}
	for line := range strings.SplitSeq(hours, "\n") {
		if n := len([]rune(line)); n > 100 {
			t.Errorf("line of %d columns: %q", n, line)
		}
	}
	// 24 hour rows under each of the 3 lanes and all.
	if n := strings.Count(hours, "\n  "); n != 4*24 {
		t.Errorf("%d hour rows, want 96", n)
	}
}

// TestBacktestDefaultWindow: without -end the window ends now, and -days
// counts back from it.
func TestBacktestDefaultWindow(t *testing.T) {
	cfg := backtestFixture(t, false)
	r := backtestRun(t, "-config", cfg, "-days", "1", "-format", "json")
	var rep struct {
		From, To time.Time
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.To.Equal(backtestNow) || !rep.From.Equal(backtestNow.AddDate(0, 0, -1)) {
		t.Errorf("window %s .. %s, want the day before %s", rep.From, rep.To, backtestNow)
	}
	end := backtestRun(t, "-config", cfg, "-days", "1", "-end", "2026-11-03T12", "-format", "json")
	if err := json.Unmarshal([]byte(end.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC); !rep.To.Equal(want) {
		t.Errorf("-end: window ends %s, want %s", rep.To, want)
	}
}

func TestBacktestFreshInstall(t *testing.T) {
	cfg := backtestFixture(t, true)
	r := backtestRun(t, "-config", cfg, "-days", "2")
	if r.code != 0 || !strings.Contains(r.stderr, "nothing sampled yet") || strings.Count(r.stderr, "\n") != 1 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, ": 0 probes scored") || !strings.Contains(r.stdout, "\nall                    0       0       0        - ") {
		t.Errorf("stdout:\n%s", r.stdout)
	}
}

func TestBacktestBadUsage(t *testing.T) {
	cfg := backtestFixture(t, true)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-config", cfg, "-lookback", "x"}, `policygen: backtest: -lookback: want comma-separated days 0..366, got "x"` + "\n"},
		{[]string{"-config", cfg, "-lookback", "1,367"}, `policygen: backtest: -lookback: want comma-separated days 0..366, got "1,367"` + "\n"},
		{[]string{"-config", cfg, "-lookback", "1,,3"}, `policygen: backtest: -lookback: want comma-separated days 0..366, got "1,,3"` + "\n"},
		{[]string{"-config", cfg, "-lookback", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17"}, "policygen: backtest: -lookback: want at most 16 values, got 17\n"},
		{[]string{"-config", cfg, "-format", "xml"}, `policygen: backtest: -format: want table, csv or json, got "xml"` + "\n"},
		{[]string{"-config", cfg, "-days", "0"}, "policygen: backtest: -days: want 1 to 3660, got 0\n"},
		{[]string{"-config", cfg, "-days", "3661"}, "policygen: backtest: -days: want 1 to 3660, got 3661\n"},
		{[]string{"-config", cfg, "-end", "2026-11-04"}, `policygen: backtest: -end: hour "2026-11-04": want YYYY-MM-DDTHH` + "\n"},
		{[]string{"-days", "2"}, "policygen: backtest: -config is required\n"},
		{[]string{"-config", cfg, "now"}, `policygen: backtest: unexpected argument "now"` + "\n"},
		{[]string{"-config", cfg, "-bogus"}, "policygen: backtest: flag provided but not defined: -bogus (-h for usage)\n"},
		{[]string{"-config", cfg, "-busy429", "0"}, `policygen: backtest: -busy429: want held or seconds above 0, got "0"` + "\n"},
		{[]string{"-config", cfg, "-busy429", "NaN"}, `policygen: backtest: -busy429: want held or seconds above 0, got "NaN"` + "\n"},
		{[]string{"-config", cfg, "-busy429", "hold"}, `policygen: backtest: -busy429: want held or seconds above 0, got "hold"` + "\n"},
	} {
		r := backtestRun(t, tc.args...)
		if r.code != 2 || r.stderr != tc.want || r.stdout != "" {
			t.Errorf("%v: exit %d, stderr %q\nwant %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	r := backtestRun(t, "-h")
	if r.code != 0 || !strings.Contains(r.stderr, "usage: policygen backtest") || !strings.Contains(r.stderr, "-lookback values") {
		t.Errorf("-h: exit %d\n%s", r.code, r.stderr)
	}
}

func TestBacktestStoreError(t *testing.T) {
	cfg := backtestFixture(t, true)
	// The store path is a named pipe: not a missing file, an error.
	if err := os.MkdirAll(filepath.Join(filepath.Dir(cfg), "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(filepath.Dir(cfg), "data", "samples.lp"), 0o644); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	r := backtestRun(t, "-config", cfg, "-days", "2")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "policygen: backtest: ") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
	// A folder is the config's error, naming the key.
	if err := os.Remove(filepath.Join(filepath.Dir(cfg), "data", "samples.lp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(filepath.Dir(cfg), "data", "samples.lp"), 0o755); err != nil {
		t.Fatal(err)
	}
	r = backtestRun(t, "-config", cfg, "-days", "2")
	if r.code != 1 || !strings.Contains(r.stderr, "store.path: ") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("folder: exit %d, stderr %q", r.code, r.stderr)
	}
	r = backtestRun(t, "-config", filepath.Join(t.TempDir(), "missing.yaml"))
	if r.code != 1 || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("missing config: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestBacktestInfluxEqualsFile runs the backtest over the same history in
// InfluxDB and in the embedded file: the same report, byte for byte.
func TestBacktestInfluxEqualsFile(t *testing.T) {
	var url, db string
	if u := os.Getenv("INFLUX_URL"); u != "" {
		url = strings.TrimSuffix(u, "/")
		db = influxtest.NewDB(t, url)
	} else {
		srv := influxtest.Start(t)
		url, db = srv.URL, srv.CreateDB(t, "lanewatch")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "lanewatch.yaml")
	storePath := fmt.Sprintf("  kind: influx\n  url: %s\n  bucket: %s/autogen\n  spool: spool.lp\n  dead_letter: dead.lp", url, db)
	if err := os.WriteFile(cfg, fmt.Appendf(nil, backtestConfig, storePath), 0o644); err != nil {
		t.Fatal(err)
	}
	inf, err := influx.Open(context.Background(), influx.Options{URL: url, Bucket: db + "/autogen"})
	if err != nil {
		t.Fatal(err)
	}
	recordHistory(t, inf)
	if err := inf.Close(); err != nil {
		t.Fatal(err)
	}
	args := []string{"-days", "2", "-lookback", "1,3", "-format", "json"}
	fromInflux := backtestRun(t, append([]string{"-config", cfg}, args...)...)
	fromFile := backtestRun(t, append([]string{"-config", backtestFixture(t, false)}, args...)...)
	if fromInflux.code != 0 || fromInflux.stdout != fromFile.stdout {
		t.Errorf("exit %d %s\nInfluxDB:\n%s\nfile:\n%s", fromInflux.code, fromInflux.stderr, fromInflux.stdout, fromFile.stdout)
	}
}

// backtestBenchArgs backtests the whole year of the benchmark history
// (bench_test.go), ending with it.
func backtestBenchArgs(config string) []string {
	return []string{"backtest", "-config", config, "-days", "365", "-end", "2026-11-30T15", "-format", "json"}
}

// BenchmarkBacktestYear times run() for `policygen backtest` over a year of
// 50 lanes, in process.
func BenchmarkBacktestYear(b *testing.B) {
	dir := benchHistory(b)
	for _, r := range benchRules {
		b.Run("rule="+r.rule, func(b *testing.B) {
			args := backtestBenchArgs(benchConfig(b, dir, r.rule))
			b.ReportAllocs()
			for b.Loop() {
				e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: os.Stderr, lookupEnv: os.LookupEnv, now: time.Now}
				if err := e.run(context.Background(), args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBacktestYearBinary runs the built binary over the same year and
// reports its wall time and peak RSS (from rusage).
func BenchmarkBacktestYearBinary(b *testing.B) {
	dir := benchHistory(b)
	bin := buildPolicygen(b)
	for _, r := range benchRules {
		b.Run("rule="+r.rule, func(b *testing.B) {
			benchBinary(b, bin, backtestBenchArgs(benchConfig(b, dir, r.rule))...)
		})
	}
}

// TestBacktestOutOfOrderFileSameReport: the report over a file with older
// history appended late (the replay restarts) equals the report over the
// same probes written in time order (one pass).
func TestBacktestOutOfOrderFileSameReport(t *testing.T) {
	ctx := context.Background()
	unordered := backtestFixture(t, false)
	st, err := file.Open(filepath.Join(filepath.Dir(unordered), "data", "samples.lp"), file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	old := store.Probe{Lane: "free", Kind: "free", Time: backtestNow.Add(-36*time.Hour + time.Second), OK: false, Outcome: "timeout", QueueS: 30}
	if err := st.Write(ctx, store.Batch{Probes: []store.Probe{old}}); err != nil {
		t.Fatal(err)
	}
	all, err := store.ReadProbes(ctx, st, store.Between(time.Unix(0, 0), backtestNow.Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	ordered := backtestFixture(t, true)
	st, err = file.Open(filepath.Join(filepath.Dir(ordered), "data", "samples.lp"), file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Write(ctx, store.Batch{Probes: all}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	args := []string{"-days", "2", "-lookback", "1,3", "-format", "json"}
	a := backtestRun(t, append([]string{"-config", unordered}, args...)...)
	b := backtestRun(t, append([]string{"-config", ordered}, args...)...)
	if a.code != 0 || b.code != 0 || a.stdout != b.stdout {
		t.Errorf("out of order: exit %d %s\n%s\nin order: exit %d %s\n%s", a.code, a.stderr, a.stdout, b.code, b.stderr, b.stdout)
	}
	if !strings.Contains(a.stdout, `"probes"`) {
		t.Errorf("no report: %s", a.stdout)
	}
}
