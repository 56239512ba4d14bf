// Package load reads what a policy, a forecast or a report needs from a
// store, in one read: it works out up front the span of points a command
// needs, streams it once (store.Read) and hands the points to the pure
// packages that compute the answer (policy, report/swings,
// report/backtest). A nil store is an empty one: a fresh install.
package load

import (
	"context"
	"fmt"
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
	loc := store.OrUTC(p.Location)
	h := store.HourStart(at, loc)
	basis, lookback := p.ReadHours(h)
	windows := []store.Window{{From: basis[0], To: h.Add(time.Hour)}}
	for _, c := range lookback {
		windows = append(windows, store.Window{From: c, To: c.Add(time.Hour)})
	}
	x := policy.NewHistory(loc) // the probes go in as they are read, never all in a slice
	latest, seen, err := read(ctx, st, plan{p: p, end: h.Add(time.Hour), hours: windows, sites: sites}, x.Add, x.AddProbe)
	if err != nil {
		return policy.File{}, nil, err
	}
	return x.ForHour(p, policy.States(latest, loc), at), seen, nil
}

// Forecast returns the 24 forecast policies of the day holding day, from
// the points of sites (nil: all), and the sites of the records read.
func Forecast(ctx context.Context, st store.Store, p policy.Params, day time.Time, sites []string) ([]policy.File, []string, error) {
	loc := store.OrUTC(p.Location)
	start := store.DayStart(day, loc)
	lt := start.In(loc)
	// The lookback days before the day, with an hour of margin for odd DST
	// rules at midnight; policy ignores the rest.
	from := time.Date(lt.Year(), lt.Month(), lt.Day()-p.LookbackDays, 0, 0, 0, 0, loc).Add(-time.Hour)
	var recs []store.Hourly
	var probes []store.Probe
	latest, seen, err := read(ctx, st, plan{p: p, end: start, hours: []store.Window{{From: from, To: start.Add(time.Hour)}}, sites: sites},
		func(r store.Hourly) { recs = append(recs, r) }, func(pr store.Probe) { probes = append(probes, pr) })
	if err != nil {
		return nil, nil, err
	}
	return policy.ForecastProbes(p, recs, probes, policy.States(latest, loc), day), seen, nil
}

// plan is what a policy as of end reads: the hourly records of hours, and
// the probes of the lanes before end (the calibrated rule's window, and
// back far enough for each lane's newest probe), of sites (nil: all).
type plan struct {
	p     policy.Params
	end   time.Time
	hours []store.Window
	sites []string
}

// calibratedFrom is where the calibrated rule's probes start: twice its
// window before end, as the rule's margin measures each residual of its
// window against the profile of the window before it (with the lookback
// alone, a year of 50 lanes differed from a replay of the whole history
// by 4.6 % at the median; with twice it by 0.03 %).
func (pl plan) calibratedFrom() time.Time {
	days := pl.p.LookbackDays
	if days <= 0 {
		days = policy.DefaultCalibratedLookbackDays
	}
	return pl.end.Add(-2 * time.Duration(days) * 24 * time.Hour)
}

// span is the one window the read covers: the hours, each with an hour of
// margin (a record keyed in another zone is rebuilt from the probes of the
// hour it covers), the calibrated rule's probes and the lanes' newest
// probes: as far back as last_sample is looked for, and far enough for any
// back-off (budget.MaxBackoff).
func (pl plan) span() store.Window {
	states := max(time.Duration(pl.p.LookbackDays+1)*24*time.Hour, budget.MaxBackoff+time.Hour)
	froms, tos := []time.Time{pl.end.Add(-states)}, []time.Time{pl.end}
	if pl.p.Calibrated() {
		froms = append(froms, pl.calibratedFrom())
	}
	for _, h := range pl.hours {
		froms, tos = append(froms, h.From.Add(-time.Hour)), append(tos, h.To.Add(time.Hour))
	}
	return store.Window{From: slices.MinFunc(froms, time.Time.Compare), To: slices.MaxFunc(tos, time.Time.Compare)}
}

// read streams pl's span once. The hourly records of pl.hours go to
// record (see zone), the calibrated rule's probes of the lanes to probe,
// in time order. It returns the newest probe of each lane and site before
// pl.end and the sites of the records read. When pl.sites have no record
// there, the sites of every record of the span are looked up instead (a
// second read, on the way to a usage error: a -site typo).
func read(ctx context.Context, st store.Store, pl plan, record func(store.Hourly), probe func(store.Probe)) ([]store.Probe, []string, error) {
	lanes := map[string]bool{}
	for _, l := range pl.p.Lanes {
		lanes[l.Name] = true
	}
	calFrom := pl.calibratedFrom()
	z := newZone(pl.p.Location, pl.hours)
	var seen []string
	site := func(h store.Hourly) error {
		if !slices.Contains(seen, h.Site) {
			seen = append(seen, h.Site)
		}
		return nil
	}
	var nw newestOf
	q := store.Query{Windows: []store.Window{pl.span()}, Sites: pl.sites}
	r := store.Reader{
		Hourly: func(h store.Hourly) error {
			_ = site(h)
			if z.keep(h) {
				record(h)
			}
			return nil
		},
		Probe: func(pr store.Probe) error {
			z.probe(pr)
			if lanes[pr.Lane] && pr.Time.Before(pl.end) {
				nw.add(pr)
				if pl.p.Calibrated() && !pr.Time.Before(calFrom) {
					probe(pr)
				}
			}
			return nil
		},
	}
	if st == nil {
		return nil, nil, nil
	}
	if err := store.Read(ctx, st, q, r); err != nil {
		return nil, nil, fmt.Errorf("store: read: %w", err)
	}
	if err := z.rebuild(record); err != nil {
		return nil, nil, err
	}
	if len(seen) == 0 && q.Sites != nil {
		q.Sites = nil
		if err := store.Read(ctx, st, q, store.Reader{Hourly: site}); err != nil {
			return nil, nil, fmt.Errorf("store: read: %w", err)
		}
	}
	return nw.out, seen, nil
}

// newestOf keeps the newest probe of each lane and site it is shown (the
// later of equal times), in the order the series first came.
type newestOf struct {
	at  map[[2]string]int
	out []store.Probe
}

func (nw *newestOf) add(pr store.Probe) {
	k := [2]string{pr.Lane, pr.Site}
	if i, ok := nw.at[k]; ok {
		if !pr.Time.Before(nw.out[i].Time) {
			nw.out[i] = pr
		}
		return
	}
	if nw.at == nil {
		nw.at = map[[2]string]int{}
	}
	nw.at[k] = len(nw.out)
	nw.out = append(nw.out, pr)
}
