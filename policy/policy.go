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

// Rules of next_queue_s (Params.Rule; docs/policy.md).
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

// LaneState is what a lane's newest probes say as of the policy's hour:
// its newest probe's start, and when its quota comes back (zero: not
// exhausted).
type LaneState struct {
	Lane                   string
	LastSample, QuotaUntil time.Time
}

// LaneSpec is a configured lane. BasisHours is how many hours before the
// policy's hour a basis record may be (< 1: 1).
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
	// calibrated rule's (0 < c < 1; anything else: DefaultCoverage).
	Rule     string
	Coverage float64
}

// Calibrated says whether the params select the calibrated rule.
func (p Params) Calibrated() bool { return p.Rule == RuleCalibrated }

// CoverageOr returns p.Coverage when it is one, else DefaultCoverage.
func (p Params) CoverageOr() float64 {
	if CheckCoverage(p.Coverage) == nil {
		return p.Coverage
	}
	return DefaultCoverage
}

// ClassCoverage returns c's own coverage when it has one, else the policy's.
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
	Rule     string // RuleCalibrated, or "" for RuleMax (no rule or coverage key)
	Coverage float64
	Sites    []string // of the records the figures come from; none when untagged
	Lanes    []Lane
	Classes  []Class
	Records  int // hourly records the figures come from (the header comment)
}

// Lane is a lane's figures for the hour (docs/policy.md).
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

	worst   float64 // laneAt's worst-of figure, for classes at other coverages; 0 outside
	failP   float64 // the failure chain's chance the next attempt fails, when chained
	chained bool
}

// FailShare returns the chance the decisions give the lane's next attempt
// of failing: its failure chain's (failChance), else failures over samples.
func (l Lane) FailShare() float64 {
	if l.chained {
		return l.failP
	}
	if l.Samples > 0 {
		return min(float64(max(l.Failures, 0))/float64(l.Samples), 1)
	}
	return 0
}

// Class is a job class for the hour: the lanes to try, in order, and its
// ledger policy. Coverage, Objective and Cutover are the calibrated rule's.
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
	if i := slices.IndexFunc(f.Classes, func(c Class) bool { return c.Name == name }); i >= 0 {
		return f.Classes[i], true
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

// Book returns the ledger policy of the named class.
func (f File) Book(class string) (BookPolicy, error) {
	c, err := f.NamedClass(class)
	return c.Book, err
}

// ForHour returns the live policy for the hour holding `hour` (in
// p.Location) as of the instant `hour`; later records are ignored.
func ForHour(p Params, recs []store.Hourly, states []LaneState, hour time.Time) File {
	return ForHourProbes(p, recs, nil, states, hour)
}

// ForHourProbes is ForHour with the lanes' probes before the hour's end,
// which the calibrated rule learns from.
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
// `hour`, from the records added to x (which must hold no later hour). The
// basis, reasons and figures are docs/policy.md's.
func (x *History) LaneAt(p Params, spec LaneSpec, state LaneState, hour time.Time) Lane {
	l, _ := x.laneAt(p, spec, state, hour, store.HourStart(hour, x.loc), hour, nil)
	l.worst = 0
	return l
}

// laneAt is LaneAt at instant t of the hour starting at h, answered at now,
// with the number of records behind it; it adds their sites to sites when
// that is not nil.
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
		// The memo holds no basis record when every basis hour is newer.
		m := x.lookback(lh, p.LookbackDays, h)
		if looked = m.newest < h.Add(-time.Duration(max(spec.BasisHours, 1))*time.Hour).Unix(); looked {
			s.merge(&m.stat)
		}
	}
	if lh != nil && !looked {
		for r := range x.lookbackRecs(lh, civilOf(lt), lt.Hour(), p.LookbackDays) {
			if slices.ContainsFunc(bases, func(b *rec) bool { return b.Site == r.Site && b.At == r.At }) {
				continue // a basis record already counted
			}
			s.add(r)
			if sites != nil {
				sites[r.Site] = true
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
	failed := slices.ContainsFunc(bases, func(b *rec) bool {
		return b.Samples-b.Failures < 1 || b.Failures > 0 && (!p.Calibrated() || b.At == h.Unix())
	})
	l.setReason(lh, state, state.QuotaUntil.After(h) && state.QuotaUntil.After(now), len(bases) == 0, failed)
	return l, s.records
}

// MaxBasisHours is the largest LaneSpec.BasisHours, at least 1.
func (p Params) MaxBasisHours() int {
	b := 1
	for _, l := range p.Lanes {
		b = max(b, l.BasisHours)
	}
	return b
}

// ReadHours returns the starts of the hours whose records the live policy
// of the hour holding h reads: that hour and the MaxBasisHours before it,
// oldest first, and the same wall-clock hour of each lookback day.
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
