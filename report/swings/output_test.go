package swings_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"image/color"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/lanewatch/lanewatch/report/swings"
	"github.com/lanewatch/lanewatch/store"

	"github.com/lanewatch/lanewatch/internal/missingtool"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// weekReport is the generated week plus a lane with only failures (every
// fifth hour of day, 3 failed probes) and a configured lane with no data.
func weekReport() *swings.Report {
	recs := week()
	for d := range 7 {
		for h := 0; h < 24; h += 5 {
			recs = append(recs, store.Hourly{Lane: "dead", Kind: "free", Hour: weekStart.Add(time.Duration(d*24+h) * time.Hour), Samples: 3, Failures: 3})
		}
	}
	o := weekOptions()
	o.Lanes = append(o.Lanes, swings.Lane{Name: "dead", Kind: "free"}, swings.Lane{Name: "ghost", Kind: "paid"})
	return swings.Compute(recs, o)
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output (go test -update rewrites it); got:\n%s", path, got)
	}
}

func render(t *testing.T, r *swings.Report, write func(io.Writer, *swings.Report) error) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := write(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestGolden(t *testing.T) {
	r := weekReport()
	for _, tc := range []struct {
		name  string
		write func(io.Writer, *swings.Report) error
	}{
		{"week.table.golden", swings.WriteTable},
		{"week.csv.golden", swings.WriteCSV},
		{"week.json.golden", swings.WriteJSON},
	} {
		t.Run(tc.name, func(t *testing.T) { golden(t, tc.name, render(t, r, tc.write)) })
	}
	for _, tc := range []struct {
		name  string
		write func(io.Writer, *swings.Report) error
	}{
		{"censored.table.golden", swings.WriteTable},
		{"censored.csv.golden", swings.WriteCSV},
		{"censored.json.golden", swings.WriteJSON},
	} {
		t.Run(tc.name, func(t *testing.T) { golden(t, tc.name, render(t, censoredReport(), tc.write)) })
	}
}

// field returns the whitespace-separated fields of the table line that starts with prefix.
func tableLine(t *testing.T, table, prefix string) []string {
	t.Helper()
	for _, l := range strings.Split(table, "\n") {
		if strings.HasPrefix(l, prefix) {
			return strings.Fields(l)
		}
	}
	t.Fatalf("no line starting with %q in:\n%s", prefix, table)
	return nil
}

func TestTable(t *testing.T) {
	out := string(render(t, weekReport(), swings.WriteTable))
	// Block 1 is free | paid | dead; block 2 is ghost. The first hour row
	// found is block 1's.
	for _, tc := range []struct {
		prefix string
		want   string
	}{
		{"00  ", "00 | 6.5 8.0 0/21 7 | 2.0 2.0 0/21 7 | - - 21/21 7"},
		{"03  ", "03 | 6.5 8.0 2/21 7 | 2.0 2.0 0/21 7 | - - - -"},
		{"10  ", "10 | 26.5 28.0 0/21 7 | 2.0 2.0 0/21 7 | - - 21/21 7"},
		{"13  ", "13 | 26.5 28.0 0/21 7 | 3.0 3.0 0/21 7 | - - - -"},
		{"free ", "free 09h 26.5 00h 6.5 20.0 4.08x 2/504"},
		{"paid ", "paid 12h 3.0 00h 2.0 1.0 1.50x 0/504"},
		{"dead ", "dead - - - 105/105 no ok probe"},
		{"ghost ", "ghost - - - - no data"},
		{"records:", "records: 371 hourly, 2026-11-23 00:00 .. 2026-11-29 23:00"},
	} {
		t.Run(tc.prefix, func(t *testing.T) {
			if got := strings.Join(tableLine(t, out, tc.prefix), " "); got != tc.want {
				t.Errorf("line %q\n got %s\nwant %s", tc.prefix, got, tc.want)
			}
		})
	}
	if n := strings.Count(out, "\nhour "); n != 2 {
		t.Errorf("%d blocks, want 2 (three lanes, then one)", n)
	}
}

// Every line fits a 100-column terminal, whatever the lane names, timezone
// and numbers.
func TestTableWidth(t *testing.T) {
	loc, err := time.LoadLocation("America/Argentina/ComodRivadavia")
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 80)
	var recs []store.Hourly
	var lanes []swings.Lane
	for i := range 7 {
		name := fmt.Sprintf("%s-%d", long, i)
		lanes = append(lanes, swings.Lane{Name: name, Kind: "paid"})
		for h := range 24 {
			recs = append(recs, store.Hourly{
				Lane: name, Kind: "paid", Hour: weekStart.Add(time.Duration(h) * time.Hour),
				WorstQueueS: 123456789.5 * float64(h+1), Samples: 219600000, Failures: 12345678,
			})
		}
	}
	// The same, every worst a lower bound (">" takes a column).
	censored := make([]store.Hourly, len(recs))
	for i, r := range recs {
		r.WorstCensoredS = r.WorstQueueS * 3
		censored[i] = r
	}
	for _, tc := range []struct {
		name string
		r    *swings.Report
	}{
		{"week", weekReport()},
		{"long names, zone, numbers", swings.Compute(recs, swings.Options{Location: loc, From: weekStart, To: weekStart.AddDate(10, 0, 0), Days: 3653, Lanes: lanes})},
		{"long names, zone, lower bounds", swings.Compute(censored, swings.Options{Location: loc, From: weekStart, To: weekStart.AddDate(10, 0, 0), Days: 3653, Lanes: lanes})},
		{"censored", censoredReport()},
		{"no lanes", swings.Compute(nil, swings.Options{})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := string(render(t, tc.r, swings.WriteTable))
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(lines) < 5 {
				t.Fatalf("only %d lines", len(lines))
			}
			for i, l := range lines {
				if n := utf8.RuneCountInString(l); n > swings.TableWidth {
					t.Errorf("line %d is %d columns: %q", i+1, n, l)
				}
			}
		})
	}
}

func TestCSV(t *testing.T) {
	rows, err := csv.NewReader(bytes.NewReader(render(t, weekReport(), swings.WriteCSV))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rows[0], ","); got != "lane,kind,hour,median_s,worst_s,measured,days,samples,failures,censored,median_censored" {
		t.Fatalf("header %s", got)
	}
	if len(rows) != 1+4*24 {
		t.Fatalf("%d rows, want header + 4 lanes x 24 hours", len(rows))
	}
	for _, tc := range []struct {
		row  int // 1 + lane*24 + hour
		want string
	}{
		{1 + 0, "free,free,0,6.500,8.000,7,7,21,0,false,false"},
		{1 + 3, "free,free,3,6.500,8.000,7,7,21,2,false,false"},
		{1 + 10, "free,free,10,26.500,28.000,7,7,21,0,false,false"},
		{1 + 24 + 12, "paid,paid,12,3.000,3.000,7,7,21,0,false,false"},
		{1 + 48 + 5, "dead,free,5,,,0,7,21,21,false,false"},
		{1 + 48 + 6, "dead,free,6,,,0,0,0,0,false,false"},
		{1 + 72 + 23, "ghost,paid,23,,,0,0,0,0,false,false"},
	} {
		t.Run(fmt.Sprint(tc.row), func(t *testing.T) {
			if got := strings.Join(rows[tc.row], ","); got != tc.want {
				t.Errorf("row %d: %s, want %s", tc.row, got, tc.want)
			}
		})
	}
}

func TestJSON(t *testing.T) {
	var doc swings.JSONReport
	if err := json.Unmarshal(render(t, weekReport(), swings.WriteJSON), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Timezone != "UTC" || doc.Days != 7 || doc.Records != 371 || doc.From != "2026-11-23T00:00:00Z" || doc.To != "2026-11-30T00:00:00Z" {
		t.Errorf("header %+v", doc)
	}
	if len(doc.Lanes) != 4 {
		t.Fatalf("%d lanes, want 4", len(doc.Lanes))
	}
	f := func(p *float64) string {
		if p == nil {
			return "null"
		}
		return fmt.Sprint(*p)
	}
	i := func(p *int) string {
		if p == nil {
			return "null"
		}
		return fmt.Sprint(*p)
	}
	for _, tc := range []struct {
		lane int
		want string
	}{
		{0, "free peak 9 26.5 quiet 0 6.5 swing 20 4.077 h10 26.5/28 h3 fail 2/21"},
		{1, "paid peak 12 3 quiet 0 2 swing 1 1.5 h10 2/2 h3 fail 0/21"},
		{2, "dead peak null null quiet null null swing null null h10 null/null h3 fail 0/0"},
		{3, "ghost peak null null quiet null null swing null null h10 null/null h3 fail 0/0"},
	} {
		l := doc.Lanes[tc.lane]
		t.Run(l.Name, func(t *testing.T) {
			if len(l.Hours) != 24 {
				t.Fatalf("%d hours", len(l.Hours))
			}
			got := fmt.Sprintf("%s peak %s %s quiet %s %s swing %s %s h10 %s/%s h3 fail %d/%d",
				l.Name, i(l.PeakHour), f(l.PeakS), i(l.QuietHour), f(l.QuietS), f(l.SwingS), f(l.Ratio),
				f(l.Hours[10].MedianS), f(l.Hours[10].WorstS), l.Hours[3].Failures, l.Hours[3].Samples)
			if got != tc.want {
				t.Errorf("\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// svgTexts returns the text of every <text> element, after checking the
// document parses as XML.
func svgTexts(t *testing.T, svg []byte) []string {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var texts []string
	inText := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("chart is not XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			inText = tok.Name.Local == "text"
		case xml.EndElement:
			inText = false
		case xml.CharData:
			if inText {
				texts = append(texts, string(tok))
			}
		}
	}
	return texts
}

func count(texts []string, s string) int {
	n := 0
	for _, t := range texts {
		if t == s {
			n++
		}
	}
	return n
}

func TestChart(t *testing.T) {
	t.Run("svg", func(t *testing.T) {
		texts := svgTexts(t, render(t, weekReport(), func(w io.Writer, r *swings.Report) error {
			return swings.WriteChart(w, r, swings.ChartOptions{Format: "svg"})
		}))
		for _, want := range []string{"free", "paid", "dead (no ok probe)", "ghost (no data)",
			"median of hourly worsts", "worst (max)", "hour with failed probes",
			"Queue time to first token by hour of day", "hour of day (UTC)", "seconds before the first token",
			"00", "03", "21"} {
			if n := count(texts, want); n != 1 {
				t.Errorf("text %q appears %d times, want once; texts: %q", want, n, texts)
			}
		}
	})
	t.Run("empty report", func(t *testing.T) {
		r := swings.Compute(nil, weekOptions())
		texts := svgTexts(t, render(t, r, func(w io.Writer, r *swings.Report) error {
			return swings.WriteChart(w, r, swings.ChartOptions{Format: "svg"})
		}))
		if count(texts, "free (no data)") != 1 || count(texts, "paid (no data)") != 1 {
			t.Errorf("legend of an empty report: %q", texts)
		}
	})
	t.Run("png", func(t *testing.T) {
		b := render(t, weekReport(), func(w io.Writer, r *swings.Report) error {
			return swings.WriteChart(w, r, swings.ChartOptions{Format: "png"})
		})
		cfg, err := png.DecodeConfig(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Width < 900 || cfg.Height < 450 {
			t.Errorf("png is %dx%d, want at least 900x450", cfg.Width, cfg.Height)
		}
	})
	t.Run("log scale with zeros and no data", func(t *testing.T) {
		zero := swings.Compute([]store.Hourly{
			{Lane: "free", Hour: weekStart, WorstQueueS: 0, Samples: 1},
			{Lane: "free", Hour: weekStart.Add(time.Hour), WorstQueueS: 0.004, Samples: 1},
			{Lane: "free", Hour: weekStart.Add(2 * time.Hour), Samples: 1, Failures: 1},
		}, weekOptions())
		for name, r := range map[string]*swings.Report{"zeros": zero, "empty": swings.Compute(nil, weekOptions()), "week": weekReport()} {
			texts := svgTexts(t, render(t, r, func(w io.Writer, r *swings.Report) error {
				return swings.WriteChart(w, r, swings.ChartOptions{Format: "svg", Log: true})
			}))
			if count(texts, "seconds before the first token") != 1 {
				t.Errorf("%s: no y label in %q", name, texts)
			}
		}
	})
	t.Run("format by name", func(t *testing.T) {
		for in, want := range map[string]string{"a.svg": "svg", "a.PNG": "png", "out/chart": "svg", "x.png": "png"} {
			if got := swings.ChartFormat(in); got != want {
				t.Errorf("ChartFormat(%q) = %q, want %q", in, got, want)
			}
		}
	})
}

// Lower bounds are marked on the chart: a ring with a ">" at each
// censored point (free: the worst at 10h, 14h and 20h, the median at 14h)
// and a key entry.
func TestCensoredChart(t *testing.T) {
	for _, logY := range []bool{false, true} {
		svg := render(t, censoredReport(), func(w io.Writer, r *swings.Report) error {
			return swings.WriteChart(w, r, swings.ChartOptions{Log: logY})
		})
		texts := svgTexts(t, svg)
		if n := count(texts, ">"); n != 4 {
			t.Errorf("log %v: %d lower-bound marks, want 4", logY, n)
		}
		if n := count(texts, "> lower bound (failed probe)"); n != 1 {
			t.Errorf("log %v: key entry appears %d times", logY, n)
		}
	}
	// Without censored values there is no mark.
	texts := svgTexts(t, render(t, weekReport(), func(w io.Writer, r *swings.Report) error {
		return swings.WriteChart(w, r, swings.ChartOptions{})
	}))
	if n := count(texts, ">"); n != 0 {
		t.Errorf("week: %d lower-bound marks, want 0", n)
	}
}

// An SVG viewer draws the text with its own fonts, which may be wider than
// the metrics the layout used (rsvg-convert with DejaVu Sans clipped the
// legend). Rendered by rsvg-convert, nothing may touch the right edge.
// rsvg-convert comes from Debian's librsvg2-bin; without it the test skips,
// except in CI.
func TestChartRendersWithOtherFonts(t *testing.T) {
	bin, err := exec.LookPath("rsvg-convert")
	if err != nil {
		missingtool.Skip(t, "rsvg-convert", "apt-get install librsvg2-bin", "the chart is not rendered with other fonts")
	}
	long := swings.Compute(nil, swings.Options{Days: 7, Lanes: []swings.Lane{
		{Name: strings.Repeat("m", 40), Kind: "free"}, {Name: "wide-lane-name-WWWWWWWW", Kind: "paid"},
	}, Classes: []swings.ClassLine{{Name: strings.Repeat("W", 30), DeadlineS: 1e5}}})
	for name, r := range map[string]*swings.Report{"week": weekReport(), "censored": censoredReport(), "long names": long} {
		for _, logY := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s log=%v", name, logY), func(t *testing.T) {
				svg := render(t, r, func(w io.Writer, r *swings.Report) error {
					return swings.WriteChart(w, r, swings.ChartOptions{Log: logY})
				})
				cmd := exec.Command(bin, "-f", "png")
				cmd.Stdin = bytes.NewReader(svg)
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("rsvg-convert: %v", err)
				}
				img, err := png.Decode(bytes.NewReader(out))
				if err != nil {
					t.Fatal(err)
				}
				b := img.Bounds()
				if b.Dx() < 900 {
					t.Fatalf("rendered %dx%d", b.Dx(), b.Dy())
				}
				// The rightmost 1% of the image is the legend's outer
				// padding: clipped text would reach into it.
				for x := b.Max.X - b.Dx()/100; x < b.Max.X; x++ {
					for y := b.Min.Y; y < b.Max.Y; y++ {
						// Not premultiplied: the image's last row is partly
						// transparent white.
						c := color.NRGBA64Model.Convert(img.At(x, y)).(color.NRGBA64)
						if c.A > 0x4000 && (c.R < 0xe000 || c.G < 0xe000 || c.B < 0xe000) {
							t.Fatalf("ink at (%d, %d) of %dx%d: the legend runs off the image", x, y, b.Dx(), b.Dy())
						}
					}
				}
			})
		}
	}
}
