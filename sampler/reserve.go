package sampler

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/lanewatch/lanewatch/probe"
	"github.com/lanewatch/lanewatch/series"
)

// book returns the reservations of the round's probes: probe i is booked
// at the round's clock now plus its spread offset, the moment it is
// planned to start (it starts then, or later when it waits for a slot of
// Concurrency), and its point keeps that time. A time a stored point of
// the lane holds already (a clock stepped back onto it) moves on by a
// nanosecond until it is free, so that no booking replaces another request.
// A round that could not read the store (blind) cannot see the stored
// times: its bookings move by a random fraction of a millisecond (within
// their second, so their hour and day stay), which a clock stepped back
// onto a stored probe's time, while the store was unreadable, would
// otherwise have replaced (two requests, one point).
func (s *Sampler) book(targets []probe.Target, offsets []time.Duration, stored []series.Probe, blind bool) []series.Probe {
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
	out := make([]series.Probe, len(targets))
	for i, t := range targets {
		at := base.Add(offsets[i]).Round(0).UTC()
		if blind {
			at = jitter(at, time.Duration(1+rand.Int64N(int64(time.Millisecond)-1)))
		}
		for taken[laneTime{t.Lane, at.UnixNano()}] {
			at = at.Add(time.Nanosecond)
		}
		out[i] = series.Probe{Lane: t.Lane, Kind: t.Kind, Site: s.site, Time: at, Outcome: series.OutcomeReserved}
	}
	return out
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
func released(booked []series.Probe) []series.Probe {
	out := slices.Clone(booked)
	for i := range out {
		out[i].Outcome = series.OutcomeUnsent
	}
	return out
}

// cancelledPoint is the point of a probe the sampler cut short: outcome
// cancelled, queue_s the wait so far (a lower bound: from the request
// written to the cut, or the exact wait when a first token came).
func cancelledPoint(p series.Probe, sm probe.Sample) series.Probe {
	p.OK, p.Outcome = false, series.OutcomeCancelled
	switch {
	case !sm.FirstToken.IsZero():
		p.QueueS = sm.QueueS()
	case !sm.Sent.IsZero() && !sm.End.IsZero():
		p.QueueS = sm.End.Sub(sm.Sent).Seconds()
	}
	return p
}
