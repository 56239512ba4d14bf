// Package policy turns a lane's hourly records into the policy file of an
// hour, and answers the retry ledger (Book).
//
// It is pure: no I/O and no clock. The hour comes in as an argument and the
// records as values (store.Hourly: the store's type, never a store), and
// the same input always gives the same File and the same bytes. Its other
// inputs (LaneState, LaneSpec, ClassSpec, Params) are its own; config maps a
// config to them. The rules and the rounding are in docs/policy.md.
package policy

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

// Basis of a policy file.
const (
	BasisLive     = "live"     // ForHour: the hour's own (or previous hour's) record plus history
	BasisForecast = "forecast" // ForecastProbes: same-hour-of-day history alone
)

// Reasons a lane is or is not eligible.
const (
	ReasonOK             = "ok"
	ReasonProbeFailed    = "probe_failed"     // a site's basis holds a failed probe, or no ok one
	ReasonNoRecentSample = "no_recent_sample" // no basis record (live) or no history at this hour (forecast)
	ReasonNeverSampled   = "never_sampled"    // no record of the lane in the input at all
	ReasonQuotaExhausted = "quota_exhausted"  // the lane's quota is spent until Lane.Until
)

// Reasons lists every reason in a stable order.
var Reasons = []string{ReasonOK, ReasonProbeFailed, ReasonNoRecentSample, ReasonNeverSampled, ReasonQuotaExhausted}

// Rules of next_queue_s (Params.Rule): the worst queue over the records
// of the lookback (RuleMax, "" too), or the wait the next attempt stays
// under with probability Params.Coverage, learnt from the lane's probes
// (RuleCalibrated, Calibrator).
const (
	RuleMax         = "max"
	RuleCalibrated  = "calibrated"
	DefaultCoverage = 0.95 // the calibrated rule's coverage when none is set
)

// Rules lists the rules in a stable order.
var Rules = []string{RuleCalibrated, RuleMax}

// Lane kinds.
const (
	KindFree = "free"
	KindPaid = "paid"
)

// LaneState is what a lane's newest probes say, as of the policy's hour:
// the start of the newest probe known before the end of the hour
// (forecast: before the day), and when its quota comes back after a 429 or
// a response that said no requests remain (zero: none, not exhausted).
type LaneState struct {
	Lane                   string
	LastSample, QuotaUntil time.Time
}

// LaneSpec is a configured lane. BasisHours is how many hours before the
// policy's hour a basis record may be: 1 (the default, also for values < 1)
// means the hour itself or the hour before; a lane probed less than hourly
// (a probe budget) gets its probe interval plus an hour.
type LaneSpec struct {
	Name       string
	Kind       string // free | paid
	BasisHours int
}

// ClassSpec is a configured job class.
type ClassSpec struct {
	Name          string
	DeadlineS     float64
	CeilingTokens int
	EstTokens     int
	PaidUSDPer1k  float64
	Coverage      float64 // its own under the calibrated rule; 0: Params.Coverage
	Objective     string  // ObjectiveCost ("" too) or ObjectiveTime
}

// Params is the part of the config a policy depends on.
type Params struct {
	Location     *time.Location // hours are keyed in this zone; nil means UTC
	LookbackDays int            // previous days of the same hour of day; used as given (<0 is 0)
	Lanes        []LaneSpec     // lanes in the file, in this order
	Classes      []ClassSpec    // classes in the file, in this order
	// Rule is RuleMax ("" too) or RuleCalibrated; Coverage is the
	// calibrated rule's (0 < c < 1; anything else: DefaultCoverage), which
	// reads LookbackDays <= 0 as its default, 14.
	Rule     string
	Coverage float64
}

// Calibrated says whether the params select the calibrated rule.
func (p Params) Calibrated() bool { return p.Rule == RuleCalibrated }

// CoverageOr returns the calibrated rule's coverage: p.Coverage when it is
// one (0 < c < 1), else DefaultCoverage.
func (p Params) CoverageOr() float64 {
	if CheckCoverage(p.Coverage) == nil {
		return p.Coverage
	}
	return DefaultCoverage
}

// ClassCoverage returns the coverage class c reads the lanes at: its own
// when it has one, else the policy's.
func (p Params) ClassCoverage(c ClassSpec) float64 {
	if CheckCoverage(c.Coverage) == nil {
		return c.Coverage
	}
	return p.CoverageOr()
}

// File is a policy file (docs/policy.md).
type File struct {
	Hour     string // "2026-11-30T14", wall clock in Timezone
	Timezone string
	Basis    string // live | forecast
	// Rule is RuleCalibrated with the Coverage it aims at, or "" for
	// RuleMax, whose files carry neither key.
	Rule     string
	Coverage float64
	Sites    []string // of the records the figures come from; none when untagged
	Lanes    []Lane
	Classes  []Class
	Records  int // hourly records the figures come from (the header comment)
}

// Lane is a lane's figures for the hour (docs/policy.md): NextQueueS at
// the rule's, TokPerS the lowest decode rate (0: none), Samples and
// Failures summed over the records behind them, LastSample the newest
// probe known, Until when a quota_exhausted lane's quota comes back.
type Lane struct {
	Name       string
	Kind       string
	Eligible   bool
	Reason     string
	NextQueueS float64
	TokPerS    float64
	Samples    int
	Failures   int
	LastSample time.Time
	Until      time.Time

	worst float64 // laneAt's worst-of figure, for classes at other coverages; 0 outside
	// failP is the chance the lane's next attempt fails, from its failure
	// chain (the calibrated rule's live figures; chained says there is one).
	failP   float64
	chained bool
}

// FailShare returns the chance the decisions give the lane's next attempt
// of failing (DecisionInput.FreeFailP): under the calibrated rule its
// failure chain's, (failed + 1) / (followed + 2) over the probes that
// followed one like its newest; otherwise (a forecast, a lane without
// probes) failures over samples.
func (l Lane) FailShare() float64 {
	if l.chained {
		return l.failP
	}
	if l.Samples > 0 {
		return min(float64(max(l.Failures, 0))/float64(l.Samples), 1)
	}
	return 0
}

// Class is a job class for the hour: the lanes a job of it can start on,
// in the order to try them (classesWith), and the ledger policy the class
// gets. Coverage, Objective and Cutover (its decision, Decide) are the
// calibrated rule's: 0, "" and nil otherwise.
type Class struct {
	Name          string
	DeadlineS     float64
	CeilingTokens int
	EstTokens     int
	Coverage      float64
	Objective     string
	Lanes         []string
	Book          BookPolicy
	Cutover       *Cutover
}

// Class returns the class with the given name.
func (f File) Class(name string) (Class, bool) {
	for _, c := range f.Classes {
		if c.Name == name {
			return c, true
		}
	}
	return Class{}, false
}

// NamedClass returns the class with the given name, or an error that names
// the classes the file has.
func (f File) NamedClass(name string) (Class, error) {
	c, ok := f.Class(name)
	switch {
	case ok:
		return c, nil
	case len(f.Classes) == 0:
		return Class{}, fmt.Errorf("class %q: not in the policy file for %s (it has no classes)", name, f.Hour)
	}
	names := make([]string, len(f.Classes))
	for i, c := range f.Classes {
		names[i] = c.Name
	}
	return Class{}, fmt.Errorf("class %q: not in the policy file for %s (classes: %s)", name, f.Hour, strings.Join(names, ", "))
}

// Book returns the ledger policy of the named class, ready for the package
// function Book.
func (f File) Book(class string) (BookPolicy, error) {
	c, err := f.NamedClass(class)
	return c.Book, err
}

// ForHour returns the live policy for the hour holding `hour` (in
// p.Location) as of the instant `hour`, from the records and lane states
// given. Records from after that hour are ignored, so a past hour gives the
// same file whatever came later, and a record with Samples <= 0 counts as
// no record. See LaneAt for the rules.
func ForHour(p Params, recs []store.Hourly, states []LaneState, hour time.Time) File {
	return ForHourProbes(p, recs, nil, states, hour)
}

// ForHourProbes is ForHour with the lanes' probes, which the calibrated rule
// (p.Rule) learns from: those before the end of the hour count, the rest
// are ignored; the worst-of rule ignores them all. The lane figures of the
// calibrated rule are as of the newest probe of the hour (or its start).
func ForHourProbes(p Params, recs []store.Hourly, probes []store.Probe, states []LaneState, hour time.Time) File {
	x := HourHistory(p, recs, hour)
	end := store.HourStart(hour, x.loc).Add(time.Hour)
	if p.Calibrated() {
		for _, pr := range sortedProbes(probes) {
			if pr.Time.Before(end) {
				x.AddProbe(pr)
			}
		}
	}
	return x.ForHour(p, states, hour)
}

// sortedProbes returns probes in time order (probes itself when it is).
func sortedProbes(probes []store.Probe) []store.Probe {
	if slices.IsSortedFunc(probes, cmpProbeTime) {
		return probes
	}
	s := slices.Clone(probes)
	slices.SortStableFunc(s, cmpProbeTime)
	return s
}

func cmpProbeTime(a, b store.Probe) int { return a.Time.Compare(b.Time) }

// ForHour is the package's ForHour over the records (and probes) added to
// x; x must hold no record or probe of a later hour.
func (x *History) ForHour(p Params, states []LaneState, hour time.Time) File {
	h := store.HourStart(hour, x.loc)
	f := File{Hour: store.HourLabel(h, x.loc), Timezone: x.loc.String(), Basis: BasisLive}
	if p.Calibrated() {
		f.Rule, f.Coverage = RuleCalibrated, p.CoverageOr()
	}
	f.Lanes = make([]Lane, 0, len(p.Lanes))
	worst := make([]float64, 0, len(p.Lanes))
	sites := map[string]bool{}
	for _, spec := range p.Lanes {
		l, records := x.laneAt(p, spec, stateOf(states, spec.Name), h, h, hour, sites)
		f.Records += records
		f.Lanes = append(f.Lanes, l)
		worst = append(worst, l.worst)
	}
	f.Sites = siteList(sites)
	f.Classes = classesAt(p, f.Lanes, h, x.calOf(p, f.Lanes), func(i int) float64 { return worst[i] }, &x.waitBuf)
	for i := range f.Lanes {
		f.Lanes[i].worst = 0
	}
	return f
}

// LaneAt returns one lane's figures for the live policy of the hour holding
// `hour`, from the records added to x (which must hold no later hour).
//
// The basis of a lane at one site is its newest record no more than
// spec.BasisHours hours before the hour H (by default: H itself, or H-1
// when H has no samples yet). The lane is:
//   - never_sampled when it has no record and no probe (state.LastSample) at all;
//   - quota_exhausted, with Until, while its quota is spent (state.QuotaUntil
//     after the start of H and after the instant `hour`: a back-off that
//     ended by then no longer counts, docs/policy.md#a-short-429);
//   - no_recent_sample when no site has a basis record;
//   - probe_failed when any site's basis holds a failed probe or no ok one;
//   - eligible (ok) otherwise.
//
// Its figures come from every site's basis record and the records of the
// same wall-clock hour on each of the previous p.LookbackDays days (a day
// a DST change skipped adds none, one that repeated it both). Under the
// calibrated rule next_queue_s is the rule's figure at the instant `hour`
// (or the lane's newest probe, when later), never under the worst queue
// of its basis records (the seed's rule: keep the worst sample of the hour
// you run).
func (x *History) LaneAt(p Params, spec LaneSpec, state LaneState, hour time.Time) Lane {
	l, _ := x.laneAt(p, spec, state, hour, store.HourStart(hour, x.loc), hour, nil)
	l.worst = 0
	return l
}

// laneAt is LaneAt at instant t of the hour starting at h, with the number
// of records the figures come from; it adds the sites of those records to
// sites when that is not nil. The lane's worst holds the worst-of figure.
// now is the instant of the answer: a back-off (state.QuotaUntil) that
// ended by then no longer makes the lane quota_exhausted.
func (x *History) laneAt(p Params, spec LaneSpec, state LaneState, t, h, now time.Time, sites map[string]bool) (Lane, int) {
	lh := x.lanes[spec.Name]
	lt := h.In(x.loc)
	var s stat
	var basesBuf [4]*rec
	bases := basesBuf[:0] // one per site: the newest record with samples
	if lh != nil {
		for back := 0; back <= max(spec.BasisHours, 1); back++ {
			rs := lh.hour(h.Add(-time.Duration(back) * time.Hour).Unix())
			for i := range rs {
				r := &rs[i]
				if r.Samples <= 0 || slices.ContainsFunc(bases, func(b *rec) bool { return b.Site == r.Site }) {
					continue
				}
				bases = append(bases, r)
			}
		}
	}
	for _, b := range bases {
		s.add(b)
		if sites != nil {
			sites[b.Site] = true
		}
	}
	looked := false
	if lh != nil && sites == nil {
		// The memo holds no basis record as long as every basis hour is
		// newer than its newest record; else the records are walked.
		m := x.lookback(lh, p.LookbackDays, h)
		if looked = m.newest < h.Add(-time.Duration(max(spec.BasisHours, 1))*time.Hour).Unix(); looked {
			s.merge(&m.stat)
		}
	}
	if lh != nil && !looked {
		for _, u := range x.lookbackHours(civilOf(lt), lt.Hour(), p.LookbackDays) {
			rs := lh.byHour[u]
		recs:
			for i := range rs {
				r := &rs[i]
				if r.Samples <= 0 {
					continue
				}
				for _, b := range bases {
					if b.Site == r.Site && b.At == r.At {
						continue recs // a basis record of the same hour already counted
					}
				}
				s.add(r)
				if sites != nil {
					sites[r.Site] = true
				}
			}
		}
	}
	l := s.lane(spec)
	l.worst = l.NextQueueS
	if p.Calibrated() {
		l.failP, l.chained = x.failChance(lh, p.LookbackDays)
		l.NextQueueS = calibratedQueue(x.calibrator(lh, p.LookbackDays), t, p.CoverageOr(), l.NextQueueS)
		for _, b := range bases {
			l.NextQueueS = max(l.NextQueueS, min(ceil2(b.WorstQueueS), MaxSeconds))
		}
	}
	ever := lh != nil && lh.ever > 0 || !state.LastSample.IsZero()
	switch {
	case !ever:
		l.Reason = ReasonNeverSampled
	case state.QuotaUntil.After(h) && state.QuotaUntil.After(now):
		l.Reason, l.Until = ReasonQuotaExhausted, state.QuotaUntil.UTC().Truncate(time.Second)
	case len(bases) == 0:
		l.Reason = ReasonNoRecentSample
	default:
		// The seed's rule: a failed probe in a basis record bans the lane;
		// under the calibrated rule only in the hour's own record (or one
		// without an ok probe), an earlier hour's failure being priced.
		l.Reason = ReasonOK
		for _, b := range bases {
			if b.Samples-b.Failures < 1 || b.Failures > 0 && (!p.Calibrated() || b.At == h.Unix()) {
				l.Reason = ReasonProbeFailed
			}
		}
	}
	l.Eligible = l.Reason == ReasonOK
	l.LastSample = wholeSecond(state.LastSample)
	return l, s.records
}

// MaxBasisHours is how many hours before a policy's hour its lanes' basis
// records may be: the largest LaneSpec.BasisHours, at least 1.
func (p Params) MaxBasisHours() int {
	b := 1
	for _, l := range p.Lanes {
		b = max(b, l.BasisHours)
	}
	return b
}

// ReadHours returns the starts of the hours whose records the live policy
// of the hour holding h reads (see History.LaneAt): that hour and the
// MaxBasisHours before it, oldest first, and the same wall-clock hour on
// each of the LookbackDays days before (none on a day a DST change skipped
// it, two on a day that repeated it). A store read for a policy fetches
// these hours and no others.
func (p Params) ReadHours(h time.Time) (basis, lookback []time.Time) {
	loc := store.OrUTC(p.Location)
	h = store.HourStart(h, loc)
	for back := p.MaxBasisHours(); back >= 0; back-- {
		basis = append(basis, h.Add(-time.Duration(back)*time.Hour))
	}
	lt := h.In(loc)
	for _, u := range lookbackHours(nil, loc, civilOf(lt), lt.Hour(), p.LookbackDays) {
		lookback = append(lookback, time.Unix(u, 0).In(loc))
	}
	return basis, lookback
}
