package sampler

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/lanewatch/lanewatch/sampler/budget"
	"github.com/lanewatch/lanewatch/store"
)

// reading is what a plan reads from the store in one read: the newest
// probe of each owned lane, the probes a budget counts, and prior, for the
// Recorder.
type reading struct {
	latest, probes []store.Probe
	prior          store.Prior
	err            error
	local          []store.Probe // with err: the spool's and dead-letter file's
}

// meter reads what a plan at now needs, the owned lanes' probes since
// since, and the whole hours up to the one holding until.
func (s *Sampler) meter(ctx context.Context, now, since, until time.Time) reading {
	var m reading
	future := now.Add(FutureReach)
	latestWin := store.Window{From: now.Add(-budget.MaxBackoff - time.Hour), To: future}
	lanes, from := s.owned, since
	if !since.Before(now) {
		lanes = nil // the budgeted lanes only
		for _, l := range s.owned {
			if _, ok := s.groupOf[l]; ok {
				lanes = append(lanes, l)
			}
		}
	}
	for _, g := range s.opt.Groups {
		if day := g.DayStart(now); day.Before(from) {
			from = day
		}
	}
	probesWin := store.Window{From: from.Add(-time.Hour), To: future}
	read := latestWin
	if len(lanes) > 0 && probesWin.From.Before(read.From) {
		read.From = probesWin.From
	}
	if end := store.HourStart(until, s.opt.Location).Add(time.Hour); end.After(read.To) {
		read.To = end
	}
	q := store.Query{Windows: []store.Window{read}, Sites: []string{s.opt.Site}, Lanes: s.owned}
	shared, sites := s.shared()
	wide := q
	wide.Sites = sites
	ps, err := store.ReadProbes(ctx, s.opt.Store, wide)
	if err != nil {
		m.err = err
		// The back-offs a spooled or refused probe asks for still hold.
		var local []store.Probe
		lq := store.Query{Windows: []store.Window{latestWin}, Sites: q.Sites, Lanes: q.Lanes}
		if s.opt.Store.Read(ctx, lq, store.Reader{Local: true, Probe: func(p store.Probe) error { local = append(local, p); return nil }}) == nil {
			m.local = newest(sent(local))
		}
		return m
	}
	// The hour records are rebuilt from this site's probes alone; budgets
	// and back-offs of a group the sites share count every site's.
	own := slices.DeleteFunc(slices.Clone(ps), func(p store.Probe) bool { return p.Site != s.opt.Site })
	counted := slices.DeleteFunc(ps, func(p store.Probe) bool { return p.Site != s.opt.Site && !shared[p.Lane] })
	m.prior = store.Prior{Query: q, Probes: own}
	m.latest = newest(sent(within(counted, latestWin, s.owned)))
	if len(lanes) > 0 {
		m.probes = sent(within(counted, probesWin, lanes))
	}
	m.prior.Rebuild = s.abandoned(own, now)
	return m
}

// shared returns the owned lanes of the groups the sites share and the
// sites a round reads: this one and those sharing a group with it.
func (s *Sampler) shared() (map[string]bool, []string) {
	lanes := map[string]bool{}
	sites := []string{s.opt.Site}
	for _, g := range s.opt.Groups {
		if len(g.Sites) == 0 || !slices.ContainsFunc(g.Lanes, func(l string) bool { return slices.Contains(s.owned, l) }) {
			continue
		}
		for _, l := range g.Lanes {
			lanes[l] = true
		}
		for _, site := range g.Sites {
			if !slices.Contains(sites, site) {
				sites = append(sites, site)
			}
		}
	}
	return lanes, sites
}

func sent(ps []store.Probe) []store.Probe {
	return slices.DeleteFunc(ps, func(p store.Probe) bool { return !store.Sent(p) })
}

// abandoned returns the lane-hours of the reservations in ps older than
// settleWithin: their sampler was killed; their hours are rebuilt.
func (s *Sampler) abandoned(ps []store.Probe, now time.Time) []store.LaneHour {
	cutoff := now.Add(-s.settleWithin())
	var out []store.LaneHour
	for _, p := range ps {
		if p.Outcome == store.OutcomeReserved && p.Time.Before(cutoff) {
			out = append(out, store.LaneHour{Lane: p.Lane, Site: p.Site, Hour: p.Time})
		}
	}
	return out
}

func within(ps []store.Probe, w store.Window, lanes []string) []store.Probe {
	in := map[string]bool{}
	for _, l := range lanes {
		in[l] = true
	}
	out := []store.Probe{}
	for _, p := range ps {
		if w.Contains(p.Time) && in[p.Lane] {
			out = append(out, p)
		}
	}
	return out
}

// newest returns the newest of the probes of each lane and site, sorted
// by lane and site.
func newest(ps []store.Probe) []store.Probe {
	type laneSite struct{ lane, site string }
	idx := map[laneSite]int{}
	out := []store.Probe{}
	for _, p := range ps {
		k := laneSite{p.Lane, p.Site}
		if i, ok := idx[k]; ok {
			if !p.Time.Before(out[i].Time) {
				out[i] = p
			}
			continue
		}
		idx[k] = len(out)
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b store.Probe) int {
		return cmp.Or(cmp.Compare(a.Lane, b.Lane), cmp.Compare(a.Site, b.Site))
	})
	return out
}

// decide plans a round at now from what meter read.
func (s *Sampler) decide(now time.Time, force bool, m reading, lanes []string) budget.Plan {
	in := budget.Input{Now: now, Lanes: lanes, Groups: s.opt.Groups, Location: s.opt.Location, Force: force,
		Latest: m.latest, Probes: m.probes, MeterErr: m.err, Site: s.opt.Site}
	s.mu.Lock()
	in.SitesErr = s.duty.sitesErr
	if m.err != nil {
		in.Latest = append(in.Latest, m.local...)
		for _, p := range s.seen {
			in.Latest = append(in.Latest, p)
		}
	}
	s.mu.Unlock()
	return budget.Decide(in)
}
