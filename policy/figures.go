package policy

import (
	"maps"
	"math"
	"slices"
	"time"

	"github.com/lanewatch/lanewatch/internal/num"
	"github.com/lanewatch/lanewatch/sampler/budget"
	"github.com/lanewatch/lanewatch/store"
)

// States reduces the newest probes (one per lane and site) to the policy's
// lane states: the newest probe of any site, and the latest back-off
// (budget.Backoff) any site's newest probe asks for (hours keyed in loc).
func States(latest []store.Probe, loc *time.Location) []LaneState {
	byLane := map[string]*LaneState{}
	for _, p := range latest {
		s := byLane[p.Lane]
		if s == nil {
			s = &LaneState{Lane: p.Lane}
			byLane[p.Lane] = s
		}
		if p.Time.After(s.LastSample) {
			s.LastSample = p.Time
		}
		if u, ok := budget.Backoff(p, loc); ok && u.After(s.QuotaUntil) {
			s.QuotaUntil = u
		}
	}
	out := make([]LaneState, 0, len(byLane))
	for _, l := range slices.Sorted(maps.Keys(byLane)) {
		out = append(out, *byLane[l])
	}
	return out
}

func stateOf(states []LaneState, lane string) LaneState {
	if i := slices.IndexFunc(states, func(s LaneState) bool { return s.Lane == lane }); i >= 0 {
		return states[i]
	}
	return LaneState{Lane: lane}
}

// siteList returns the sites to name in a file: none when every record is
// of the untagged site.
func siteList(sites map[string]bool) []string {
	if len(sites) == 0 || (len(sites) == 1 && sites[""]) {
		return nil
	}
	return slices.Sorted(maps.Keys(sites))
}

// setReason sets the lane's reason (docs/policy.md#eligibility) and the
// figures that go with it, from what the rule found.
func (l *Lane) setReason(lh *laneHistory, state LaneState, quota, none, failed bool) {
	switch {
	case (lh == nil || lh.ever == 0) && state.LastSample.IsZero():
		l.Reason = ReasonNeverSampled
	case quota:
		l.Reason, l.Until = ReasonQuotaExhausted, state.QuotaUntil.UTC().Truncate(time.Second)
	case none:
		l.Reason = ReasonNoRecentSample
	case failed:
		l.Reason = ReasonProbeFailed
	default:
		l.Reason = ReasonOK
	}
	l.Eligible = l.Reason == ReasonOK
	if !state.LastSample.IsZero() {
		l.LastSample = state.LastSample.UTC().Truncate(time.Second) // a file holds whole seconds
	}
}

// stat accumulates a lane's set of records.
type stat struct {
	queue             float64 // worst queue, censored waits included
	tok               float64 // lowest decode rate > 0; 0: none
	samples, failures int
	records           int
}

func (s *stat) add(r *rec) {
	s.records++
	s.samples += r.Samples
	s.failures += max(r.Failures, 0)
	for _, q := range []float64{r.WorstQueueS, r.WorstCensoredS} {
		if num.Finite(q) && q > s.queue {
			s.queue = q
		}
	}
	if num.Finite(r.MinTokPerS) && r.MinTokPerS > 0 && (s.tok == 0 || r.MinTokPerS < s.tok) {
		s.tok = r.MinTokPerS
	}
}

// merge adds the records o holds, as if each had been added to s.
func (s *stat) merge(o *stat) {
	s.records += o.records
	s.samples += o.samples
	s.failures += o.failures
	if o.queue > s.queue {
		s.queue = o.queue
	}
	if o.tok > 0 && (s.tok == 0 || o.tok < s.tok) {
		s.tok = o.tok
	}
}

func (s *stat) lane(spec LaneSpec) Lane {
	return Lane{
		Name:       spec.Name,
		Kind:       spec.Kind,
		NextQueueS: min(ceil2(s.queue), MaxSeconds), // what a reader accepts
		TokPerS:    min(floor2(s.tok), MaxSeconds),
		Samples:    s.samples,
		Failures:   s.failures,
	}
}

// ceil2 rounds a wait up to the next 0.01 (clock noise under 10 ns does
// not count), so that a policy file never under-states it; floor2 rounds
// a rate down, its safe side. Non-finite or negative values give 0.
func ceil2(x float64) float64 { return round2(x, math.Ceil, -1e-6) }

func floor2(x float64) float64 { return round2(x, math.Floor, 1e-6) }

func round2(x float64, to func(float64) float64, noise float64) float64 {
	if !num.Finite(x) || x <= 0 {
		return 0
	}
	if x >= 1e15 { // no hundredths left to round
		return to(x)
	}
	if v := to(x*100+noise) / 100; num.Finite(v) && v > 0 {
		return v
	}
	return 0
}
