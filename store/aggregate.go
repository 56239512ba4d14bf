package store

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/lanewatch/lanewatch/internal/num"
	"github.com/lanewatch/lanewatch/probe"
)

// OutcomeRateLimited is package probe's outcome (it owns the set) as the
// string Probe.Outcome holds.
const OutcomeRateLimited = string(probe.RateLimited)

// Storage states of a probe point that are no probe.Outcome: the sampler
// books a request before it leaves (OutcomeReserved) and settles the
// booking with the probe's point, written with the same series and time so
// that it replaces the reservation (docs/schema.md#reservations).
const (
	// OutcomeReserved is a request booked and not settled: in flight, or
	// its sampler died before it stored the probe. It counts against the
	// budget and, in its hour, as a failure whose wait is unknown. It is
	// stored as the field booked alone, so that it never replaces the
	// point that settled it, in whatever order the two are applied.
	OutcomeReserved = "reserved"
	// OutcomeCancelled is a probe sent and cut short by the sampler (an
	// interrupted sampler -once): not a lane failure, but its wait so far
	// (queue_s, a lower bound) counts in worst_censored_s.
	OutcomeCancelled = "cancelled"
	// OutcomeUnsent is a reservation released: its probe never started
	// (the sampler was stopping, or withdrew the booking to another
	// sampler's of the same slot). It is no request: neither the budget
	// nor the hour counts it.
	OutcomeUnsent = "unsent"
)

// BusyMaxS is the longest wait (seconds, Retry-After or the quota's reset)
// a 429 may announce and still say that its lane is busy, not down (Busy).
const BusyMaxS = 300

// Busy reports whether p is a 429 that announced when its lane may be asked
// again (quota_reset_s), no later than BusyMaxS after the probe. Aggregate
// does not count a busy 429 as a failure when it is its hour's only 429.
func Busy(p Probe) bool {
	return p.Outcome == OutcomeRateLimited && p.QuotaResetS > 0 && p.QuotaResetS <= BusyMaxS
}

// Sent reports whether p stands for a request that left, or may have left,
// the sampler: every point but a released reservation (OutcomeUnsent).
func Sent(p Probe) bool { return p.Outcome != OutcomeUnsent }

// Aggregate folds the probes of one lane-hour into its hourly point:
// worst_queue_s and worst_gen_s are the largest queue_s and gen_s of the ok
// probes, min_tok_per_s the lowest tokens/gen_s over ok probes with gen_s > 0
// (0 if there is none), samples counts every probe, failures the probes that
// were not ok, and the hour is eligible when it has at least one ok probe and
// no failure.
//
// worst_censored_s is the longest wait a failed probe is known to have sat
// through: its queue_s (exact when its first token came, a lower bound when
// it timed out before one). It is a lower bound of the queue the next
// attempt may meet, which the policy's next_queue_s never goes under. A
// 429's announced wait (quota_reset_s) is not a queue and does not count:
// the back-off and the policy's quota_exhausted until keep the lane out for
// as long as the lane asked.
//
// A busy 429 (Busy: the hour's only 429, with a wait the server announced
// of at most BusyMaxS) counts in samples but is no failure: the lane said
// it was busy for that long, not that it was down, and the back-off and the
// policy's quota_exhausted keep it out for exactly that long. A 429 that
// announced no wait or a longer one, and every 429 of an hour that holds
// more than one, are failures (docs/policy.md#a-short-429).
//
// A reservation never settled (OutcomeReserved) counts as a failure with an
// unknown wait: a request was sent, so the hour is never eligible on a
// quieter figure than it. A cancelled probe (OutcomeCancelled) counts in
// samples and, with its wait so far, in worst_censored_s, but is no
// failure: the sampler cut it short, not the lane. A released reservation
// (OutcomeUnsent) is no probe and is left out.
//
// The caller picks the probes; Aggregate does not filter them by lane or
// time. Non-finite measurements are left out rather than poisoning the
// result.
func Aggregate(lane, kind, site string, hour time.Time, probes []Probe) Hourly {
	h := Hourly{Lane: lane, Kind: kind, Site: site, Hour: hour}
	ok := 0
	rate := math.Inf(1)
	limited := 0
	for _, p := range probes {
		if Sent(p) && p.Outcome == OutcomeRateLimited {
			limited++
		}
	}
	for _, p := range probes {
		if !Sent(p) {
			continue
		}
		h.Samples++
		if !p.OK {
			if p.Outcome != OutcomeCancelled && (limited > 1 || !Busy(p)) {
				h.Failures++
			}
			if p.Outcome == OutcomeReserved {
				continue // its wait is unknown
			}
			if bound := p.QueueS; num.Finite(bound) && bound > h.WorstCensoredS {
				h.WorstCensoredS = bound
			}
			continue
		}
		ok++
		if num.Finite(p.QueueS) && p.QueueS > h.WorstQueueS {
			h.WorstQueueS = p.QueueS
		}
		if num.Finite(p.GenS) && p.GenS > h.WorstGenS {
			h.WorstGenS = p.GenS
		}
		if num.Finite(p.GenS) && p.GenS > 0 {
			if r := float64(p.Tokens) / p.GenS; r < rate {
				rate = r
			}
		}
	}
	if !math.IsInf(rate, 1) {
		h.MinTokPerS = rate
	}
	h.Eligible = ok > 0 && h.Failures == 0
	return h
}

// LaneHour names the probes one hourly record aggregates: a lane, a site and
// the start of an hour in the sampler's zone.
type LaneHour struct {
	Lane, Site string
	Hour       time.Time
}

// Touched returns the lane-hours the probes fall in, hours keyed in loc,
// sorted by hour, lane and site.
func Touched(probes []Probe, loc *time.Location) []LaneHour {
	seen := map[LaneHour]bool{}
	var out []LaneHour
	for _, p := range probes {
		k := LaneHour{p.Lane, p.Site, hourOf(p.Time, loc)}
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	slices.SortFunc(out, compareLaneHour)
	return out
}

func compareLaneHour(a, b LaneHour) int {
	return cmp.Or(a.Hour.Compare(b.Hour), cmp.Compare(a.Lane, b.Lane), cmp.Compare(a.Site, b.Site))
}

// Rollup returns the hourly points of the probes: one per lane, site and
// hour (hours keyed in loc) that holds a probe sent (Sent), and within that
// one per kind the lane had in the hour, each the Aggregate of all the lane-hour's probes. A lane whose kind
// changed mid-hour thus has no stale record of its earlier kind: every
// record of the hour says the same. Points are sorted by hour, lane, site
// and kind.
func Rollup(probes []Probe, loc *time.Location) []Hourly {
	groups := map[LaneHour][]Probe{}
	for _, p := range probes {
		if !Sent(p) {
			continue // a released reservation: no probe, no record
		}
		k := LaneHour{p.Lane, p.Site, hourOf(p.Time, loc)}
		groups[k] = append(groups[k], p)
	}
	keys := make([]LaneHour, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareLaneHour)
	var out []Hourly
	for _, k := range keys {
		ps := groups[k]
		var kinds []string
		for _, p := range ps {
			if !slices.Contains(kinds, p.Kind) {
				kinds = append(kinds, p.Kind)
			}
		}
		slices.Sort(kinds)
		agg := Aggregate(k.Lane, "", k.Site, k.Hour, ps)
		for _, kind := range kinds {
			agg.Kind = kind
			out = append(out, agg)
		}
	}
	return out
}

// hourOf is the hour key of t: its hour's start in loc, as a UTC instant.
func hourOf(t time.Time, loc *time.Location) time.Time {
	return HourStart(t, loc).UTC()
}
