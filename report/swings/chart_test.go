package swings

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/lanewatch/lanewatch/store"
)

// The chart uses its width and no label meets a line (issue 31: the plot
// took 58% of the width beside a legend column, a third of the image
// empty, and the ">" of a lower bound sat beside its ring on the line
// running into it; it is in the ring now). For reports with lower bounds
// on rising and falling lines, deadlines among the data and long names:
// the data area spans at least 70% of the image (79-81% with these names,
// 73% with the longest name the margin takes), the legend's columns below
// do not reach into the plot, every label's box (a deadline's name) is
// clear of every line, checked every tenth of a point along each segment,
// and every lower bound is marked.
func TestChartLayout(t *testing.T) {
	long := strings.Repeat("w", 60) // wide letters, cut to chartNameW
	censored := layoutCensored()
	for _, tc := range []struct {
		name   string
		r      *Report
		bounds int
	}{
		{"lower bounds", censored, 5},
		{"deadlines among the data", layoutDeadlines(), 0},
		{"long names", Compute(nil, Options{Location: time.UTC, Days: 7, Lanes: []Lane{{Name: long, Kind: "free"}, {Name: "W" + long, Kind: "paid"}},
			Classes: []ClassLine{{Name: long, DeadlineS: 1e6}}}), 0},
		{"no lanes", Compute(nil, Options{Location: time.UTC, Days: 7}), 0},
	} {
		for _, logY := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s log=%v", tc.name, logY), func(t *testing.T) {
				ch, err := newChart(tc.r, logY)
				if err != nil {
					t.Fatal(err)
				}
				c := vgimg.New(chartW, chartH)
				lay := ch.layout(draw.New(c))
				if share := (lay.data.Max.X - lay.data.Min.X) / chartW; share < 0.7 {
					t.Errorf("the data area is %.0f%% of the width, want at least 70%%", 100*share)
				}
				for _, a := range lay.areas {
					if a.Max.Y > lay.plot.Min.Y || a.Min.X < 0 || a.Max.X > chartW {
						t.Errorf("a legend column %v reaches into the plot %v or off the image", a.Rectangle, lay.plot.Rectangle)
					}
				}
				x, y := ch.p.Transforms(&lay.data)
				for _, l := range lay.labels {
					if l.box == (vg.Rectangle{}) {
						continue // the y label of a log chart, beside the axis
					}
					for _, ln := range ch.lines {
						for i := 1; i < len(ln); i++ {
							a, b := vg.Point{X: x(ln[i-1].X), Y: y(ln[i-1].Y)}, vg.Point{X: x(ln[i].X), Y: y(ln[i].Y)}
							steps := int(10*math.Hypot(float64(b.X-a.X), float64(b.Y-a.Y))) + 1
							for k := 0; k <= steps; k++ {
								f := vg.Length(k) / vg.Length(steps)
								if p := (vg.Point{X: a.X + f*(b.X-a.X), Y: a.Y + f*(b.Y-a.Y)}); l.box.Min.X <= p.X && p.X <= l.box.Max.X && l.box.Min.Y <= p.Y && p.Y <= l.box.Max.Y {
									t.Fatalf("label %q at %v meets the line %v at %v", l.text, l.box, ln, p)
								}
							}
						}
					}
				}
				if ch.bounds != tc.bounds {
					t.Errorf("%d lower bounds marked, want %d", ch.bounds, tc.bounds)
				}
			})
		}
	}
}

// layoutCensored is a lane rising to a censored peak at 13h and falling,
// a censored worst on a rising stretch at 9h and a censored median on a
// falling one at 17h, another lane across them, and two deadlines.
func layoutCensored() *Report {
	var recs []store.Hourly
	start := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	for d := range 7 {
		for h := range HoursPerDay {
			at := start.AddDate(0, 0, d).Add(time.Duration(h) * time.Hour)
			q := 2 + 10*math.Exp(-math.Pow(float64(h-13)/3, 2))
			r := store.Hourly{Lane: "peaky", Kind: "free", Hour: at, WorstQueueS: q, Samples: 4}
			if h == 13 || (h == 9 && d == 0) || (h == 17 && d < 4) {
				r.Failures, r.WorstCensoredS = 1, q+8
			}
			recs = append(recs, r, store.Hourly{Lane: "flat", Kind: "paid", Hour: at, WorstQueueS: 6 + float64(h%3), Samples: 4})
		}
	}
	return Compute(recs, Options{Location: time.UTC, From: start, To: start.AddDate(0, 0, 7), Days: 7,
		Classes: []ClassLine{{Name: "interactive", DeadlineS: 10}, {Name: "batch", DeadlineS: 11}}})
}

// layoutDeadlines has a deadline on the data's level and one far above it.
func layoutDeadlines() *Report {
	var recs []store.Hourly
	start := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	for h := range HoursPerDay {
		recs = append(recs, store.Hourly{Lane: "a", Kind: "free", Hour: start.Add(time.Duration(h) * time.Hour), WorstQueueS: 3 + float64(h%4), Samples: 2})
	}
	return Compute(recs, Options{Location: time.UTC, From: start, To: start.AddDate(0, 0, 1), Days: 1,
		Classes: []ClassLine{{Name: "interactive", DeadlineS: 4}, {Name: "night", DeadlineS: 1800}}})
}

// The log axis carries labelled values at 1, 2, 5 of each decade, all > 0
// and inside the range, whatever the range.
func TestLogTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		labels string
	}{
		{0.1, 39, "0.1 0.2 0.5 1 2 5 10 20"},
		{0.01, 3900, "0.01 0.1 1 10 100 1000"},
		{1, 1.3, "1"},
		{0.001, 0.05, "0.001 0.002 0.005 0.01 0.02 0.05"},
	} {
		ticks := logTicks{}.Ticks(tc.lo, tc.hi)
		var labels []string
		for _, tk := range ticks {
			if !(tk.Value > 0) || tk.Value < tc.lo*(1-1e-9) || tk.Value > tc.hi*(1+1e-9) {
				t.Errorf("[%g, %g]: tick %g outside", tc.lo, tc.hi, tk.Value)
			}
			if tk.Label == "" {
				continue
			}
			if v, err := strconv.ParseFloat(tk.Label, 64); err != nil || v != tk.Value || len(tk.Label) > 6 {
				t.Errorf("[%g, %g]: tick %g labelled %q", tc.lo, tc.hi, tk.Value, tk.Label)
			}
			labels = append(labels, tk.Label)
		}
		if got := strings.Join(labels, " "); got != tc.labels {
			t.Errorf("[%g, %g]: labels %q, want %q", tc.lo, tc.hi, got, tc.labels)
		}
	}
	for _, bad := range [][2]float64{{0, 10}, {-1, 10}, {5, 5}} {
		if ticks := (logTicks{}).Ticks(bad[0], bad[1]); len(ticks) != 1 || !(ticks[0].Value > 0) {
			t.Errorf("range %v: ticks %v", bad, ticks)
		}
	}
}
