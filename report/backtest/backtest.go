// Package backtest replays a stored lane history against the live policy
// and reports how well it predicted: calibration (did the next attempt wait
// at most next_queue_s) and a decision replay of jobs under retry
// strategies.
//
// The replay (Backtest) is pure, with no I/O and no clock: probes come in
// one at a time, in time order, and the report comes out at the end. Read
// feeds it from a store; WriteTable, WriteCSV and WriteJSON render the
// report. What it scores and the world its jobs run in: docs/backtest.md.
package backtest

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/sampler/budget"
	"github.com/lanewatch/lanewatch/store"
)

const (
	// ArrivalLead is how long before each probe of the naive lane a job
	// arrives.
	ArrivalLead = time.Minute
	// Lookahead is how far after an attempt's start the probe it meets may be.
	Lookahead = time.Hour
	// MinAttemptS is the least time a failed attempt takes, so that retries
	// "at once" move forward.
	MinAttemptS = 1.0
	// MaxLookbackDays bounds each lookback (as the config does).
	MaxLookbackDays = 366
	// MaxLookbacks and MaxCoverages bound how many lookbacks and coverages
	// one run scores.
	MaxLookbacks = 16
	MaxCoverages = 16
	// HeldBusy429 is Options.Busy429S for a 429 that is a failure and whose
	// back-off holds for the rest of the hour.
	HeldBusy429 = -1

	// prunePeriod is how often the history drops the records no policy can
	// read any more.
	prunePeriod = 24 * time.Hour
	// maxHorizon caps how long a job may wait for its probes to arrive.
	maxHorizon = 400 * 24 * time.Hour
)

// Strategy names, in report order.
const (
	StrategyNaive     = "naive"
	StrategyPaid      = "paid"
	StrategyLanewatch = "lanewatch"
)

// Strategies lists the strategies in report order.
var Strategies = []string{StrategyNaive, StrategyPaid, StrategyLanewatch}

// Options configure a backtest.
type Options struct {
	// Params are the policy parameters; calibration replaces LookbackDays
	// with each of Lookbacks.
	Params policy.Params
	// Lookbacks, Rules and Coverages are the calibrations to score,
	// sorted, duplicates dropped; empty: Params'. One rule also sets the
	// decisions'.
	Lookbacks []int
	Rules     []string
	Coverages []float64
	// From and To bound the scored window [From, To); probes before From
	// are warm-up, probes from To on are ignored.
	From, To time.Time
	// WarmupDays > 0: a lane's probe is scored once its hour is that many
	// days after the lane's first probe read. 0: each lookback's own.
	WarmupDays int
	// Truth gives a probe's true lognormal queue, for the oracle.
	Truth func(p *store.Probe) (median, sigma float64, ok bool)
	// Fallbacks and Deadlines (seconds) ask for the baselines, TuneDays
	// with Fallbacks the tuned ones (docs/backtest.md#baselines).
	Fallbacks, Deadlines []float64
	TuneDays             int
	// Busy429S picks the rule for a short 429 (docs/policy.md#a-short-429):
	// 0 the live one, S > 0 with S in place of store.BusyMaxS, or HeldBusy429.
	Busy429S float64
}

// entry is one calibration a run scores.
type entry struct {
	rule     string
	lookback int
	coverage float64 // 0 for max
	warmup   int     // days
}

// extended says whether the report has the extended shape (a rule per
// calibration, kinds, coverage_all).
func (o Options) extended() bool {
	return slices.Contains(o.rules(), policy.RuleCalibrated) || len(o.Coverages) > 0 || o.WarmupDays > 0 || o.Truth != nil
}

// rules returns the rules to score, in policy.Rules order ("" is max).
func (o Options) rules() []string {
	rs := o.Rules
	if len(rs) == 0 {
		rs = []string{o.Params.Rule}
	}
	return slices.DeleteFunc(slices.Clone(policy.Rules), func(r string) bool {
		asked := slices.Contains(rs, r) || r == policy.RuleMax && slices.Contains(rs, "")
		return !asked
	})
}

// ReadFrom returns the earliest probe the backtest needs: the warm-up
// before From that the largest lookback and basis read (the same hour of
// day that many days before, the basis hours before it and an hour for
// DST). The calibrated rule reads twice its lookback, as policygen -hour
// does: its margin's older residuals need the profile of the window
// before them.
func (o Options) ReadFrom() time.Time {
	loc := store.OrUTC(o.Params.Location)
	lb := max(o.Params.LookbackDays, o.WarmupDays)
	for _, k := range o.Lookbacks {
		lb = max(lb, k)
	}
	if o.Params.Calibrated() || slices.Contains(o.rules(), policy.RuleCalibrated) {
		lb *= 2
	}
	if o.tuned() {
		lb = max(lb, o.TuneDays+1) // the tuning jobs, a day before the first for their probes' lookahead
	}
	lb = min(max(lb, 0), MaxLookbackDays)
	f := store.HourStart(o.From, loc).In(loc)
	t := time.Date(f.Year(), f.Month(), f.Day()-lb, f.Hour(), 0, 0, 0, loc)
	return t.Add(-time.Duration(o.Params.MaxBasisHours()+1) * time.Hour)
}

func (o Options) tuned() bool { return o.TuneDays > 0 && len(o.Fallbacks) > 0 }

// Backtest is one replay. Feed it every probe from Options.ReadFrom to
// Options.To in time order with Add, then call Report.
type Backtest struct {
	opts     Options
	loc      *time.Location
	entries  []entry
	extended bool
	probes   bool            // the calibrated rule is scored or decides: the history keeps probes
	oracle   []oracleObs     // with Truth: the scored probes' truths
	params   []policy.Params // one per entry, then the config's for the decisions
	decide   int             // index in params of the decisions'
	hist     *policy.History
	epoch    int64 // bumped when the history drops old hours: every lane's figures are taken anew
	lanes    map[string]*lane
	order    []*lane // config order
	naive    *lane
	paid     *lane
	clock    *lane         // jobs arrive before its probes: naive, else the first lane
	horizon  time.Duration // the largest deadline + Lookahead

	pending fifo[store.Probe] // added, not yet applied
	created fifo[*job]        // arrived, policy not yet taken
	waiting fifo[*job]        // policy taken, outcome not yet known
	latest  time.Time         // newest probe added

	keep      time.Duration // how far back a policy reads
	nextPrune time.Time

	cells    [][]cell // [entry][lane*24 + hour of day]
	read     int
	ignored  int
	finished bool

	hourNow hourSpan      // the hour of the last instant asked about
	figs    []policy.Lane // evaluate's scratch
	rep     *replays
	scratch []store.Probe // records' scratch

	pruneEvery time.Duration // prunePeriod; tests shorten it
	// Test hooks: each score of a probe, and each probe applied.
	onEntryScore func(p *store.Probe, entry int, l *policy.Lane)
	onApply      func(p *store.Probe, r store.Hourly)
}

// lane is a configured lane's running state.
type lane struct {
	idx     int
	spec    policy.LaneSpec
	last    time.Time // newest applied probe, any site
	sites   []*siteHour
	first   time.Time // the hour of the lane's first probe applied; zero: none yet
	tl      timeline
	version int64     // bumped by each probe applied
	figs    []figures // per params
}

// figures are a lane's figures of one hour, valid while neither the lane
// (version) nor the history (epoch) changed: a probe scored and a job
// taking the policy between two probes of the lane share them.
type figures struct {
	ok             bool
	hour           int64
	version, epoch int64
	until          time.Time // the state's QuotaUntil the figures were taken with
	lane           policy.Lane
}

// siteHour is the current hour of one lane at one site: its probes so far,
// and the back-off its newest probe asks for.
type siteHour struct {
	site    string
	hour    time.Time
	probes  []store.Probe
	backoff time.Time
}

// New validates the options and returns an empty backtest.
func New(opts Options) (*Backtest, error) {
	if len(opts.Params.Lanes) == 0 {
		return nil, errors.New("no lanes configured")
	}
	if !opts.From.Before(opts.To) {
		return nil, fmt.Errorf("empty window [%s, %s)", opts.From.Format(time.RFC3339), opts.To.Format(time.RFC3339))
	}
	lbs, err := sweep("lookbacks", opts.Lookbacks, MaxLookbacks, func(k int) error {
		if k < 0 || k > MaxLookbackDays {
			return fmt.Errorf("lookback %d: want 0..%d days", k, MaxLookbackDays)
		}
		return nil
	}, opts.Params.LookbackDays)
	if err != nil {
		return nil, err
	}
	covs, err := sweep("coverages", opts.Coverages, MaxCoverages, policy.CheckCoverage, opts.Params.CoverageOr())
	if err != nil {
		return nil, err
	}
	for _, r := range opts.Rules {
		if r != policy.RuleCalibrated && r != policy.RuleMax {
			return nil, fmt.Errorf("rule %q: want %s or %s", r, policy.RuleCalibrated, policy.RuleMax)
		}
	}
	if opts.WarmupDays < 0 || opts.WarmupDays > MaxLookbackDays {
		return nil, fmt.Errorf("warm-up %d: want 0..%d days", opts.WarmupDays, MaxLookbackDays)
	}
	if rs := opts.rules(); len(rs) == 1 {
		opts.Params.Rule = rs[0]
	}
	loc := store.OrUTC(opts.Params.Location)
	opts.Params.Location = loc
	b := &Backtest{
		opts:     opts,
		loc:      loc,
		extended: opts.extended(),
		hist:     policy.NewHistory(loc),
		lanes:    map[string]*lane{},

		pruneEvery: prunePeriod,
	}
	for _, r := range opts.rules() {
		for _, k := range lbs {
			if r == policy.RuleCalibrated && k < 1 {
				return nil, fmt.Errorf("lookback %d: the calibrated rule learns from at least 1 day", k)
			}
			cs := []float64{0}
			if r == policy.RuleCalibrated {
				b.probes, cs = true, covs
			}
			for _, c := range cs {
				b.entries = append(b.entries, entry{rule: r, lookback: k, coverage: c, warmup: cmp.Or(opts.WarmupDays, k)})
			}
		}
	}
	for _, e := range b.entries {
		p := opts.Params
		p.Rule, p.LookbackDays, p.Coverage = e.rule, e.lookback, e.coverage
		b.params = append(b.params, p)
	}
	decideRule := policy.RuleMax
	if opts.Params.Calibrated() {
		decideRule = policy.RuleCalibrated
		b.probes = true
	}
	b.decide = slices.IndexFunc(b.entries, func(e entry) bool {
		return e.rule == decideRule && e.lookback == opts.Params.LookbackDays &&
			(e.rule == policy.RuleMax || e.coverage == opts.Params.CoverageOr())
	})
	if b.decide < 0 {
		b.decide = len(b.params)
		b.params = append(b.params, opts.Params)
	}
	for i, spec := range opts.Params.Lanes {
		if _, dup := b.lanes[spec.Name]; dup {
			return nil, fmt.Errorf("lane %q configured twice", spec.Name)
		}
		l := &lane{idx: i, spec: spec, figs: make([]figures, len(b.params))}
		b.lanes[spec.Name] = l
		b.order = append(b.order, l)
		if spec.Kind == policy.KindFree && b.naive == nil {
			b.naive = l
		}
		if spec.Kind == policy.KindPaid && b.paid == nil {
			b.paid = l
		}
	}
	b.clock = cmp.Or(b.naive, b.order[0])
	maxLB := max(lbs[len(lbs)-1], opts.Params.LookbackDays)
	if b.probes {
		// The calibrators are made when first asked (at From): the history
		// keeps the probes of twice the window for them (see ReadFrom).
		maxLB = 2 * max(maxLB, opts.WarmupDays)
	}
	b.keep = time.Duration(maxLB+2)*24*time.Hour + time.Duration(opts.Params.MaxBasisHours()+1)*time.Hour
	b.cells = make([][]cell, len(b.entries))
	for i := range b.cells {
		b.cells[i] = make([]cell, len(b.order)*24)
	}
	if b.rep, err = newReplays(b); err != nil {
		return nil, err
	}
	return b, nil
}

// sweep sorts xs (def when empty) and drops duplicates, then checks that
// at most most are left and each passes check.
func sweep[T cmp.Ordered](what string, xs []T, most int, check func(T) error, def ...T) ([]T, error) {
	if len(xs) == 0 {
		xs = def
	}
	out := slices.Compact(slices.Sorted(slices.Values(xs)))
	if len(out) > most {
		return nil, fmt.Errorf("%d %s: want at most %d", len(out), what, most)
	}
	for _, x := range out {
		if err := check(x); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Add feeds the next probe. Probes must come in time order; an earlier
// probe than the last one is an error. Probes of lanes not in the config,
// and from To on, are counted and left out.
func (b *Backtest) Add(p store.Probe) error {
	if b.finished {
		return errors.New("Add after Report")
	}
	if p.Time.Before(b.latest) { // latest starts at year 1, before any stored probe (Unix ns)
		return fmt.Errorf("probe of %s at %s comes after one at %s: probes must be in time order",
			p.Lane, p.Time.Format(time.RFC3339Nano), b.latest.Format(time.RFC3339Nano))
	}
	b.read++
	l := b.lanes[p.Lane]
	if l == nil || !p.Time.Before(b.opts.To) {
		b.ignored++
		return nil
	}
	b.latest = p.Time
	l.tl.add(p, b.loc)
	b.pending.push(p)
	if l == b.clock {
		switch t0 := p.Time.Add(-ArrivalLead); {
		case !p.Time.Before(b.opts.From):
			b.created.push(&job{t0: t0})
		case b.rep.tuned() && b.rep.tuneFrom.Before(t0):
			b.created.push(&job{t0: t0, tune: true}) // replayed only to tune the tuned baselines
		}
	}
	b.drain(p.Time.Add(-ArrivalLead), false)
	resolved := false
	for b.waiting.len() > 0 && b.waiting.peek().t0.Add(b.horizon).Before(b.latest) {
		b.resolve(b.waiting.pop(), false)
		resolved = true
	}
	if resolved || b.read%4096 == 0 {
		b.trim()
	}
	return nil
}

// drain applies the probes and takes the policies of the jobs before
// frontier (all of them with all), in time order; a job comes before a
// probe of the same instant (the policy in force just before it).
func (b *Backtest) drain(frontier time.Time, all bool) {
	for {
		hasP, hasJ := b.pending.len() > 0, b.created.len() > 0
		switch {
		case hasJ && (!hasP || !b.created.peek().t0.After(b.pending.peek().Time)):
			j := b.created.peek()
			if !all && !j.t0.Before(frontier) {
				return
			}
			b.created.pop()
			b.evaluate(j)
			b.waiting.push(j)
		case hasP:
			p := b.pending.front()
			if !all && !p.Time.Before(frontier) {
				return
			}
			b.apply(p)
			b.pending.pop()
		default:
			return
		}
	}
}

// state returns the lane's policy.LaneState as of now: its newest probe,
// and the latest back-off any site's newest probe asks for unless it has
// ended by now (under HeldBusy429 it holds for the hour).
func (b *Backtest) state(l *lane, now time.Time) policy.LaneState {
	s := policy.LaneState{Lane: l.spec.Name, LastSample: l.last}
	for _, sh := range l.sites {
		if sh.backoff.After(s.QuotaUntil) {
			s.QuotaUntil = sh.backoff
		}
	}
	if b.opts.Busy429S >= 0 && !s.QuotaUntil.After(now) {
		s.QuotaUntil = time.Time{}
	}
	return s
}

// records returns the probes of an hour as Aggregate should see them
// under Options.Busy429S: as they are (0), or with each 429's announced
// wait rewritten so that store.Busy agrees with the rule asked for.
func (b *Backtest) records(probes []store.Probe) []store.Probe {
	if b.opts.Busy429S == 0 || !slices.ContainsFunc(probes, func(p store.Probe) bool { return p.Outcome == store.OutcomeRateLimited }) {
		return probes
	}
	b.scratch = append(b.scratch[:0], probes...)
	for i := range b.scratch {
		p := &b.scratch[i]
		if p.Outcome != store.OutcomeRateLimited {
			continue
		}
		if b.opts.Busy429S > 0 && p.QuotaResetS > 0 && p.QuotaResetS <= b.opts.Busy429S {
			p.QuotaResetS = 1 // busy under the rule asked for
		} else {
			p.QuotaResetS = 0 // a failure
		}
	}
	return b.scratch
}

// apply scores p against the policy in force, then adds it to the history.
func (b *Backtest) apply(p *store.Probe) {
	l := b.lanes[p.Lane]
	hs := b.hourOf(p.Time)
	if l.first.IsZero() {
		l.first = hs.start
	}
	if !p.Time.Before(b.opts.From) {
		st := b.state(l, p.Time)
		scored := false
		for i, e := range b.entries {
			if !b.warm(l, hs.start, e.warmup) {
				continue
			}
			pl := b.figures(l, i, st, p.Time)
			b.cells[i][l.idx*24+hs.hod].add(pl, p)
			scored = true
			if b.onEntryScore != nil {
				b.onEntryScore(p, i, pl)
			}
		}
		if scored && b.opts.Truth != nil {
			b.addOracle(l, p, hs.start)
		}
	}
	if !p.Time.Before(b.nextPrune) {
		b.prune(p.Time)
	}
	i := slices.IndexFunc(l.sites, func(s *siteHour) bool { return s.site == p.Site })
	if i < 0 {
		i = len(l.sites)
		l.sites = append(l.sites, &siteHour{site: p.Site})
	}
	sh, hour := l.sites[i], hs.start
	if !sh.hour.Equal(hour) {
		sh.hour, sh.probes = hour, sh.probes[:0]
	}
	sh.probes = append(sh.probes, *p)
	r := store.Aggregate(p.Lane, p.Kind, p.Site, hour, b.records(sh.probes))
	b.hist.Add(r)
	if b.probes {
		b.hist.AddProbe(*p)
	}
	if b.onApply != nil {
		b.onApply(p, r)
	}
	l.last = p.Time // probes are applied in time order
	sh.backoff, _ = budget.Backoff(*p, b.loc)
	l.version++
}
