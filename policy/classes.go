package policy

import (
	"cmp"
	"slices"

	"github.com/lanewatch/lanewatch/internal/num"
)

// NextGenS returns next_gen_s of a lane that decodes tokPerS (its
// tok_per_s) for est tokens, rounded up to 0.01 s, and whether it is known:
// a lane without decode data, or with a rate too low to ever finish, has
// none unless est is 0. A class lists an eligible lane with samples when
// its next_queue_s + next_gen_s is within the deadline.
func NextGenS(tokPerS float64, est int) (float64, bool) {
	if est <= 0 {
		return 0, true
	}
	// The rate a reader sees (rounded down), so that a file's next_gen_s
	// is est_tokens / tok_per_s of that file, never less.
	g := float64(est) / tokPerS
	if tokPerS <= 0 || !num.Finite(g) {
		return 0, false // no decode data, or a rate too low to ever finish
	}
	return ceil2(g), true
}

// Classes returns the classes of a file from its lanes' figures (as
// History.LaneAt returns them, in p.Lanes order): what ForHour writes for
// them. A replay that keeps the lanes' figures up to date builds the policy
// in force without recomputing them.
//
// A class lists the eligible lanes with samples whose next_queue_s +
// next_gen_s fits its deadline, free ones first, then by name. Its book:
// the free lane is the eligible free lane with the smallest next_queue_s +
// next_gen_s (ties: by name); if no free lane is eligible, the same choice
// among the free lanes with samples, and free_eligible is false. The paid
// lane is chosen the same way among paid lanes. A lane without decode data
// (tok_per_s 0) cannot be chosen. next_gen_s is the larger next_gen_s of
// the chosen eligible lanes (of the chosen lanes if neither is eligible),
// so that both ledger checks that use it are on the safe side.
func Classes(p Params, lanes []Lane) []Class { return classesWith(p, lanes, nil) }

// classesWith is Classes with the queues of some classes replaced:
// queues[class][lane], when queues[class] is not nil, is the lane's
// next_queue_s for that class.
func classesWith(p Params, lanes []Lane, queues [][]float64) []Class {
	// The order a class lists its lanes in: free first, then by name.
	order := make([]int, len(lanes))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(boolInt(lanes[a].Kind != KindFree), boolInt(lanes[b].Kind != KindFree)),
			cmp.Compare(lanes[a].Name, lanes[b].Name))
	})
	type cand struct {
		name     string
		kind     string
		q, g     float64
		eligible bool
		ok       bool // the lane has samples and a next_gen_s for the class
	}
	cands := make([]cand, len(lanes))
	listed := make([]string, 0, len(lanes)*len(p.Classes)) // every class's Lanes, back to back
	classes := make([]Class, 0, len(p.Classes))
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
			cands[i] = cand{l.Name, l.Kind, q, g, l.Eligible, ok && l.Samples > 0}
		}
		first := len(listed)
		for _, i := range order {
			if x := &cands[i]; x.ok && x.eligible && x.q+x.g <= cs.DeadlineS {
				listed = append(listed, x.name)
			}
		}
		c.Lanes = listed[first:len(listed):len(listed)]
		choose := func(kind string) (cand, bool) {
			var best cand
			found := false
			for _, eligibleOnly := range []bool{true, false} {
				for _, x := range cands {
					if !x.ok || x.kind != kind || (eligibleOnly && !x.eligible) {
						continue
					}
					if !found || x.q+x.g < best.q+best.g || (x.q+x.g == best.q+best.g && x.name < best.name) {
						best, found = x, true
					}
				}
				if found {
					break
				}
			}
			return best, found
		}
		b := BookPolicy{
			DeadlineS:     cs.DeadlineS,
			CeilingTokens: cs.CeilingTokens,
			NextEstTokens: cs.EstTokens,
			PaidUSDPer1k:  cs.PaidUSDPer1k,
		}
		fl, okF := choose(KindFree)
		pl, okP := choose(KindPaid)
		if okF {
			b.FreeLane, b.NextQueueS, b.FreeEligible = fl.name, fl.q, fl.eligible
		}
		if okP {
			b.PaidLane, b.PaidQueueS, b.PaidEligible = pl.name, pl.q, pl.eligible
		}
		switch {
		case b.FreeEligible || b.PaidEligible:
			if b.FreeEligible {
				b.NextGenS = fl.g
			}
			if b.PaidEligible {
				b.NextGenS = max(b.NextGenS, pl.g)
			}
		default:
			if okF {
				b.NextGenS = fl.g
			}
			if okP {
				b.NextGenS = max(b.NextGenS, pl.g)
			}
		}
		c.Book = b
		classes = append(classes, c)
	}
	return classes
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// withCutover sets the cut-over (CutoverFor) of each class, from the
// lanes' figures (p.Lanes order) and the free lane's wait at
// CutoverCoverages (free: the lane's calibrated figure at a coverage,
// false when it has none): the paid lane's queue is the book's
// paid_queue_s, each lane's generation time its next_gen_s for the class.
// after_s is rounded down to 0.01 s, the safe side of a time to give up at.
func withCutover(p Params, lanes []Lane, classes []Class, free func(lane string, cov float64) (float64, bool)) {
	gen := func(name string, est int) float64 {
		for _, l := range lanes {
			if l.Name == name {
				if g, ok := NextGenS(l.TokPerS, est); ok {
					return g
				}
			}
		}
		return 0
	}
	cuts := make([]Cutover, len(classes)) // one allocation for the file's cut-overs
	var buf [16]QuantilePoint             // len(CutoverCoverages) fits: no allocation per class
	for i := range classes {
		c := &classes[i]
		b := c.Book
		in := CutoverInput{
			DeadlineS:    c.DeadlineS,
			PaidQueueS:   b.PaidQueueS,
			PaidGenS:     gen(b.PaidLane, c.EstTokens),
			FreeGenS:     gen(b.FreeLane, c.EstTokens),
			FreeEligible: b.FreeEligible && b.FreeLane != "",
			PaidEligible: b.PaidEligible && b.PaidLane != "",
			Free:         buf[:0],
		}
		if in.FreeEligible {
			for _, cov := range CutoverCoverages {
				if q, ok := free(b.FreeLane, cov); ok {
					in.Free = append(in.Free, QuantilePoint{Coverage: cov, QueueS: q})
				}
			}
		}
		cut := CutoverFor(in)
		cut.AfterS = min(floor2(cut.AfterS), MaxSeconds)
		cut.FreeChance = 0 // not in the file
		cuts[i] = cut
		c.Cutover = &cuts[i]
	}
}
