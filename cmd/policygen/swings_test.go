package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/lanewatch/lanewatch/internal/influxtest"
	"github.com/lanewatch/lanewatch/report/swings"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
	"github.com/lanewatch/lanewatch/store/influx"
)

// swingsWeekStart is the first hour of the generated week; swingsNow ends it,
// so [now-7d, now) holds exactly the week.
var (
	swingsWeekStart = time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	swingsNow       = swingsWeekStart.AddDate(0, 0, 7)
)

// swingsWeek is a week with a known daily curve:
//
//	free: queue = 5 + 20·[9 <= hour <= 17] + 0.5·day s, 3 probes an hour, one
//	      failed at hour 3 on days 0 and 2 → medians 6.5 / 26.5, worsts 8 / 28,
//	      peak 09, quietest 00, swing 20 s (4.08x).
//	paid: 2 s, 3 s at hours 12..14 → peak 12, quietest 00, swing 1 s (1.50x).
//	dead: (only with withDead) every fifth hour of day, 3 probes, all failed.
func swingsWeek(withDead bool) []store.Hourly {
	var recs []store.Hourly
	for d := range 7 {
		for h := range 24 {
			t := swingsWeekStart.Add(time.Duration(d*24+h) * time.Hour)
			q := 5 + 0.5*float64(d)
			if h >= 9 && h <= 17 {
				q += 20
			}
			free := store.Hourly{Lane: "free", Kind: "free", Hour: t, WorstQueueS: q, WorstGenS: 1, MinTokPerS: 40, Samples: 3, Eligible: true}
			if h == 3 && (d == 0 || d == 2) {
				free.Failures, free.Eligible = 1, false
			}
			p := 2.0
			if h >= 12 && h <= 14 {
				p = 3
			}
			recs = append(recs, free, store.Hourly{Lane: "paid", Kind: "paid", Hour: t, WorstQueueS: p, WorstGenS: 0.5, MinTokPerS: 90, Samples: 3, Eligible: true})
			if withDead && h%5 == 0 {
				recs = append(recs, store.Hourly{Lane: "dead", Kind: "free", Hour: t, Samples: 3, Failures: 3})
			}
		}
	}
	return recs
}

// swingsSetup writes a config with the given lanes ("name:kind") and a file
// store holding recs (no store file at all when recs is nil), and returns the
// config path.
func swingsSetup(t *testing.T, lanes []string, recs []store.Hourly) string {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("timezone: UTC\nstore:\n  kind: file\n  path: data/samples.lp\nlanes:\n")
	for i, l := range lanes {
		name, kind, _ := strings.Cut(l, ":")
		fmt.Fprintf(&b, "  - name: %s\n    kind: %s\n    api: openai\n    base_url: http://127.0.0.1:%d/v1\n    model: m\n", name, kind, i+1)
	}
	cfg := filepath.Join(dir, "lanewatch.yaml")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if recs != nil {
		st, err := file.Open(filepath.Join(dir, "data", "samples.lp"), file.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) > 0 {
			if err := st.Write(context.Background(), store.Batch{Hourly: recs}); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return cfg
}

type swingsResult struct {
	code           int
	stdout, stderr string
}

func swingsExec(t *testing.T, now time.Time, args ...string) swingsResult {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdout: &out, stderr: &errb, lookupEnv: func(string) (string, bool) { return "", false }, now: func() time.Time { return now }}
	code := exitCode(e.runSwings(context.Background(), args), &errb)
	return swingsResult{code, out.String(), errb.String()}
}

func swingsOK(t *testing.T, now time.Time, args ...string) swingsResult {
	t.Helper()
	r := swingsExec(t, now, args...)
	if r.code != 0 {
		t.Fatalf("policygen swings %v: exit %d\n%s", args, r.code, r.stderr)
	}
	return r
}

// fields returns the whitespace-separated fields of the first line of out
// that starts with prefix.
func fieldsOf(t *testing.T, out, prefix string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return strings.Join(strings.Fields(l), " ")
		}
	}
	t.Fatalf("no line starting with %q in:\n%s", prefix, out)
	return ""
}

func checkWidth(t *testing.T, out string) {
	t.Helper()
	for i, l := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(l); n > swings.TableWidth {
			t.Errorf("line %d is %d columns (max %d): %q", i+1, n, swings.TableWidth, l)
		}
	}
}

func TestSwingsWeekFormats(t *testing.T) {
	cfg := swingsSetup(t, []string{"free:free", "paid:paid"}, swingsWeek(false))
	t.Run("table", func(t *testing.T) {
		out := swingsOK(t, swingsNow, "-config", cfg).stdout // default: 7 days, table
		checkWidth(t, out)
		for prefix, want := range map[string]string{
			"timezone": "timezone UTC; window 2026-11-23 00:00 .. 2026-11-30 00:00 (7 days)",
			"records:": "records: 336 hourly, 2026-11-23 00:00 .. 2026-11-29 23:00",
			"00  ":     "00 | 6.5 8.0 0/21 7 | 2.0 2.0 0/21 7",
			"03  ":     "03 | 6.5 8.0 2/21 7 | 2.0 2.0 0/21 7",
			"09  ":     "09 | 26.5 28.0 0/21 7 | 2.0 2.0 0/21 7",
			"12  ":     "12 | 26.5 28.0 0/21 7 | 3.0 3.0 0/21 7",
			"18  ":     "18 | 6.5 8.0 0/21 7 | 2.0 2.0 0/21 7",
			"free ":    "free 09h 26.5 00h 6.5 20.0 4.08x 2/504",
			"paid ":    "paid 12h 3.0 00h 2.0 1.0 1.50x 0/504",
		} {
			if got := fieldsOf(t, out, prefix); got != want {
				t.Errorf("line %q:\n got %s\nwant %s", prefix, got, want)
			}
		}
	})
	t.Run("csv", func(t *testing.T) {
		rows, err := csv.NewReader(strings.NewReader(swingsOK(t, swingsNow, "-config", cfg, "-format", "csv").stdout)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1+2*24 {
			t.Fatalf("%d rows, want 49", len(rows))
		}
		for i, want := range map[int]string{
			0:           "lane,kind,hour,median_s,worst_s,measured,days,samples,failures,censored,median_censored",
			1 + 3:       "free,free,3,6.500,8.000,7,7,21,2,false,false",
			1 + 10:      "free,free,10,26.500,28.000,7,7,21,0,false,false",
			1 + 20:      "free,free,20,6.500,8.000,7,7,21,0,false,false",
			1 + 24 + 13: "paid,paid,13,3.000,3.000,7,7,21,0,false,false",
		} {
			if got := strings.Join(rows[i], ","); got != want {
				t.Errorf("row %d: %s, want %s", i, got, want)
			}
		}
	})
	t.Run("json", func(t *testing.T) {
		var doc swings.JSONReport
		if err := json.Unmarshal([]byte(swingsOK(t, swingsNow, "-config", cfg, "-format", "json").stdout), &doc); err != nil {
			t.Fatal(err)
		}
		if doc.From != "2026-11-23T00:00:00Z" || doc.To != "2026-11-30T00:00:00Z" || doc.Days != 7 || doc.Records != 336 || len(doc.Lanes) != 2 {
			t.Fatalf("header %+v", doc)
		}
		free := doc.Lanes[0]
		got := fmt.Sprintf("%s peak %d %v quiet %d %v swing %v %v h10 %v/%v h3 failures %d",
			free.Name, *free.PeakHour, *free.PeakS, *free.QuietHour, *free.QuietS, *free.SwingS, *free.Ratio,
			*free.Hours[10].MedianS, *free.Hours[10].WorstS, free.Hours[3].Failures)
		if want := "free peak 9 26.5 quiet 0 6.5 swing 20 4.077 h10 26.5/28 h3 failures 2"; got != want {
			t.Errorf("\n got %s\nwant %s", got, want)
		}
		if p := doc.Lanes[1]; *p.PeakHour != 12 || *p.SwingS != 1 || *p.Ratio != 1.5 {
			t.Errorf("paid: peak %d swing %v ratio %v, want 12, 1, 1.5", *p.PeakHour, *p.SwingS, *p.Ratio)
		}
	})
}

func svgTexts(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	var texts []string
	in := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return texts
		}
		if err != nil {
			t.Fatalf("%s is not XML: %v", path, err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			in = tok.Name.Local == "text"
		case xml.EndElement:
			in = false
		case xml.CharData:
			if in {
				texts = append(texts, string(tok))
			}
		}
	}
}

func countOf(texts []string, s string) int {
	n := 0
	for _, t := range texts {
		if t == s {
			n++
		}
	}
	return n
}

func TestSwingsChart(t *testing.T) {
	cfg := swingsSetup(t, []string{"free:free", "paid:paid", "dead:free"}, swingsWeek(true))
	out := t.TempDir()
	for _, tc := range []struct {
		name   string
		args   []string
		legend map[string]int // legend text → times it must appear
	}{
		{"all lanes", []string{"-svg", filepath.Join(out, "all.svg")},
			map[string]int{"free": 1, "paid": 1, "dead (no ok probe)": 1, "hour with failed probes": 1}},
		{"one lane", []string{"-svg", filepath.Join(out, "paid.svg"), "-lane", "paid"},
			map[string]int{"free": 0, "paid": 1, "dead (no ok probe)": 0}},
		{"json on stdout, chart beside", []string{"-svg", filepath.Join(out, "json.svg"), "-format", "json", "-days", "30"},
			map[string]int{"free": 1, "paid": 1, "hour of day (UTC)": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := swingsOK(t, swingsNow, append([]string{"-config", cfg}, tc.args...)...)
			if r.stdout == "" {
				t.Error("nothing on stdout")
			}
			texts := svgTexts(t, tc.args[1])
			for s, n := range tc.legend {
				if got := countOf(texts, s); got != n {
					t.Errorf("%q appears %d times in the chart, want %d", s, got, n)
				}
			}
		})
	}
	t.Run("png", func(t *testing.T) {
		path := filepath.Join(out, "chart.png")
		swingsOK(t, swingsNow, "-config", cfg, "-svg", path)
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		c, err := png.DecodeConfig(f)
		if err != nil {
			t.Fatalf("%s is not a PNG: %v", path, err)
		}
		if c.Width < 900 || c.Height < 450 {
			t.Errorf("png %dx%d, want at least 900x450", c.Width, c.Height)
		}
	})
	t.Run("no temp files left", func(t *testing.T) {
		ents, err := os.ReadDir(out)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		if got := strings.Join(names, " "); got != "all.svg chart.png json.svg paid.svg" {
			t.Errorf("chart folder holds %s", got)
		}
	})
}

func TestSwingsEdgeCases(t *testing.T) {
	week := swingsWeek(true)
	both := []string{"free:free", "paid:paid"}
	cases := []struct {
		name    string
		lanes   []string
		recs    []store.Hourly // nil: no store file
		now     time.Time
		args    []string
		code    int
		lines   map[string]string // table line prefix → its fields
		has     []string          // substrings of stdout
		hasNot  []string
		stderr  string // substring of stderr
		errLine bool   // stderr is exactly one line
	}{
		{
			name: "empty store", lanes: both, recs: []store.Hourly{}, now: swingsNow,
			lines: map[string]string{"records:": "records: none in the window", "free ": "free - - - - no data", "paid ": "paid - - - - no data", "12  ": "12 | - - - - | - - - -"},
		},
		{
			name: "no store file yet", lanes: both, now: swingsNow,
			lines:  map[string]string{"records:": "records: none in the window", "free ": "free - - - - no data"},
			stderr: "nothing sampled yet",
		},
		{
			name: "single lane", lanes: []string{"free:free"}, recs: week, now: swingsNow,
			// the store's paid and dead lanes follow, after the configured one
			lines: map[string]string{"free ": "free 09h 26.5 00h 6.5 20.0 4.08x 2/504"},
			args:  []string{"-lane", "free"},
			has:   []string{"free (free)"}, hasNot: []string{"paid", "dead"},
		},
		{
			name: "single configured lane lists data-only lanes after it", lanes: []string{"paid:paid"}, recs: week, now: swingsNow,
			lines: map[string]string{"paid ": "paid 12h 3.0 00h 2.0 1.0 1.50x 0/504", "dead ": "dead - - - 105/105 no ok probe", "free ": "free 09h 26.5 00h 6.5 20.0 4.08x 2/504"},
			has:   []string{"     | paid (paid)                   | dead (free)                   | free (free)"},
		},
		{
			name: "lane with only failures", lanes: []string{"free:free", "paid:paid", "dead:free"}, recs: week, now: swingsNow,
			lines: map[string]string{"dead ": "dead - - - 105/105 no ok probe", "00  ": "00 | 6.5 8.0 0/21 7 | 2.0 2.0 0/21 7 | - - 21/21 7", "01  ": "01 | 6.5 8.0 0/21 7 | 2.0 2.0 0/21 7 | - - - -"},
		},
		{
			name: "days longer than the history", lanes: both, recs: week, now: swingsNow, args: []string{"-days", "30"},
			lines: map[string]string{
				"timezone": "timezone UTC; window 2026-10-31 00:00 .. 2026-11-30 00:00 (30 days)",
				"records:": "records: 371 hourly, 2026-11-23 00:00 .. 2026-11-29 23:00",
				"10  ":     "10 | 26.5 28.0 0/21 7 | 2.0 2.0 0/21 7 | - - 21/21 7",
				"free ":    "free 09h 26.5 00h 6.5 20.0 4.08x 2/504",
			},
		},
		{
			name: "window mid-hour drops the first hour of the week", lanes: both, recs: week, now: swingsNow.Add(20 * time.Minute), args: []string{"-days", "7", "-lane", "free"},
			lines: map[string]string{"00  ": "00 | 6.8 8.0 0/18 6", "01  ": "01 | 6.5 8.0 0/21 7"},
		},
		{
			name: "days shorter than the history", lanes: both, recs: week, now: swingsNow, args: []string{"-days", "2", "-lane", "free"},
			// days 5 and 6: 7.5 and 8 off-peak, 27.5 and 28 at peak
			lines: map[string]string{"10  ": "10 | 27.8 28.0 0/6 2", "03  ": "03 | 7.8 8.0 0/6 2", "free ": "free 09h 27.8 00h 7.8 20.0 3.58x 0/144"},
		},
		{
			name: "lane filter", lanes: both, recs: week, now: swingsNow, args: []string{"-lane", "paid"},
			lines:  map[string]string{"13  ": "13 | 3.0 3.0 0/21 7", "paid ": "paid 12h 3.0 00h 2.0 1.0 1.50x 0/504"},
			hasNot: []string{"free", "dead"},
		},
		{
			name: "unknown lane", lanes: both, recs: week, now: swingsNow, args: []string{"-lane", "nope"}, code: 1,
			stderr: `policygen: swings: unknown lane "nope" (lanes: free, paid, dead)`, errLine: true,
		},
		{name: "bad format", lanes: both, recs: week, now: swingsNow, args: []string{"-format", "xml"}, code: 2, stderr: `-format: want table, csv or json, got "xml"`, errLine: true},
		{name: "days zero", lanes: both, recs: week, now: swingsNow, args: []string{"-days", "0"}, code: 2, stderr: "-days: want 1 to 3660, got 0", errLine: true},
		{name: "days not a number", lanes: both, recs: week, now: swingsNow, args: []string{"-days", "x"}, code: 2, stderr: `invalid value "x" for flag -days`},
		{name: "stray argument", lanes: both, recs: week, now: swingsNow, args: []string{"extra"}, code: 2, stderr: `unexpected argument "extra"`, errLine: true},
		{name: "chart into a missing folder's file", lanes: both, recs: week, now: swingsNow, args: []string{"-svg", "/dev/null/x.svg"}, code: 1, stderr: "swings: write /dev/null/x.svg", errLine: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := swingsSetup(t, tc.lanes, tc.recs)
			r := swingsExec(t, tc.now, append([]string{"-config", cfg}, tc.args...)...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tc.code, r.stdout, r.stderr)
			}
			if tc.code != 0 && r.stdout != "" {
				t.Errorf("a failed run printed a report:\n%s", r.stdout)
			}
			if !strings.Contains(r.stderr, tc.stderr) {
				t.Errorf("stderr %q, want it to contain %q", r.stderr, tc.stderr)
			}
			if tc.stderr == "" && r.stderr != "" {
				t.Errorf("unexpected stderr %q", r.stderr)
			}
			if tc.errLine && strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("stderr is not one line: %q", r.stderr)
			}
			checkWidth(t, r.stdout)
			for prefix, want := range tc.lines {
				if got := fieldsOf(t, r.stdout, prefix); got != want {
					t.Errorf("line %q:\n got %s\nwant %s", prefix, got, want)
				}
			}
			for _, s := range tc.has {
				if !strings.Contains(r.stdout, s) {
					t.Errorf("output lacks %q:\n%s", s, r.stdout)
				}
			}
			for _, s := range tc.hasNot {
				if strings.Contains(r.stdout, s) {
					t.Errorf("output has %q:\n%s", s, r.stdout)
				}
			}
		})
	}
}

// Usage errors are exit 2 through the real dispatcher too.
func TestSwingsDispatch(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"swings"}, 2, "policygen: swings: -config is required\n"},
		{[]string{"swings", "-format", "yaml", "-config", "x.yaml"}, 2, "policygen: swings: -format: want table, csv or json, got \"yaml\"\n"},
		{[]string{"swings", "-config", "/nonexistent/lanewatch.yaml"}, 1, "policygen: config: open /nonexistent/lanewatch.yaml: no such file or directory\n"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			code := exitCode(run(context.Background(), tc.args, strings.NewReader(""), &out, &errb, func(string) (string, bool) { return "", false }), &errb)
			if code != tc.code || errb.String() != tc.err {
				t.Errorf("exit %d, stderr %q; want %d, %q", code, errb.String(), tc.code, tc.err)
			}
		})
	}
}

// The report reads an InfluxDB store through the same seam (config.OpenStore).
func TestSwingsInflux(t *testing.T) {
	srv := influxtest.Start(t)
	db := srv.CreateDB(t, "lanewatch")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "lanewatch.yaml")
	body := fmt.Sprintf(`timezone: UTC
store:
  kind: influx
  url: %s
  bucket: %s/autogen
lanes:
  - name: free
    kind: free
    api: openai
    base_url: http://127.0.0.1:1/v1
    model: m
  - name: paid
    kind: paid
    api: openai
    base_url: http://127.0.0.1:2/v1
    model: m
`, srv.URL, db)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := influx.Open(context.Background(), influx.Options{URL: srv.URL, Bucket: db + "/autogen"})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Write(context.Background(), store.Batch{Hourly: swingsWeek(false)}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	out := swingsOK(t, swingsNow, "-config", cfg).stdout
	for prefix, want := range map[string]string{
		"records:": "records: 336 hourly, 2026-11-23 00:00 .. 2026-11-29 23:00",
		"10  ":     "10 | 26.5 28.0 0/21 7 | 2.0 2.0 0/21 7",
		"free ":    "free 09h 26.5 00h 6.5 20.0 4.08x 2/504",
		"paid ":    "paid 12h 3.0 00h 2.0 1.0 1.50x 0/504",
	} {
		if got := fieldsOf(t, out, prefix); got != want {
			t.Errorf("line %q:\n got %s\nwant %s", prefix, got, want)
		}
	}
}

// -svg says where the chart went instead of reprinting the table; with an
// explicit -format the report goes to stdout and the note to stderr.
func TestSwingsChartOutput(t *testing.T) {
	cfg := swingsSetup(t, []string{"free:free", "paid:paid", "dead:free"}, swingsWeek(true))
	out := t.TempDir()
	chart := filepath.Join(out, "c.svg")
	for _, tc := range []struct {
		name           string
		args           []string
		stdout, stderr string // stdout "json": a JSON report
	}{
		{"chart alone", []string{"-svg", chart}, "wrote chart " + chart + " (3 lanes, 24 hours, last 7 days)\n", ""},
		{"one lane, 30 days", []string{"-svg", chart, "-lane", "paid", "-days", "30"}, "wrote chart " + chart + " (1 lane, 24 hours, last 30 days)\n", ""},
		{"log", []string{"-svg", chart, "-log"}, "wrote chart " + chart + " (3 lanes, 24 hours, last 7 days)\n", ""},
		{"explicit format", []string{"-svg", chart, "-format", "json"}, "json", "policygen: swings: wrote chart " + chart + " (3 lanes, 24 hours, last 7 days)\n"},
		{"explicit table", []string{"-svg", chart, "-format", "table"}, "table", "policygen: swings: wrote chart " + chart + " (3 lanes, 24 hours, last 7 days)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := swingsOK(t, swingsNow, append([]string{"-config", cfg}, tc.args...)...)
			switch tc.stdout {
			case "json":
				var doc swings.JSONReport
				if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || len(doc.Lanes) != 3 {
					t.Errorf("stdout is not the JSON report (%v): %q", err, r.stdout)
				}
			case "table":
				if !strings.HasPrefix(r.stdout, "lanewatch swings:") {
					t.Errorf("stdout is not the table: %q", r.stdout)
				}
			default:
				if r.stdout != tc.stdout {
					t.Errorf("stdout %q, want %q", r.stdout, tc.stdout)
				}
			}
			if r.stderr != tc.stderr {
				t.Errorf("stderr %q, want %q", r.stderr, tc.stderr)
			}
			if _, err := os.Stat(chart); err != nil {
				t.Error(err)
			}
		})
	}
	t.Run("-log without -svg", func(t *testing.T) {
		r := swingsExec(t, swingsNow, "-config", cfg, "-log")
		if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, "-log goes with -svg") {
			t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
	})
}

// The chart draws the config's classes' deadlines, and -log its scale.
func TestSwingsChartDeadlines(t *testing.T) {
	cfg := swingsSetup(t, []string{"free:free", "paid:paid"}, swingsWeek(false))
	data, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, `policy:
  classes:
    - {name: interactive, deadline_s: 60, ceiling_tokens: 4000, est_tokens: 800, paid_usd_per_1k: 0.002}
    - {name: batch, deadline_s: 600, ceiling_tokens: 4000, est_tokens: 800, paid_usd_per_1k: 0.002}
`...)
	if err := os.WriteFile(cfg, data, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		log  bool
		want map[string]int
	}{
		// Free peaks at 28 s: 60 s is on the plot, 600 s is named in the legend.
		{"linear", false, map[string]int{"interactive 60 s": 1, "batch 600 s": 0, "batch 600 s: above": 1, "class deadline": 1}},
		{"log", true, map[string]int{"interactive 60 s": 1, "batch 600 s": 1, "batch 600 s: above": 0, "class deadline": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name+".svg")
			args := []string{"-config", cfg, "-svg", path}
			if tc.log {
				args = append(args, "-log")
			}
			swingsOK(t, swingsNow, args...)
			texts := svgTexts(t, path)
			for s, n := range tc.want {
				if got := countOf(texts, s); got != n {
					t.Errorf("%q appears %d times, want %d; texts %q", s, got, n, texts)
				}
			}
			title := strings.Join(texts, "|")
			if strings.Contains(title, "log scale") != tc.log {
				t.Errorf("log scale in the title: %v, want %v", !tc.log, tc.log)
			}
		})
	}
}
