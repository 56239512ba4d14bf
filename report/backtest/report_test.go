package backtest

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/store"
)

// A ratio needs a positive, finite queue_s: an ok probe that queued 0 s
// (or a corrupt negative or infinite figure) is covered, but adds no
// ratio (report.go's `Finite(q) && q > 0` → `||`, `> 0` → `>= 0`).
func TestRatioNeedsAPositiveQueue(t *testing.T) {
	l := policy.Lane{Name: "free", Kind: "free", Eligible: true, Reason: policy.ReasonOK, NextQueueS: 2}
	var c cell
	for _, q := range []float64{0, -1, math.Inf(1), math.NaN(), 4} {
		c.add(&l, &store.Probe{Lane: "free", OK: true, Outcome: "ok", QueueS: q})
	}
	var buf []float32
	n := c.counts(&buf)
	// 0 and -1 are within 2 s; +Inf, NaN and 4 are not. Only 4 gives a
	// ratio: 2/4.
	if n.OK != 5 || n.Covered != 2 || f(n.MedianRatio) != "0.5" || f(n.P90Ratio) != "0.5" || f(n.Coverage) != "0.4" {
		t.Errorf("%+v, median %s, p90 %s, coverage %s; want 5 ok, 2 covered, ratios 0.5, coverage 0.4",
			n, f(n.MedianRatio), f(n.P90Ratio), f(n.Coverage))
	}
}

// A lookback whose coverage is exactly TargetCoverage reaches it, and then
// its lower median ratio beats a better-covered lookback's (report.go's
// `>= TargetCoverage` → `>`).
func TestBestLookbackAtTheTarget(t *testing.T) {
	cal := func(days int, cov, ratio float64) Calibration {
		return Calibration{LookbackDays: days, All: AllCalibration{Counts: Counts{Coverage: &cov, MedianRatio: &ratio}}}
	}
	if got := bestLookback([]Calibration{cal(1, 0.95, 2), cal(7, 0.97, 3)}); got != 0 {
		t.Errorf("best %d, want 0 (0.95 reaches the target at the lower ratio)", got)
	}
	if got := bestLookback([]Calibration{cal(1, 0.9499, 2), cal(7, 0.97, 3)}); got != 1 {
		t.Errorf("best %d, want 1 (0.9499 does not reach the target)", got)
	}
}

// coverage_all leaves out a 429 however it was recorded (outcome
// rate_limited, or status 429), counts any other failure (covered when its
// wait is within the figure), and is absent with nothing to count.
func TestCoverageAllLeavesOut429s(t *testing.T) {
	l := policy.Lane{Name: "free", Kind: "free", Eligible: true, Reason: policy.ReasonOK, NextQueueS: 10}
	b := &Backtest{extended: true}
	var buf []float32
	var c cell
	if n := b.counts(&c, &buf); n.CoverageAll != nil {
		t.Errorf("no probe: coverage_all %s, want none", f(n.CoverageAll))
	}
	for _, p := range []store.Probe{
		{OK: true, Outcome: "ok", Status: 200, QueueS: 5},
		{Outcome: store.OutcomeRateLimited, QueueS: 20},
		{Outcome: "http_error", Status: 429, QueueS: 20},
		{Outcome: "timeout", QueueS: 20},
	} {
		c.add(&l, &p)
	}
	if n := b.counts(&c, &buf); f(n.CoverageAll) != "0.5" {
		t.Errorf("coverage_all %s, want 0.5 (the 429s left out)", f(n.CoverageAll))
	}
}

// In the extended shape each kind of lane configured has its calibration,
// by hour of day too: the free lane's probes at 10:00 are the free kind's.
func TestKindCalibration(t *testing.T) {
	from := day0.AddDate(0, 0, 2).Add(10 * time.Hour)
	for _, tc := range []struct {
		name  string
		lanes []policy.LaneSpec
		kinds []string
	}{
		{"free and paid", []policy.LaneSpec{{Name: "free", Kind: "free"}, {Name: "paid", Kind: "paid"}}, []string{"free", "paid"}},
		{"free only", []policy.LaneSpec{{Name: "free", Kind: "free"}}, []string{"free"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := params(1)
			p.Lanes = tc.lanes
			opts := Options{Params: p, Coverages: []float64{0.9}, From: from, To: from.Add(time.Hour)}
			var ps []store.Probe
			for _, pr := range rounds(opts.ReadFrom(), opts.To, func(time.Time) (float64, bool) { return 5, true }) {
				if slices.ContainsFunc(tc.lanes, func(l policy.LaneSpec) bool { return l.Name == pr.Lane }) {
					ps = append(ps, pr)
				}
			}
			cal := run(t, opts, ps).Calibration[0]
			var kinds []string
			for _, k := range cal.Kinds {
				kinds = append(kinds, k.Kind)
			}
			if !slices.Equal(kinds, tc.kinds) {
				t.Fatalf("kinds %v, want %v", kinds, tc.kinds)
			}
			if free := cal.Kinds[0]; free.Probes != 3 || free.Hours[10].Probes != 3 || f(free.Hours[10].CoverageAll) != "1" {
				t.Errorf("free kind: %d probes, at 10:00 %d, coverage_all %s; want 3, 3, 1", free.Probes, free.Hours[10].Probes, f(free.Hours[10].CoverageAll))
			}
		})
	}
}

// The extended shape's best calibration is judged on the free lanes'
// coverage_all, on the paid lanes' only without a free lane: lookback 7
// reaches the target on the free lanes, lookback 1 only on the paid ones.
func TestBestByKind(t *testing.T) {
	kind := func(k string, cov float64) KindCalibration {
		return KindCalibration{Kind: k, Counts: Counts{CoverageAll: &cov}}
	}
	cal := func(days int, kinds ...KindCalibration) Calibration {
		return Calibration{LookbackDays: days, Kinds: kinds}
	}
	for _, tc := range []struct {
		name string
		cals []Calibration
		want int
	}{
		{"free and paid: the free lanes'", []Calibration{cal(1, kind("free", 0.9), kind("paid", 1)), cal(7, kind("free", 0.97), kind("paid", 0.9))}, 1},
		{"paid alone", []Calibration{cal(1, kind("paid", 1)), cal(7, kind("paid", 0.9))}, 0},
	} {
		if got := bestByKind(tc.cals); got != tc.want {
			t.Errorf("%s: best %d, want %d", tc.name, got, tc.want)
		}
	}
}
