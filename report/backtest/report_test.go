package backtest

import (
	"math"
	"testing"

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
