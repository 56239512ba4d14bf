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

// book returns the reservations of the round's probes: probe i is booked
// at the round's clock now plus its spread offset, the moment it is
// planned to start (it starts then, or later when it waits for a slot of
// Concurrency), moved by a random fraction of a millisecond within its
// second (its hour and day stay), and its point keeps that time. A time a
// stored point of the lane holds already moves on by a nanosecond until
// it is free, so that no booking replaces another request. The random
// part covers what the stored times cannot show: a booking another
// sampler makes at the same moment (the same clock reading: two requests,
// one point), and, for a round that could not read the store (blind), a
// clock stepped back onto a stored probe's time.
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
	base := s.now()
	out := make([]store.Probe, len(targets))
	for i, t := range targets {
		at := jitter(base.Add(offsets[i]).Round(0).UTC(), time.Duration(1+rand.Int64N(int64(time.Millisecond)-1)))
		for taken[laneTime{t.Lane, at.UnixNano()}] {
			at = at.Add(time.Nanosecond)
		}
		out[i] = store.Probe{Lane: t.Lane, Kind: t.Kind, Site: s.site, Time: at, Outcome: store.OutcomeReserved}
	}
	return out
}

// ConfirmWait bounds how long a round waits, once booked, for the
// bookings of its quota groups that other samplers made at the same moment
// to be withdrawn (confirm); past it, its own are withdrawn.
const ConfirmWait = 10 * time.Second

// confirm returns the indexes of the written bookings that must be
// withdrawn before any request leaves: those of a quota group's lanes
// that lose the group's slot to a booking another sampler made at the
// same moment. Two samplers that both read the slot free before either
// booked (a daemon's round and sampler probe, eight sampler probes) would
// otherwise both send. Each reads the group's points again after its own
// booking is written, and a booking b stands when, counting every other
// request of the group it reads (settled, or booked and not withdrawn),
// the budget still allows it: another's booking ordered before b (by
// time, site, lane and kind: every sampler orders them alike) counts at
// once; one ordered after b counts unless it is withdrawn, and b waits
// (reading again) until it is withdrawn or settled, at most ConfirmWait.
//
// Of two bookings A before B, at least one reads the other, as each reads
// after its own write is acknowledged, and stores show a read what was
// acknowledged before it (the spool's and inbox's files too). If B reads
// A, B counts A and withdraws. If A reads B, A waits for B: B withdraws
// when it reads A, and if it does not (it read before A's write), B is
// sent, and A, reading B settled or never withdrawn, withdraws. So two
// bookings never both stand in one slot, and with no other waiting the
// first one stands. No clock is compared across samplers: the order is
// the bookings' own, the wait is each sampler's own.
//
// force (budgets notwithstanding) confirms every booking; so does a round
// that books no lane of a quota group. A read that fails withdraws the
// bookings still waiting.
func (s *Sampler) confirm(ctx, storeCtx context.Context, now time.Time, booked []store.Probe, force bool) []int {
	groupOf := map[string]int{}
	for gi, g := range s.groups {
		for _, l := range g.Lanes {
			groupOf[l] = gi
		}
	}
	own := map[bookingKey]bool{}
	var pending []int
	for i, b := range booked {
		own[keyOf(b)] = true
		if _, ok := groupOf[b.Lane]; ok && !force {
			pending = append(pending, i)
		}
	}
	if len(pending) == 0 {
		return nil
	}
	q := s.groupsQuery(now, booked, pending, groupOf)
	shared, _ := s.shared()
	var withdrawn []int
	deadline := time.Now().Add(ConfirmWait)
	for pause := 10 * time.Millisecond; ; pause = min(2*pause, 500*time.Millisecond) {
		ps, err := store.ReadProbes(storeCtx, s.store, q)
		if err != nil {
			return append(withdrawn, pending...)
		}
		var waiting []int
		for _, i := range pending {
			b := booked[i]
			lanes := s.groups[groupOf[b.Lane]].Lanes
			var others []store.Probe
			wait := false
			for _, p := range ps {
				switch {
				case own[keyOf(p)] || !store.Sent(p) || !slices.Contains(lanes, p.Lane) || (p.Site != s.site && !shared[p.Lane]):
				case p.Outcome == store.OutcomeReserved && compareBookings(p, b) > 0:
					wait = true // ordered after b: b waits for its withdrawal
				default:
					others = append(others, p)
				}
			}
			plan := budget.Decide(budget.Input{Now: now, Lanes: []string{b.Lane}, Groups: s.groups, Location: s.loc, Site: s.site, Probes: others})
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

// withdraw stores the bookings confirm withdrew as released (unsent), then
// rebuilds those of their lane-hours that hold a settled probe: the
// booking that took the slot from one of them may have read it, still
// reserved, into its own hour's record (it counted as a failure), and a
// withdrawn booking that waited for that booking to settle withdraws just
// after that record was written. An hour of reservations and released
// bookings alone is left as it is: no settled probe, no record to write.
// A release that fails leaves them reserved: counted, never fewer than
// sent.
func (s *Sampler) withdraw(ctx context.Context, lost []store.Probe) {
	if err := s.store.Write(ctx, store.Batch{Probes: released(lost)}); err != nil {
		return
	}
	touched := store.Touched(lost, s.loc)
	q := store.Query{}
	for _, t := range touched {
		q.Windows = append(q.Windows, store.Window{From: t.Hour, To: t.Hour.Add(time.Hour)})
		q.Lanes = append(q.Lanes, t.Lane)
		q.Sites = append(q.Sites, t.Site)
	}
	ps, err := store.ReadProbes(ctx, s.store, q)
	if err != nil {
		return
	}
	var settled []store.LaneHour
	for _, p := range ps {
		if !store.Sent(p) || p.Outcome == store.OutcomeReserved {
			continue
		}
		if lh := store.Touched([]store.Probe{p}, s.loc)[0]; slices.Contains(touched, lh) && !slices.Contains(settled, lh) {
			settled = append(settled, lh)
		}
	}
	_, _ = store.Rebuild(ctx, s.store, s.loc, settled)
}

// groupsQuery selects what confirm reads: the points of the lanes of the
// groups of the pending bookings, at this site and those a group shares,
// from the start of their day (as the meter reads it) to FutureReach.
func (s *Sampler) groupsQuery(now time.Time, booked []store.Probe, pending []int, groupOf map[string]int) store.Query {
	_, sites := s.shared()
	q := store.Query{Sites: sites}
	from := now
	for _, i := range pending {
		g := s.groups[groupOf[booked[i].Lane]]
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

// bookingKey is a probe point's identity: its series and time.
type bookingKey struct {
	lane, kind, site string
	ns               int64
}

func keyOf(p store.Probe) bookingKey { return bookingKey{p.Lane, p.Kind, p.Site, p.Time.UnixNano()} }

// compareBookings orders bookings as every sampler orders them: by time,
// then site, lane and kind.
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

// released returns the reservations with outcome unsent: their requests
// never left.
func released(booked []store.Probe) []store.Probe {
	out := slices.Clone(booked)
	for i := range out {
		out[i].Outcome = store.OutcomeUnsent
	}
	return out
}

// cancelledPoint is the point of a probe the sampler cut short: outcome
// cancelled, queue_s the wait so far (a lower bound: from the request
// written to the cut, or the exact wait when a first token came).
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
