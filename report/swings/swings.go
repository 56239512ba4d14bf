// Package swings computes the time-of-day report behind `policygen swings`:
// per lane and hour of day, the queue before the first token over the last
// N days, and how far the busiest hour is from the quietest.
//
// Compute and Build are pure (no clock, no I/O, no config) over the store's
// hourly records; the writers render a Report as a table, CSV, JSON or a
// chart (the formats: docs/deploy.md).
//
// A failed probe has no queue time, only a lower bound, the wait it sat
// through. An hourly record's worst is the larger of its ok probes' worst
// queue and that bound; when the bound decides, the worst is a lower bound
// ("censored"), which every writer shows (">30.0" in the table).
package swings

import (
	"cmp"
	"slices"
	"time"

	"github.com/lanewatch/lanewatch/internal/num"
	"github.com/lanewatch/lanewatch/store"
)

// HoursPerDay is the number of rows of a report: hours of day 0..23.
const HoursPerDay = 24

// Fields returns the keys of the hourly fields the report reads, for
// store.Query.Fields.
func Fields() []string {
	return []string{"worst_queue_s", "worst_censored_s", "samples", "failures"}
}

// Lane names a lane the report must list even without data (the config's lanes).
type Lane struct {
	Name string
	Kind string
}

// ClassLine is a job class whose deadline the chart draws as a horizontal line.
type ClassLine struct {
	Name      string
	DeadlineS float64
}

// Options describe the window a report covers.
type Options struct {
	Location *time.Location // keys hours of day; nil means UTC
	From, To time.Time      // records with From <= Hour < To count; a zero bound is none
	Days     int            // the window asked for, informational
	// Lanes are listed first, in order, even with no record; lanes found
	// only in the records follow, sorted by name.
	Lanes   []Lane
	Classes []ClassLine // the chart draws those with a finite deadline > 0
}

// Report is the time-of-day report of every lane over one window.
type Report struct {
	Location    *time.Location // hours of day are keyed in this zone
	Timezone    string         // Location's name
	From, To    time.Time
	Days        int
	First, Last time.Time // the earliest and latest record hours in the window
	Records     int
	Lanes       []LaneReport
	Classes     []ClassLine // from Options, in order
}

// LaneReport is one lane: 24 hours of day and the swing between them.
type LaneReport struct {
	Name     string
	Kind     string
	Hours    [HoursPerDay]HourStat
	Records  int   // hourly records of this lane in the window
	Samples  int64 // probes behind them
	Failures int64 // of which failed
	Swing    Swing
}

// HourStat summarises one lane at one hour of day over the window.
type HourStat struct {
	Hour int
	Days int // calendar days (in the report's timezone) with a record at this hour
	// Measured counts the records with a queue time or a failed probe's
	// lower bound; WorstS and MedianS are meaningful when it is > 0 (else 0).
	Measured int
	WorstS   float64 // max of the records' worsts
	Censored bool    // WorstS is a lower bound
	MedianS  float64 // median of the records' worsts
	// MedianCensored is true when MedianS may be low: a censored worst sits
	// at or below the (upper) middle of the sorted worsts.
	MedianCensored bool
	Samples        int64
	Failures       int64
}

// HasQueue reports whether the hour has a queue time (some ok probe) or a
// lower bound on one (a failed probe's known wait).
func (h HourStat) HasQueue() bool { return h.Measured > 0 }

// Swing is the distance between the busiest and the quietest hour of day of
// a lane, by median of the hourly worsts. Ties go to the earliest hour.
type Swing struct {
	OK            bool // some hour has a value; else the other fields are zero
	PeakHour      int
	PeakS         float64 // median at PeakHour
	PeakCensored  bool    // PeakS is a lower bound (HourStat.MedianCensored)
	QuietHour     int
	QuietS        float64 // median at QuietHour
	QuietCensored bool    // QuietS is a lower bound
	// SwingS = PeakS - QuietS; LowerBound: PeakS is a lower bound and
	// QuietS exact, so SwingS and Ratio are lower bounds too.
	SwingS     float64
	LowerBound bool
	// Ratio = PeakS / QuietS; HasRatio is false when QuietS is 0.
	Ratio    float64
	HasRatio bool
}

// worst is a record's worst: a value and whether it is a lower bound.
type worst struct {
	v        float64
	censored bool
}

// MergeSites returns the store's hourly records with one record per
// lane-hour, as Compute reads them, in the order their lane-hours first
// appear. A lane-hour has one record per site (and identical copies per
// kind when the lane's kind changed within the hour): the copies count
// once and the sites merge conservatively, worst of the worsts and the sum
// of probes.
func MergeSites(hs []store.Hourly) []store.Hourly {
	// Maps per hour: a store returns the records by time, so few are in use.
	type laneSite struct{ lane, site string }
	type hour struct {
		idx  map[string]int // lane → its merged record
		seen map[laneSite]bool
	}
	hoursOf := map[int64]*hour{}
	var recs []store.Hourly
	for i := range hs {
		h := &hs[i]
		cur := hoursOf[h.Hour.UnixNano()]
		if cur == nil {
			cur = &hour{idx: map[string]int{}, seen: map[laneSite]bool{}}
			hoursOf[h.Hour.UnixNano()] = cur
		}
		ks := laneSite{h.Lane, h.Site}
		if cur.seen[ks] {
			continue
		}
		cur.seen[ks] = true
		j, ok := cur.idx[h.Lane]
		if !ok {
			j = len(recs)
			cur.idx[h.Lane] = j
			recs = append(recs, store.Hourly{Lane: h.Lane, Kind: h.Kind, Hour: h.Hour})
		}
		r := &recs[j]
		r.WorstQueueS = max(r.WorstQueueS, h.WorstQueueS)
		r.WorstCensoredS = max(r.WorstCensoredS, h.WorstCensoredS)
		r.Samples += h.Samples
		r.Failures += h.Failures
	}
	return recs
}

// recordWorst returns a record's worst, or false when it has none: the max
// of its ok probes' worst queue (when it has an ok probe and the value is
// finite) and its failed probes' bound (when finite and > 0); the bound
// wins ties, since the failed probe waited at least that long.
func recordWorst(worstQ, worstC float64, samples, failures int64) (worst, bool) {
	okQ := samples > failures && num.Finite(worstQ)
	cens := failures > 0 && num.Finite(worstC) && worstC > 0
	switch {
	case cens && (!okQ || worstC >= worstQ):
		return worst{worstC, true}, true
	case okQ:
		return worst{worstQ, false}, true
	}
	return worst{}, false
}

// Compute builds the report from hourly records, one per lane-hour (as
// MergeSites returns them). Records outside the window, and queue times
// that are not finite, are ignored.
func Compute(recs []store.Hourly, opt Options) *Report {
	b := newBuilder(opt)
	for i := range recs {
		if rec := &recs[i]; b.setHour(rec.Hour) {
			b.add(b.lane(rec.Lane), rec.Kind, rec.WorstQueueS, rec.WorstCensoredS, rec.Samples, rec.Failures)
		}
	}
	return b.finish(opt.Lanes)
}

// swingOf finds the peak and quietest hours by median; ties go to the earliest hour.
func swingOf(hours []HourStat) Swing {
	var s Swing
	for _, h := range hours {
		if !h.HasQueue() {
			continue
		}
		if !s.OK || h.MedianS > s.PeakS {
			s.PeakHour, s.PeakS, s.PeakCensored = h.Hour, h.MedianS, h.MedianCensored
		}
		if !s.OK || h.MedianS < s.QuietS {
			s.QuietHour, s.QuietS, s.QuietCensored = h.Hour, h.MedianS, h.MedianCensored
		}
		s.OK = true
	}
	s.SwingS = s.PeakS - s.QuietS
	s.LowerBound = s.PeakCensored && !s.QuietCensored
	if s.QuietS > 0 {
		s.Ratio, s.HasRatio = s.PeakS/s.QuietS, true
	}
	return s
}

// summarise returns the max and the median of a non-empty slice of worsts,
// sorted in place (exact values before censored ones of the same value),
// and whether each is a lower bound.
func summarise(s []worst) (maxS float64, maxCens bool, med float64, medCens bool) {
	slices.SortFunc(s, func(a, b worst) int {
		if c := cmp.Compare(a.v, b.v); c != 0 || a.censored == b.censored {
			return c
		}
		if a.censored {
			return 1
		}
		return -1
	})
	n := len(s)
	last := s[n-1]
	med = s[n/2].v
	if n%2 == 0 {
		med = (s[n/2-1].v + s[n/2].v) / 2
	}
	for _, w := range s[:n/2+1] {
		medCens = medCens || w.censored
	}
	return last.v, last.censored, med, medCens
}
