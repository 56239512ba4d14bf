package sampler

import (
	"cmp"
	"context"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/lanewatch/lanewatch/probe"
	"github.com/lanewatch/lanewatch/sampler/budget"
	"github.com/lanewatch/lanewatch/store"
)

// book returns the reservations of the round's probes (docs/budgets.md,
// "Reservations"), each at a time no stored point of its lane holds.
func (s *Sampler) book(targets []probe.Target, offsets []time.Duration, stored []store.Probe) []store.Probe {
	if len(targets) == 0 {
		return nil
	}
	type laneTime struct {
		lane string
		ns   int64
	}
	taken := map[laneTime]bool{}
	for _, p := range stored {
		taken[laneTime{p.Lane, p.Time.UnixNano()}] = true
	}
	base := s.opt.Now()
	out := make([]store.Probe, len(targets))
	for i, t := range targets {
		at := jitter(base.Add(offsets[i]).Round(0).UTC(), time.Duration(1+rand.Int64N(int64(time.Millisecond)-1)))
		for taken[laneTime{t.Lane, at.UnixNano()}] {
			at = at.Add(time.Nanosecond)
		}
		out[i] = store.Probe{Lane: t.Lane, Kind: t.Kind, Site: s.opt.Site, Time: at, Outcome: store.OutcomeReserved}
	}
	return out
}

// ConfirmWait bounds how long confirm waits for other samplers' bookings
// to be withdrawn; past it, its own are.
const ConfirmWait = 10 * time.Second

// confirm returns the indexes of the written bookings that lose their
// group's slot to another sampler's (docs/budgets.md, "Samplers booking at
// the same moment"). force confirms every booking; a failed read withdraws
// those still waiting.
func (s *Sampler) confirm(ctx, storeCtx context.Context, now time.Time, booked []store.Probe, force bool) []int {
	own := map[store.Key]bool{}
	var pending []int
	for i, b := range booked {
		own[store.KeyOf(&b)] = true
		if _, ok := s.groupOf[b.Lane]; ok && !force {
			pending = append(pending, i)
		}
	}
	if len(pending) == 0 {
		return nil
	}
	q := s.groupsQuery(now, booked, pending)
	shared, _ := s.shared()
	var withdrawn []int
	deadline := time.Now().Add(ConfirmWait)
	for pause := 10 * time.Millisecond; ; pause = min(2*pause, 500*time.Millisecond) {
		ps, err := store.ReadProbes(storeCtx, s.opt.Store, q)
		if err != nil {
			return append(withdrawn, pending...)
		}
		var waiting []int
		for _, i := range pending {
			b := booked[i]
			lanes := s.opt.Groups[s.groupOf[b.Lane]].Lanes
			var others []store.Probe
			wait := false
			for _, p := range ps {
				switch {
				case own[store.KeyOf(&p)] || !store.Sent(p) || !slices.Contains(lanes, p.Lane) || (p.Site != s.opt.Site && !shared[p.Lane]):
				case p.Outcome == store.OutcomeReserved && compareBookings(p, b) > 0:
					wait = true // ordered after b: b waits for its withdrawal
				default:
					others = append(others, p)
				}
			}
			plan := budget.Decide(budget.Input{Now: now, Lanes: []string{b.Lane}, Groups: s.opt.Groups, Location: s.opt.Location, Site: s.opt.Site, Probes: others})
			switch {
			case !slices.Contains(plan.Probe, b.Lane):
				withdrawn = append(withdrawn, i)
			case wait:
				waiting = append(waiting, i)
			}
		}
		pending = waiting
		if len(pending) == 0 {
			return withdrawn
		}
		if time.Now().Add(pause).After(deadline) || !waitUntil(ctx, time.Now().Add(pause)) {
			return append(withdrawn, pending...)
		}
	}
}

// withdraw stores the bookings confirm withdrew as released, then rebuilds
// their lane-hours, which the winner may have read them into; a failed
// release leaves them counted.
func (s *Sampler) withdraw(ctx context.Context, lost []store.Probe) {
	if err := s.opt.Store.Write(ctx, store.Batch{Probes: released(lost)}); err != nil {
		return
	}
	_, _ = store.Rebuild(ctx, s.opt.Store, s.opt.Location, store.Touched(lost, s.opt.Location))
}

// groupsQuery selects what confirm reads: the points of the pending
// bookings' groups, from the start of their day to FutureReach.
func (s *Sampler) groupsQuery(now time.Time, booked []store.Probe, pending []int) store.Query {
	_, sites := s.shared()
	q := store.Query{Sites: sites}
	from := now
	for _, i := range pending {
		g := s.opt.Groups[s.groupOf[booked[i].Lane]]
		if day := g.DayStart(now); day.Before(from) {
			from = day
		}
		for _, l := range g.Lanes {
			if !slices.Contains(q.Lanes, l) {
				q.Lanes = append(q.Lanes, l)
			}
		}
	}
	q.Windows = []store.Window{{From: from.Add(-time.Hour), To: now.Add(FutureReach)}}
	return q
}

// compareBookings orders bookings as every sampler orders them.
func compareBookings(a, b store.Probe) int {
	return cmp.Or(a.Time.Compare(b.Time), cmp.Compare(a.Site, b.Site), cmp.Compare(a.Lane, b.Lane), cmp.Compare(a.Kind, b.Kind))
}

// jitter returns at moved by d (0 < d < 1 s) within its second: later, or
// earlier when later would leave it.
func jitter(at time.Time, d time.Duration) time.Time {
	if later := at.Add(d); later.Truncate(time.Second).Equal(at.Truncate(time.Second)) {
		return later
	}
	return at.Add(-d)
}

func released(booked []store.Probe) []store.Probe {
	out := slices.Clone(booked)
	for i := range out {
		out[i].Outcome = store.OutcomeUnsent
	}
	return out
}

// cancelledPoint is the point of a probe the sampler cut short.
func cancelledPoint(p store.Probe, sm probe.Sample) store.Probe {
	p.OK, p.Outcome = false, store.OutcomeCancelled
	switch {
	case !sm.FirstToken.IsZero():
		p.QueueS = sm.QueueS()
	case !sm.Sent.IsZero() && !sm.End.IsZero():
		p.QueueS = sm.End.Sub(sm.Sent).Seconds()
	}
	return p
}
