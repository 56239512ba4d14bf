package swings_test

import (
	"math"
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
				l, _ := r.Lane(w.lane)
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
				l, _ := r.Lane(w.lane)
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
