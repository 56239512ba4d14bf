package swings_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/report/swings"
	"github.com/lanewatch/lanewatch/store"
)

// hourWant is what one lane shows at one hour of day; a negative median
// means "no queue time" (no ok probe).
type hourWant struct {
	lane              string
	hour              int
	median, worst     float64
	measured, days    int
	samples, failures int64
	noQueue           bool
}

type swingWant struct {
	lane             string
	ok               bool
	peak, quiet      int
	peakS, quietS    float64
	swingS, ratio    float64
	hasRatio         bool
	records          int
	samples, failure int64
}

func rec(lane string, t time.Time, worst float64, samples, failures int64) store.Hourly {
	return store.Hourly{Lane: lane, Kind: "free", Hour: t, WorstQueueS: worst, Samples: samples, Failures: failures}
}

func TestCompute(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	onlyFailures := func() []store.Hourly {
		var out []store.Hourly
		for i := range 48 {
			out = append(out, rec("dead", weekStart.Add(time.Duration(i)*time.Hour), 0, 3, 3))
		}
		return out
	}
	cases := []struct {
		name      string
		recs      []store.Hourly
		opt       func(*swings.Options)
		lanes     []string
		records   int
		hours     []hourWant
		swings    []swingWant
		first     time.Time
		checkNaNs bool
	}{
		{
			name:    "week with a daily curve",
			recs:    week(),
			lanes:   []string{"free", "paid"},
			records: 7 * 24 * 2,
			first:   weekStart,
			hours: []hourWant{
				{lane: "free", hour: 0, median: 6.5, worst: 8, measured: 7, days: 7, samples: 21},
				{lane: "free", hour: 3, median: 6.5, worst: 8, measured: 7, days: 7, samples: 21, failures: 2},
				{lane: "free", hour: 8, median: 6.5, worst: 8, measured: 7, days: 7, samples: 21},
				{lane: "free", hour: 9, median: 26.5, worst: 28, measured: 7, days: 7, samples: 21},
				{lane: "free", hour: 17, median: 26.5, worst: 28, measured: 7, days: 7, samples: 21},
				{lane: "free", hour: 18, median: 6.5, worst: 8, measured: 7, days: 7, samples: 21},
				{lane: "paid", hour: 11, median: 2, worst: 2, measured: 7, days: 7, samples: 21},
				{lane: "paid", hour: 13, median: 3, worst: 3, measured: 7, days: 7, samples: 21},
			},
			swings: []swingWant{
				{lane: "free", ok: true, peak: 9, peakS: 26.5, quiet: 0, quietS: 6.5, swingS: 20, ratio: 26.5 / 6.5, hasRatio: true, records: 168, samples: 504, failure: 2},
				{lane: "paid", ok: true, peak: 12, peakS: 3, quiet: 0, quietS: 2, swingS: 1, ratio: 1.5, hasRatio: true, records: 168, samples: 504},
			},
		},
		{
			name:    "empty input lists the configured lanes without values",
			lanes:   []string{"free", "paid"},
			records: 0,
			hours: []hourWant{
				{lane: "free", hour: 0, noQueue: true},
				{lane: "paid", hour: 23, noQueue: true},
			},
			swings:    []swingWant{{lane: "free"}, {lane: "paid"}},
			checkNaNs: true,
		},
		{
			name:    "lane with only failures has counts but no queue and no swing",
			recs:    append(week(), onlyFailures()...),
			opt:     func(o *swings.Options) { o.Lanes = append(o.Lanes, swings.Lane{Name: "dead", Kind: "free"}) },
			lanes:   []string{"free", "paid", "dead"},
			records: 7*24*2 + 48,
			first:   weekStart,
			hours: []hourWant{
				{lane: "dead", hour: 5, days: 2, samples: 6, failures: 6, noQueue: true},
			},
			swings:    []swingWant{{lane: "dead", records: 48, samples: 144, failure: 144}},
			checkNaNs: true,
		},
		{
			name: "window longer than the history",
			recs: week(),
			opt: func(o *swings.Options) {
				o.From, o.Days = o.To.AddDate(0, 0, -30), 30
			},
			lanes:   []string{"free", "paid"},
			records: 7 * 24 * 2,
			first:   weekStart,
			hours:   []hourWant{{lane: "free", hour: 12, median: 26.5, worst: 28, measured: 7, days: 7, samples: 21}},
			swings:  []swingWant{{lane: "free", ok: true, peak: 9, peakS: 26.5, quiet: 0, quietS: 6.5, swingS: 20, ratio: 26.5 / 6.5, hasRatio: true, records: 168, samples: 504, failure: 2}},
		},
		{
			name: "records outside the window are ignored",
			recs: week(),
			opt: func(o *swings.Options) {
				o.From = weekStart.AddDate(0, 0, 1) // days 1..6: 25.5 .. 28 at hour 10
				o.Days = 6
			},
			lanes:   []string{"free", "paid"},
			records: 6 * 24 * 2,
			first:   weekStart.AddDate(0, 0, 1),
			hours: []hourWant{
				{lane: "free", hour: 10, median: 26.75, worst: 28, measured: 6, days: 6, samples: 18},
				{lane: "free", hour: 3, median: 6.75, worst: 8, measured: 6, days: 6, samples: 18, failures: 1},
			},
		},
		{
			name: "lanes only in the records follow the configured ones, by name",
			recs: append(week(),
				rec("zeta", weekStart, 4, 1, 0),
				rec("alpha", weekStart.Add(time.Hour), 6, 2, 0),
				rec("alpha", weekStart.Add(25*time.Hour), 4, 2, 0)),
			lanes:   []string{"free", "paid", "alpha", "zeta"},
			records: 7*24*2 + 3,
			first:   weekStart,
			hours: []hourWant{
				// even count: the mean of the two middle values
				{lane: "alpha", hour: 1, median: 5, worst: 6, measured: 2, days: 2, samples: 4},
				{lane: "zeta", hour: 0, median: 4, worst: 4, measured: 1, days: 1, samples: 1},
			},
			swings: []swingWant{
				// a single hour is both peak and quietest
				{lane: "zeta", ok: true, peak: 0, peakS: 4, quiet: 0, quietS: 4, swingS: 0, ratio: 1, hasRatio: true, records: 1, samples: 1},
			},
		},
		{
			name: "hours are keyed in the report's timezone",
			recs: []store.Hourly{
				rec("free", time.Date(2026, 11, 23, 14, 0, 0, 0, time.UTC), 9, 3, 0), // 09:00 EST
				rec("free", time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC), 2, 3, 0),  // 22:00 EST, Nov 23
				rec("free", time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC), 4, 3, 0),  // 22:00 EST, Nov 24
			},
			opt:     func(o *swings.Options) { o.Location = ny },
			lanes:   []string{"free", "paid"},
			records: 3,
			first:   time.Date(2026, 11, 23, 14, 0, 0, 0, time.UTC),
			hours: []hourWant{
				{lane: "free", hour: 9, median: 9, worst: 9, measured: 1, days: 1, samples: 3},
				{lane: "free", hour: 22, median: 3, worst: 4, measured: 2, days: 2, samples: 6},
				{lane: "free", hour: 14, noQueue: true},
			},
			swings: []swingWant{{lane: "free", ok: true, peak: 9, peakS: 9, quiet: 22, quietS: 3, swingS: 6, ratio: 3, hasRatio: true, records: 3, samples: 9}},
		},
		{
			name: "a zero quietest hour has no ratio; non-finite values are skipped",
			recs: []store.Hourly{
				rec("free", weekStart, 0, 1, 0),
				rec("free", weekStart.Add(time.Hour), 7, 1, 0),
				rec("free", weekStart.Add(2*time.Hour), math.NaN(), 1, 0),
				rec("free", weekStart.Add(3*time.Hour), math.Inf(1), 1, 0),
			},
			lanes:   []string{"free", "paid"},
			records: 4,
			first:   weekStart,
			hours: []hourWant{
				{lane: "free", hour: 2, days: 1, samples: 1, noQueue: true},
				{lane: "free", hour: 3, days: 1, samples: 1, noQueue: true},
			},
			swings:    []swingWant{{lane: "free", ok: true, peak: 1, peakS: 7, quiet: 0, quietS: 0, swingS: 7, records: 4, samples: 4}},
			checkNaNs: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opt := weekOptions()
			if tc.opt != nil {
				tc.opt(&opt)
			}
			r := swings.Compute(tc.recs, opt)
			var names []string
			for _, l := range r.Lanes {
				names = append(names, l.Name)
			}
			if len(names) != len(tc.lanes) {
				t.Fatalf("lanes %v, want %v", names, tc.lanes)
			}
			for i := range names {
				if names[i] != tc.lanes[i] {
					t.Fatalf("lanes %v, want %v", names, tc.lanes)
				}
			}
			if r.Records != tc.records {
				t.Errorf("records %d, want %d", r.Records, tc.records)
			}
			if !r.First.Equal(tc.first) {
				t.Errorf("first record %v, want %v", r.First, tc.first)
			}
			for _, w := range tc.hours {
				l, _ := laneOf(r, w.lane)
				h := l.Hours[w.hour]
				if h.Hour != w.hour {
					t.Errorf("%s hour %d: Hour field %d", w.lane, w.hour, h.Hour)
				}
				if w.noQueue {
					if h.HasQueue() || h.MedianS != 0 || h.WorstS != 0 {
						t.Errorf("%s %02d: has a queue time %+v, want none", w.lane, w.hour, h)
					}
				} else if h.MedianS != w.median || h.WorstS != w.worst || h.Measured != w.measured {
					t.Errorf("%s %02d: median %v worst %v measured %d, want %v %v %d", w.lane, w.hour, h.MedianS, h.WorstS, h.Measured, w.median, w.worst, w.measured)
				}
				if h.Days != w.days || h.Samples != w.samples || h.Failures != w.failures {
					t.Errorf("%s %02d: days %d samples %d failures %d, want %d %d %d", w.lane, w.hour, h.Days, h.Samples, h.Failures, w.days, w.samples, w.failures)
				}
			}
			for _, w := range tc.swings {
				l, _ := laneOf(r, w.lane)
				s := l.Swing
				if s.OK != w.ok || s.PeakHour != w.peak || s.QuietHour != w.quiet || s.PeakS != w.peakS || s.QuietS != w.quietS ||
					s.SwingS != w.swingS || s.HasRatio != w.hasRatio || math.Abs(s.Ratio-w.ratio) > 1e-12 {
					t.Errorf("%s swing %+v, want %+v", w.lane, s, w)
				}
				if l.Records != w.records || l.Samples != w.samples || l.Failures != w.failure {
					t.Errorf("%s: records %d samples %d failures %d, want %d %d %d", w.lane, l.Records, l.Samples, l.Failures, w.records, w.samples, w.failure)
				}
			}
			if tc.checkNaNs {
				for _, l := range r.Lanes {
					for _, h := range l.Hours {
						for _, v := range []float64{h.MedianS, h.WorstS} {
							if math.IsNaN(v) || math.IsInf(v, 0) {
								t.Errorf("%s %02d: non-finite %v", l.Name, h.Hour, v)
							}
						}
					}
					for _, v := range []float64{l.Swing.PeakS, l.Swing.QuietS, l.Swing.SwingS, l.Swing.Ratio} {
						if math.IsNaN(v) || math.IsInf(v, 0) {
							t.Errorf("%s swing: non-finite %v", l.Name, v)
						}
					}
				}
			}
		})
	}
}

// Compute must not depend on the order of its input.
func TestComputeOrderIndependent(t *testing.T) {
	recs := week()
	rev := make([]store.Hourly, len(recs))
	for i, r := range recs {
		rev[len(recs)-1-i] = r
	}
	a, b := swings.Compute(recs, weekOptions()), swings.Compute(rev, weekOptions())
	for i := range a.Lanes {
		if a.Lanes[i] != b.Lanes[i] {
			t.Errorf("lane %s differs with reversed input", a.Lanes[i].Name)
		}
	}
}

// The censored hours of censoredReport, as Compute sums them and every
// writer shows them (">" in the table, the censored columns of the CSV and
// the JSON).
func TestCensored(t *testing.T) {
	r := censoredReport()
	free, _ := laneOf(r, "free")
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
