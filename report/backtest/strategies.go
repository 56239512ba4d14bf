package backtest

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lanewatch/lanewatch/internal/num"
	"github.com/lanewatch/lanewatch/policy"
)

// The baselines (Options.Fallbacks, Options.Deadlines): the strategies a
// careful engineer writes without lanewatch, replayed beside lanewatch's
// cut-over rule in the same world (docs/backtest.md, "Baselines").
const (
	// StrategyFallback names fallback@T: the free lane with a first-token
	// timeout of T seconds, then the paid lane.
	StrategyFallback = "fallback"
	// StrategyCancelRetry names cancel-retry@T: cancel the free attempt
	// at T seconds without a first token and retry the free lane, behind
	// the cancelled request.
	StrategyCancelRetry = "cancel-retry"

	// StrategyTuned, StrategyTunedWeekly and StrategyTunedHourly name the
	// tuned baselines (Options.TuneDays): the fallback@T an engineer picks
	// on the days before and then freezes, re-tunes weekly, or picks per
	// hour of day.
	StrategyTuned       = "tuned"
	StrategyTunedWeekly = "tuned-weekly"
	StrategyTunedHourly = "tuned-hourly"

	// MaxFallbacks and MaxDeadlines bound the two sweeps.
	MaxFallbacks = 32
	MaxDeadlines = 16
	// MinFallbackS is the shortest timeout a fallback@T may use.
	MinFallbackS = 0.1
	// maxBaselineAttempts bounds the attempts of one replayed job.
	maxBaselineAttempts = 100_000
)

type baseKind int

const (
	baseNaive baseKind = iota
	basePaid
	baseLanewatch
	baseFallback
	baseCancelRetry
	baseTuned
	baseTunedWeekly
	baseTunedHourly
)

// tuneWeek is how often tuned-weekly picks its T again.
const tuneWeek = 7

type baseStrategy struct {
	kind baseKind
	t    float64 // fallback, cancel-retry: the timeout, s
	name string
}

// baselines is the state of the baseline replay.
type baselines struct {
	strategies []baseStrategy
	deadlines  [][]float64         // per class: its deadline, then the -deadlines ones
	horizons   [][]time.Duration   // per class and deadline
	acc        [][]baseAcc         // [class][deadline*len(strategies)+strategy]
	params     policy.Params       // the decisions', with a class per class and deadline
	cuts       map[*job][][]jobCut // per class and deadline, taken at arrival
	dropped    int
	// The tuned baselines: fallbacks are the indices of the fallback@T
	// strategies in grid order; tuneFrom the earliest arrival of a
	// tuning job (zero: no tuning); tuners per class and deadline.
	fallbacks []int
	tuneFrom  time.Time
	tuners    [][]*tuner
	runs      []baseRun // resolve's scratch: one run per strategy
}

// tuneAcc sums the replays of one fallback@T over a set of jobs.
type tuneAcc struct {
	jobs, met int
	tokens    int64   // paid tokens
	timeS     float64 // summed over the met jobs
}

func (a *tuneAcc) add(r *baseRun) {
	a.jobs++
	if r.met {
		a.met++
		a.timeS += r.timeS
	}
	a.tokens += r.paidTokens
}

// tuner is the tuned baselines' state for one class and deadline: what
// each fallback@T did on the tuning jobs (before From), per hour of day,
// and per day (for the weekly re-tune), and the T each has picked.
type tuner struct {
	frozen   []tuneAcc           // the tuning jobs, per fallback
	hourly   [24][]tuneAcc       // the tuning jobs by hour of day (in the replay's zone)
	days     map[int64][]tuneAcc // per day since From (negative before it), per fallback
	picked   bool                // frozen and hourly picked (at the first scored job)
	fixed    int                 // the frozen pick, an index into the fallbacks; -1: no tuning jobs
	byHour   [24]int
	week     int64 // the week weekly was picked for
	weekly   int
	weeks    []int // weekly's picks, week by week
	tuneDays int64
}

func newTuner(n, tuneDays int) *tuner {
	t := &tuner{frozen: make([]tuneAcc, n), days: map[int64][]tuneAcc{}, week: -1, tuneDays: int64(tuneDays)}
	for h := range t.hourly {
		t.hourly[h] = make([]tuneAcc, n)
	}
	return t
}

// bestFallback returns the index of the fallback that met the most jobs,
// then paid the least, then took the least time (summed over its met
// jobs), then the first (the shortest T); -1 when there were no jobs.
func bestFallback(accs []tuneAcc) int {
	best := -1
	for i := range accs {
		a := &accs[i]
		if a.jobs == 0 {
			continue
		}
		if best < 0 {
			best = i
			continue
		}
		b := &accs[best]
		if a.met > b.met || (a.met == b.met && (a.tokens < b.tokens || (a.tokens == b.tokens && a.timeS < b.timeS))) {
			best = i
		}
	}
	return best
}

// sumDays returns the fallbacks' sums over the days [from, to) since From.
func (t *tuner) sumDays(n int, from, to int64) []tuneAcc {
	out := make([]tuneAcc, n)
	for d, accs := range t.days {
		if d < from || d >= to {
			continue
		}
		for i := range accs {
			out[i].jobs += accs[i].jobs
			out[i].met += accs[i].met
			out[i].tokens += accs[i].tokens
			out[i].timeS += accs[i].timeS
		}
	}
	return out
}

type baseAcc struct {
	jobs, met                          int
	times                              []float32
	freeReq, abandoned, burned, tokens int64
}

// checkSeconds validates a sweep of seconds.
func checkSeconds(what string, xs []float64, least float64, most int) ([]float64, error) {
	out := slices.Clone(xs)
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > most {
		return nil, fmt.Errorf("%d %s: want at most %d", len(out), what, most)
	}
	for _, x := range out {
		if !num.Finite(x) || x < least || x > policy.MaxSeconds {
			return nil, fmt.Errorf("%s %v: want %g..%g seconds", what, x, least, policy.MaxSeconds)
		}
	}
	return out, nil
}

// newBaselines returns nil when neither sweep is asked for.
func newBaselines(b *Backtest) (*baselines, error) {
	o := b.opts
	if len(o.Fallbacks) == 0 && len(o.Deadlines) == 0 {
		return nil, nil
	}
	fbs, err := checkSeconds("fallbacks", o.Fallbacks, MinFallbackS, MaxFallbacks)
	if err != nil {
		return nil, err
	}
	dls, err := checkSeconds("deadlines", o.Deadlines, MinAttemptS, MaxDeadlines)
	if err != nil {
		return nil, err
	}
	bs := &baselines{cuts: map[*job][][]jobCut{}}
	bs.strategies = []baseStrategy{{kind: baseNaive, name: StrategyNaive}, {kind: basePaid, name: StrategyPaid},
		{kind: baseLanewatch, name: StrategyLanewatch}}
	for _, t := range fbs {
		bs.strategies = append(bs.strategies, baseStrategy{baseFallback, t, StrategyFallback + "@" + secs(t)})
	}
	for _, t := range fbs {
		bs.strategies = append(bs.strategies, baseStrategy{baseCancelRetry, t, StrategyCancelRetry + "@" + secs(t)})
	}
	for i, s := range bs.strategies {
		if s.kind == baseFallback {
			bs.fallbacks = append(bs.fallbacks, i)
		}
	}
	if o.TuneDays < 0 || o.TuneDays > MaxLookbackDays {
		return nil, fmt.Errorf("tune %d: want 0..%d days", o.TuneDays, MaxLookbackDays)
	}
	if o.tuned() {
		bs.tuneFrom = o.From.AddDate(0, 0, -o.TuneDays)
		bs.strategies = append(bs.strategies, baseStrategy{kind: baseTuned, name: StrategyTuned},
			baseStrategy{kind: baseTunedWeekly, name: StrategyTunedWeekly}, baseStrategy{kind: baseTunedHourly, name: StrategyTunedHourly})
	}
	for _, c := range o.Params.Classes {
		ds := []float64{c.DeadlineS}
		for _, d := range dls {
			if d != c.DeadlineS {
				ds = append(ds, d)
			}
		}
		var hs []time.Duration
		for _, d := range ds {
			h := maxHorizon
			if d < maxHorizon.Seconds() {
				h = min(time.Duration(d*float64(time.Second))+Lookahead, maxHorizon)
			}
			hs = append(hs, h)
			b.horizon = max(b.horizon, h)
		}
		bs.deadlines = append(bs.deadlines, ds)
		bs.horizons = append(bs.horizons, hs)
		bs.acc = append(bs.acc, make([]baseAcc, len(ds)*len(bs.strategies)))
		var ts []*tuner
		for range ds {
			ts = append(ts, newTuner(len(bs.fallbacks), o.TuneDays))
		}
		bs.tuners = append(bs.tuners, ts)
	}
	bs.runs = make([]baseRun, len(bs.strategies))
	// The decisions' params with one class per class and deadline.
	bs.params = o.Params
	bs.params.Classes = nil
	for ci, ds := range bs.deadlines {
		for _, d := range ds {
			c := o.Params.Classes[ci]
			c.DeadlineS = d
			bs.params.Classes = append(bs.params.Classes, c)
		}
	}
	return bs, nil
}

func secs(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// joinSecs writes seconds separated by spaces.
func joinSecs(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = secs(x)
	}
	return strings.Join(parts, " ")
}

// evaluate takes the decision of each class and deadline at the job's
// arrival: the policy in force then (History.ClassesAt over b.figs, every
// lane's figures at the arrival) for the class at that deadline, what
// policygen lane and policy.Running would answer.
func (bs *baselines) evaluate(b *Backtest, j *job) {
	if j.tune {
		return // fallback@T alone: no decision to take
	}
	classes := b.hist.ClassesAt(bs.params, b.figs, b.hourOf(j.t0).start)
	cuts := make([][]jobCut, len(bs.deadlines))
	k := 0
	for ci, ds := range bs.deadlines {
		for range ds {
			c := classes[k]
			k++
			jc := jobCut{book: c.Book}
			if c.Cutover != nil {
				jc.Cutover, jc.decided = *c.Cutover, true
			}
			jc.first, _ = c.Start()
			cuts[ci] = append(cuts[ci], jc)
		}
	}
	bs.cuts[j] = cuts
}

// resolve replays the job for every class, deadline and strategy. A
// tuning job (before From) is replayed under the fallbacks alone, for
// the tuners; the tuned strategies take the outcome of the fallback@T
// they pick for the job.
func (bs *baselines) resolve(b *Backtest, j *job, final bool) {
	cuts := bs.cuts[j]
	delete(bs.cuts, j)
	hod := j.t0.In(b.loc).Hour()
	day := int64(math.Floor(j.t0.Sub(b.opts.From).Hours() / 24))
	for ci, ds := range bs.deadlines {
		c := b.opts.Params.Classes[ci]
		for di, d := range ds {
			if final && j.t0.Add(bs.horizons[ci][di]).After(b.latest) {
				if !j.tune {
					bs.dropped += len(bs.strategies)
				}
				continue
			}
			tn := bs.tuners[ci][di]
			if !j.tune && len(bs.fallbacks) > 0 && bs.tuneFrom != (time.Time{}) {
				tn.pick(len(bs.fallbacks), day)
			}
			for si, s := range bs.strategies {
				if !bs.configured(b, s) {
					continue
				}
				r := &bs.runs[si]
				switch {
				case s.kind == baseTuned || s.kind == baseTunedWeekly || s.kind == baseTunedHourly:
					if j.tune {
						continue
					}
					k := tn.choice(s.kind, hod)
					if k < 0 {
						continue // nothing to tune on
					}
					*r = bs.runs[bs.fallbacks[k]]
				case j.tune && s.kind != baseFallback:
					continue
				default:
					*r = baseRun{b: b, t0: j.t0.UnixNano(), d: min(d, maxHorizon.Seconds()), est: int64(max(c.EstTokens, 0))}
					var cut jobCut
					if !j.tune {
						cut = cuts[ci][di]
					}
					r.play(s, cut)
				}
				if j.tune {
					continue
				}
				a := &bs.acc[ci][di*len(bs.strategies)+si]
				a.jobs++
				if r.met {
					a.met++
					a.times = append(a.times, float32(r.timeS))
				}
				a.freeReq += r.freeReq
				a.abandoned += r.abandoned
				a.burned += r.burned
				a.tokens += r.paidTokens
			}
			if bs.tuneFrom == (time.Time{}) {
				continue
			}
			accs := tn.days[day]
			if accs == nil {
				accs = make([]tuneAcc, len(bs.fallbacks))
				tn.days[day] = accs
			}
			for k, si := range bs.fallbacks {
				r := &bs.runs[si]
				accs[k].add(r)
				if j.tune {
					tn.frozen[k].add(r)
					tn.hourly[hod][k].add(r)
				}
			}
		}
	}
}

// pick makes the tuner's picks for a scored job of day (since From):
// frozen and hourly once, from the tuning jobs; weekly when the job's
// week starts, from the tuneDays days before it. Jobs are resolved in
// arrival order, so every job before the week's start is in.
func (t *tuner) pick(n int, day int64) {
	if !t.picked {
		t.picked = true
		t.fixed = bestFallback(t.frozen)
		for h := range t.hourly {
			t.byHour[h] = bestFallback(t.hourly[h])
			if t.byHour[h] < 0 {
				t.byHour[h] = t.fixed // no tuning job at that hour
			}
		}
	}
	w := day / tuneWeek
	if w == t.week {
		return
	}
	t.week = w
	start := w * tuneWeek
	t.weekly = bestFallback(t.sumDays(n, start-t.tuneDays, start))
	t.weeks = append(t.weeks, t.weekly)
	for d := range t.days {
		if d < start+tuneWeek-t.tuneDays {
			delete(t.days, d) // no later week's window holds it
		}
	}
}

// choice returns the fallback a tuned strategy uses at hour of day hod.
func (t *tuner) choice(kind baseKind, hod int) int {
	switch kind {
	case baseTunedWeekly:
		return t.weekly
	case baseTunedHourly:
		return t.byHour[hod]
	}
	return t.fixed
}

// configured says whether the config has the lanes strategy s needs.
func (bs *baselines) configured(b *Backtest, s baseStrategy) bool {
	switch s.kind {
	case baseNaive, baseCancelRetry:
		return b.naive != nil
	case basePaid:
		return b.paid != nil
	case baseFallback, baseTuned, baseTunedWeekly, baseTunedHourly:
		return b.naive != nil && b.paid != nil
	}
	return true
}

// jobCut is what the lanewatch baseline follows for a class and deadline:
// the class's decision (the calibrated rule's; none under the worst-of
// rule), its book and the first of its lanes ("" when none: nothing is
// sent).
type jobCut struct {
	policy.Cutover
	decided bool // the class has a decision (the calibrated rule)
	book    policy.BookPolicy
	first   string
}

// baseRun is one job replayed under one baseline strategy.
type baseRun struct {
	b   *Backtest
	t0  int64
	d   float64 // deadline, s
	est int64

	met                                              bool
	timeS                                            float64
	freeReq, abandoned, burned, paidTokens, attempts int64
}

type stepKind int

const (
	stepShipped   stepKind = iota // shipped: the job is met
	stepCut                       // cut at the deadline: the job is missed
	stepFailed                    // failed by itself; end is when
	stepAbandoned                 // cancelled with no first token at end
)

type step struct {
	kind stepKind
	end  float64 // s since arrival
	// first is when an abandoned request's first token would have come:
	// it keeps its place in the server's queue until then.
	first float64
	// n is how many failed attempts a stepFailed stands for.
	n int64
}

const noCancel = math.MaxFloat64

// attempt runs attempts on l from at (s since arrival): one that gets a
// first token or is abandoned, or a run of failures that meet the same
// world. An attempt with no first token by cancelAt (s since arrival) is
// cancelled then; behind is the instant before which no first token can
// come on l (the cancelled requests ahead of it in the server's queue).
// Without run a failure is one attempt.
func (r *baseRun) attempt(l *lane, at, cancelAt, behind float64, run bool) step {
	w := l.tl.meet(r.t0 + int64(math.Round(at*1e9)))
	free := l.spec.Kind != policy.KindPaid
	account := func(tokens int64, shipped bool) {
		switch {
		case !free:
			r.paidTokens += tokens
		case !shipped:
			r.burned += tokens
		}
	}
	countOne := func() {
		r.attempts++
		if free {
			r.freeReq++
		}
	}
	if w.ok {
		countOne()
		first := max(at+w.queue, behind)
		if first > cancelAt && cancelAt < r.d {
			if free {
				r.abandoned++
			}
			return step{kind: stepAbandoned, end: cancelAt, first: first}
		}
		gen := 0.0
		if w.rate > 0 {
			gen = float64(r.est) / w.rate
		}
		if end := first + gen; end <= r.d {
			account(r.est, true)
			r.met, r.timeS = true, end
			return step{kind: stepShipped, end: end}
		}
		if first >= r.d && free {
			r.abandoned++ // still queued at the deadline
		}
		emitted := int64(0)
		if g := r.d - first; g > 0 && w.rate > 0 {
			emitted = min(r.est, int64(g*w.rate))
		}
		account(emitted, false)
		return step{kind: stepCut, end: r.d}
	}
	if at+w.queue > cancelAt && cancelAt < r.d {
		countOne()
		if free {
			r.abandoned++
		}
		return step{kind: stepAbandoned, end: cancelAt, first: max(at+w.queue, behind)}
	}
	// A run of failures that all meet the same world, none cancelled:
	// n of them before what they meet changes, the deadline comes or the
	// cancel time passes.
	cost := max(w.queue+w.gen, MinAttemptS)
	limit := min(r.d, cancelAt)
	if w.until != never {
		limit = min(limit, float64(w.until-r.t0)/1e9)
	}
	n := int64(1)
	if nf := math.Ceil((limit - at) / cost); nf > 1 && run {
		n = int64(min(nf, 1<<40))
	}
	r.attempts += n
	if free {
		r.freeReq += n
	}
	account(n*min(w.tokens, r.est), false)
	return step{kind: stepFailed, end: at + min(float64(n)*cost, r.d-at), n: n}
}

// repeat retries l at once from at until a result or the deadline.
func (r *baseRun) repeat(l *lane, at float64) {
	for at < r.d && r.attempts < maxBaselineAttempts {
		s := r.attempt(l, at, noCancel, 0, true)
		if s.kind != stepFailed {
			return
		}
		at = s.end
	}
}

// play replays the job under s; cut is the class's decision in force at
// its arrival (lanewatch's).
func (r *baseRun) play(s baseStrategy, cut jobCut) {
	b := r.b
	switch s.kind {
	case baseNaive:
		r.repeat(b.naive, 0)
	case basePaid:
		r.repeat(b.paid, 0)
	case baseFallback:
		st := r.attempt(b.naive, 0, min(s.t, r.d), 0, false)
		if st.kind == stepFailed || st.kind == stepAbandoned {
			r.repeat(b.paid, st.end)
		}
	case baseCancelRetry:
		at, behind := 0.0, 0.0
		for at < r.d && r.attempts < maxBaselineAttempts {
			st := r.attempt(b.naive, at, at+s.t, behind, true)
			switch st.kind {
			case stepAbandoned:
				behind = max(behind, st.first)
			case stepFailed:
			default:
				return
			}
			at = st.end
		}
	case baseLanewatch:
		bp := cut.book
		start := b.lanes[cut.first]
		if start == nil {
			return // the class lists no lane: nothing is sent
		}
		free, paid := b.lanes[bp.FreeLane], b.lanes[bp.PaidLane]
		if !bp.PaidEligible {
			paid = nil
		}
		if !cut.decided {
			r.ledger(start, bp, free, paid) // the worst-of rule: no decision, the ledger alone
			return
		}
		at := 0.0
		if start.spec.Kind != policy.KindPaid && (cut.FreeFirst || paid == nil) {
			// policy.Running answers cut_over from elapsed > AfterS on
			// (free_first, paid eligible) and wait without a paid lane:
			// the attempt is cancelled at AfterS, or never.
			cancelAt := noCancel
			if paid != nil {
				cancelAt = cut.AfterS
			}
			for at < r.d && r.attempts < maxBaselineAttempts {
				st := r.attempt(start, at, cancelAt, 0, true)
				if st.kind == stepShipped || st.kind == stepCut {
					return
				}
				at = st.end
				if st.kind == stepAbandoned || at >= cancelAt {
					break // policy.Running: cut_over
				}
			}
		}
		if paid != nil {
			r.repeat(paid, at)
		}
	}
}

// ledger replays a job the way the worst-of rule's files let it run: on
// the first lane, and after each failed attempt where policy.Book sends
// the next one (retry_free, cut_over or stop).
func (r *baseRun) ledger(l *lane, bp policy.BookPolicy, free, paid *lane) {
	var spent policy.Attempt
	at := 0.0
	for l != nil && at < r.d && r.attempts < maxBaselineAttempts {
		st := r.attempt(l, at, noCancel, 0, false)
		if st.kind != stepFailed {
			return
		}
		spent.QueueS += st.end - at
		at = st.end
		switch policy.Book([]policy.Attempt{spent}, bp).Action {
		case policy.RetryFree:
			l = free
		case policy.CutOver:
			l = paid
		default:
			return
		}
	}
}

// Baseline is the replay of one class at one deadline under one strategy
// (docs/backtest.md, "Baselines"). MetPct is rounded to 2 decimals, the
// times to 2 (null without a met job), PaidUSD to 4.
type Baseline struct {
	Class                 string   `json:"class"`
	DeadlineS             float64  `json:"deadline_s"`
	Strategy              string   `json:"strategy"`
	Jobs                  int      `json:"jobs"`
	Met                   int      `json:"met"`
	MetPct                float64  `json:"met_pct"`
	PaidUSD               float64  `json:"paid_usd"`
	MedianTimeS           *float64 `json:"median_time_s"`
	P90TimeS              *float64 `json:"p90_time_s"`
	FreeRequests          int64    `json:"free_requests"`
	AbandonedFreeRequests int64    `json:"abandoned_free_requests"`
	BurnedFreeTokens      int64    `json:"burned_free_tokens"`
	// TunedS is the T a tuned strategy picked: tuned's one, tuned-weekly's
	// week by week, tuned-hourly's for hours 0 to 23 (0 where it had
	// nothing to tune on); absent for the other strategies.
	TunedS []float64 `json:"tuned_s,omitempty"`
}

// rows renders the accumulators, per class, deadline and strategy.
func (bs *baselines) rows(b *Backtest) []Baseline {
	if bs == nil {
		return nil
	}
	out := []Baseline{}
	for ci, ds := range bs.deadlines {
		c := b.opts.Params.Classes[ci]
		for di, d := range ds {
			for si, s := range bs.strategies {
				if !bs.configured(b, s) {
					continue
				}
				a := &bs.acc[ci][di*len(bs.strategies)+si]
				tuned := s.kind == baseTuned || s.kind == baseTunedWeekly || s.kind == baseTunedHourly
				if tuned && a.jobs == 0 {
					continue // nothing to tune on: no tuning jobs
				}
				row := Baseline{Class: c.Name, DeadlineS: d, Strategy: s.name, Jobs: a.jobs, Met: a.met,
					PaidUSD:      policy.Round(float64(a.tokens)/1000*c.PaidUSDPer1k, 4),
					FreeRequests: a.freeReq, AbandonedFreeRequests: a.abandoned, BurnedFreeTokens: a.burned}
				if a.jobs > 0 {
					row.MetPct = policy.Round(100*float64(a.met)/float64(a.jobs), 2)
				}
				if m, ok := percentile(a.times, 0.5); ok {
					m = policy.Round(m, 2)
					row.MedianTimeS = &m
				}
				if m, ok := percentile(a.times, 0.9); ok {
					m = policy.Round(m, 2)
					row.P90TimeS = &m
				}
				if tuned {
					row.TunedS = bs.tunedS(bs.tuners[ci][di], s.kind)
				}
				out = append(out, row)
			}
		}
	}
	return out
}

// tunedS returns the T (seconds) of each pick of a tuned strategy.
func (bs *baselines) tunedS(t *tuner, kind baseKind) []float64 {
	var picks []int
	switch kind {
	case baseTuned:
		picks = []int{t.fixed}
	case baseTunedWeekly:
		picks = t.weeks
	case baseTunedHourly:
		picks = t.byHour[:]
	}
	out := make([]float64, len(picks))
	for i, k := range picks {
		if k >= 0 {
			out[i] = bs.strategies[bs.fallbacks[k]].t
		}
	}
	return out
}

// writeBaselinesTable writes the baselines section of the table (nothing
// without baselines).
func writeBaselinesTable(bw *bufio.Writer, r *Report) {
	if r.Baselines == nil {
		return
	}
	fmt.Fprintf(bw, "\nbaselines: fallback@T waits T s for a free first token, then pays; cancel-retry@T cancels at T s\n")
	fmt.Fprintf(bw, "and retries free behind its cancelled request; lanewatch waits at most cutover_after_s\n")
	if slices.ContainsFunc(r.Baselines, func(d Baseline) bool { return d.TunedS != nil }) {
		fmt.Fprintf(bw, "tuned: the fallback@T that met the most deadlines, then paid the least, on the days before the window;\n")
		fmt.Fprintf(bw, "tuned-weekly picks again every 7 days, tuned-hourly per hour of day (their picks: -format json)\n")
	}
	if r.DroppedBaselines > 0 {
		fmt.Fprintf(bw, "(%d replays left out: their deadline + 1 h passes the newest probe)\n", r.DroppedBaselines)
	}
	fmt.Fprintf(bw, "(free: free requests sent; abandon: cancelled with no first token; burned: free tokens not shipped)\n")
	fmt.Fprintf(bw, "%-12s %8s %-15s %5s %6s %9s %6s %6s %7s %7s %9s\n",
		"class", "deadline", "strategy", "jobs", "met %", "paid USD", "med s", "p90 s", "free", "abandon", "burned")
	for _, d := range r.Baselines {
		fmt.Fprintf(bw, "%-12s %8s %-15s %5d %6s %9s %6s %6s %7d %7d %9d\n", clipName(d.Class, 12), secs(d.DeadlineS),
			clipName(d.Strategy, 15), d.Jobs, strconv.FormatFloat(d.MetPct, 'f', 1, 64), strconv.FormatFloat(d.PaidUSD, 'f', 4, 64),
			fmtNum(d.MedianTimeS, 1), fmtNum(d.P90TimeS, 1), d.FreeRequests, d.AbandonedFreeRequests, d.BurnedFreeTokens)
	}
}

// BaselineCSVHeader is the header of the CSV's baselines table.
var BaselineCSVHeader = []string{"class", "deadline_s", "strategy", "jobs", "met", "met_pct", "paid_usd", "median_time_s", "p90_time_s",
	"free_requests", "abandoned_free_requests", "burned_free_tokens", "tuned_s"}

// writeBaselinesCSV writes the baselines as a second CSV table after an
// empty line (nothing without baselines).
func writeBaselinesCSV(w io.Writer, r *Report) error {
	if r.Baselines == nil {
		return nil
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return err
	}
	cw := csv.NewWriter(w)
	_ = cw.Write(BaselineCSVHeader)
	opt := func(x *float64) string {
		if x == nil {
			return ""
		}
		return strconv.FormatFloat(*x, 'f', -1, 64)
	}
	for _, d := range r.Baselines {
		_ = cw.Write([]string{d.Class, secs(d.DeadlineS), d.Strategy, strconv.Itoa(d.Jobs), strconv.Itoa(d.Met),
			secs(d.MetPct), secs(d.PaidUSD), opt(d.MedianTimeS), opt(d.P90TimeS),
			strconv.FormatInt(d.FreeRequests, 10), strconv.FormatInt(d.AbandonedFreeRequests, 10), strconv.FormatInt(d.BurnedFreeTokens, 10),
			joinSecs(d.TunedS)})
	}
	cw.Flush()
	return cw.Error()
}
