package policy

import (
	"cmp"
	"slices"

	"github.com/lanewatch/lanewatch/internal/num"
)

// NextGenS returns next_gen_s of a lane that decodes tokPerS for est
// tokens, rounded up to 0.01 s, and whether it is known (est 0, or a rate
// that ever finishes).
func NextGenS(tokPerS float64, est int) (float64, bool) {
	if est <= 0 {
		return 0, true
	}
	g := float64(est) / tokPerS
	if tokPerS <= 0 || !num.Finite(g) {
		return 0, false
	}
	return ceil2(g), true
}

// Classes returns the classes of a file from its lanes' figures (as
// History.LaneAt returns them, in p.Lanes order) under the worst-of rule
// (docs/policy.md#classes, #the-book).
func Classes(p Params, lanes []Lane) []Class { return classesWith(p, lanes, nil, nil, nil) }

// laneCand is a lane's figures for one class.
type laneCand struct {
	i        int // in the lanes given
	name     string
	kind     string
	q, g     float64
	eligible bool
	ok       bool // the lane has samples and a next_gen_s for the class
	plan     Plan // as the class's first lane (decisions only), when has
	has      bool
}

// faster says whether x's q + g is below y's (ties: by name).
func (x *laneCand) faster(y *laneCand) bool {
	return x.q+x.g < y.q+y.g || (x.q+x.g == y.q+y.g && x.name < y.name)
}

// classesWith is Classes with the queues of some classes replaced
// (queues[class][lane], when queues[class] is not nil) and, when waits is
// not nil, the classes' decisions (docs/policy.md#the-decision): waits(i)
// is lane i's wait distribution, kept in *scratch when that is not nil.
func classesWith(p Params, lanes []Lane, queues [][]float64, waits func(i int) (WaitDist, bool), scratch *[]WaitDist) []Class {
	var dists []WaitDist
	if waits != nil {
		if scratch == nil {
			scratch = new([]WaitDist)
		}
		dists = slices.Grow((*scratch)[:0], len(lanes))[:len(lanes)]
		*scratch = dists
		for i := range lanes {
			dists[i] = WaitDist{}
			if l := &lanes[i]; l.Kind == KindFree && (l.Eligible || l.Reason == ReasonProbeFailed) {
				d, ok := waits(i)
				if !ok {
					d = WaitsOf(l.NextQueueS)
				}
				dists[i] = d
			}
		}
	}
	cands := make([]laneCand, len(lanes))
	order := make([]*laneCand, len(lanes))
	listed := make([]string, 0, len(lanes)*len(p.Classes)) // every class's Lanes, back to back
	classes := make([]Class, 0, len(p.Classes))
	var cuts []Cutover
	if waits != nil {
		cuts = make([]Cutover, len(p.Classes)) // one allocation for the file's decisions
	}
	for ci, cs := range p.Classes {
		c := Class{
			Name:          cs.Name,
			DeadlineS:     cs.DeadlineS,
			CeilingTokens: cs.CeilingTokens,
			EstTokens:     cs.EstTokens,
		}
		for i := range lanes {
			l := &lanes[i]
			g, ok := NextGenS(l.TokPerS, cs.EstTokens)
			q := l.NextQueueS
			if ci < len(queues) && queues[ci] != nil {
				q = queues[ci][i]
			}
			cands[i] = laneCand{i: i, name: l.Name, kind: l.Kind, q: q, g: g, eligible: l.Eligible, ok: ok && l.Samples > 0}
		}
		// choose returns the lane of kind with the smallest q + g (ties:
		// by name), eligible ones first.
		choose := func(kind string) (*laneCand, bool) {
			var best *laneCand
			for i := range cands {
				x := &cands[i]
				if x.ok && x.kind == kind && (best == nil || x.eligible && !best.eligible ||
					x.eligible == best.eligible && x.faster(best)) {
					best = x
				}
			}
			return best, best != nil
		}
		b := BookPolicy{
			DeadlineS:     cs.DeadlineS,
			CeilingTokens: cs.CeilingTokens,
			NextEstTokens: cs.EstTokens,
			PaidUSDPer1k:  cs.PaidUSDPer1k,
		}
		pl, okP := choose(KindPaid)
		if okP {
			b.PaidLane, b.PaidQueueS, b.PaidEligible = pl.name, pl.q, pl.eligible
		}
		fl, okF := choose(KindFree)
		var chosen *laneCand // the chosen plan's first lane; nil: nothing
		if waits != nil {
			in := DecisionInput{DeadlineS: cs.DeadlineS, Objective: cs.Objective,
				PaidUSD: float64(max(cs.EstTokens, 0)) / 1000 * cs.PaidUSDPer1k}
			if okP && pl.eligible {
				in.PaidEligible, in.PaidQueueS, in.PaidGenS = true, pl.q, pl.g
			}
			plan := Plan{Score: Score{TimeS: max(cs.DeadlineS, 0)}} // nothing
			if paid, ok := in.PaidFirst(); ok {
				plan, chosen = paid, pl
			}
			var bestFree *laneCand
			for i := range cands {
				x := &cands[i]
				failed := x.kind == KindFree && lanes[x.i].Reason == ReasonProbeFailed
				if !x.ok || !x.eligible && !failed {
					continue
				}
				if x.kind == KindPaid {
					x.plan, x.has = Plan{Score: Score{Met: 1, USD: in.PaidUSD, TimeS: x.q + x.g}}, x.q+x.g <= cs.DeadlineS
					continue
				}
				in.FreeEligible, in.FreeFailed, in.FreeGenS, in.Free, in.FreeFailP = x.eligible, failed, x.g, dists[x.i], lanes[x.i].FailShare()
				x.plan, x.has = in.FreeFirst()
				if x.has && (bestFree == nil || Better(cs.Objective, x.plan.Score, bestFree.plan.Score) ||
					!Better(cs.Objective, bestFree.plan.Score, x.plan.Score) && x.faster(bestFree)) {
					bestFree = x
				}
			}
			if bestFree != nil {
				fl, okF = bestFree, true
				if Better(cs.Objective, bestFree.plan.Score, plan.Score) {
					plan, chosen = bestFree.plan, bestFree
				}
			}
			cut := plan.Cutover
			cut.AfterS = min(floor2(cut.AfterS), MaxSeconds) // the safe side of a time to give up at
			cuts[ci] = cut
			c.Cutover = &cuts[ci]
		}
		if okF {
			b.FreeLane, b.NextQueueS, b.FreeEligible = fl.name, fl.q, fl.eligible
		}
		// next_gen_s: the larger of the chosen eligible lanes' (of the chosen
		// lanes' when neither is eligible), the safe side of both checks.
		none := !b.FreeEligible && !b.PaidEligible
		if okF && (b.FreeEligible || none) {
			b.NextGenS = fl.g
		}
		if okP && (b.PaidEligible || none) {
			b.NextGenS = max(b.NextGenS, pl.g)
		}
		c.Book = b

		// The lanes a job can start on, in the order to try them.
		order = order[:0]
		for i := range cands {
			if x := &cands[i]; x.ok && x.eligible && x.q+x.g <= cs.DeadlineS {
				order = append(order, x)
			}
		}
		timeFirst := ObjectiveOr(cs.Objective) == ObjectiveTime
		slices.SortFunc(order, func(x, y *laneCand) int { // names are unique: a total order
			switch {
			case x == y:
				return 0
			case waits != nil && x == chosen:
				return -1
			case waits != nil && y == chosen:
				return 1
			case waits != nil && x.has != y.has:
				return cmp.Compare(boolInt(!x.has), boolInt(!y.has))
			case waits != nil && x.has:
				if c := cmpScore(timeFirst, x.plan.Score, y.plan.Score); c != 0 {
					return c
				}
			case waits == nil && x.kind != y.kind:
				return cmp.Compare(boolInt(x.kind != KindFree), boolInt(y.kind != KindFree))
			}
			return cmp.Compare(x.name, y.name)
		})
		first := len(listed)
		for _, x := range order {
			listed = append(listed, x.name)
		}
		c.Lanes = listed[first:len(listed):len(listed)]
		classes = append(classes, c)
	}
	return classes
}

// Start returns the lane a job of the class starts on this hour ("" for
// none), and whether it cuts over to the book's paid lane at
// Cutover.AfterS without a first token.
func (c Class) Start() (lane string, cut bool) {
	b := c.Book
	paid := b.PaidLane != "" && b.PaidEligible
	if c.Cutover != nil && c.Cutover.FreeFirst && b.FreeLane != "" {
		return b.FreeLane, paid
	}
	if len(c.Lanes) == 0 {
		return "", false
	}
	if c.Cutover != nil && c.Lanes[0] == b.FreeLane && paid {
		return b.PaidLane, false // not free first: straight to the paid lane
	}
	return c.Lanes[0], false
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
