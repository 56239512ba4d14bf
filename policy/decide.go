package policy

import (
	"math"

	"github.com/lanewatch/lanewatch/internal/num"
)

// Objectives of a class (docs/policy.md#the-decision).
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

// CutoverGridS are the fixed cut-overs (seconds) every decision weighs.
var CutoverGridS = []float64{1, 2, 3, 5, 7.5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 75, 90, 120, 180, 300, 600, 900, 1800, 3600}

// Cutover is a class's decision for an hour: cutover_after_s and free_first.
type Cutover struct {
	AfterS    float64
	FreeFirst bool
}

// Score is what a plan is expected to give a job: the probability it
// meets the deadline, the paid USD and the seconds to its result.
type Score struct {
	Met, USD, TimeS float64
}

// Better says whether a is better than b under the objective.
func Better(objective string, a, b Score) bool {
	return cmpScore(ObjectiveOr(objective) == ObjectiveTime, a, b) < 0
}

// cmpScore orders scores best first; differences under 1e-12 are ties.
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
	DeadlineS    float64
	Objective    string
	PaidUSD      float64 // one paid attempt's cost
	PaidEligible bool
	PaidQueueS   float64
	PaidGenS     float64
	FreeEligible bool
	FreeGenS     float64
	FreeFailP    float64
	Free         WaitDist
	FreeFailed   bool // probe_failed this hour: tried only with a paid attempt to cut over to
}

// Plan is the decision with its Score and the probability its free
// attempt ships.
type Plan struct {
	Cutover
	Score
	Ships float64
}

// Decide returns the best plan for the job under the class's objective
// (docs/policy.md#the-decision): free first with a cut-over, paid first,
// or nothing. A figure that is not finite counts as no time left.
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

// FreeFirst returns the best plan that starts on the free lane, and false
// when there is none.
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

// freePlan scores free first with a cut-over at t; latest is the latest
// cut-over after which the paid attempt fits (-Inf: none).
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
