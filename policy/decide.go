package policy

import (
	"math"

	"github.com/lanewatch/lanewatch/internal/num"
)

// Objectives of a class (ClassSpec.Objective), what its decisions
// optimise in order: meet the deadline at the class's coverage, then pay
// the least, then wait the least (ObjectiveCost, the default); or the
// deadline, then the least wait, then the least paid (ObjectiveTime).
const (
	ObjectiveCost = "cost"
	ObjectiveTime = "time"
)

// Objectives lists the objectives, the default first.
var Objectives = []string{ObjectiveCost, ObjectiveTime}

// ObjectiveOr returns o when it is an objective, else the default.
func ObjectiveOr(o string) string {
	if o == ObjectiveTime {
		return o
	}
	return ObjectiveCost
}

// CutoverGridS are the fixed cut-overs (seconds) every decision weighs
// beside its own bounds: each fallback@T a user would pick.
var CutoverGridS = []float64{1, 2, 3, 5, 7.5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 75, 90, 120, 180, 300, 600, 900, 1800, 3600}

// Cutover is a class's decision for an hour: AfterS, the first-token wait
// (seconds since the job's start) after which the free attempt is
// abandoned for the paid lane (cutover_after_s); FreeFirst, whether the
// job starts on the free lane at all (free_first).
type Cutover struct {
	AfterS    float64
	FreeFirst bool
}

// Score is what a plan is expected to give a job: Met, the probability it
// meets the deadline at the class's coverage (a paid attempt counts as
// meeting it when its queue at that coverage and its generation fit);
// USD, the paid USD it spends; TimeS, the seconds to its result (a missed
// job counts its deadline).
type Score struct {
	Met, USD, TimeS float64
}

// Better says whether a is better than b under the objective:
// lexicographic on Met (higher), then USD and TimeS (lower) in the
// objective's order. Differences under 1e-12 are ties.
func Better(objective string, a, b Score) bool {
	return cmpScore(ObjectiveOr(objective) == ObjectiveTime, a, b) < 0
}

// cmpScore orders scores best first (see Better): -1 when a is better,
// 1 when b is, 0 on a tie; timeFirst for ObjectiveTime.
func cmpScore(timeFirst bool, a, b Score) int {
	const eps = 1e-12
	first, second := a.USD-b.USD, a.TimeS-b.TimeS
	if timeFirst {
		first, second = second, first
	}
	for _, d := range [3]float64{b.Met - a.Met, first, second} {
		switch {
		case d < -eps:
			return -1
		case d > eps:
			return 1
		}
	}
	return 0
}

// DecisionInput is what a class's decision reads for a free lane and the
// paid lane in an hour.
type DecisionInput struct {
	DeadlineS float64
	Objective string
	// PaidUSD is what one paid attempt costs: est_tokens / 1000 ×
	// paid_usd_per_1k.
	PaidUSD float64
	// The paid lane: its queue at the class's coverage (paid_queue_s) and
	// the seconds it takes to generate the job's tokens.
	PaidEligible bool
	PaidQueueS   float64
	PaidGenS     float64
	// The free lane: its generation time for the job's tokens
	// (next_gen_s), the share of its probes that failed (failures /
	// samples) and its ok waits (Calibrator.Waits; PointWait without one).
	FreeEligible bool
	FreeGenS     float64
	FreeFailP    float64
	Free         WaitDist
	// FreeFailed: the free lane's probe failed this hour (probe_failed,
	// not FreeEligible). It may still be tried first, its failure priced
	// in FreeFailP, with a cut-over after which the paid attempt fits:
	// trying it costs time, never the deadline.
	FreeFailed bool
}

// Plan is the decision (Cutover) with its Score, and Ships: the
// probability that its free attempt ships (0 when it starts paid).
type Plan struct {
	Cutover
	Score
	Ships float64
}

// Decide returns the best plan for the job under the class's objective
// (Better; docs/policy.md, "The decision"): free first with a cut-over at
// T (every T of CutoverGridS, the latest moment the paid attempt still
// fits, deadline_s − paid_queue_s − paid_gen_s, and the latest a free
// first token can ship, deadline_s − free_gen_s, no T past the latter),
// paid first when the paid attempt fits, or nothing. A free plan ships
// with probability (1 − fail) k / (n+1), k of its n waits at most T, and
// otherwise cuts over at T, its paid attempt met when T + paid_queue_s +
// paid_gen_s fits the deadline. Under ObjectiveCost the latest T that
// fits both bounds meets the deadline as surely as any and pays no more:
// it alone is scored. Under ObjectiveTime (and when a paid attempt costs
// nothing) every candidate is. A figure that is not finite counts as no
// time left.
func Decide(in DecisionInput) Plan {
	best := Plan{Score: Score{TimeS: in.deadline()}} // nothing
	if paid, ok := in.PaidFirst(); ok && Better(in.Objective, paid.Score, best.Score) {
		best = paid
	}
	if free, ok := in.FreeFirst(); ok && Better(in.Objective, free.Score, best.Score) {
		best = free
	}
	return best
}

// deadline returns the deadline, 0 when it is not a finite number >= 0.
func (in *DecisionInput) deadline() float64 {
	if d := in.DeadlineS; num.Finite(d) && d >= 0 {
		return d
	}
	return 0
}

// latest returns the latest cut-over after which the paid attempt fits
// the deadline at the class's coverage, and whether there is one.
func (in *DecisionInput) latest() (float64, bool) {
	if !in.PaidEligible {
		return 0, false
	}
	l := in.deadline() - in.PaidQueueS - in.PaidGenS
	return l, num.Finite(l) && l >= 0
}

// PaidFirst returns the plan that goes straight to the paid lane, and
// false when the paid attempt does not fit.
func (in *DecisionInput) PaidFirst() (Plan, bool) {
	if _, ok := in.latest(); !ok {
		return Plan{}, false
	}
	return Plan{Score: Score{Met: 1, USD: in.PaidUSD, TimeS: in.PaidQueueS + in.PaidGenS}}, true
}

// FreeFirst returns the best plan that starts on the free lane (see
// Decide), and false when there is none: the lane is neither eligible nor
// FreeFailed with a paid attempt to cut over to, has no wait, or a first
// token at once would still not ship in time.
func (in *DecisionInput) FreeFirst() (Plan, bool) {
	d := in.deadline()
	useful := d - in.FreeGenS // the latest T a free plan may use
	latest, fits := in.latest()
	if in.FreeFailed && !in.FreeEligible && fits {
		useful = min(useful, latest) // the paid attempt must fit after the cut-over
	} else if !in.FreeEligible {
		return Plan{}, false
	}
	if in.Free.N() == 0 || !num.Finite(useful) || useful <= 0 {
		return Plan{}, false
	}
	if !fits {
		latest = math.Inf(-1)
	}
	var best Plan
	found := false
	try := func(t float64) {
		if !(t > 0) || t > useful {
			return
		}
		if p := in.freePlan(t, d, latest); !found || Better(in.Objective, p.Score, best.Score) {
			best, found = p, true
		}
	}
	if ObjectiveOr(in.Objective) == ObjectiveCost && in.PaidUSD > 0 {
		if latest > 0 {
			try(min(latest, useful))
		} else {
			try(useful) // no paid attempt fits after a wait: the free lane alone, as long as it can ship
		}
		return best, found
	}
	try(useful)
	try(latest)
	for _, t := range CutoverGridS {
		try(t)
	}
	return best, found
}

// freePlan scores free first with a cut-over at t (0 < t <= the useful
// bound); latest is the latest cut-over after which the paid attempt
// fits (-Inf: none does).
func (in *DecisionInput) freePlan(t, d, latest float64) Plan {
	n := float64(in.Free.N())
	ok := 1 - min(max(in.FreeFailP, 0), 1)
	if !num.Finite(ok) {
		ok = 0
	}
	kn, sum := in.Free.Within(t)
	k := float64(kn)
	ships := ok * k / (n + 1)
	shipTime := 0.0
	if k > 0 {
		shipTime = ok * (sum + k*in.FreeGenS) / (n + 1)
	}
	cut := 1 - ships
	p := Plan{Cutover: Cutover{AfterS: t, FreeFirst: true}, Score: Score{Met: ships, TimeS: shipTime + cut*d}, Ships: ships}
	if t <= latest {
		p.Met = 1
		p.USD = cut * in.PaidUSD
		p.TimeS = shipTime + cut*(t+in.PaidQueueS+in.PaidGenS)
	}
	return p
}
