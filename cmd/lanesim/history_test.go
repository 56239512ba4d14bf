package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/cli"
	"github.com/lanewatch/lanewatch/internal/influxtest"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
	"github.com/lanewatch/lanewatch/store/influx"
)

func history(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = cli.Exit("lanesim", run(context.Background(), append([]string{"history"}, args...), &out, &errb), &errb)
	return code, out.String(), errb.String()
}

func TestHistorySameSeedSameBytes(t *testing.T) {
	dir := t.TempDir()
	a, b, c := filepath.Join(dir, "a.lp"), filepath.Join(dir, "b.lp"), filepath.Join(dir, "c.lp")
	for _, tc := range []struct{ path, seed string }{{a, "3"}, {b, "3"}, {c, "4"}} {
		code, out, errs := history(t, "-days", "3", "-start", "2026-11-01", "-seed", tc.seed, "-out", tc.path)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		if want := "lanesim history: "; !strings.HasPrefix(out, want) || !strings.Contains(out, "3 lanes, 3 days from 2026-11-01T00:00Z") {
			t.Errorf("stdout %q", out)
		}
	}
	da, _ := os.ReadFile(a)
	db, _ := os.ReadFile(b)
	dc, _ := os.ReadFile(c)
	if len(da) == 0 || !bytes.Equal(da, db) {
		t.Error("the same seed gave different files")
	}
	if bytes.Equal(da, dc) {
		t.Error("another seed gave the same file")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}

	// The hourly invariant holds: every stored record is its probes' rollup.
	st, err := file.Open(a, file.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := store.Between(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 4, 0, 0, 0, 0, time.UTC))
	probes, _ := store.ReadProbes(context.Background(), st, store.Query{Windows: []store.Window{w.Windows[0]}})
	hourly, _ := store.ReadHourly(context.Background(), st, store.Query{Windows: []store.Window{w.Windows[0]}})
	if got, want := hourly, store.Rollup(probes, time.UTC); len(probes) < 3*3*72*9/10 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%d probes; stored hourly records differ from the rollup of the probes", len(probes))
	}
}

func TestHistoryRefusesToReplace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.lp")
	if err := os.WriteFile(path, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := history(t, "-days", "1", "-start", "2026-11-01", "-out", path)
	if code != 1 || errs != "lanesim: history: "+path+" exists; use -force to replace it\n" {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	if b, _ := os.ReadFile(path); string(b) != "keep me\n" {
		t.Error("the file was changed")
	}
	if code, _, errs := history(t, "-days", "1", "-start", "2026-11-01", "-out", path, "-force"); code != 0 {
		t.Fatalf("-force: exit %d: %s", code, errs)
	}
	if b, _ := os.ReadFile(path); !bytes.HasPrefix(b, []byte("probe,")) {
		t.Error("-force did not replace the file")
	}
	// Nothing is left beside it but the store's lock file.
	entries, _ := os.ReadDir(filepath.Dir(path))
	for _, e := range entries {
		if e.Name() != "h.lp" && e.Name() != "h.lp.lock" {
			t.Errorf("left behind: %s", e.Name())
		}
	}
	// Not under a running sampler: its writer lock is taken first.
	before, _ := os.ReadFile(path)
	sampler, err := file.Open(path, file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sampler.Close()
	code, _, errs = history(t, "-days", "1", "-start", "2026-11-02", "-out", path, "-force")
	if code != 1 || !strings.Contains(errs, "replace "+path) {
		t.Errorf("-force under a sampler: exit %d, stderr %q; want 1 and the file named", code, errs)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
		t.Error("-force replaced the file under a running sampler")
	}
}

func TestHistoryBadFlags(t *testing.T) {
	out := filepath.Join(t.TempDir(), "h.lp")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-days", "0", "-out", out}, "lanesim: history: -days: want 1 to 3660, got 0\n"},
		{[]string{"-days", "2"}, "lanesim: history: -out or -config is required\n"},
		{[]string{"-out", out, "-lanes", "free,Bad"}, "lanesim: history: -lanes: lane \"Bad\": want a name of [a-z0-9_-]\n"},
		{[]string{"-out", out, "-lanes", "a:cheap"}, "lanesim: history: -lanes: lane \"a\": kind \"cheap\": want free or paid\n"},
		{[]string{"-out", out, "-lanes", "a,a"}, "lanesim: history: -lanes: lane \"a\" given twice\n"},
		{[]string{"-out", out, "-start", "2026-13-01"}, "lanesim: history: -start: day \"2026-13-01\": want YYYY-MM-DD (month out of range)\n"},
		{[]string{"-out", out, "-curve", "25:1"}, "lanesim: history: -curve: curve point \"25:1\": hour must be a number from 0 to below 24\n"},
		{[]string{"-out", out, "extra"}, "lanesim: history: unexpected argument \"extra\"\n"},
		{[]string{"-out", out, "-busy429", "1.5"}, "lanesim: history: -busy429: want a rate from 0 to 1, got 1.5\n"},
		{[]string{"-out", out, "-busy429", "NaN"}, "lanesim: history: -busy429: want a rate from 0 to 1, got NaN\n"},
	} {
		code, _, errs := history(t, tc.args...)
		if code != 2 || errs != tc.want {
			t.Errorf("%v: exit %d, stderr %q\nwant %q", tc.args, code, errs, tc.want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a bad run wrote the file")
	}
}

// TestHistoryIntoInflux writes the history into the InfluxDB a config
// names, with the config's lanes, and reads the same probes back as a file
// of the same history holds.
func TestHistoryIntoInflux(t *testing.T) {
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
	body := fmt.Sprintf("timezone: UTC\nstore:\n  kind: influx\n  url: %s\n  bucket: %s/autogen\n  spool: spool.lp\n  dead_letter: dead.lp\nlanes:\n"+
		"  - {name: f1, kind: free, api: openai, base_url: \"http://127.0.0.1:1/v1\", model: m}\n"+
		"  - {name: p1, kind: paid, api: openai, base_url: \"http://127.0.0.1:1/v1\", model: m}\n", url, db)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := history(t, "-days", "2", "-start", "2026-11-01", "-config", cfg); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	out := filepath.Join(dir, "h.lp")
	if code, _, errs := history(t, "-days", "2", "-start", "2026-11-01", "-config", cfg, "-out", out); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	inf, err := influx.Open(context.Background(), influx.Options{URL: url, Bucket: db + "/autogen"})
	if err != nil {
		t.Fatal(err)
	}
	defer inf.Close()
	fst, err := file.Open(out, file.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer fst.Close()
	q := store.Between(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC))
	a, err := store.ReadProbes(context.Background(), inf, q)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := store.ReadProbes(context.Background(), fst, q)
	if len(a) < 200 || fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("InfluxDB holds %d probes, the file %d, or they differ", len(a), len(b))
	}
	ha, _ := store.ReadHourly(context.Background(), inf, q)
	if fmt.Sprint(ha) != fmt.Sprint(store.Rollup(a, time.UTC)) {
		t.Error("InfluxDB's hourly records are not the rollup of its probes")
	}
}
