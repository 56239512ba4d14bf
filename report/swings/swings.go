// Package swings computes the time-of-day report behind `policygen swings`:
// per lane and hour of day, the queue before the first token over the last
// N days, and how far the busiest hour is from the quietest.
//
// Compute is pure (no clock, no I/O); the writers in this package render a
// Report as a table, CSV, JSON or a chart. It reads the store's hourly
// records (store.Hourly: the type, never a store), one per lane-hour
// (MergeSites); it depends on no config, which maps the lanes and classes.
//
// Censored hours: a failed probe (a timeout before the first token, say)
// has no queue time, only a lower bound, the wait it is known to have sat
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

// Fields returns the keys of the hourly fields MergeSites and Compute read,
// for store.Query.Fields: a store may leave the other fields out of the
// records (InfluxDB then sends a third fewer bytes).
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
	// Location keys hours of day (the config's timezone); nil means UTC.
	Location *time.Location
	// From and To bound the window: records with From <= Hour < To count.
	// A zero To means no upper bound, a zero From no lower bound.
	From, To time.Time
	// Days is the window length in days, as asked for (informational).
	Days int
	// Lanes are listed first, in this order, even with no record. Lanes found
	// only in the records follow, sorted by name.
	Lanes []Lane
	// Classes are the job classes (the config's policy.classes); the chart
	// draws each deadline. Classes without a finite deadline > 0 are left out.
	Classes []ClassLine
}

// Report is the time-of-day report of every lane over one window.
type Report struct {
	Location *time.Location // hours of day are keyed in this zone
	Timezone string         // Location's name
	From, To time.Time
	Days     int
	// First and Last are the earliest and latest record hours in the window
	// (zero when there is none): they show how much history there was.
	First, Last time.Time
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
	// Days is the number of calendar days (in the report's timezone) with a
	// record at this hour.
	Days int
	// Measured is the number of records that carry a queue time: an ok
	// probe's, or a failed probe's lower bound (store.Hourly.WorstCensoredS > 0).
	// WorstS and MedianS are meaningful when Measured > 0.
	Measured int
	// WorstS is the max of the hourly worst queue times, where a record's
	// worst is max(WorstQueueS of its ok probes, WorstCensoredS).
	WorstS float64
	// Censored is true when WorstS is a lower bound: the record it comes
	// from had a failed probe's bound at least as large as its ok probes'
	// worst (or no ok probe).
	Censored bool
	// MedianS is the median of the hourly worsts (the same max).
	MedianS float64
	// MedianCensored is true when MedianS may be low: a censored worst sits
	// at or below the (upper) middle of the sorted worsts, so raising it to
	// its true value could raise the median. Censored worsts above the
	// middle leave the median exact.
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
	// OK is false when no hour has a value (no data, or only failures
	// without a known wait); the other fields are then zero.
	OK            bool
	PeakHour      int
	PeakS         float64 // median at PeakHour
	PeakCensored  bool    // PeakS is a lower bound (HourStat.MedianCensored)
	QuietHour     int
	QuietS        float64 // median at QuietHour
	QuietCensored bool    // QuietS is a lower bound
	// SwingS = PeakS - QuietS. LowerBound is true when PeakS is a lower
	// bound and QuietS is exact: SwingS and Ratio are then lower bounds too.
	// (When QuietS is a lower bound the swing may be smaller or larger.)
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
// lane-hour, as Compute reads them.
//
// A lane-hour has one record per site (and, when the lane's kind changed
// within the hour, identical copies per kind): the copies count once and
// the sites merge conservatively, worst of the worsts and the sum of probes.
// The merged records come in the order their lane-hours first appear.
func MergeSites(hs []store.Hourly) []store.Hourly {
	return AppendMerged(nil, hs, nil)
}

// AppendMerged appends to dst the records of hs merged as MergeSites merges
// them, each under the lane name lane gives it (nil: its own), and returns
// the extended slice; the records already in dst take no part in the merge.
func AppendMerged(dst, hs []store.Hourly, lane func(*store.Hourly) string) []store.Hourly {
	// The lane-hours are looked up per hour, in maps of the lanes of that
	// hour: a store returns the records by time, so the maps in use are one
	// hour's (a few thousand lanes), not a month's (millions of lane-hours).
	type laneSite struct{ lane, site string }
	type hour struct {
		idx  map[string]int // lane → its merged record
		seen map[laneSite]bool
	}
	hoursOf := map[int64]*hour{}
	var cur *hour
	curNS := int64(0)
	recs := dst
	for i := range hs {
		h := &hs[i]
		name := h.Lane
		if lane != nil {
			name = lane(h)
		}
		ns := h.Hour.UnixNano()
		if cur == nil || ns != curNS {
			cur = hoursOf[ns]
			if cur == nil {
				cur = &hour{idx: map[string]int{}, seen: map[laneSite]bool{}}
				hoursOf[ns] = cur
			}
			curNS = ns
		}
		if ks := (laneSite{name, h.Site}); cur.seen[ks] {
			continue
		} else {
			cur.seen[ks] = true
		}
		j, ok := cur.idx[name]
		if !ok {
			j = len(recs)
			cur.idx[name] = j
			recs = append(recs, store.Hourly{Lane: name, Kind: h.Kind, Hour: h.Hour})
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
func recordWorst(rec store.Hourly, samples, failures int64) (worst, bool) {
	okQ := samples > failures && num.Finite(rec.WorstQueueS)
	cens := failures > 0 && num.Finite(rec.WorstCensoredS) && rec.WorstCensoredS > 0
	switch {
	case cens && (!okQ || rec.WorstCensoredS >= rec.WorstQueueS):
		return worst{rec.WorstCensoredS, true}, true
	case okQ:
		return worst{rec.WorstQueueS, false}, true
	}
	return worst{}, false
}

// Compute builds the report from hourly records, one per lane-hour (as
// MergeSites returns them; Site is not read). Records outside the window,
// and queue times that are not finite, are ignored.
func Compute(recs []store.Hourly, opt Options) *Report {
	b := newBuilder(opt)
	for i := range recs {
		rec := &recs[i]
		if !b.setHour(rec.Hour) {
			continue
		}
		b.add(b.lane(rec.Lane), rec.Kind, rec.WorstQueueS, rec.WorstCensoredS, rec.Samples, rec.Failures)
	}
	return b.finish(opt.Lanes)
}

// Lane returns the lane named name, or false.
func (r *Report) Lane(name string) (LaneReport, bool) {
	for _, l := range r.Lanes {
		if l.Name == name {
			return l, true
		}
	}
	return LaneReport{}, false
}

// swingOf finds the peak and quietest hours by median; ties go to the earliest hour.
func swingOf(hours []HourStat) Swing {
	var s Swing
	for _, h := range hours {
		if !h.HasQueue() {
			continue
		}
		if !s.OK {
			s = Swing{OK: true, PeakHour: h.Hour, PeakS: h.MedianS, PeakCensored: h.MedianCensored,
				QuietHour: h.Hour, QuietS: h.MedianS, QuietCensored: h.MedianCensored}
			continue
		}
		if h.MedianS > s.PeakS {
			s.PeakHour, s.PeakS, s.PeakCensored = h.Hour, h.MedianS, h.MedianCensored
		}
		if h.MedianS < s.QuietS {
			s.QuietHour, s.QuietS, s.QuietCensored = h.Hour, h.MedianS, h.MedianCensored
		}
	}
	if !s.OK {
		return s
	}
	s.SwingS = s.PeakS - s.QuietS
	s.LowerBound = s.PeakCensored && !s.QuietCensored
	if s.QuietS > 0 {
		s.Ratio, s.HasRatio = s.PeakS/s.QuietS, true
	}
	return s
}

// summarise returns the max and the median of a non-empty slice of worsts
// (the mean of the two middle values for an even count) and whether each is
// a lower bound. Sorted by value with exact values before censored ones of
// the same value, the max is censored when the last one is, and the median
// when any censored value sits at or below the upper middle.
func summarise(v []worst) (maxS float64, maxCens bool, med float64, medCens bool) {
	s := v // the caller's own: sorted in place
	slices.SortFunc(s, func(a, b worst) int {
		return cmp.Or(cmp.Compare(a.v, b.v), cmp.Compare(boolInt(a.censored), boolInt(b.censored)))
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

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
