// Package load reads what a policy file or a forecast needs from a store in
// one read (Store.Read) of a span worked out up front, and hands the points
// to package policy, which computes the file. A nil store is an empty one.
// (The reports read for themselves: swings.Read, backtest.Read.)
package load

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/sampler/budget"
	"github.com/lanewatch/lanewatch/store"
)

// ForHour returns the live policy of the hour holding at, as of the
// instant at (a back-off that ended by then does not count), from the
// points of sites (nil: all), and the sites of the records read.
func ForHour(ctx context.Context, st store.Store, p policy.Params, at time.Time, sites []string) (policy.File, []string, error) {
	live, file := livePart(p, at)
	seen, err := read(ctx, st, p, sites, live)
	if err != nil {
		return policy.File{}, nil, err
	}
	return file(), seen, nil
}

// Forecast returns the 24 forecast policies of the day holding day, from
// the points of sites (nil: all), and the sites of the records read.
func Forecast(ctx context.Context, st store.Store, p policy.Params, day time.Time, sites []string) ([]policy.File, []string, error) {
	fc, files := forecastPart(p, day)
	seen, err := read(ctx, st, p, sites, fc)
	if err != nil {
		return nil, nil, err
	}
	return files(), seen, nil
}

// LiveAndNext returns from one read what the sampler writes after a round:
// ForHour's file and Forecast's file of the next hour (none if skipped).
func LiveAndNext(ctx context.Context, st store.Store, p policy.Params, at time.Time) ([]policy.File, error) {
	loc := store.OrUTC(p.Location)
	next := store.HourStart(at, loc).Add(time.Hour)
	live, file := livePart(p, at)
	fc, files := forecastPart(p, next)
	if _, err := read(ctx, st, p, nil, live, fc); err != nil {
		return nil, err
	}
	label := store.HourLabel(next, loc)
	return append([]policy.File{file()}, slices.DeleteFunc(files(), func(f policy.File) bool { return f.Hour != label })...), nil
}

// livePart reads the records of the basis and lookback hours; the probes
// go into the History as they come, never all in a slice.
func livePart(p policy.Params, at time.Time) (*part, func() policy.File) {
	loc := store.OrUTC(p.Location)
	h := store.HourStart(at, loc)
	basis, lookback := p.ReadHours(h)
	hours := []store.Window{{From: basis[0], To: h.Add(time.Hour)}}
	for _, c := range lookback {
		hours = append(hours, store.Window{From: c, To: c.Add(time.Hour)})
	}
	x := policy.NewHistory(loc)
	pt := newPart(p, h.Add(time.Hour), hours, x.Add, x.AddProbe)
	return pt, func() policy.File { return x.ForHour(p, pt.states(), at) }
}

// forecastPart reads the lookback days before the day, with an hour of
// margin for odd DST rules at midnight (policy ignores the rest).
func forecastPart(p policy.Params, day time.Time) (*part, func() []policy.File) {
	loc := store.OrUTC(p.Location)
	start := store.DayStart(day, loc)
	lt := start.In(loc)
	from := time.Date(lt.Year(), lt.Month(), lt.Day()-p.LookbackDays, 0, 0, 0, 0, loc).Add(-time.Hour)
	var recs []store.Hourly
	var probes []store.Probe
	pt := newPart(p, start, []store.Window{{From: from, To: start.Add(time.Hour)}},
		func(r store.Hourly) { recs = append(recs, r) }, func(pr store.Probe) { probes = append(probes, pr) })
	return pt, func() []policy.File { return policy.ForecastProbes(p, recs, probes, pt.states(), day) }
}

// part is one policy a read feeds, as of end: its zone's records go to
// record, the lanes' probes before end give the newest of each lane and
// site, and the calibrated rule's (from calFrom) go to probe.
type part struct {
	p       policy.Params
	end     time.Time
	calFrom time.Time
	zone    *zone
	record  func(store.Hourly)
	probe   func(store.Probe)
	newest  map[[2]string]store.Probe
}

// newPart is the part of a policy as of end. The calibrated rule reads
// twice its window, its margin measuring each residual against the window
// before it (with the window alone, a year of 50 lanes differed from a
// replay of the whole history by 4.6 % at the median; with twice, 0.03 %).
func newPart(p policy.Params, end time.Time, hours []store.Window, record func(store.Hourly), probe func(store.Probe)) *part {
	days := p.LookbackDays
	if days <= 0 {
		days = policy.DefaultCalibratedLookbackDays
	}
	return &part{p: p, end: end, calFrom: end.Add(-2 * time.Duration(days) * 24 * time.Hour), zone: newZone(p.Location, hours),
		record: record, probe: probe, newest: map[[2]string]store.Probe{}}
}

func (pt *part) states() []policy.LaneState {
	return policy.States(slices.Collect(maps.Values(pt.newest)), pt.p.Location)
}

// probeFields are the probe fields a policy reads: a lane's back-off
// (budget.Backoff) and, under the calibrated rule, its observations
// (policy.ProbeObs) and failure chain. On InfluxDB each field left out is
// a column the server does not read (an -hour over 3,000 lane-sites
// under rule max: 1.7 M rows of 3 fields, not 10).
func probeFields(p policy.Params) []string {
	f := []string{"outcome", "quota_remaining", "quota_reset_s"}
	if p.Calibrated() {
		f = append(f, "queue_s", "ok", "status")
	}
	return f
}

// read streams one span once and feeds each part: its hours' records, the
// probes within an hour of them (for a zone's rebuild), its calibrated
// rule's probes and its lanes' newest probes as far back as last_sample
// and back-offs need (under max the newest alone). It returns the sites of
// the records read, or when sites have none there every site with a record
// in the whole span (a second read, for a -site typo's usage error).
func read(ctx context.Context, st store.Store, p policy.Params, sites []string, parts ...*part) ([]string, error) {
	if st == nil {
		return nil, nil
	}
	lanes := map[string]bool{}
	for _, l := range p.Lanes {
		lanes[l.Name] = true
	}
	var froms, tos []time.Time
	var hours []store.Window
	for _, pt := range parts {
		froms = append(froms, pt.end.Add(-max(time.Duration(p.LookbackDays+1)*24*time.Hour, budget.MaxBackoff+time.Hour)))
		if tos = append(tos, pt.end); p.Calibrated() {
			froms = append(froms, pt.calFrom)
		}
		hours = append(hours, pt.zone.hours...) // a record keyed elsewhere is one of them or none
		for _, h := range pt.zone.hours {
			froms, tos = append(froms, h.From.Add(-time.Hour)), append(tos, h.To.Add(time.Hour))
		}
	}
	// The hourly records of the parts' hours alone (a few hours of each
	// day under the live rule), and the probes of the whole span.
	q := store.Query{Windows: hours, Sites: sites}
	from, to := slices.MinFunc(froms, time.Time.Compare), slices.MaxFunc(tos, time.Time.Compare)
	pq := store.Query{Windows: []store.Window{{From: from, To: to}}, Sites: sites}
	var seen []string
	site := func(h store.Hourly) error {
		if !slices.Contains(seen, h.Site) {
			seen = append(seen, h.Site)
		}
		return nil
	}
	err := st.Read(ctx, q, store.Reader{Hourly: func(h store.Hourly) error {
		for _, pt := range parts {
			if pt.zone.keep(h) {
				pt.record(h)
			}
		}
		return site(h)
	}})
	if err == nil {
		if !slices.ContainsFunc(parts, func(pt *part) bool { return pt.zone.foreign != nil }) {
			pq.Fields = probeFields(p) // a zone's rebuild takes the probes whole
			// Under max, each part's newest alone: a window up to each end.
			if !p.Calibrated() {
				pq.Newest, pq.Windows = true, nil
				w := store.Window{From: from}
				for _, pt := range slices.SortedFunc(slices.Values(parts), func(a, b *part) int { return a.end.Compare(b.end) }) {
					w.To = pt.end
					pq.Windows, w.From = append(pq.Windows, w), pt.end
				}
			}
		}
		err = st.Read(ctx, pq, store.Reader{Probe: func(pr store.Probe) error {
			for _, pt := range parts {
				if pt.zone.probe(pr); lanes[pr.Lane] && pr.Time.Before(pt.end) {
					pt.newest[[2]string{pr.Lane, pr.Site}] = pr // Read hands them over in time order
					if p.Calibrated() && !pr.Time.Before(pt.calFrom) {
						pt.probe(pr)
					}
				}
			}
			return nil
		}})
	}
	if err != nil {
		return nil, fmt.Errorf("store: read: %w", err)
	}
	for _, pt := range parts {
		if err := pt.zone.rebuild(pt.record); err != nil {
			return nil, err
		}
	}
	if len(seen) == 0 && sites != nil {
		all := store.Between(from, to)
		all.Newest = true // a record of each lane and site is enough
		if err := st.Read(ctx, all, store.Reader{Hourly: site}); err != nil {
			return nil, fmt.Errorf("store: read: %w", err)
		}
	}
	return seen, nil
}
