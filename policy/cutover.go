package policy

import (
	"math"
	"sort"

	"github.com/lanewatch/lanewatch/internal/num"
)

// The cut-over rule's constants (docs/policy.md, "The cut-over time").
const (
	// CutoverMarginS is the slack kept between the paid attempt's
	// expected end and the deadline when the free attempt is cut, and
	// past the free lane's capping quantile.
	CutoverMarginS = 2.0
	// CutoverCapCoverage is the least coverage of the free lane's wait
	// that caps the cut-over time: a free attempt with no first token by
	// that quantile is more likely stuck than slow.
	CutoverCapCoverage = 0.99
	// MinFreeFirstChance is the least probability of a free first token by
	// the cut-over time for which a free first try is worth the request
	// it may abandon (0.3 paid less than 0.5 at the same deadlines met in
	// the backtest's baselines, BENCHMARKS.md).
	MinFreeFirstChance = 0.3
)

// CutoverCoverages are the coverages at which a caller reads the free
// lane's wait distribution for CutoverFor (a Calibrator's Quantile at each).
var CutoverCoverages = []float64{0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99}

// QuantilePoint is one point of a wait distribution: the wait QueueS that
// a first token comes within with probability Coverage.
type QuantilePoint struct {
	Coverage float64
	QueueS   float64
}

// CutoverInput is what the cut-over rule reads for a class and hour.
type CutoverInput struct {
	DeadlineS float64
	// PaidQueueS is the paid lane's queue at the class's coverage;
	// PaidGenS and FreeGenS the seconds each lane takes to generate the
	// job's tokens.
	PaidQueueS float64
	PaidGenS   float64
	FreeGenS   float64
	// Free is the free lane's first-token wait at several coverages (any
	// order); empty: no forecast.
	Free         []QuantilePoint
	FreeEligible bool
	PaidEligible bool
}

// Cutover is the rule's answer for a class and hour: AfterS, the
// first-token wait (seconds since the job's start) after which the free
// attempt is abandoned for the paid lane (cutover_after_s); FreeFirst,
// whether a free first try is worth it (free_first); FreeChance, the
// probability of a free first token by AfterS the forecast gives (a lower
// bound: the largest coverage whose quantile is at most AfterS; 1 without
// a forecast).
type Cutover struct {
	AfterS     float64
	FreeFirst  bool
	FreeChance float64
}

// CutoverFor is the cut-over rule:
//
//	latest      = deadline_s − (paid_queue_s + paid_gen_s + CutoverMarginS)
//	useful      = deadline_s − free_gen_s
//	cap         = free wait at the least coverage given at or above CutoverCapCoverage (else at the largest given) + CutoverMarginS
//	after_s     = max(0, min(latest, useful, cap))
//	free_chance = the largest coverage whose free wait is at most after_s (0: none)
//	free_first  = free eligible and after_s > 0 and free_chance >= MinFreeFirstChance
//
// With the paid lane not eligible there is nothing to cut over to: after_s
// is max(0, useful) and free_first is whether the free lane is eligible.
// With the free lane not eligible, free_first is false and after_s 0.
// Without a forecast (Free empty) the cap is left out and free_chance is 1.
// A value that is not finite counts as no time left.
func CutoverFor(in CutoverInput) Cutover {
	if !in.FreeEligible {
		return Cutover{}
	}
	useful := in.DeadlineS - in.FreeGenS
	if !in.PaidEligible {
		after := clampS(useful)
		return Cutover{AfterS: after, FreeFirst: true, FreeChance: freeChance(in.Free, after)}
	}
	after := math.Min(in.DeadlineS-(in.PaidQueueS+in.PaidGenS+CutoverMarginS), useful)
	if pts := sortedPoints(in.Free); len(pts) > 0 {
		capAt := pts[len(pts)-1].QueueS
		for _, p := range pts {
			if p.Coverage >= CutoverCapCoverage {
				capAt = p.QueueS
				break
			}
		}
		after = math.Min(after, capAt+CutoverMarginS)
	}
	after = clampS(after)
	c := Cutover{AfterS: after, FreeChance: freeChance(in.Free, after)}
	c.FreeFirst = after > 0 && c.FreeChance >= MinFreeFirstChance
	return c
}

func clampS(x float64) float64 {
	if !num.Finite(x) || x < 0 {
		return 0
	}
	return x
}

// sortedPoints returns the finite points by coverage.
func sortedPoints(ps []QuantilePoint) []QuantilePoint {
	out := make([]QuantilePoint, 0, len(ps))
	for _, p := range ps {
		if num.Finite(p.Coverage) && num.Finite(p.QueueS) {
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Coverage < out[j].Coverage })
	return out
}

// freeChance is the largest coverage whose wait is at most s; 1 with no
// points.
func freeChance(ps []QuantilePoint, s float64) float64 {
	pts := sortedPoints(ps)
	if len(pts) == 0 {
		return 1
	}
	best := 0.0
	for _, p := range pts {
		if p.QueueS <= s && p.Coverage > best {
			best = p.Coverage
		}
	}
	return best
}
