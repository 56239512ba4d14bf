package store

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/lanewatch/lanewatch/internal/num"
	"github.com/lanewatch/lanewatch/probe"
)

// OutcomeRateLimited is probe.RateLimited as Probe.Outcome holds it.
const OutcomeRateLimited = string(probe.RateLimited)

// Storage states of a probe point that are no probe.Outcome
// (docs/schema.md#reservations).
const (
	OutcomeReserved  = "reserved"  // a request booked and not settled
	OutcomeCancelled = "cancelled" // sent, and cut short by the sampler
	OutcomeUnsent    = "unsent"    // a reservation released: no request
)

// BusyMaxS is the longest wait a 429 may announce and still be Busy.
const BusyMaxS = 300

// Busy reports whether p is a 429 that announced a wait of at most BusyMaxS.
func Busy(p Probe) bool {
	return p.Outcome == OutcomeRateLimited && p.QuotaResetS > 0 && p.QuotaResetS <= BusyMaxS
}

// Sent reports whether p stands for a request that may have left.
func Sent(p Probe) bool { return p.Outcome != OutcomeUnsent }

// Aggregate folds the probes of one lane-hour into its hourly point, by
// the rules of docs/schema.md (queue_hourly) and docs/policy.md#a-short-429;
// non-finite measurements are left out.
func Aggregate(lane, kind, site string, hour time.Time, probes []Probe) Hourly {
	h := Hourly{Lane: lane, Kind: kind, Site: site, Hour: hour}
	ok := 0
	rate := math.Inf(1)
	limited := 0
	worst := func(w *float64, v float64) {
		if num.Finite(v) && v > *w {
			*w = v
		}
	}
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
			if p.Outcome != OutcomeReserved { // a reservation's wait is unknown
				worst(&h.WorstCensoredS, p.QueueS)
			}
			continue
		}
		ok++
		worst(&h.WorstQueueS, p.QueueS)
		worst(&h.WorstGenS, p.GenS)
		if num.Finite(p.GenS) && p.GenS > 0 {
			rate = min(rate, float64(p.Tokens)/p.GenS)
		}
	}
	if !math.IsInf(rate, 1) {
		h.MinTokPerS = rate
	}
	h.Eligible = ok > 0 && h.Failures == 0
	return h
}

// LaneHour names the probes one hourly record aggregates.
type LaneHour struct {
	Lane, Site string
	Hour       time.Time
}

// Touched returns the lane-hours the probes fall in, hours keyed in loc,
// sorted by hour, lane and site.
func Touched(probes []Probe, loc *time.Location) []LaneHour {
	var out []LaneHour
	for _, p := range probes {
		out = append(out, LaneHour{p.Lane, p.Site, hourOf(p.Time, loc)})
	}
	slices.SortFunc(out, compareLaneHour)
	return slices.Compact(out)
}

func compareLaneHour(a, b LaneHour) int {
	return cmp.Or(a.Hour.Compare(b.Hour), cmp.Compare(a.Lane, b.Lane), cmp.Compare(a.Site, b.Site))
}

// Rollup returns the hourly points of the probes: per lane, site and hour
// (keyed in loc) with a Sent probe, one per kind the lane had, each the
// Aggregate of all the lane-hour's probes; sorted by hour, lane, site, kind.
func Rollup(probes []Probe, loc *time.Location) []Hourly {
	groups := map[LaneHour][]Probe{}
	for _, p := range probes {
		if !Sent(p) {
			continue
		}
		k := LaneHour{p.Lane, p.Site, hourOf(p.Time, loc)}
		groups[k] = append(groups[k], p)
	}
	var out []Hourly
	for _, k := range slices.SortedFunc(maps.Keys(groups), compareLaneHour) {
		ps := groups[k]
		var kinds []string
		for _, p := range ps {
			kinds = append(kinds, p.Kind)
		}
		slices.Sort(kinds)
		agg := Aggregate(k.Lane, "", k.Site, k.Hour, ps)
		for _, kind := range slices.Compact(kinds) {
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
