// Package app turns a loaded configuration into the domain packages' inputs.
//
// It is the only importer of config outside cmd, so every command builds the
// store, the policy parameters, the budget groups and the sampler the same
// way.
package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/report/swings"
	"github.com/lanewatch/lanewatch/sampler/budget"
	"github.com/lanewatch/lanewatch/store"
)

// Groups returns the config's quota groups with their lanes, in config order.
func Groups(cfg *config.Config) []budget.Group {
	var gs []budget.Group
	for _, q := range cfg.Quotas {
		g := budget.Group{Name: q.Name, ProbesPerDay: q.ProbesPerDay, Location: q.Location}
		if q.Scope != config.ScopeSite {
			g.Sites = slices.Clone(cfg.Sites) // scope account: the listed sites share it
		}
		for _, l := range cfg.Lanes {
			if l.Quota == q.Name {
				g.Lanes = append(g.Lanes, l.Name)
			}
		}
		gs = append(gs, g)
	}
	return gs
}

// Params maps the config to the policy's parameters. A lane of a quota
// group keeps a basis as long as its probe interval plus an hour.
func Params(cfg *config.Config) policy.Params {
	p := policy.Params{Location: cfg.Location, LookbackDays: max(cfg.Policy.LookbackDays, 0),
		Rule: cfg.Policy.Rule, Coverage: cfg.Policy.Coverage}
	basis := map[string]int{}
	for _, g := range Groups(cfg) {
		for _, l := range g.Lanes {
			basis[l] = budget.BasisHours(g)
		}
	}
	for _, l := range cfg.Lanes {
		p.Lanes = append(p.Lanes, policy.LaneSpec{Name: l.Name, Kind: l.Kind, BasisHours: basis[l.Name]})
	}
	for _, c := range cfg.Policy.Classes {
		p.Classes = append(p.Classes, policy.ClassSpec{
			Name:          c.Name,
			DeadlineS:     c.DeadlineS,
			CeilingTokens: c.CeilingTokens,
			EstTokens:     c.EstTokens,
			PaidUSDPer1k:  c.PaidUSDPer1k,
			Coverage:      c.Coverage,
			Objective:     c.Objective,
		})
	}
	return p
}

// HourWindows returns the spans a live policy of hour h reads
// (policy.Params.ReadHours): the basis hours as one span, and each
// lookback hour, each exactly an hour long.
func HourWindows(p policy.Params, h time.Time) []store.Window {
	basis, lookback := p.ReadHours(h)
	ws := []store.Window{{From: basis[0], To: basis[len(basis)-1].Add(time.Hour)}}
	for _, c := range lookback {
		ws = append(ws, store.Window{From: c, To: c.Add(time.Hour)})
	}
	return ws
}

// stateSpan is how far back the newest probe of a lane is looked for: far
// enough for last_sample over the lookback and for any back-off.
func stateSpan(p policy.Params) time.Duration {
	return max(time.Duration(p.LookbackDays+1)*24*time.Hour, budget.MaxBackoff+time.Hour)
}

// ForHour reads what the live policy of the hour holding h needs from st
// and returns it as of the instant h (a back-off that ended by then does
// not count), for the sites given (nil: every site).
func ForHour(ctx context.Context, st store.Store, cfg *config.Config, h time.Time, sites []string) (policy.File, error) {
	p := Params(cfg)
	at := h
	h = store.HourStart(h, cfg.Location)
	end := h.Add(time.Hour)
	q := store.Query{Windows: HourWindows(p, h), Sites: sites}
	hourly, err := hourlyIn(ctx, st, cfg.Location, q)
	if err != nil {
		return policy.File{}, err
	}
	x, have, err := streamCalibrated(ctx, st, p, hourly, h, sites)
	if err != nil {
		return policy.File{}, err
	}
	if x != nil {
		latest, err := newest(ctx, st, p, end.Add(-stateSpan(p)), end, sites, have)
		if err != nil {
			return policy.File{}, err
		}
		return x.ForHour(p, policy.States(latest, cfg.Location), h), nil
	}
	// The calibrated rule's probes hold the newest ones of every lane
	// probed in its window: the probes are read once.
	probes, err := calibratedProbes(ctx, st, p, end, sites)
	if err != nil {
		return policy.File{}, err
	}
	latest, err := newest(ctx, st, p, end.Add(-stateSpan(p)), end, sites, probes)
	if err != nil {
		return policy.File{}, err
	}
	return policy.ForHourProbes(p, hourly, probes, policy.States(latest, cfg.Location), at), nil
}

// calibratedProbes reads the probes the calibrated rule learns from for a
// policy as of end: twice the lookback's days before it (none under the
// worst-of rule, which reads the hourly records alone). The rule's margin is
// made of the window's residuals, each measured against the profile of the
// window before it: with the lookback alone, the older residuals would come
// from young profiles, and on the benchmark's year of 50 lanes the figures
// differed from a replay of the whole history by 4.6 % (median; 9.7 % at
// p90); with twice the lookback by 0.03 % (0.9 % at p90).
func calibratedProbes(ctx context.Context, st store.Store, p policy.Params, end time.Time, sites []string) ([]store.Probe, error) {
	if !p.Calibrated() {
		return nil, nil
	}
	lanes := make([]string, len(p.Lanes))
	for i, l := range p.Lanes {
		lanes[i] = l.Name
	}
	q := store.Query{Windows: []store.Window{{From: calibratedFrom(p, end), To: end}}, Sites: sites, Lanes: lanes}
	probes, err := store.ReadProbes(ctx, st, q)
	if err != nil {
		return nil, fmt.Errorf("store: read probes: %w", err)
	}
	return probes, nil
}

// streamCalibrated is ForHour's read of the calibrated rule's probes: each
// goes into the rule's History as it is read, with no slice of them all (on
// a year of 50 lanes, 100 k probes: 17 MB and a fifth of -hour's CPU). It
// returns the History and the newest probe of each lane and site; a nil
// History when the rule is not calibrated.
func streamCalibrated(ctx context.Context, st store.Store, p policy.Params, hourly []store.Hourly, h time.Time, sites []string) (x *policy.History, newestOnes []store.Probe, err error) {
	if !p.Calibrated() {
		return nil, nil, nil
	}
	end := h.Add(time.Hour)
	lanes := make([]string, len(p.Lanes))
	for i, l := range p.Lanes {
		lanes[i] = l.Name
	}
	q := store.Query{Windows: []store.Window{{From: calibratedFrom(p, end), To: end}}, Sites: sites, Lanes: lanes}
	x = policy.HourHistory(p, hourly, h)
	var nw newestOf
	err = st.Read(ctx, q, store.Reader{Probe: func(pr store.Probe) error {
		nw.add(pr)
		if pr.Time.Before(end) {
			x.AddProbe(pr)
		}
		return nil
	}})
	if err != nil {
		return nil, nil, fmt.Errorf("store: read probes: %w", err)
	}
	return x, nw.out, nil // nil when none: newest then looks further back, as for ForHourProbes
}

// calibratedFrom is where the calibrated rule's read for a policy as of
// end starts: twice its window before end.
func calibratedFrom(p policy.Params, end time.Time) time.Time {
	days := p.LookbackDays
	if days <= 0 {
		days = policy.DefaultCalibratedLookbackDays
	}
	return end.Add(-2 * time.Duration(days) * 24 * time.Hour)
}

// Forecast reads what the 24 forecast policies of the day holding `day`
// need from st and returns them, for the sites given (nil: every site).
func Forecast(ctx context.Context, st store.Store, cfg *config.Config, day time.Time, sites []string) ([]policy.File, error) {
	p := Params(cfg)
	start := store.DayStart(day, cfg.Location)
	lt := start.In(cfg.Location)
	// The lookback days before the day, with an hour of margin for odd DST
	// rules at midnight; policy ignores the rest.
	from := time.Date(lt.Year(), lt.Month(), lt.Day()-p.LookbackDays, 0, 0, 0, 0, cfg.Location).Add(-time.Hour)
	hourly, err := hourlyIn(ctx, st, cfg.Location, store.Query{Windows: []store.Window{{From: from, To: start.Add(time.Hour)}}, Sites: sites})
	if err != nil {
		return nil, err
	}
	probes, err := calibratedProbes(ctx, st, p, start, sites)
	if err != nil {
		return nil, err
	}
	latest, err := newest(ctx, st, p, start.Add(-stateSpan(p)), start, sites, probes)
	if err != nil {
		return nil, err
	}
	return policy.ForecastProbes(p, hourly, probes, policy.States(latest, cfg.Location), day), nil
}

// newest returns the newest probe of each lane and site before end, looking
// back in widening steps so that a large store is scanned only as far as
// needed: the last few hours (every lane probed at least hourly, and a
// sparse lane's basis), then [from, end), then all of the history before
// end for the lanes still missing, so that a lane last probed long ago
// reads no_recent_sample, not never_sampled. Probes already read (have: the
// probes of the window before end that the calibrated rule reads, in time
// order) give the newest of the lanes they hold, and the search goes on
// before them for the others.
func newest(ctx context.Context, st store.Store, p policy.Params, from, end time.Time, sites []string, have []store.Probe) ([]store.Probe, error) {
	recent := p.MaxBasisHours() + 1
	steps := []time.Time{end.Add(-time.Duration(recent) * time.Hour), from, time.Unix(0, 0)}
	var found []store.Probe
	lanes := make([]string, len(p.Lanes))
	for i, l := range p.Lanes {
		lanes[i] = l.Name
	}
	to := end
	if have != nil {
		found = newestPerSeries(have)
		lanes = slices.DeleteFunc(lanes, func(l string) bool {
			return slices.ContainsFunc(found, func(p store.Probe) bool { return p.Lane == l })
		})
		if len(lanes) == 0 {
			return found, nil
		}
		to = calibratedFrom(p, end)
		steps = slices.DeleteFunc(steps, func(t time.Time) bool { return !t.Before(to) })
	}
	for _, start := range steps {
		if !start.Before(to) {
			continue
		}
		got, err := store.Newest(ctx, st, store.Query{Windows: []store.Window{{From: start, To: to}}, Sites: sites, Lanes: lanes})
		if err != nil {
			return nil, fmt.Errorf("store: read the newest probes: %w", err)
		}
		found = append(found, got...)
		lanes = slices.DeleteFunc(lanes, func(l string) bool {
			return slices.ContainsFunc(got, func(p store.Probe) bool { return p.Lane == l })
		})
		if len(lanes) == 0 {
			break
		}
		to = start
	}
	return found, nil
}

// newestPerSeries returns the newest probe of each lane and site in
// probes (time order: the later of equal times).
func newestPerSeries(probes []store.Probe) []store.Probe {
	var nw newestOf
	for _, pr := range probes {
		nw.add(pr)
	}
	return nw.out
}

// newestOf keeps the newest probe of each lane and site it is shown, in
// the order the series first came.
type newestOf struct {
	at  map[seriesKey]int
	out []store.Probe
}

type seriesKey struct{ lane, site string }

func (nw *newestOf) add(pr store.Probe) {
	k := seriesKey{pr.Lane, pr.Site}
	if i, ok := nw.at[k]; ok {
		if !pr.Time.Before(nw.out[i].Time) {
			nw.out[i] = pr
		}
		return
	}
	if nw.at == nil {
		nw.at = map[seriesKey]int{}
	}
	nw.at[k] = len(nw.out)
	nw.out = append(nw.out, pr)
}

// Swings computes the time-of-day report of the hourly records of [from,
// to): the config's lanes listed even without data, its classes' deadlines
// drawn. Each lane's figures merge every site's records; with perSite, when
// the records come from more than one site, each lane is followed by one
// column per site, named lane@site.
func Swings(cfg *config.Config, recs []store.Hourly, from, to time.Time, days int, perSite bool) *swings.Report {
	opt, column, lanesOf := swingsOptions(cfg, from, to, days, perSite)
	// One pass over the records, no merged copy of them (a month of 1,000
	// lanes at 3 sites: 2.9 M records), when they come by time.
	if rep, ok := swings.ComputeSites(recs, opt, column, lanesOf); ok {
		return rep
	}
	sitesOf := map[string][]string{}
	for _, h := range recs {
		if !slices.Contains(sitesOf[h.Lane], h.Site) {
			sitesOf[h.Lane] = append(sitesOf[h.Lane], h.Site)
		}
	}
	lanes, columns := swingsLanes(cfg, sitesOf, perSite)
	var merged []store.Hourly
	if columns {
		merged = withSiteLanes(recs, sitesOf)
	} else {
		merged = swings.MergeSites(recs)
	}
	opt.Lanes = lanes
	return swings.Compute(merged, opt)
}

// errTwoPasses stops SwingsOf's streamed read: the report needs the
// records whole.
var errTwoPasses = errors.New("swings: the report needs the records whole")

// SwingsOf returns Swings' report of the hourly records of st that q
// selects, built an hour at a time while st hands them over: the records
// are never held whole (a month of 1,000 lanes at 3 sites: 2.16 M), and
// the report is built while the store still reads. When it cannot be
// built so (more than 64 sites, a lane named like a lane@site column),
// the records are read again whole and go through Swings.
func SwingsOf(ctx context.Context, cfg *config.Config, st store.Store, q store.Query, from, to time.Time, days int, perSite bool) (*swings.Report, error) {
	opt, column, lanesOf := swingsOptions(cfg, from, to, days, perSite)
	sb := swings.NewSites(opt, column)
	var hour []store.Hourly
	add := func() error {
		if len(hour) > 0 && !sb.Add(hour) {
			return errTwoPasses
		}
		hour = hour[:0]
		return nil
	}
	err := st.Read(ctx, q, store.Reader{Hourly: func(h store.Hourly) error {
		if len(hour) > 0 && !h.Hour.Equal(hour[0].Hour) {
			if err := add(); err != nil {
				return err
			}
		}
		hour = append(hour, h)
		return nil
	}})
	if err == nil {
		err = add()
	}
	if err != nil && !errors.Is(err, errTwoPasses) {
		return nil, err
	}
	if err == nil {
		if rep, ok := sb.Finish(lanesOf); ok {
			return rep, nil
		}
	}
	recs, err := store.ReadHourly(ctx, st, q)
	if err != nil {
		return nil, err
	}
	return Swings(cfg, recs, from, to, days, perSite), nil
}

// swingsOptions returns the report's options (the window and the
// config's classes, without the lanes), its lane@site naming (nil unless
// perSite) and the lanes it lists for the sites of each lane of the
// records (swingsLanes).
func swingsOptions(cfg *config.Config, from, to time.Time, days int, perSite bool) (swings.Options, func(lane, site string) string, func(map[string][]string) ([]swings.Lane, bool)) {
	classes := make([]swings.ClassLine, len(cfg.Policy.Classes))
	for i, c := range cfg.Policy.Classes {
		classes[i] = swings.ClassLine{Name: c.Name, DeadlineS: c.DeadlineS}
	}
	opt := swings.Options{Location: cfg.Location, From: from, To: to, Days: days, Classes: classes}
	var column func(lane, site string) string
	if perSite {
		column = siteLane
	}
	lanesOf := func(sitesOf map[string][]string) ([]swings.Lane, bool) { return swingsLanes(cfg, sitesOf, perSite) }
	return opt, column, lanesOf
}

// swingsLanes returns the lanes a swings report lists even without data
// (the config's, each followed by its lane@site columns when perSite and
// some lane of the records has more than one site) and whether the report
// has those columns. sitesOf holds the sites of each lane of the records.
func swingsLanes(cfg *config.Config, sitesOf map[string][]string, perSite bool) ([]swings.Lane, bool) {
	multi := false
	for _, ss := range sitesOf {
		multi = multi || len(ss) > 1
	}
	var lanes []swings.Lane
	for _, l := range cfg.Lanes {
		lanes = append(lanes, swings.Lane{Name: l.Name, Kind: l.Kind})
		if perSite && multi {
			ss := slices.Clone(sitesOf[l.Name])
			slices.Sort(ss)
			for _, site := range ss {
				lanes = append(lanes, swings.Lane{Name: siteLane(l.Name, site), Kind: l.Kind})
			}
		}
	}
	return lanes, perSite && multi
}

// withSiteLanes returns the records merged (swings.MergeSites) followed by
// the records again under their lane@site names, merged: the merge of both
// at once, without a copy of the records, when no lane of the records is
// named like a lane@site column (the lane-hours of the two never meet
// then). sitesOf holds the sites of each lane of the records.
func withSiteLanes(recs []store.Hourly, sitesOf map[string][]string) []store.Hourly {
	type laneSite struct{ lane, site string }
	names := map[laneSite]string{} // one string per name
	most := 1
	for lane, sites := range sitesOf {
		most = max(most, len(sites))
		for _, site := range sites {
			names[laneSite{lane, site}] = siteLane(lane, site)
		}
	}
	for _, name := range names {
		if _, clash := sitesOf[name]; clash {
			split := make([]store.Hourly, len(recs))
			for i, h := range recs {
				h.Lane = names[laneSite{h.Lane, h.Site}]
				split[i] = h
			}
			return swings.MergeSites(append(slices.Clone(recs), split...))
		}
	}
	// About a record per lane-hour, and one per record of each site.
	out := swings.AppendMerged(make([]store.Hourly, 0, len(recs)/most+len(recs)), recs, nil)
	return swings.AppendMerged(out, recs, func(h *store.Hourly) string { return names[laneSite{h.Lane, h.Site}] })
}

// siteLane names a lane's column for one site: lane@site ("lane@-" for the
// untagged site).
func siteLane(lane, site string) string {
	if site == "" {
		site = "-"
	}
	return lane + "@" + site
}
