package policy

import (
	"math"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

// Tests written for gremlins' survivors in calibrated.go
// (issue 22, fourth round): each fails on the mutant named in its comment.

// A record whose failed probe waited exactly as long as its worst ok probe
// has a worst wait known only as a lower bound (the failed probe's wait
// would have gone on): RecordObs says Censored, as it does when the
// censored wait is the larger. 2 ok probes (worst 30 s) and a timeout at
// 30 s: 30 s, a bound, the largest of 3 waits.
// (calibrated.go RecordObs: `r.WorstCensoredS >= o.Value` → `>`.)
func TestRecordObsTieIsABound(t *testing.T) {
	h := calStart
	for _, tc := range []struct {
		name string
		r    store.Hourly
		want QueueObs
	}{
		{"tie", store.Hourly{Hour: h, WorstQueueS: 30, WorstCensoredS: 30, Samples: 3, Failures: 1},
			QueueObs{Time: h, Span: time.Hour, Value: 30, N: 3, Censored: true}},
		{"censored just below", store.Hourly{Hour: h, WorstQueueS: 30, WorstCensoredS: 29.99, Samples: 3, Failures: 1},
			QueueObs{Time: h, Span: time.Hour, Value: 30, N: 3}},
	} {
		if got, ok := RecordObs(tc.r); !ok || got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, ok, tc.want)
		}
	}
}

// An EWMA weight of 1 is allowed (0 < alpha <= 1: the level is then the
// last residual); just above 1 is not.
// (calibrated.go withDefaults: `a <= 1` → `a < 1`.)
func TestCalibratedAlphaOfOne(t *testing.T) {
	for _, tc := range []struct {
		p  CalibratedParams
		ok bool
	}{
		{CalibratedParams{Alpha: 1}, true},
		{CalibratedParams{FastAlpha: 1}, true},
		{CalibratedParams{Alpha: 1, FastAlpha: 1}, true},
		{CalibratedParams{Alpha: 1.0000001}, false},
		{CalibratedParams{FastAlpha: 1.0000001}, false},
	} {
		if _, err := NewCalibrator(tc.p); (err == nil) != tc.ok {
			t.Errorf("%+v: error %v, want ok %v", tc.p, err, tc.ok)
		}
	}
}

// A wait of 0 is an observation (a first token at once), counted as
// MinQueueObsS so that it has a logarithm; only negative and non-finite
// waits are left out. One observation of 0 s: the forecast is 1 ms.
// (calibrated.go Add: `o.Value < 0` → `o.Value <= 0`.)
func TestCalibratedWaitOfZeroCounts(t *testing.T) {
	c := newCal(t, CalibratedParams{})
	mustAdd(t, c, QueueObs{Time: calStart, Value: 0})
	f, ok := c.Quantile(calStart.Add(time.Minute), 0.9)
	if !ok || !near(f.QueueS, MinQueueObsS) || !near(f.ProfileS, MinQueueObsS) {
		t.Errorf("after one wait of 0 s: %+v, %v; want a forecast of %v s", f, ok, MinQueueObsS)
	}
}

// The shift rule needs calibratedShiftMin (20) residuals: before that two
// observations in a row below the profile move the level by the EWMAs
// only, never by a jump. Three waits in one hour of day, 10 s then 5 s
// twice: the second meets the profile 10 s (residual e = d = -ln 2; slow
// EWMA -0.1 ln 2, fast -0.3 ln 2, level the larger, -0.1 ln 2); the third
// meets the upper median of {5, 10}, 10 s: e = -ln 2, d = -0.9 ln 2; slow
// 0.9 × -0.1 ln 2 + 0.1 × -ln 2 = -0.19 ln 2, fast 0.7 × -0.3 ln 2 + 0.3 ×
// -ln 2 = -0.51 ln 2, level -0.19 ln 2 (a jump would make it -ln 2). The
// forecast after them: profile 5 s (upper median of {5, 5, 10}), level
// 2^-0.19, margin at 0.5 the 2nd of the residuals {-ln 2, -0.9 ln 2}
// (k = ceil(0.5 × 3)): 2^-0.9.
// (calibrated.go Add: `detect && !o.Censored && d < lo` → `(detect ||
// !o.Censored) && d < lo`.)
func TestCalibratedNoShiftBeforeEnoughResiduals(t *testing.T) {
	c := newCal(t, CalibratedParams{})
	for i, v := range []float64{10, 5, 5} {
		mustAdd(t, c, QueueObs{Time: calStart.Add(time.Duration(i) * time.Minute), Value: v})
	}
	f, ok := c.Quantile(calStart.Add(3*time.Minute), 0.5)
	want := CalibratedFigure{QueueS: 5 * math.Pow(2, -0.19) * math.Pow(2, -0.9), ProfileS: 5, Level: math.Pow(2, -0.19), Margin: math.Pow(2, -0.9), Residuals: 2, Warm: true}
	if !ok || !near(f.QueueS, want.QueueS) || !near(f.ProfileS, want.ProfileS) || !near(f.Level, want.Level) || !near(f.Margin, want.Margin) ||
		f.Residuals != want.Residuals || f.Warm != want.Warm {
		t.Errorf("got %+v, %v; want %+v", f, ok, want)
	}
}

// The window of a forecast for t is the lookback before it, [t - lookback,
// t]: a probe (Span 0) exactly one lookback after another is forecast with
// the older one still in the window, so its residual has a profile. An
// hourly record (Span 1 h) scores forecasts made within its hour, after
// its start, whose window no longer holds the record exactly one lookback
// before it: it has no profile and leaves no residual. Lookback 1 day, two
// observations 24 h apart, 100 s then 1 s: as probes, the second leaves a
// residual and the hour's profile is the upper median of {1, 100}, 100 s;
// as records, no residual, and the first record has left the window.
// (calibrated.go Add: `o.Span > 0` → `>= 0` or `<= 0`, `at++` → `at--`.)
func TestCalibratedWindowEdgeBySpan(t *testing.T) {
	for _, tc := range []struct {
		name      string
		span      time.Duration
		residuals int
		profileS  float64
	}{
		{"probes", 0, 1, 100},
		{"hourly records", time.Hour, 0, 1},
	} {
		c := newCal(t, CalibratedParams{LookbackDays: 1})
		second := calStart.Add(24 * time.Hour)
		mustAdd(t, c, QueueObs{Time: calStart, Span: tc.span, Value: 100})
		mustAdd(t, c, QueueObs{Time: second, Span: tc.span, Value: 1})
		f, ok := c.Quantile(second, 0.5)
		if !ok || f.Residuals != tc.residuals || !near(f.ProfileS, tc.profileS) {
			t.Errorf("%s: %+v, %v; want %d residuals, profile %v s", tc.name, f, ok, tc.residuals, tc.profileS)
		}
	}
}

// A shift moves both EWMAs to the smaller (upward) or larger (downward)
// of the two residuals minus the residuals' median. The state is set by
// hand: 20 residuals 0, 0.1, ..., 1.9 (upper tail s[18] = 1.8, lower tail
// s[0] = 0, median s[10] = 1.0), a profile of 10 s for the hour and a level
// of 0, the previous observation beyond the tail with residual ±5. A wait
// of 10·e^4 s (e = 4 > 1.8) jumps the level to min(4, 5) - 1 = 3; a wait of
// 10·e^-4 s (e = -4 < 0) to max(-4, -5) - 1 = -5. The tails are the
// order statistics s[ceil(0.95 n) - 1] and s[ceil(0.05 n) - 1], and 20
// residuals are enough to tell a shift.
// (calibrated.go shiftBounds: `n < calibratedShiftMin` → `<=`, the tails'
// `ceil(q n) - 1` → `+ 1`; Add: `min(e, c.prevE) - med` → `+ med`, `max(e, c.prevE)
// - med` → `+ med`.)
func TestCalibratedShiftJumpsByTheMedian(t *testing.T) {
	for _, tc := range []struct {
		name      string
		up        bool
		e, level  float64
		prevE     float64
		wantLevel float64
	}{
		{"up", true, 4, 0, 5, 3},
		{"down", false, -4, 0, -5, -5},
		// Just past the upper tail (1.85 > s[18] = 1.8): a jump to 0.85.
		{"up, just past the tail", true, 1.85, 0, 5, 0.85},
		// Not under the lower tail (0.1 >= s[0] = 0): no jump; the level
		// is the larger EWMA, 0.3 × 0.1.
		{"down, not past the tail", false, 0.1, 0, -5, 0.03},
	} {
		c := newCal(t, CalibratedParams{})
		t0 := calStart.UnixNano()
		for i := range 20 {
			c.resid.add(t0, float64(i)/10, 1)
		}
		c.hours[0].add(t0, profileKey{v: math.Log(10)}, 1)
		c.all.add(t0, profileKey{v: math.Log(10)}, 1)
		c.last, c.seen = calStart, true
		c.prevHi, c.prevLo, c.prevE = tc.up, !tc.up, tc.prevE
		mustAdd(t, c, QueueObs{Time: calStart.Add(time.Minute), Value: 10 * math.Exp(tc.e)})
		f, ok := c.Quantile(calStart.Add(2*time.Minute), 0.5)
		if !ok || !near(math.Log(f.Level), tc.wantLevel) {
			t.Errorf("%s: level e^%v (%+v, %v), want e^%v", tc.name, math.Log(f.Level), f, ok, tc.wantLevel)
		}
	}
}

// The margin of a window holding hourly records (N > 1) takes k =
// ceil((n+1)/n × Σ c^N_i) also after the probes beside them have left the
// window. Lookback 1 day: three probes of 10 s at 00:00, 00:01, 00:02 (the
// 2nd and 3rd leave residuals 0), a record of 3 waits at 02:00 (profile
// 10 s from the whole window, residual 0), then a probe of 20 s at 00:30
// the next day, which evicts the three probes: its profile is the record's
// 10 s, residual ln 2. Left: residuals {0 (N 3), ln 2 (N 1)}; at coverage
// 0.5, Σ c^N = 0.125 + 0.5, k = ceil(1.5 × 0.625) = 1: margin e^0 = 1 (with
// the probes' N taken as the record's, k = ceil(1.5 × 1) = 2: margin 2).
// (calibrated.go evict: `n > 1` → `>= 1` or `<= 1`.)
func TestCalibratedMarginOfRecordsAfterProbesLeave(t *testing.T) {
	c := newCal(t, CalibratedParams{LookbackDays: 1})
	for i := range 3 {
		mustAdd(t, c, QueueObs{Time: calStart.Add(time.Duration(i) * time.Minute), Value: 10})
	}
	mustAdd(t, c, QueueObs{Time: calStart.Add(2 * time.Hour), Span: time.Hour, Value: 10, N: 3})
	last := calStart.Add(24*time.Hour + 30*time.Minute)
	mustAdd(t, c, QueueObs{Time: last, Value: 20})
	f, ok := c.Quantile(last, 0.5)
	if !ok || f.Residuals != 2 || !near(f.Margin, 1) {
		t.Errorf("%+v, %v; want 2 residuals and a margin of 1", f, ok)
	}
}

// A censored observation ranks above every uncensored one in the profile
// (it is at least its bound, so it can only raise the median), whatever
// the order they come in: waits of 100 s and 200 s and a timeout at 1 s in
// one hour of day have the upper median 200 s, the ranks [100, 200, 1+].
// (calibrated.go cmpProfileKey: `return -1` → `return 1`.)
func TestCalibratedCensoredRanksAbove(t *testing.T) {
	obs := []QueueObs{{Value: 100}, {Value: 200}, {Value: 1, Censored: true}}
	for _, order := range [][]int{{0, 1, 2}, {2, 0, 1}, {0, 2, 1}, {2, 1, 0}} {
		c := newCal(t, CalibratedParams{})
		for i, j := range order {
			o := obs[j]
			o.Time = calStart.Add(time.Duration(i) * time.Minute)
			mustAdd(t, c, o)
		}
		if f, ok := c.Quantile(calStart.Add(10*time.Minute), 0.5); !ok || !near(f.ProfileS, 200) {
			t.Errorf("order %v: profile %v s (%+v, %v), want 200", order, f.ProfileS, f, ok)
		}
	}
}

// An hour of day with no observation in the window reads the median of
// every hour's observations in it, without those that have left it.
// Lookback 1 day: 30 s at 00:00 and 20 s at 05:00; a forecast for 03:00
// the next day (no observation at 03:00) has 00:00's out of its window:
// the profile is 20 s (with it, the upper median of {20, 30}, 30 s).
// (calibrated.go view: `w.head+len(w.stale(from))` → `-`.)
func TestCalibratedProfileOfAnEmptyHourLeavesOldObservations(t *testing.T) {
	c := newCal(t, CalibratedParams{LookbackDays: 1})
	mustAdd(t, c, QueueObs{Time: calStart, Value: 30})
	mustAdd(t, c, QueueObs{Time: calStart.Add(5 * time.Hour), Value: 20})
	if f, ok := c.Quantile(calStart.Add(27*time.Hour), 0.5); !ok || !near(f.ProfileS, 20) {
		t.Errorf("profile %v s (%+v, %v), want 20", f.ProfileS, f, ok)
	}
}
