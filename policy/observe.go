package policy

import (
	"slices"
	"sort"
	"time"

	"github.com/lanewatch/lanewatch/internal/num"
	"github.com/lanewatch/lanewatch/store"
)

// ProbeObs turns a probe into an observation of the calibrated rule,
// censored when it failed; false for a 429 or a failure without a wait.
func ProbeObs(p store.Probe) (QueueObs, bool) {
	if !num.Finite(p.QueueS) || p.QueueS < 0 {
		return QueueObs{}, false
	}
	if !p.OK && (p.Outcome == store.OutcomeRateLimited || p.Status == 429 || p.QueueS <= 0) {
		return QueueObs{}, false
	}
	return QueueObs{Time: p.Time, Value: p.QueueS, Censored: !p.OK}, true
}

// probeFailed says whether p counts in a lane's failure chain and whether
// it failed; a busy 429, a reservation, a cancelled or unsent probe do not
// count.
func probeFailed(p store.Probe) (failed, counts bool) {
	switch {
	case p.OK:
		return false, true
	case p.Outcome == store.OutcomeReserved || p.Outcome == store.OutcomeCancelled || p.Outcome == store.OutcomeUnsent || store.Busy(p):
		return false, false
	}
	return true, true
}

// obsEntry is one probe as the calibrated rule keeps it, in 40 bytes (a
// year of 1,000 lanes at three sites holds millions): its time, its
// observation (when queue), its chain state (0 none, 1 ok, 2 failed) and
// the chain's pairs up to it, cum[previous failed][this failed].
type obsEntry struct {
	ns       int64 // Unix nanoseconds
	value    float64
	cum      [2][2]int32
	censored bool
	queue    bool
	state    int8
}

// obs returns e's observation.
func (e *obsEntry) obs() QueueObs {
	return QueueObs{Time: time.Unix(0, e.ns).UTC(), Value: e.value, Censored: e.censored}
}

// laneCal is a lane's calibrator for one lookback, fed fed entries.
type laneCal struct {
	days int
	cal  *Calibrator
	fed  int
}

// AddProbe adds a probe for the calibrated rule (ProbeObs, probeFailed).
// An earlier probe than the last is put in its place and the lane's
// calibrators start over.
func (x *History) AddProbe(p store.Probe) {
	o, queue := ProbeObs(p)
	failed, counts := probeFailed(p)
	if !queue && !counts {
		return
	}
	e := obsEntry{ns: p.Time.UnixNano(), queue: queue}
	if queue {
		e.value, e.censored = o.Value, o.Censored
	}
	if counts {
		e.state = 1
		if failed {
			e.state = 2
		}
	}
	lh := x.lane(p.Lane)
	i := len(lh.obs)
	if i > 0 && e.ns < lh.obs[i-1].ns {
		i, _ = slices.BinarySearchFunc(lh.obs, e.ns, func(a obsEntry, ns int64) int {
			if a.ns > ns {
				return 1
			}
			return -1
		})
		lh.cals = lh.cals[:0]
		lh.obsBase = 0 // the counts restart with the calibrators
	}
	lh.obs = slices.Insert(lh.obs, i, e)
	for ; i < len(lh.obs); i++ { // the chain's counts from the new entry on
		c := &lh.obs[i]
		c.cum = [2][2]int32{}
		prev := i - 1
		for prev >= 0 && lh.obs[prev].state == 0 {
			prev--
		}
		if prev >= 0 {
			c.cum = lh.obs[i-1].cum
			if c.state != 0 {
				c.cum[lh.obs[prev].state-1][c.state-1]++
			}
		}
	}
}

// failChance returns (failed + 1) / (followed + 2) over the probes of the
// lookback that followed one like the lane's newest; false when no probe
// counts.
func (x *History) failChance(lh *laneHistory, days int) (float64, bool) {
	if lh == nil {
		return 0, false
	}
	if days <= 0 {
		days = DefaultCalibratedLookbackDays
	}
	last := len(lh.obs) - 1
	for last >= 0 && lh.obs[last].state == 0 {
		last--
	}
	if last < 0 {
		return 0, false
	}
	from := time.Unix(0, lh.obs[last].ns).UTC().AddDate(0, 0, -days).UnixNano()
	first := sort.Search(last, func(i int) bool { return lh.obs[i].ns >= from })
	for lh.obs[first].state == 0 {
		first++ // the window's first probe of the chain: its pair began before the window
	}
	s := lh.obs[last].state - 1
	ok := lh.obs[last].cum[s][0] - lh.obs[first].cum[s][0]
	failed := lh.obs[last].cum[s][1] - lh.obs[first].cum[s][1]
	return (float64(failed) + 1) / (float64(ok+failed) + 2), true
}

// lane returns the lane's history, created when it has none.
func (x *History) lane(name string) *laneHistory {
	lh := x.lanes[name]
	if lh == nil {
		lh = &laneHistory{looks: map[memoKey]*lookMemo{}}
		x.lanes[name] = lh
	}
	return lh
}

// dropObs drops the observations before cut (Unix s).
func (lh *laneHistory) dropObs(cut int64) {
	n := 0
	for n < len(lh.obs) && time.Unix(0, lh.obs[n].ns).Unix() < cut {
		n++
	}
	if n == 0 {
		return
	}
	lh.obs = lh.obs[n:] // not copied down: append moves the rest when it grows
	lh.obsBase += n
}

// calibrator returns the lane's calibrator over a lookback of days (<= 0:
// the rule's default), fed every entry added; nil without an observation.
func (x *History) calibrator(lh *laneHistory, days int) *Calibrator {
	if lh == nil || len(lh.obs) == 0 {
		return nil
	}
	if days <= 0 {
		days = DefaultCalibratedLookbackDays
	}
	i := slices.IndexFunc(lh.cals, func(c laneCal) bool { return c.days == days })
	if i < 0 {
		i = len(lh.cals)
		lh.cals = append(lh.cals, laneCal{days: days, cal: NewCalibrator(CalibratedParams{LookbackDays: days, Location: x.loc}), fed: lh.obsBase})
	}
	c := &lh.cals[i]
	for i := max(c.fed-lh.obsBase, 0); i < len(lh.obs); i++ {
		if e := &lh.obs[i]; e.queue {
			_ = c.cal.Add(e.obs()) // in time order: AddProbe keeps them so
		}
	}
	c.fed = lh.obsBase + len(lh.obs)
	if !c.cal.seen {
		return nil
	}
	return c.cal
}

// calibratedQueue is next_queue_s under the calibrated rule: c's figure at
// cov, never under worst while its margin is cold; worst without c.
func calibratedQueue(c *Calibrator, t time.Time, cov, worst float64) float64 {
	q := worst
	if c != nil && c.seen {
		if f, ok := c.Quantile(later(t, c.last), cov); ok {
			q = f.QueueS
			if !f.Warm {
				q = max(q, worst)
			}
		}
	}
	return min(ceil2(q), MaxSeconds)
}

func later(a, b time.Time) time.Time {
	if a.Before(b) {
		return b
	}
	return a
}

// classesAt returns the classes of a file from its lanes' figures at t;
// under the calibrated rule with each class's coverage and decision.
func classesAt(p Params, lanes []Lane, t time.Time, cal func(i int) *Calibrator, worst func(i int) float64, scratch *[]WaitDist) []Class {
	if !p.Calibrated() {
		return Classes(p, lanes)
	}
	queues := make([][]float64, len(p.Classes))
	for ci, cs := range p.Classes {
		if cov := p.ClassCoverage(cs); cov != p.CoverageOr() {
			queues[ci] = make([]float64, len(lanes))
			for li := range lanes {
				queues[ci][li] = calibratedQueue(cal(li), t, cov, worst(li))
			}
		}
	}
	cs := classesWith(p, lanes, queues, func(i int) (WaitDist, bool) {
		if c := cal(i); c != nil {
			return c.Waits(t)
		}
		return WaitDist{}, false
	}, scratch)
	for i := range cs {
		cs[i].Coverage = p.ClassCoverage(p.Classes[i])
		cs[i].Objective = ObjectiveOr(p.Classes[i].Objective)
	}
	return cs
}

// ClassesAt is Classes for a replay that keeps x up to date, at t.
func (x *History) ClassesAt(p Params, lanes []Lane, t time.Time) []Class {
	h := store.HourStart(t, x.loc)
	return classesAt(p, lanes, t, x.calOf(p, lanes), func(i int) float64 {
		q := p
		q.Rule = RuleMax
		l, _ := x.laneAt(q, p.Lanes[i], LaneState{}, t, h, t, nil)
		return l.NextQueueS
	}, &x.waitBuf)
}

// calOf returns the calibrator of each of lanes under p's lookback.
func (x *History) calOf(p Params, lanes []Lane) func(i int) *Calibrator {
	return func(i int) *Calibrator { return x.calibrator(x.lanes[lanes[i].Name], p.LookbackDays) }
}
