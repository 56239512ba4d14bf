package swings_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/report/swings"
	"github.com/lanewatch/lanewatch/store"
)

// censoredReport: three days, "free" queues 5 s and "paid" 2 s every hour,
// three probes an hour, except for free:
//
//	10h, day 1: one probe timed out at 30 s before its first token (the ok
//	     ones queued 6 s) → that hour's worst is >30, the median stays 5.
//	14h, every day: a probe timed out at 30 s (ok ones 8 s) → worst and
//	     median >30: the peak, and the swing is >25 (30 against 5).
//	20h, day 0: both probes failed, the longest known wait 12 s (the only
//	     value of that record) → worst >12, median 5.
//	03h, day 2: a failed probe waited 2 s, less than the ok ones (9 s) →
//	     worst 9, exact.
func censoredReport() *swings.Report {
	start := weekStart
	var recs []store.Hourly
	for d := range 3 {
		for h := range 24 {
			t := start.Add(time.Duration(d*24+h) * time.Hour)
			free := store.Hourly{Lane: "free", Kind: "free", Hour: t, WorstQueueS: 5, Samples: 3}
			switch {
			case h == 10 && d == 1:
				free.WorstQueueS, free.WorstCensoredS, free.Failures = 6, 30, 1
			case h == 14:
				free.WorstQueueS, free.WorstCensoredS, free.Failures = 8, 30, 1
			case h == 20 && d == 0:
				free.WorstQueueS, free.WorstCensoredS, free.Samples, free.Failures = 0, 12, 2, 2
			case h == 3 && d == 2:
				free.WorstQueueS, free.WorstCensoredS, free.Failures = 9, 2, 1
			}
			recs = append(recs, free, store.Hourly{Lane: "paid", Kind: "paid", Hour: t, WorstQueueS: 2, Samples: 3})
		}
	}
	return swings.Compute(recs, swings.Options{
		Location: time.UTC, From: start, To: start.AddDate(0, 0, 3), Days: 3,
		Lanes:   []swings.Lane{{Name: "free", Kind: "free"}, {Name: "paid", Kind: "paid"}},
		Classes: []swings.ClassLine{{Name: "interactive", DeadlineS: 60}, {Name: "batch", DeadlineS: 600}},
	})
}

func TestCensoredGolden(t *testing.T) {
	r := censoredReport()
	for _, tc := range []struct {
		name  string
		write func(io.Writer, *swings.Report) error
	}{
		{"censored.table.golden", swings.WriteTable},
		{"censored.csv.golden", swings.WriteCSV},
		{"censored.json.golden", swings.WriteJSON},
	} {
		t.Run(tc.name, func(t *testing.T) { golden(t, tc.name, render(t, r, tc.write)) })
	}
}

func TestCensored(t *testing.T) {
	r := censoredReport()
	free, _ := r.Lane("free")
	for _, tc := range []struct {
		hour                 int
		worst, median        float64
		censored, medianCens bool
		measured             int
	}{
		{10, 30, 5, true, false, 3},
		{14, 30, 30, true, true, 3},
		{20, 12, 5, true, false, 3},
		{3, 9, 5, false, false, 3},
		{0, 5, 5, false, false, 3},
	} {
		h := free.Hours[tc.hour]
		if h.WorstS != tc.worst || h.MedianS != tc.median || h.Censored != tc.censored || h.MedianCensored != tc.medianCens || h.Measured != tc.measured {
			t.Errorf("%02dh: %+v, want worst %v (censored %v) median %v (censored %v) measured %d", tc.hour, h, tc.worst, tc.censored, tc.median, tc.medianCens, tc.measured)
		}
	}
	if s := free.Swing; !s.OK || s.PeakHour != 14 || s.PeakS != 30 || !s.PeakCensored || s.QuietS != 5 || s.QuietCensored || s.SwingS != 25 || !s.LowerBound {
		t.Errorf("swing %+v, want peak 14h >30, quiet 5, swing >25", s)
	}

	table := string(render(t, r, swings.WriteTable))
	for prefix, want := range map[string]string{
		"10  ":  "10 | 5.0 >30.0 1/9 3 | 2.0 2.0 0/9 3",
		"14  ":  "14 | >30.0 >30.0 3/9 3 | 2.0 2.0 0/9 3",
		"20  ":  "20 | 5.0 >12.0 2/8 3 | 2.0 2.0 0/9 3",
		"03  ":  "03 | 5.0 9.0 1/9 3 | 2.0 2.0 0/9 3",
		"free ": "free 14h >30.0 00h 5.0 >25.0 >6.00x 7/215",
		"paid ": "paid 00h 2.0 00h 2.0 0.0 1.00x 0/216",
	} {
		if got := strings.Join(tableLine(t, table, prefix), " "); got != want {
			t.Errorf("table line %q\n got %s\nwant %s", prefix, got, want)
		}
	}

	rows, err := csv.NewReader(bytes.NewReader(render(t, r, swings.WriteCSV))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for row, want := range map[int]string{
		1 + 10:      "free,free,10,5.000,30.000,3,3,9,1,true,false",
		1 + 14:      "free,free,14,30.000,30.000,3,3,9,3,true,true",
		1 + 3:       "free,free,3,5.000,9.000,3,3,9,1,false,false",
		1 + 24 + 14: "paid,paid,14,2.000,2.000,3,3,9,0,false,false",
	} {
		if got := strings.Join(rows[row], ","); got != want {
			t.Errorf("csv row %d: %s, want %s", row, got, want)
		}
	}

	var doc swings.JSONReport
	if err := json.Unmarshal(render(t, r, swings.WriteJSON), &doc); err != nil {
		t.Fatal(err)
	}
	fl := doc.Lanes[0]
	if h := fl.Hours[10]; !h.Censored || h.MedianCensored || *h.WorstS != 30 {
		t.Errorf("json 10h %+v", h)
	}
	if h := fl.Hours[14]; !h.Censored || !h.MedianCensored {
		t.Errorf("json 14h %+v", h)
	}
	if !fl.PeakCensored || fl.QuietCensored || !fl.SwingCensored || *fl.SwingS != 25 {
		t.Errorf("json lane %+v", fl)
	}
}

// The median is a lower bound only when raising a censored value could
// raise it: a censored value at or below the (upper) middle.
func TestCensoredMedian(t *testing.T) {
	for _, tc := range []struct {
		name    string
		vals    []float64 // > 0: exact ok worst; < 0: censored bound of -v
		median  float64
		medCens bool
		worstC  bool
	}{
		{"one censored", []float64{-30}, 30, true, true},
		{"censored above the middle", []float64{1, 2, -30}, 2, false, true},
		{"censored below the middle", []float64{-1, 2, 30}, 2, true, false},
		{"even, censored at the upper middle", []float64{1, -3, 5, 7}, 4, true, false},
		{"even, censored at the top", []float64{1, 3, 5, -7}, 4, false, true},
		{"tie: exact first", []float64{5, -5, 5}, 5, false, true},
		{"tie at the middle", []float64{5, -5}, 5, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var recs []store.Hourly
			for i, v := range tc.vals {
				r := store.Hourly{Lane: "x", Hour: weekStart.AddDate(0, 0, i), Samples: 2}
				if v > 0 {
					r.WorstQueueS = v
				} else {
					r.WorstCensoredS, r.Failures = -v, 1
				}
				recs = append(recs, r)
			}
			h := swings.Compute(recs, swings.Options{}).Lanes[0].Hours[0]
			if h.MedianS != tc.median || h.MedianCensored != tc.medCens || h.Censored != tc.worstC {
				t.Errorf("median %v (censored %v), worst censored %v; want %v (%v), %v", h.MedianS, h.MedianCensored, h.Censored, tc.median, tc.medCens, tc.worstC)
			}
		})
	}
	t.Run("bounds of 0, NaN or without a failure are not values", func(t *testing.T) {
		recs := []store.Hourly{
			{Lane: "x", Hour: weekStart, Samples: 1, Failures: 1, WorstCensoredS: 0},
			{Lane: "x", Hour: weekStart.Add(time.Hour), Samples: 1, Failures: 1, WorstCensoredS: -3},
			{Lane: "x", Hour: weekStart.Add(2 * time.Hour), Samples: 2, Failures: 0, WorstQueueS: 4, WorstCensoredS: 40},
		}
		l := swings.Compute(recs, swings.Options{}).Lanes[0]
		if l.Hours[0].HasQueue() || l.Hours[1].HasQueue() || l.Hours[2].WorstS != 4 || l.Hours[2].Censored {
			t.Errorf("hours %+v %+v %+v", l.Hours[0], l.Hours[1], l.Hours[2])
		}
	})
}

// Lower bounds are marked on the chart: a ">" beside each censored point
// (free: the worst at 10h, 14h and 20h, the median at 14h) and a key entry.
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
