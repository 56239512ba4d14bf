// Package swings computes the time-of-day report behind `policygen swings`:
// for each lane and hour of day, how long the queue before the first token
// was over the last N days, and how far the busiest hour is from the quietest.
//
// Compute is pure (no clock, no I/O); the writers in this package render a
// Report as a table, CSV, JSON or a chart.
package swings

import (
	"math"
	"slices"
	"time"

	"github.com/lanewatch/lanewatch/series"
)

// HoursPerDay is the number of rows of a report: hours of day 0..23.
const HoursPerDay = 24

// Lane names a lane the report must list even without data (the config's lanes).
type Lane struct {
	Name string
	Kind string
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
	// Measured is the number of records with at least one ok probe: only they
	// carry a queue time. WorstS and MedianS are meaningful when Measured > 0.
	Measured int
	// WorstS is the max of the hourly worst queue times.
	WorstS float64
	// MedianS is the median of the hourly worst queue times.
	MedianS  float64
	Samples  int64
	Failures int64
}

// HasQueue reports whether the hour has a queue time (some ok probe).
func (h HourStat) HasQueue() bool { return h.Measured > 0 }

// Swing is the distance between the busiest and the quietest hour of day of
// a lane, by median of the hourly worsts. Ties go to the earliest hour.
type Swing struct {
	// OK is false when no hour has a queue time (no data, or only failures);
	// the other fields are then zero.
	OK        bool
	PeakHour  int
	PeakS     float64 // median at PeakHour
	QuietHour int
	QuietS    float64 // median at QuietHour
	// SwingS = PeakS - QuietS.
	SwingS float64
	// Ratio = PeakS / QuietS; HasRatio is false when QuietS is 0.
	Ratio    float64
	HasRatio bool
}

// Compute builds the report from hourly records. Records outside the window,
// and queue times that are not finite, are ignored.
func Compute(recs []series.Hourly, opt Options) *Report {
	loc := opt.Location
	if loc == nil {
		loc = time.UTC
	}
	r := &Report{Location: loc, Timezone: loc.String(), From: opt.From, To: opt.To, Days: opt.Days}

	type lane struct {
		LaneReport
		worsts [HoursPerDay][]float64
		days   [HoursPerDay]map[string]bool
	}
	lanes := map[string]*lane{}
	var order []string
	get := func(name, kind string) *lane {
		l, ok := lanes[name]
		if !ok {
			l = &lane{LaneReport: LaneReport{Name: name}}
			for h := range l.Hours {
				l.Hours[h].Hour = h
			}
			lanes[name] = l
			order = append(order, name)
		}
		if l.Kind == "" {
			l.Kind = kind
		}
		return l
	}
	for _, l := range opt.Lanes {
		get(l.Name, l.Kind)
	}
	// Lanes seen only in the records follow the configured ones, by name.
	configured := len(order)

	for _, rec := range recs {
		if !opt.From.IsZero() && rec.Hour.Before(opt.From) {
			continue
		}
		if !opt.To.IsZero() && !rec.Hour.Before(opt.To) {
			continue
		}
		l := get(rec.Lane, rec.Kind)
		local := rec.Hour.In(loc)
		h := local.Hour()
		st := &l.Hours[h]
		if l.days[h] == nil {
			l.days[h] = map[string]bool{}
		}
		l.days[h][local.Format("2006-01-02")] = true
		samples, failures := max(rec.Samples, 0), max(rec.Failures, 0)
		st.Samples += samples
		st.Failures += failures
		l.Samples += samples
		l.Failures += failures
		l.Records++
		r.Records++
		if r.First.IsZero() || rec.Hour.Before(r.First) {
			r.First = rec.Hour
		}
		if rec.Hour.After(r.Last) {
			r.Last = rec.Hour
		}
		if samples > failures && finite(rec.WorstQueueS) {
			l.worsts[h] = append(l.worsts[h], rec.WorstQueueS)
		}
	}
	slices.Sort(order[configured:])

	for _, name := range order {
		l := lanes[name]
		for h := range l.Hours {
			st := &l.Hours[h]
			st.Days = len(l.days[h])
			w := l.worsts[h]
			st.Measured = len(w)
			if len(w) > 0 {
				st.WorstS = slices.Max(w)
				st.MedianS = median(w)
			}
		}
		l.Swing = swingOf(l.Hours[:])
		r.Lanes = append(r.Lanes, l.LaneReport)
	}
	return r
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
			s = Swing{OK: true, PeakHour: h.Hour, PeakS: h.MedianS, QuietHour: h.Hour, QuietS: h.MedianS}
			continue
		}
		if h.MedianS > s.PeakS {
			s.PeakHour, s.PeakS = h.Hour, h.MedianS
		}
		if h.MedianS < s.QuietS {
			s.QuietHour, s.QuietS = h.Hour, h.MedianS
		}
	}
	if !s.OK {
		return s
	}
	s.SwingS = s.PeakS - s.QuietS
	if s.QuietS > 0 {
		s.Ratio, s.HasRatio = s.PeakS/s.QuietS, true
	}
	return s
}

// median of a non-empty slice; the mean of the two middle values for an even count.
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
