// Package policy turns a lane's hourly queue records into the policy file of an
// hour and answers the retry ledger (Book). It is pure: no I/O and no clock;
// the hour comes in as an argument, the records come in as values, and the
// same input always gives the same File and the same bytes.
//
// Its input types (Record, LaneSpec, ClassSpec, Params) are its own, so that it
// depends on neither the store nor the config; cmd/policygen maps them.
//
// Numbers in a file: waits are rounded up to 0.01 s and rates down to 0.01
// tok/s, so a file never flatters a lane; every figure derived from them
// (class fit, the book) uses the rounded values a reader sees. Beyond the
// shape in DESIGN.md a class's book carries paid_eligible (a paid lane that is
// not eligible is never a cut_over), free_lane and paid_lane (the lanes behind
// next_queue_s and paid_queue_s); a lane's last_sample is null when unknown.
package policy

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/lanewatch/lanewatch/hours"
)

// Basis of a policy file.
const (
	BasisLive     = "live"     // ForHour: the hour's own (or previous hour's) record plus history
	BasisForecast = "forecast" // Forecast: same-hour-of-day history alone
)

// Reasons a lane is or is not eligible.
const (
	ReasonOK             = "ok"
	ReasonProbeFailed    = "probe_failed"     // the basis holds a failed probe, or no ok one
	ReasonNoRecentSample = "no_recent_sample" // no basis record (live) or no history at this hour (forecast)
	ReasonNeverSampled   = "never_sampled"    // no record of the lane in the input at all
)

// Lane kinds.
const (
	KindFree = "free"
	KindPaid = "paid"
)

// Record is one lane-hour of the store (measurement queue_hourly) plus the time
// of the hour's last probe. A record with Samples <= 0 counts as no record.
type Record struct {
	Lane        string
	Kind        string
	Hour        time.Time // start of the hour (in the config's timezone)
	WorstQueueS float64   // max queue_s of the hour's ok probes
	WorstGenS   float64   // max gen_s of the hour's ok probes
	MinTokPerS  float64   // min decode rate of the hour's ok probes; 0: no decode data
	Samples     int       // probes in the hour, ok or not
	Failures    int       // probes in the hour that were not ok
	LastSample  time.Time // start of the hour's last probe; zero if unknown
}

// LaneSpec is a configured lane.
type LaneSpec struct {
	Name string
	Kind string // free | paid
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

// File is a policy file (DESIGN.md, "Policy for an hour").
type File struct {
	Hour     string // "2026-11-30T14", wall clock in Timezone
	Timezone string
	Basis    string // live | forecast
	Lanes    []Lane
	Classes  []Class
	// Records is how many hourly records (with samples) the figures come from;
	// it is written in the header comment only.
	Records int
}

// Lane is a lane's figures for the hour.
//
// NextQueueS is the worst queue over the set of records: the basis record and
// the same hour of day on each of the previous lookback days (forecast: those
// days alone), rounded up to 0.01 s. TokPerS is the lowest decode rate over the
// same set, rounded down to 0.01; 0 means no decode data. Samples and Failures
// are summed over the same set: the probes behind NextQueueS. LastSample is the
// newest probe of the lane known before the end of the hour (forecast: before
// the day); zero if none is known.
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

// Book returns the ledger policy of the named class, ready for the package
// function Book.
func (f File) Book(class string) (BookPolicy, error) {
	c, ok := f.Class(class)
	if !ok {
		return BookPolicy{}, fmt.Errorf("class %q: not in the policy file for %s", class, f.Hour)
	}
	return c.Book, nil
}

// ForHour returns the live policy for the hour holding `hour` (in p.Location).
//
// The basis record of a lane is its record of that hour H, or if H has no
// samples yet, its record of H-1; with neither the lane is not eligible
// (no_recent_sample, or never_sampled when the lane has no record in recs at
// all). A lane is eligible when its basis record holds at least one ok probe and
// no failed probe (else probe_failed). The lane's figures (see Lane) come from
// the basis record and the records of the same wall-clock hour on each of the
// previous p.LookbackDays days. A day on which a DST change skips that hour adds
// nothing; a day on which it repeats adds both records. Records from after H
// are ignored, so a past hour gives the same file whatever came later.
func ForHour(p Params, recs []Record, hour time.Time) File {
	loc := orUTC(p.Location)
	h := hours.Start(hour, loc)
	end := h.Add(time.Hour)
	lt := h.In(loc)
	days := pastDays(civilOf(lt), p.LookbackDays)
	hist := index(recs, loc, func(r *rec) bool { return r.Hour.Before(end) })

	f := File{Hour: hours.Label(h, loc), Timezone: loc.String(), Basis: BasisLive}
	calcs := make([]laneCalc, 0, len(p.Lanes))
	for _, spec := range p.Lanes {
		lr := hist[spec.Name]
		var s stat
		var basis *rec
		for i := range lr {
			if lr[i].Hour.Equal(h) {
				basis = &lr[i]
			}
		}
		if basis == nil {
			prev := h.Add(-time.Hour)
			for i := range lr {
				if lr[i].Hour.Equal(prev) {
					basis = &lr[i]
				}
			}
		}
		if basis != nil {
			s.add(basis)
		}
		for i := range lr {
			r := &lr[i]
			if r != basis && r.hour == lt.Hour() && days[r.day] {
				s.add(r)
			}
		}
		l := s.lane(spec)
		if basis == nil {
			l.Eligible, l.Reason = eligibility(len(lr) > 0, false, 0, 0)
		} else {
			l.Eligible, l.Reason = eligibility(true, true, basis.Samples, basis.Failures)
		}
		l.LastSample = newest(lr)
		f.Records += s.records
		calcs = append(calcs, laneCalc{Lane: l, rawTok: s.tok})
	}
	f.Lanes, f.Classes = finish(p, calcs)
	return f
}

// Forecast returns 24 forecast policies for the day holding `day` (in
// p.Location), one per wall-clock hour 00..23, from the same hour of day on each
// of the previous p.LookbackDays days alone (basis: forecast). A lane is
// eligible when that history holds at least one ok probe and no failed probe;
// with no history at that hour its reason is no_recent_sample. Records from the
// day itself or later are ignored.
func Forecast(p Params, recs []Record, day time.Time) []File {
	loc := orUTC(p.Location)
	d := civilOf(day.In(loc))
	days := pastDays(d, p.LookbackDays)
	hist := index(recs, loc, func(r *rec) bool { return r.day < d })

	files := make([]File, 24)
	for hr := range files {
		f := File{
			Hour:     fmt.Sprintf("%04d-%02d-%02dT%02d", d/10000, d/100%100, d%100, hr),
			Timezone: loc.String(),
			Basis:    BasisForecast,
		}
		calcs := make([]laneCalc, 0, len(p.Lanes))
		for _, spec := range p.Lanes {
			lr := hist[spec.Name]
			var s stat
			for i := range lr {
				if lr[i].hour == hr && days[lr[i].day] {
					s.add(&lr[i])
				}
			}
			l := s.lane(spec)
			l.Eligible, l.Reason = eligibility(len(lr) > 0, s.records > 0, s.samples, s.failures)
			l.LastSample = newest(lr)
			f.Records += s.records
			calcs = append(calcs, laneCalc{Lane: l, rawTok: s.tok})
		}
		f.Lanes, f.Classes = finish(p, calcs)
		files[hr] = f
	}
	return files
}

// eligibility is the one rule for a lane's basis: eligible when it holds at
// least one ok probe and no failed one; otherwise the reason says why.
func eligibility(everSampled, hasBasis bool, samples, failures int) (bool, string) {
	switch {
	case !everSampled:
		return false, ReasonNeverSampled
	case !hasBasis:
		return false, ReasonNoRecentSample
	case failures > 0 || samples-failures < 1:
		return false, ReasonProbeFailed
	}
	return true, ReasonOK
}

// rec is a Record with its wall-clock day and hour in the policy's zone.
type rec struct {
	Record
	day  civil
	hour int
}

// civil is a calendar date as yyyymmdd, so that dates compare as integers.
type civil int

func civilOf(t time.Time) civil {
	y, m, d := t.Date()
	return civil(y*10000 + int(m)*100 + d)
}

// pastDays returns the n calendar days before d.
func pastDays(d civil, n int) map[civil]bool {
	out := make(map[civil]bool, max(n, 0))
	for k := 1; k <= n; k++ {
		t := time.Date(int(d/10000), time.Month(d/100%100), int(d%100)-k, 12, 0, 0, 0, time.UTC)
		out[civilOf(t)] = true
	}
	return out
}

// index groups the records with samples that pass keep by lane, one per hour
// (a later record of the same lane and hour replaces an earlier one).
func index(recs []Record, loc *time.Location, keep func(*rec) bool) map[string][]rec {
	type key struct {
		lane string
		hour int64
	}
	pos := make(map[key]int, len(recs))
	out := make(map[string][]rec)
	for _, r := range recs {
		lt := r.Hour.In(loc)
		x := rec{Record: r, day: civilOf(lt), hour: lt.Hour()}
		if !keep(&x) {
			continue
		}
		k := key{r.Lane, r.Hour.Unix()}
		if i, ok := pos[k]; ok {
			out[r.Lane][i] = x
			continue
		}
		pos[k] = len(out[r.Lane])
		out[r.Lane] = append(out[r.Lane], x)
	}
	// Drop records without samples only now, so that they still replace.
	for lane, lr := range out {
		lr = slices.DeleteFunc(lr, func(r rec) bool { return r.Samples <= 0 })
		if len(lr) == 0 {
			delete(out, lane)
			continue
		}
		out[lane] = lr
	}
	return out
}

func newest(lr []rec) time.Time {
	var t time.Time
	for i := range lr {
		if lr[i].LastSample.After(t) {
			t = lr[i].LastSample
		}
	}
	return t.UTC().Truncate(time.Second) // a file holds whole seconds
}

// stat accumulates a lane's set of records.
type stat struct {
	queue             float64 // worst queue
	tok               float64 // lowest decode rate > 0; 0: none
	samples, failures int
	records           int
}

func (s *stat) add(r *rec) {
	s.records++
	s.samples += r.Samples
	s.failures += max(r.Failures, 0)
	if finite(r.WorstQueueS) && r.WorstQueueS > s.queue {
		s.queue = r.WorstQueueS
	}
	if finite(r.MinTokPerS) && r.MinTokPerS > 0 && (s.tok == 0 || r.MinTokPerS < s.tok) {
		s.tok = r.MinTokPerS
	}
}

func (s *stat) lane(spec LaneSpec) Lane {
	return Lane{
		Name:       spec.Name,
		Kind:       spec.Kind,
		NextQueueS: ceil2(s.queue),
		TokPerS:    floor2(s.tok),
		Samples:    s.samples,
		Failures:   s.failures,
	}
}

type laneCalc struct {
	Lane
	rawTok float64
}

// gen returns next_gen_s for est tokens, rounded up to 0.01 s, and whether it
// is known (a lane without decode data has no next_gen_s unless est is 0).
func (c *laneCalc) gen(est int) (float64, bool) {
	if est <= 0 {
		return 0, true
	}
	g := float64(est) / c.rawTok
	if c.rawTok <= 0 || !finite(g) {
		return 0, false // no decode data, or a rate too low to ever finish
	}
	return ceil2(g), true
}

// finish builds the lanes and classes of a file from the lanes' figures.
//
// The book of a class: the free lane is the eligible free lane with the
// smallest next_queue_s + next_gen_s (ties: by name); if no free lane is
// eligible, the same choice among the free lanes with samples, and
// free_eligible is false. The paid lane is chosen the same way among paid
// lanes. A lane without decode data (tok_per_s 0) cannot be chosen. next_gen_s
// is the larger next_gen_s of the chosen eligible lanes (of the chosen lanes if
// neither is eligible), so that both ledger checks that use it are on the safe
// side.
func finish(p Params, calcs []laneCalc) ([]Lane, []Class) {
	lanes := make([]Lane, len(calcs))
	for i := range calcs {
		lanes[i] = calcs[i].Lane
	}
	classes := make([]Class, 0, len(p.Classes))
	for _, cs := range p.Classes {
		c := Class{
			Name:          cs.Name,
			DeadlineS:     cs.DeadlineS,
			CeilingTokens: cs.CeilingTokens,
			EstTokens:     cs.EstTokens,
			Lanes:         []string{},
		}
		type cand struct {
			name     string
			kind     string
			q, g     float64
			eligible bool
		}
		var fits, cands []cand
		for i := range calcs {
			l := &calcs[i]
			g, ok := l.gen(cs.EstTokens)
			if !ok || l.Samples <= 0 {
				continue
			}
			x := cand{l.Name, l.Kind, l.NextQueueS, g, l.Eligible}
			cands = append(cands, x)
			if l.Eligible && x.q+x.g <= cs.DeadlineS {
				fits = append(fits, x)
			}
		}
		slices.SortFunc(fits, func(a, b cand) int {
			return cmp.Or(cmp.Compare(boolInt(a.kind != KindFree), boolInt(b.kind != KindFree)), cmp.Compare(a.name, b.name))
		})
		for _, x := range fits {
			c.Lanes = append(c.Lanes, x.name)
		}
		choose := func(kind string) (cand, bool) {
			var best cand
			found := false
			for _, eligibleOnly := range []bool{true, false} {
				for _, x := range cands {
					if x.kind != kind || (eligibleOnly && !x.eligible) {
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
	return lanes, classes
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
	if !finite(x) || x <= 0 {
		return 0
	}
	if x >= 1e15 { // no hundredths left to round
		return math.Ceil(x)
	}
	v := math.Ceil(x*100-1e-6) / 100
	if !finite(v) || v <= 0 {
		return 0
	}
	return v
}

// floor2 rounds a rate down to 0.01, the safe side for a rate.
func floor2(x float64) float64 {
	if !finite(x) || x <= 0 {
		return 0
	}
	if x >= 1e15 {
		return math.Floor(x)
	}
	v := math.Floor(x*100+1e-6) / 100
	if !finite(v) || v <= 0 {
		return 0
	}
	return v
}

func orUTC(loc *time.Location) *time.Location {
	if loc == nil {
		return time.UTC
	}
	return loc
}
