package policy

import (
	"slices"
	"time"

	"github.com/lanewatch/lanewatch/internal/num"
	"github.com/lanewatch/lanewatch/store"
)

// ProbeObs turns a probe into an observation of the calibrated rule: its
// queue_s, censored when the probe failed (the wait is a lower bound: a
// timeout is the wait it was cut at). A 429 is no queue draw, and a failure
// without a wait says nothing of the queue: both give false.
func ProbeObs(p store.Probe) (QueueObs, bool) {
	if !num.Finite(p.QueueS) || p.QueueS < 0 {
		return QueueObs{}, false
	}
	if !p.OK && (p.Outcome == store.OutcomeRateLimited || p.Status == 429 || p.QueueS <= 0) {
		return QueueObs{}, false
	}
	return QueueObs{Time: p.Time, Value: p.QueueS, Censored: !p.OK}, true
}

// laneCal is a calibrator of one lane for one lookback, fed the lane's
// observations up to fed (a count from the first one ever added).
type laneCal struct {
	days int
	cal  *Calibrator
	fed  int
}

// AddProbe adds a probe as an observation of the calibrated rule (see
// ProbeObs; probes that are not one are ignored). Probes come in time
// order; an earlier one is put in its place and the lane's calibrators
// start over. The calibrated rule reads these; the worst-of rule reads the
// hourly records alone.
func (x *History) AddProbe(p store.Probe) {
	o, ok := ProbeObs(p)
	if !ok {
		return
	}
	lh := x.lane(p.Lane)
	n := len(lh.obs)
	if n == 0 || !o.Time.Before(lh.obs[n-1].Time) {
		lh.obs = append(lh.obs, o)
		return
	}
	i, _ := slices.BinarySearchFunc(lh.obs, o.Time, func(a QueueObs, t time.Time) int {
		if a.Time.After(t) {
			return 1
		}
		return -1
	})
	lh.obs = slices.Insert(lh.obs, i, o)
	lh.cals = lh.cals[:0]
	lh.obsBase = 0 // the counts restart with the calibrators
}

// lane returns the lane's history, created when it has none.
func (x *History) lane(name string) *laneHistory {
	lh := x.lanes[name]
	if lh == nil {
		lh = &laneHistory{byHour: map[int64][]rec{}}
		x.lanes[name] = lh
	}
	return lh
}

// dropObs drops the observations before cut (Unix s).
func (lh *laneHistory) dropObs(cut int64) {
	n := 0
	for n < len(lh.obs) && lh.obs[n].Time.Unix() < cut {
		n++
	}
	if n == 0 {
		return
	}
	lh.obs = append(lh.obs[:0], lh.obs[n:]...)
	lh.obsBase += n
}

// calibrated returns the calibrated figure of the lane at instant t (moved
// to its newest observation when that is later) and coverage cov, from
// the observations added, over a lookback of days (<= 0: the rule's
// default); false when the lane has none.
func (x *History) calibrated(lh *laneHistory, days int, t time.Time, cov float64) (CalibratedFigure, bool) {
	c := x.calibrator(lh, days)
	if c == nil {
		return CalibratedFigure{}, false
	}
	if last := lh.obs[len(lh.obs)-1].Time; t.Before(last) {
		t = last
	}
	return c.Quantile(t, cov)
}

// calibrator returns the lane's calibrator over a lookback of days (<= 0:
// the rule's default), fed every observation added; nil when the lane has
// none.
func (x *History) calibrator(lh *laneHistory, days int) *Calibrator {
	if lh == nil || len(lh.obs) == 0 {
		return nil
	}
	if days <= 0 {
		days = DefaultCalibratedLookbackDays
	}
	var c *laneCal
	for i := range lh.cals {
		if lh.cals[i].days == days {
			c = &lh.cals[i]
			break
		}
	}
	if c == nil {
		cal, err := NewCalibrator(CalibratedParams{LookbackDays: days, Location: x.loc})
		if err != nil {
			return nil // the defaults are valid
		}
		lh.cals = append(lh.cals, laneCal{days: days, cal: cal, fed: lh.obsBase})
		c = &lh.cals[len(lh.cals)-1]
	}
	for i := max(c.fed-lh.obsBase, 0); i < len(lh.obs); i++ {
		_ = c.cal.Add(lh.obs[i]) // in time order: AddProbe keeps them so
	}
	c.fed = lh.obsBase + len(lh.obs)
	return c.cal
}

// calibratedQueue is next_queue_s under the calibrated rule: the figure at
// coverage cov, and while its margin is not warm (too few residuals for
// the quantile) never under worst, the worst-of figure; worst alone when
// the lane has no observation. Rounded up to 0.01 s, capped at MaxSeconds.
func (x *History) calibratedQueue(lh *laneHistory, days int, t time.Time, cov, worst float64) float64 {
	q := worst
	if f, ok := x.calibrated(lh, days, t, cov); ok {
		q = f.QueueS
		if !f.Warm {
			q = max(q, worst)
		}
	}
	return min(ceil2(q), MaxSeconds)
}

// classesAt returns the classes of a file from its lanes' figures at
// instant t: under the calibrated rule a class with its own coverage reads
// each lane's next_queue_s at that coverage (worst gives a lane's worst-of
// figure, the floor while the rule is cold), and each class gets its
// decision from the free lanes' wait distributions at t (Waits,
// classesWith).
func (x *History) classesAt(p Params, lanes []Lane, t time.Time, worst func(i int) float64) []Class {
	if !p.Calibrated() {
		return Classes(p, lanes)
	}
	queues := make([][]float64, len(p.Classes))
	for ci, cs := range p.Classes {
		cov := p.ClassCoverage(cs)
		if cov == p.CoverageOr() {
			continue
		}
		queues[ci] = make([]float64, len(lanes))
		for li, l := range lanes {
			queues[ci][li] = x.calibratedQueue(x.lanes[l.Name], p.LookbackDays, t, cov, worst(li))
		}
	}
	cs := classesWith(p, lanes, queues, func(i int) (WaitDist, bool) {
		c := x.calibrator(x.lanes[lanes[i].Name], p.LookbackDays)
		if c == nil {
			return WaitDist{}, false
		}
		return c.Waits(t)
	}, &x.waitBuf)
	for i := range cs {
		cs[i].Coverage = p.ClassCoverage(p.Classes[i])
		cs[i].Objective = ObjectiveOr(p.Classes[i].Objective)
	}
	return cs
}

// ClassesAt is Classes for a replay that keeps x up to date: the classes of
// the live policy at instant t from the lanes' figures (as LaneAt returns
// them at t, in p.Lanes order). Under the calibrated rule a class with its
// own coverage reads each lane's next_queue_s at it; otherwise it is
// Classes.
func (x *History) ClassesAt(p Params, lanes []Lane, t time.Time) []Class {
	h := store.HourStart(t, x.loc)
	return x.classesAt(p, lanes, t, func(i int) float64 {
		q := p
		q.Rule = RuleMax
		l, _ := x.laneAt(q, p.Lanes[i], LaneState{}, t, h, t, nil)
		return l.NextQueueS
	})
}
