package backtest

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lanewatch/lanewatch/internal/num"
	"github.com/lanewatch/lanewatch/policy"
)

// The baselines a careful engineer writes without lanewatch
// (docs/backtest.md#baselines), replayed at each class's deadline and each
// of Options.Deadlines beside the decisions' strategies.
const (
	// StrategyFallback names fallback@T: the free lane with a first-token
	// timeout of T seconds, then the paid lane.
	StrategyFallback = "fallback"
	// StrategyCancelRetry names cancel-retry@T: cancel the free attempt at
	// T seconds without a first token and retry free, behind it.
	StrategyCancelRetry = "cancel-retry"
	// The tuned baselines (Options.TuneDays): the fallback@T picked on the
	// days before and then frozen, re-tuned weekly, or picked per hour of day.
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
	// tuneWeek is how often tuned-weekly picks its T again.
	tuneWeek = 7
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

type baseStrategy struct {
	kind baseKind
	t    float64 // fallback, cancel-retry: the timeout, s
	name string
}

// replays is the state of the job replay.
type replays struct {
	strategies []baseStrategy
	baselines  bool              // asked for: the report has them
	deadlines  [][]float64       // per class: its deadline, then the -deadlines ones
	horizons   [][]time.Duration // per class and deadline
	acc        [][]baseAcc       // [class][deadline*len(strategies)+strategy]
	params     policy.Params     // the decisions', with a class per class and deadline
	dropped    int               // replays left out: their horizon passes the newest probe
	droppedOwn int               // of them, the decisions' (Strategies at the class's deadline)
	fallbacks  []int             // the fallback@T strategies' indices
	tuneFrom   time.Time         // the earliest tuning job; zero: no tuning
	tuners     [][]*tuner        // per class and deadline
	runs       []baseRun         // resolve's scratch: one run per strategy
}

func (rs *replays) tuned() bool { return !rs.tuneFrom.IsZero() }

type baseAcc struct {
	jobs, met                                    int
	times                                        []float32
	freeReq, abandoned, burned, tokens, attempts int64
}

func (a *baseAcc) add(r *baseRun) {
	a.jobs++
	if r.met {
		a.met++
		a.times = append(a.times, float32(r.timeS))
	}
	a.freeReq += r.freeReq
	a.abandoned += r.abandoned
	a.burned += r.burned
	a.tokens += r.paidTokens
	a.attempts += r.attempts
}

// seconds checks a value of a sweep of seconds.
func seconds(what string, least float64) func(float64) error {
	return func(x float64) error {
		if !num.Finite(x) || x < least || x > policy.MaxSeconds {
			return fmt.Errorf("%s %v: want %g..%g seconds", what, x, least, policy.MaxSeconds)
		}
		return nil
	}
}

// newReplays returns the replays Options ask for, and sets b.horizon.
func newReplays(b *Backtest) (*replays, error) {
	o := b.opts
	fbs, err := sweep("fallbacks", o.Fallbacks, MaxFallbacks, seconds("fallbacks", MinFallbackS))
	if err != nil {
		return nil, err
	}
	dls, err := sweep("deadlines", o.Deadlines, MaxDeadlines, seconds("deadlines", MinAttemptS))
	if err != nil {
		return nil, err
	}
	if o.TuneDays < 0 || o.TuneDays > MaxLookbackDays {
		return nil, fmt.Errorf("tune %d: want 0..%d days", o.TuneDays, MaxLookbackDays)
	}
	rs := &replays{baselines: len(fbs) > 0 || len(dls) > 0}
	rs.strategies = []baseStrategy{{kind: baseNaive, name: StrategyNaive}, {kind: basePaid, name: StrategyPaid},
		{kind: baseLanewatch, name: StrategyLanewatch}}
	for _, t := range fbs {
		rs.fallbacks = append(rs.fallbacks, len(rs.strategies))
		rs.strategies = append(rs.strategies, baseStrategy{baseFallback, t, StrategyFallback + "@" + secs(t)})
	}
	for _, t := range fbs {
		rs.strategies = append(rs.strategies, baseStrategy{baseCancelRetry, t, StrategyCancelRetry + "@" + secs(t)})
	}
	if o.tuned() {
		rs.tuneFrom = o.From.AddDate(0, 0, -o.TuneDays)
		rs.strategies = append(rs.strategies, baseStrategy{kind: baseTuned, name: StrategyTuned},
			baseStrategy{kind: baseTunedWeekly, name: StrategyTunedWeekly}, baseStrategy{kind: baseTunedHourly, name: StrategyTunedHourly})
	}
	rs.params = o.Params
	rs.params.Classes = nil
	for _, c := range o.Params.Classes {
		// its deadline, then the others asked for
		ds := append([]float64{c.DeadlineS}, slices.DeleteFunc(slices.Clone(dls), func(d float64) bool { return d == c.DeadlineS })...)
		var hs []time.Duration
		var ts []*tuner
		for _, d := range ds {
			h := maxHorizon
			if d < maxHorizon.Seconds() {
				h = min(time.Duration(d*float64(time.Second))+Lookahead, maxHorizon)
			}
			hs = append(hs, h)
			b.horizon = max(b.horizon, h)
			ts = append(ts, newTuner(len(rs.fallbacks), o.TuneDays))
			cd := c
			cd.DeadlineS = d
			rs.params.Classes = append(rs.params.Classes, cd)
		}
		rs.deadlines = append(rs.deadlines, ds)
		rs.horizons = append(rs.horizons, hs)
		rs.acc = append(rs.acc, make([]baseAcc, len(ds)*len(rs.strategies)))
		rs.tuners = append(rs.tuners, ts)
	}
	rs.runs = make([]baseRun, len(rs.strategies))
	return rs, nil
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

// configured says whether the config has the lanes strategy s needs.
func (rs *replays) configured(b *Backtest, s baseStrategy) bool {
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
// each fallback@T did on the tuning jobs, and the T each has picked.
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
		if accs[i].jobs > 0 && (best < 0 || accs[i].beats(&accs[best])) {
			best = i
		}
	}
	return best
}

// beats says whether a met more jobs than b, then paid less, then took
// less time.
func (a *tuneAcc) beats(b *tuneAcc) bool {
	return a.met > b.met || a.met == b.met && (a.tokens < b.tokens || a.tokens == b.tokens && a.timeS < b.timeS)
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

// Baseline is the replay of one class at one deadline under one strategy
// (docs/backtest.md#baselines), rounded as Decision.
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

// rows renders the accumulators of the baselines, per class, deadline and
// strategy (nil when none were asked for).
func (rs *replays) rows(b *Backtest) []Baseline {
	if !rs.baselines {
		return nil
	}
	out := []Baseline{}
	for ci, ds := range rs.deadlines {
		c := b.opts.Params.Classes[ci]
		for di, d := range ds {
			for si, s := range rs.strategies {
				if !rs.configured(b, s) {
					continue
				}
				a := &rs.acc[ci][di*len(rs.strategies)+si]
				tuned := s.kind == baseTuned || s.kind == baseTunedWeekly || s.kind == baseTunedHourly
				if tuned && a.jobs == 0 {
					continue // nothing to tune on: no tuning jobs
				}
				row := Baseline{Class: c.Name, DeadlineS: d, Strategy: s.name, Jobs: a.jobs, Met: a.met, MetPct: a.metPct(),
					PaidUSD: policy.Round(float64(a.tokens)/1000*c.PaidUSDPer1k, 4), MedianTimeS: quantile(a.times, 0.5, 2), P90TimeS: quantile(a.times, 0.9, 2),
					FreeRequests: a.freeReq, AbandonedFreeRequests: a.abandoned, BurnedFreeTokens: a.burned}
				if tuned {
					row.TunedS = rs.tunedS(rs.tuners[ci][di], s.kind)
				}
				out = append(out, row)
			}
		}
	}
	return out
}

// decisions renders the decisions: naive, paid and lanewatch at each
// class's deadline.
func (rs *replays) decisions(b *Backtest) []Decision {
	out := []Decision{}
	for ci, c := range b.opts.Params.Classes {
		for si, s := range rs.strategies[:len(Strategies)] {
			if !rs.configured(b, s) {
				continue
			}
			a := &rs.acc[ci][si]
			out = append(out, Decision{Class: c.Name, Strategy: s.name, Jobs: a.jobs, Met: a.met, MetPct: a.metPct(),
				MedianTimeS: quantile(a.times, 0.5, 2), BurnedFreeTokens: a.burned, Attempts: a.attempts,
				PaidUSD: policy.Round(float64(a.tokens)/1000*c.PaidUSDPer1k, 4)})
		}
	}
	return out
}

// metPct is the percent of jobs met, 2 decimals.
func (a *baseAcc) metPct() float64 {
	if a.jobs == 0 {
		return 0
	}
	return policy.Round(100*float64(a.met)/float64(a.jobs), 2)
}

// tunedS returns the T (seconds) of each pick of a tuned strategy.
func (rs *replays) tunedS(t *tuner, kind baseKind) []float64 {
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
			out[i] = rs.strategies[rs.fallbacks[k]].t
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
		fmt.Fprintf(bw, "%-12s %8s %-15s %5d %6.1f %9.4f %6s %6s %7d %7d %9d\n", clipName(d.Class, 12), secs(d.DeadlineS), clipName(d.Strategy, 15),
			d.Jobs, d.MetPct, d.PaidUSD, fmtNum(d.MedianTimeS, 1), fmtNum(d.P90TimeS, 1), d.FreeRequests, d.AbandonedFreeRequests, d.BurnedFreeTokens)
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
	for _, d := range r.Baselines {
		_ = cw.Write([]string{d.Class, secs(d.DeadlineS), d.Strategy, strconv.Itoa(d.Jobs), strconv.Itoa(d.Met),
			secs(d.MetPct), secs(d.PaidUSD), optNum(d.MedianTimeS), optNum(d.P90TimeS),
			strconv.FormatInt(d.FreeRequests, 10), strconv.FormatInt(d.AbandonedFreeRequests, 10), strconv.FormatInt(d.BurnedFreeTokens, 10),
			joinSecs(d.TunedS)})
	}
	cw.Flush()
	return cw.Error()
}
