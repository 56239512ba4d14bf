// Package policy turns a lane's hourly queue records into the policy file of an
// hour and answers the retry ledger (Book). It is pure: no I/O and no clock;
// the hour comes in as an argument, the records come in as values, and the
// same input always gives the same File and the same bytes.
//
// Its input types (Record, LaneState, LaneSpec, ClassSpec, Params) are its
// own, so that it depends on neither the store nor the config; cmd/policygen
// maps them. The rules are documented in docs/policy.md.
//
// Numbers in a file: waits are rounded up to 0.01 s and rates down to 0.01
// tok/s, so a file never flatters a lane; every figure derived from them
// (class fit, the book) uses the rounded values a reader sees.
package policy

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/lanewatch/lanewatch/hours"
	"github.com/lanewatch/lanewatch/internal/num"
)

// Basis of a policy file.
const (
	BasisLive     = "live"     // ForHour: the hour's own (or previous hour's) record plus history
	BasisForecast = "forecast" // Forecast: same-hour-of-day history alone
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

// Lane kinds.
const (
	KindFree = "free"
	KindPaid = "paid"
)

// Record is one lane-hour of one site (measurement queue_hourly). A record
// with Samples <= 0 counts as no record.
type Record struct {
	Lane           string
	Kind           string
	Site           string    // "" for a sampler without a site
	Hour           time.Time // start of the hour (in the config's timezone)
	WorstQueueS    float64   // max queue_s of the hour's ok probes
	WorstGenS      float64   // max gen_s of the hour's ok probes
	MinTokPerS     float64   // min decode rate of the hour's ok probes; 0: no decode data
	Samples        int       // probes in the hour, ok or not
	Failures       int       // probes in the hour that were not ok
	WorstCensoredS float64   // longest wait a failed probe of the hour is known to have sat through
}

// LaneState is what a lane's newest probes say, as of the policy's hour.
type LaneState struct {
	Lane string
	// LastSample is the start of the newest probe of the lane known before
	// the end of the hour (forecast: before the day); zero if none.
	LastSample time.Time
	// QuotaUntil is when the lane's quota comes back after a 429 or a
	// response that said no requests remain (zero: not exhausted).
	QuotaUntil time.Time
}

// LaneSpec is a configured lane.
type LaneSpec struct {
	Name string
	Kind string // free | paid
	// BasisHours is how many hours before the policy's hour a basis record
	// may be: 1 (the default, also for values < 1) means the hour itself or
	// the hour before; a lane probed less than hourly (a probe budget) gets
	// its own probe interval plus an hour, so that it keeps a basis between
	// its probes.
	BasisHours int
}

// ClassSpec is a configured job class.
type ClassSpec struct {
	Name          string
	DeadlineS     float64
	CeilingTokens int
	EstTokens     int
	PaidUSDPer1k  float64
}

// Params is the part of the config a policy depends on.
type Params struct {
	Location     *time.Location // hours are keyed in this zone; nil means UTC
	LookbackDays int            // previous days of the same hour of day; used as given (<0 is 0)
	Lanes        []LaneSpec     // lanes in the file, in this order
	Classes      []ClassSpec    // classes in the file, in this order
}

// File is a policy file (docs/policy.md).
type File struct {
	Hour     string // "2026-11-30T14", wall clock in Timezone
	Timezone string
	Basis    string // live | forecast
	// Sites are the sites whose records the figures come from, when any
	// record carries a site (empty otherwise, and not written).
	Sites   []string
	Lanes   []Lane
	Classes []Class
	// Records is how many hourly records (with samples) the figures come from;
	// it is written in the header comment only.
	Records int
}

// Lane is a lane's figures for the hour.
//
// NextQueueS is the worst queue over the set of records: the basis records
// (one per site) and the same hour of day on each of the previous lookback
// days (forecast: those days alone), rounded up to 0.01 s. A record's queue
// is the larger of its worst ok queue and its worst censored wait, so a
// probe that timed out before its first token makes the figure at least
// its timeout. TokPerS is the lowest decode rate over the same set, rounded
// down to 0.01; 0 means no decode data. Samples and Failures are summed over
// the same set: the probes behind NextQueueS. LastSample is the newest
// probe of the lane known before the end of the hour (forecast: before the
// day); zero if none is known. Until is when the quota of a
// quota_exhausted lane comes back (zero otherwise).
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
}

// Class is a job class for the hour: the lanes that are eligible and fit
// (next_queue_s + next_gen_s <= deadline_s; free lanes first, then by name) and
// the ledger policy the class gets.
type Class struct {
	Name          string
	DeadlineS     float64
	CeilingTokens int
	EstTokens     int
	Lanes         []string
	Book          BookPolicy
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

// ClassNames returns the names of the file's classes, in file order.
func (f File) ClassNames() []string {
	names := make([]string, len(f.Classes))
	for i, c := range f.Classes {
		names[i] = c.Name
	}
	return names
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
	return Class{}, fmt.Errorf("class %q: not in the policy file for %s (classes: %s)", name, f.Hour, strings.Join(f.ClassNames(), ", "))
}

// Book returns the ledger policy of the named class, ready for the package
// function Book.
func (f File) Book(class string) (BookPolicy, error) {
	c, err := f.NamedClass(class)
	return c.Book, err
}

// History indexes hourly records by lane, hour and site, so that a lane's
// figures for any hour are a few lookups away. Add replaces the record of
// the same lane, site and hour. It is what ForHour builds from its input,
// and what a replay of the past (policygen backtest) keeps up to date one
// probe at a time. A History is not safe for concurrent use.
type History struct {
	loc   *time.Location
	lanes map[string]*laneHistory
	keys  []lookKeys // the hours a lookback reads, shared by every lane
}

// lookKeys are the hour starts (Unix s) of wall-clock hour hh on each of
// the days days before date d.
type lookKeys struct {
	d    civil
	hh   int
	days int
	keys []int64
}

type laneHistory struct {
	byHour map[int64][]rec // hour start (Unix s) → one record per site
	ever   int             // records with samples
	looks  []lookMemo      // LaneAt's lookback figures, per lookback
	// The hour of the newest Add and its records, where a replay reads
	// its basis from.
	lastKey  int64
	lastRecs []rec
}

// hour returns the lane's records of the hour starting at Unix second k.
func (lh *laneHistory) hour(k int64) []rec {
	if k == lh.lastKey && lh.lastRecs != nil {
		return lh.lastRecs
	}
	return lh.byHour[k]
}

// lookMemo is the lookback part of a lane's figures for one hour: the same
// wall-clock hour on each of the previous days records with samples. Add
// drops it when a record of an earlier hour changes; records of the hour
// itself and later are not part of it. A replay asks for the same lane
// and hour after every probe of that hour, and the lookback records are
// the bulk of the work.
type lookMemo struct {
	hour   int64 // the policy's hour (Unix s)
	days   int   // LookbackDays
	stat   stat
	newest int64 // the newest record in stat (Unix s); MinInt64: none
}

// NewHistory returns an empty History keying hours in loc (nil: UTC).
func NewHistory(loc *time.Location) *History {
	return &History{loc: hours.OrUTC(loc), lanes: map[string]*laneHistory{}}
}

// Add adds r, replacing the record of the same lane, site and hour.
func (x *History) Add(r Record) {
	lh := x.lanes[r.Lane]
	if lh == nil {
		lh = &laneHistory{byHour: map[int64][]rec{}}
		x.lanes[r.Lane] = lh
	}
	k := r.Hour.Unix()
	n := rec{Site: r.Site, At: k, WorstQueueS: r.WorstQueueS, WorstCensoredS: r.WorstCensoredS, MinTokPerS: r.MinTokPerS,
		Samples: r.Samples, Failures: r.Failures}
	lh.looks = slices.DeleteFunc(lh.looks, func(m lookMemo) bool { return k < m.hour })
	rs := lh.hour(k)
	for i := range rs {
		if rs[i].Site == r.Site {
			if rs[i].Samples > 0 {
				lh.ever--
			}
			rs[i] = n
			if n.Samples > 0 {
				lh.ever++
			}
			lh.lastKey, lh.lastRecs = k, rs
			return
		}
	}
	if n.Samples > 0 {
		lh.ever++
	}
	lh.byHour[k] = append(rs, n)
	lh.lastKey, lh.lastRecs = k, lh.byHour[k]
}

// Drop removes the records of hours that start before `before`, so that
// a History kept up to date over a long replay holds only the days its
// policies can still read. The lanes' figures from then on are as if the
// dropped records had never been added.
func (x *History) Drop(before time.Time) {
	cut := before.Unix()
	for _, lh := range x.lanes {
		dropped := false
		for k, rs := range lh.byHour {
			if k >= cut {
				continue
			}
			for i := range rs {
				if rs[i].Samples > 0 {
					lh.ever--
				}
			}
			delete(lh.byHour, k)
			dropped = true
		}
		if dropped {
			lh.looks = lh.looks[:0]
			lh.lastKey, lh.lastRecs = 0, nil
		}
	}
}

// ForHour returns the live policy for the hour holding `hour` (in
// p.Location), from the records and lane states given. Records from after
// that hour are ignored, so a past hour gives the same file whatever came
// later. See LaneAt for the rules.
func ForHour(p Params, recs []Record, states []LaneState, hour time.Time) File {
	loc := hours.OrUTC(p.Location)
	h := hours.Start(hour, loc)
	end := h.Add(time.Hour)
	x := NewHistory(loc)
	for _, r := range recs {
		if r.Hour.Before(end) {
			x.Add(r)
		}
	}
	return x.ForHour(p, states, h)
}

// ForHour is the package's ForHour over the records added to x; x must hold
// no record of a later hour.
func (x *History) ForHour(p Params, states []LaneState, hour time.Time) File {
	h := hours.Start(hour, x.loc)
	f := File{Hour: hours.Label(h, x.loc), Timezone: x.loc.String(), Basis: BasisLive}
	f.Lanes = make([]Lane, 0, len(p.Lanes))
	sites := map[string]bool{}
	for _, spec := range p.Lanes {
		l, records := x.laneAt(p, spec, stateOf(states, spec.Name), h, sites)
		f.Records += records
		f.Lanes = append(f.Lanes, l)
	}
	f.Sites = siteList(sites)
	f.Classes = Classes(p, f.Lanes)
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
//     after the start of H);
//   - no_recent_sample when no site has a basis record;
//   - probe_failed when any site's basis holds a failed probe or no ok one;
//   - eligible (ok) otherwise.
//
// Its figures (see Lane) come from every site's basis record and the records
// of the same wall-clock hour on each of the previous p.LookbackDays days,
// at every site. A day on which a DST change skips that hour adds nothing; a
// day on which it repeats adds both records.
func (x *History) LaneAt(p Params, spec LaneSpec, state LaneState, hour time.Time) Lane {
	l, _ := x.laneAt(p, spec, state, hours.Start(hour, x.loc), nil)
	return l
}

// laneAt is LaneAt at the start h of the hour, with the number of records
// the figures come from; it adds the sites of those records to sites when
// that is not nil.
func (x *History) laneAt(p Params, spec LaneSpec, state LaneState, h time.Time, sites map[string]bool) (Lane, int) {
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
	ever := lh != nil && lh.ever > 0 || !state.LastSample.IsZero()
	switch {
	case !ever:
		l.Reason = ReasonNeverSampled
	case state.QuotaUntil.After(h):
		l.Reason, l.Until = ReasonQuotaExhausted, state.QuotaUntil.UTC().Truncate(time.Second)
	case len(bases) == 0:
		l.Reason = ReasonNoRecentSample
	default:
		l.Reason = ReasonOK
		for _, b := range bases {
			if b.Failures > 0 || b.Samples-b.Failures < 1 {
				l.Reason = ReasonProbeFailed
			}
		}
	}
	l.Eligible = l.Reason == ReasonOK
	l.LastSample = wholeSecond(state.LastSample)
	return l, s.records
}

// lookback returns the lane's lookback figures for hour h over days days,
// from the memo when it holds them.
func (x *History) lookback(lh *laneHistory, days int, h time.Time) *lookMemo {
	u := h.Unix()
	for i := range lh.looks {
		if m := &lh.looks[i]; m.hour == u && m.days == days {
			return m
		}
	}
	m := lookMemo{hour: u, days: days, newest: math.MinInt64}
	lt := h.In(x.loc)
	for _, k := range x.lookbackHours(civilOf(lt), lt.Hour(), days) {
		rs := lh.byHour[k]
		for i := range rs {
			if rs[i].Samples > 0 {
				m.stat.add(&rs[i])
				m.newest = max(m.newest, k)
			}
		}
	}
	// A few memos per lane (a replay asks for two hours in turn, under
	// each lookback it sweeps); the oldest hour makes room.
	if len(lh.looks) < maxLookMemos {
		lh.looks = append(lh.looks, m)
		return &lh.looks[len(lh.looks)-1]
	}
	old := 0
	for i := range lh.looks {
		if lh.looks[i].hour < lh.looks[old].hour {
			old = i
		}
	}
	lh.looks[old] = m
	return &lh.looks[old]
}

// maxLookMemos is how many lookback memos a lane keeps.
const maxLookMemos = 8

// lookbackHours returns the starts (Unix s) of wall-clock hour hh on each
// of the days days before date d: one a day, two on a day that repeats
// the hour, none on a day that skips it. The last few answers are kept:
// every lane of a policy asks the same.
func (x *History) lookbackHours(d civil, hh, days int) []int64 {
	for i := range x.keys {
		if k := &x.keys[i]; k.d == d && k.hh == hh && k.days == days {
			return k.keys
		}
	}
	k := lookKeys{d: d, hh: hh, days: days}
	k.keys = lookbackHours(nil, x.loc, d, hh, days)
	if len(x.keys) < maxLookMemos {
		x.keys = append(x.keys, k)
	} else {
		old := 0
		for i := range x.keys {
			if x.keys[i].d < x.keys[old].d || x.keys[i].d == x.keys[old].d && x.keys[i].hh < x.keys[old].hh {
				old = i
			}
		}
		x.keys[old] = k
	}
	return k.keys
}

// lookbackHours appends to keys the starts (Unix s) of wall-clock hour hh
// in loc on each of the days days before date d.
func lookbackHours(keys []int64, loc *time.Location, d civil, hh, days int) []int64 {
	for back := 1; back <= days; back++ {
		keys = sameHour(keys, loc, addDays(d, -back), hh)
	}
	return keys
}

// sameHour appends to keys the starts (Unix s) of wall-clock hour hh in loc
// on date d: two on a fall-back day, none on a day that skipped it.
func sameHour(keys []int64, loc *time.Location, d civil, hh int) []int64 {
	t := time.Date(int(d/10000), time.Month(d/100%100), int(d%100), hh, 0, 0, 0, loc)
	_, before := t.Add(-time.Hour).Zone()
	_, after := t.Add(time.Hour).Zone()
	_, at := t.Zone()
	if before == at && at == after { // no offset change near t: t is the hour itself
		return append(keys, t.Unix())
	}
	n := len(keys)
	for _, c := range [3]time.Time{t.Add(-time.Hour), t, t.Add(time.Hour)} {
		c = hours.Start(c, loc)
		lt := c.In(loc)
		u := c.Unix()
		if civilOf(lt) == d && lt.Hour() == hh && !slices.Contains(keys[n:], u) {
			keys = append(keys, u)
		}
	}
	return keys
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
	loc := hours.OrUTC(p.Location)
	h = hours.Start(h, loc)
	for back := p.MaxBasisHours(); back >= 0; back-- {
		basis = append(basis, h.Add(-time.Duration(back)*time.Hour))
	}
	lt := h.In(loc)
	for _, u := range lookbackHours(nil, loc, civilOf(lt), lt.Hour(), p.LookbackDays) {
		lookback = append(lookback, time.Unix(u, 0).In(loc))
	}
	return basis, lookback
}

// Forecast returns 24 forecast policies for the day holding `day` (in
// p.Location), one per wall-clock hour 00..23, from the same hour of day on each
// of the previous p.LookbackDays days alone (basis: forecast), at every
// site. A lane is eligible when that history holds at least one ok probe and
// no failed probe; with no history at that hour its reason is
// no_recent_sample; while its quota is spent (state.QuotaUntil after the
// hour's start) it is quota_exhausted. Records from the day itself or later
// are ignored.
func Forecast(p Params, recs []Record, states []LaneState, day time.Time) []File {
	loc := hours.OrUTC(p.Location)
	d := civilOf(day.In(loc))
	x := NewHistory(loc)
	for _, r := range recs {
		if civilOf(r.Hour.In(loc)) < d {
			x.Add(r)
		}
	}
	files := make([]File, 24)
	for hr := range files {
		f := File{
			Hour:     fmt.Sprintf("%04d-%02d-%02dT%02d", d/10000, d/100%100, d%100, hr),
			Timezone: loc.String(),
			Basis:    BasisForecast,
		}
		start := time.Date(int(d/10000), time.Month(d/100%100), int(d%100), hr, 0, 0, 0, loc)
		sites := map[string]bool{}
		f.Lanes = make([]Lane, 0, len(p.Lanes))
		for _, spec := range p.Lanes {
			lh := x.lanes[spec.Name]
			state := stateOf(states, spec.Name)
			var s stat
			if lh != nil {
				for _, u := range x.lookbackHours(d, hr, p.LookbackDays) {
					rs := lh.byHour[u]
					for i := range rs {
						if rs[i].Samples > 0 {
							s.add(&rs[i])
							sites[rs[i].Site] = true
						}
					}
				}
			}
			l := s.lane(spec)
			switch {
			case (lh == nil || lh.ever == 0) && state.LastSample.IsZero():
				l.Reason = ReasonNeverSampled
			case state.QuotaUntil.After(start):
				l.Reason, l.Until = ReasonQuotaExhausted, state.QuotaUntil.UTC().Truncate(time.Second)
			case s.records == 0:
				l.Reason = ReasonNoRecentSample
			case s.failures > 0 || s.samples-s.failures < 1:
				l.Reason = ReasonProbeFailed
			default:
				l.Reason = ReasonOK
			}
			l.Eligible = l.Reason == ReasonOK
			l.LastSample = wholeSecond(state.LastSample)
			f.Records += s.records
			f.Lanes = append(f.Lanes, l)
		}
		f.Sites = siteList(sites)
		f.Classes = Classes(p, f.Lanes)
		files[hr] = f
	}
	return files
}

func stateOf(states []LaneState, lane string) LaneState {
	for _, s := range states {
		if s.Lane == lane {
			return s
		}
	}
	return LaneState{Lane: lane}
}

// siteList returns the sites to name in a file: none when every record is
// of the untagged site.
func siteList(sites map[string]bool) []string {
	if len(sites) == 0 || (len(sites) == 1 && sites[""]) {
		return nil
	}
	out := make([]string, 0, len(sites))
	for s := range sites {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// rec is what the rules read of a Record: 64 bytes, so that a lane's
// records of a week stay close in memory.
type rec struct {
	Site                                    string
	At                                      int64 // the hour's start, Unix s
	WorstQueueS, WorstCensoredS, MinTokPerS float64
	Samples, Failures                       int
}

// civil is a calendar date as yyyymmdd, so that dates compare as integers.
type civil int

func civilOf(t time.Time) civil {
	y, m, d := t.Date()
	return civil(y*10000 + int(m)*100 + d)
}

// addDays returns the date n days after d.
func addDays(d civil, n int) civil {
	return civilOf(time.Date(int(d/10000), time.Month(d/100%100), int(d%100)+n, 12, 0, 0, 0, time.UTC))
}

func wholeSecond(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Second) // a file holds whole seconds
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

// NextGenS returns next_gen_s of a lane that decodes tokPerS (its
// tok_per_s) for est tokens, rounded up to 0.01 s, and whether it is known:
// a lane without decode data, or with a rate too low to ever finish, has
// none unless est is 0. A class lists an eligible lane with samples when
// its next_queue_s + next_gen_s is within the deadline.
func NextGenS(tokPerS float64, est int) (float64, bool) {
	if est <= 0 {
		return 0, true
	}
	// The rate a reader sees (rounded down), so that a file's next_gen_s
	// is est_tokens / tok_per_s of that file, never less.
	g := float64(est) / tokPerS
	if tokPerS <= 0 || !num.Finite(g) {
		return 0, false // no decode data, or a rate too low to ever finish
	}
	return ceil2(g), true
}

// Classes returns the classes of a file from its lanes' figures (as
// History.LaneAt returns them, in p.Lanes order): what ForHour writes for
// them. A replay that keeps the lanes' figures up to date builds the policy
// in force without recomputing them.
//
// A class lists the eligible lanes with samples whose next_queue_s +
// next_gen_s fits its deadline, free ones first, then by name. Its book:
// the free lane is the eligible free lane with the smallest next_queue_s +
// next_gen_s (ties: by name); if no free lane is eligible, the same choice
// among the free lanes with samples, and free_eligible is false. The paid
// lane is chosen the same way among paid lanes. A lane without decode data
// (tok_per_s 0) cannot be chosen. next_gen_s is the larger next_gen_s of
// the chosen eligible lanes (of the chosen lanes if neither is eligible),
// so that both ledger checks that use it are on the safe side.
func Classes(p Params, lanes []Lane) []Class {
	// The order a class lists its lanes in: free first, then by name.
	order := make([]int, len(lanes))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(boolInt(lanes[a].Kind != KindFree), boolInt(lanes[b].Kind != KindFree)),
			cmp.Compare(lanes[a].Name, lanes[b].Name))
	})
	type cand struct {
		name     string
		kind     string
		q, g     float64
		eligible bool
		ok       bool // the lane has samples and a next_gen_s for the class
	}
	cands := make([]cand, len(lanes))
	listed := make([]string, 0, len(lanes)*len(p.Classes)) // every class's Lanes, back to back
	classes := make([]Class, 0, len(p.Classes))
	for _, cs := range p.Classes {
		c := Class{
			Name:          cs.Name,
			DeadlineS:     cs.DeadlineS,
			CeilingTokens: cs.CeilingTokens,
			EstTokens:     cs.EstTokens,
		}
		for i := range lanes {
			l := &lanes[i]
			g, ok := NextGenS(l.TokPerS, cs.EstTokens)
			cands[i] = cand{l.Name, l.Kind, l.NextQueueS, g, l.Eligible, ok && l.Samples > 0}
		}
		first := len(listed)
		for _, i := range order {
			if x := &cands[i]; x.ok && x.eligible && x.q+x.g <= cs.DeadlineS {
				listed = append(listed, x.name)
			}
		}
		c.Lanes = listed[first:len(listed):len(listed)]
		choose := func(kind string) (cand, bool) {
			var best cand
			found := false
			for _, eligibleOnly := range []bool{true, false} {
				for _, x := range cands {
					if !x.ok || x.kind != kind || (eligibleOnly && !x.eligible) {
						continue
					}
					if !found || x.q+x.g < best.q+best.g || (x.q+x.g == best.q+best.g && x.name < best.name) {
						best, found = x, true
					}
				}
				if found {
					break
				}
			}
			return best, found
		}
		b := BookPolicy{
			DeadlineS:     cs.DeadlineS,
			CeilingTokens: cs.CeilingTokens,
			NextEstTokens: cs.EstTokens,
			PaidUSDPer1k:  cs.PaidUSDPer1k,
		}
		fl, okF := choose(KindFree)
		pl, okP := choose(KindPaid)
		if okF {
			b.FreeLane, b.NextQueueS, b.FreeEligible = fl.name, fl.q, fl.eligible
		}
		if okP {
			b.PaidLane, b.PaidQueueS, b.PaidEligible = pl.name, pl.q, pl.eligible
		}
		switch {
		case b.FreeEligible || b.PaidEligible:
			if b.FreeEligible {
				b.NextGenS = fl.g
			}
			if b.PaidEligible {
				b.NextGenS = max(b.NextGenS, pl.g)
			}
		default:
			if okF {
				b.NextGenS = fl.g
			}
			if okP {
				b.NextGenS = max(b.NextGenS, pl.g)
			}
		}
		c.Book = b
		classes = append(classes, c)
	}
	return classes
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ceil2 rounds a wait up to the next 0.01 (clock noise under 10 ns does not
// count), so that a policy file never under-states it. Non-finite or negative
// values give 0.
func ceil2(x float64) float64 {
	if !num.Finite(x) || x <= 0 {
		return 0
	}
	if x >= 1e15 { // no hundredths left to round
		return math.Ceil(x)
	}
	v := math.Ceil(x*100-1e-6) / 100
	if !num.Finite(v) || v <= 0 {
		return 0
	}
	return v
}

// floor2 rounds a rate down to 0.01, the safe side for a rate.
func floor2(x float64) float64 {
	if !num.Finite(x) || x <= 0 {
		return 0
	}
	if x >= 1e15 {
		return math.Floor(x)
	}
	v := math.Floor(x*100+1e-6) / 100
	if !num.Finite(v) || v <= 0 {
		return 0
	}
	return v
}
