package backtest

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/lanewatch/lanewatch/internal/num"
	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/store"
)

// cell accumulates the calibration of one lane and hour of day.
type cell struct {
	probes, ok, covered    int
	all, coveredAll        int // coverage_all: every probe with a policy but 429s, and those covered
	falseElig, falseInelig int
	censUncovered          int
	noPolicy               int
	ratios                 []float32
}

// add scores probe p against the lane's policy in force just before it.
func (c *cell) add(l *policy.Lane, p *store.Probe) {
	c.probes++
	if l.Reason == policy.ReasonNeverSampled {
		c.noPolicy++
		return
	}
	if p.OK {
		c.ok++
		c.all++
		if p.QueueS <= l.NextQueueS {
			c.covered++
			c.coveredAll++
		}
		if num.Finite(p.QueueS) && p.QueueS > 0 {
			c.ratios = append(c.ratios, float32(l.NextQueueS/p.QueueS))
		}
		if !l.Eligible {
			c.falseInelig++
		}
		return
	}
	if l.Eligible {
		c.falseElig++
	}
	if num.Finite(p.QueueS) && p.QueueS > l.NextQueueS {
		c.censUncovered++
	}
	if !rateLimited(p) {
		c.all++
		if !(num.Finite(p.QueueS) && p.QueueS > l.NextQueueS) {
			c.coveredAll++ // the wait it was cut at is within the figure
		}
	}
}

// name is the lane's name, "" for none.
func (l *lane) name() string {
	if l == nil {
		return ""
	}
	return l.spec.Name
}

// rateLimited says whether p is a 429: no queue draw, left out of
// coverage_all (the back-off and quota_exhausted cover it).
func rateLimited(p *store.Probe) bool {
	return !p.OK && (p.Outcome == store.OutcomeRateLimited || p.Status == 429)
}

func (c *cell) merge(o *cell) {
	c.probes += o.probes
	c.ok += o.ok
	c.covered += o.covered
	c.all += o.all
	c.coveredAll += o.coveredAll
	c.falseElig += o.falseElig
	c.falseInelig += o.falseInelig
	c.censUncovered += o.censUncovered
	c.noPolicy += o.noPolicy
	c.ratios = append(c.ratios, o.ratios...)
}

// Counts is the calibration of a set of probes (docs/backtest.md).
// Coverage (4 decimals) and the ratios (3) are null with nothing to
// compute them from.
type Counts struct {
	Probes            int      `json:"probes"`
	OK                int      `json:"ok"`
	Covered           int      `json:"covered"`
	Coverage          *float64 `json:"coverage"`
	MedianRatio       *float64 `json:"median_ratio"`
	P90Ratio          *float64 `json:"p90_ratio"`
	FalseEligible     int      `json:"false_eligible"`
	FalseIneligible   int      `json:"false_ineligible"`
	NoPolicy          int      `json:"no_policy"`
	CensoredUncovered int      `json:"censored_uncovered"`
	// CoverageAll (the extended shape only): every probe with a policy but
	// 429s, a failure covered when next_queue_s is at least its wait.
	CoverageAll *float64 `json:"coverage_all,omitempty"`
}

// HourCounts is the calibration of one hour of day (in the config's zone).
type HourCounts struct {
	Hour int `json:"hour"`
	Counts
}

// LaneCalibration is one lane's calibration, overall and by hour of day.
type LaneCalibration struct {
	Lane string `json:"lane"`
	Counts
	Hours []HourCounts `json:"hours,omitempty"`
}

// AllCalibration is the calibration over every lane.
type AllCalibration struct {
	Counts
	Hours []HourCounts `json:"hours,omitempty"`
}

// KindCalibration is the calibration over the lanes of one kind, with the
// oracle's comparison when the run has the truth.
type KindCalibration struct {
	Kind string `json:"kind"`
	Counts
	Hours  []HourCounts `json:"hours,omitempty"`
	Oracle *Oracle      `json:"oracle,omitempty"`
}

// Oracle compares a rule with the oracle that knows each probe's true
// queue distribution (median × exp(sigma·z)), over the scored probes with
// a truth, scored like coverage_all (docs/backtest.md).
type Oracle struct {
	Probes int `json:"probes"`
	// Coverage is the rule's coverage_all; OracleMedianRatio the oracle's
	// median ratio at the z where it reaches it; RatioToOracle the rule's
	// median ratio over the oracle's.
	Coverage          float64  `json:"coverage"`
	OracleMedianRatio *float64 `json:"oracle_median_ratio"`
	RatioToOracle     *float64 `json:"ratio_to_oracle"`
	// Misses are the rule's uncovered probes, OracleMisses and
	// OracleCoverage the oracle's at the target coverage.
	Misses         int     `json:"misses"`
	OracleMisses   int     `json:"oracle_misses"`
	OracleCoverage float64 `json:"oracle_coverage"`
}

// Calibration is the calibration under one rule, lookback_days and (the
// calibrated rule) coverage; Best marks the one bestLookback (bestByKind)
// picks. Rule, TargetCoverage and WarmupDays: the extended shape only.
type Calibration struct {
	Rule           string            `json:"rule,omitempty"`
	LookbackDays   int               `json:"lookback_days"`
	TargetCoverage *float64          `json:"target_coverage,omitempty"`
	WarmupDays     int               `json:"warmup_days,omitempty"`
	Best           bool              `json:"best"`
	Lanes          []LaneCalibration `json:"lanes"`
	Kinds          []KindCalibration `json:"kinds,omitempty"`
	All            AllCalibration    `json:"all"`
}

// Decision is the replay of one class under one strategy (MetPct and
// MedianTimeS 2 decimals, PaidUSD 4).
type Decision struct {
	Class            string   `json:"class"`
	Strategy         string   `json:"strategy"`
	Jobs             int      `json:"jobs"`
	Met              int      `json:"met"`
	MetPct           float64  `json:"met_pct"`
	MedianTimeS      *float64 `json:"median_time_s"`
	BurnedFreeTokens int64    `json:"burned_free_tokens"`
	PaidUSD          float64  `json:"paid_usd"`
	Attempts         int64    `json:"attempts"`
}

// Report is a backtest's result.
type Report struct {
	Timezone string    `json:"timezone"`
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
	// ReadFrom is the start of the warm-up: probes from it to From feed the
	// history but are not scored.
	ReadFrom time.Time `json:"read_from"`
	// Ignored counts the probes of lanes not in the config, or from To on.
	ProbesRead       int           `json:"probes_read"`
	Ignored          int           `json:"ignored"`
	BestLookbackDays int           `json:"best_lookback_days"`
	Calibration      []Calibration `json:"calibration"`
	// NaiveLane and PaidLane are "" when the config has none (the strategy
	// is left out). Jobs arrive ArrivalLeadS before each probe of
	// ArrivalLane.
	NaiveLane        string  `json:"naive_lane"`
	PaidLane         string  `json:"paid_lane"`
	ArrivalLane      string  `json:"arrival_lane"`
	ArrivalLeadS     float64 `json:"arrival_lead_s"`
	DecisionLookback int     `json:"decision_lookback_days"`
	// DecisionRule and DecisionCoverage: the extended shape only.
	DecisionRule     string   `json:"decision_rule,omitempty"`
	DecisionCoverage *float64 `json:"decision_coverage,omitempty"`
	// DroppedReplays counts job replays left out because their deadline
	// plus an hour reaches past the newest probe.
	DroppedReplays int        `json:"dropped_replays"`
	Decisions      []Decision `json:"decisions"`
	// Baselines (absent unless asked for) and DroppedBaselines, counted as
	// DroppedReplays.
	Baselines        []Baseline `json:"baselines,omitempty"`
	DroppedBaselines int        `json:"dropped_baselines,omitempty"`
}

// Report finishes the replay (every probe added is applied, every job that
// can be is replayed) and returns the result. Add may not be called after.
func (b *Backtest) Report() Report {
	if !b.finished {
		b.finished = true
		b.drain(time.Time{}, true)
		for b.waiting.len() > 0 {
			b.resolve(b.waiting.pop(), true)
		}
	}
	r := Report{
		Timezone:         b.loc.String(),
		From:             b.opts.From,
		To:               b.opts.To,
		ReadFrom:         b.opts.ReadFrom(),
		ProbesRead:       b.read,
		Ignored:          b.ignored,
		ArrivalLeadS:     ArrivalLead.Seconds(),
		DecisionLookback: b.opts.Params.LookbackDays,
		DroppedReplays:   b.rep.droppedOwn,
		ArrivalLane:      b.clock.name(),
		NaiveLane:        b.naive.name(),
		PaidLane:         b.paid.name(),
	}
	if b.extended {
		r.DecisionRule = cmp.Or(b.params[b.decide].Rule, policy.RuleMax)
		if r.DecisionRule == policy.RuleCalibrated {
			r.DecisionCoverage = new(b.params[b.decide].CoverageOr())
		}
	}
	var buf []float32
	// hourly reduces 24 cells, one per hour of day, and their sum (into sum).
	hourly := func(hs []cell, sum *cell) (Counts, []HourCounts) {
		out := make([]HourCounts, 24)
		for h := range out {
			out[h] = HourCounts{Hour: h, Counts: b.counts(&hs[h], &buf)}
			sum.merge(&hs[h])
		}
		return b.counts(sum, &buf), out
	}
	kinds := []string{policy.KindFree, policy.KindPaid}
	for i, e := range b.entries {
		cal := Calibration{LookbackDays: e.lookback, Lanes: make([]LaneCalibration, 0, len(b.order))}
		if b.extended {
			cal.Rule, cal.WarmupDays = e.rule, e.warmup
			if e.rule == policy.RuleCalibrated {
				cal.TargetCoverage = new(e.coverage)
			}
		}
		var all [24]cell
		var kindHours [2][24]cell
		for _, l := range b.order {
			hs := b.cells[i][l.idx*24 : l.idx*24+24]
			lc := LaneCalibration{Lane: l.spec.Name}
			lc.Counts, lc.Hours = hourly(hs, new(cell))
			k := slices.Index(kinds, l.spec.Kind)
			for h := range hs {
				all[h].merge(&hs[h])
				if k >= 0 {
					kindHours[k][h].merge(&hs[h])
				}
			}
			cal.Lanes = append(cal.Lanes, lc)
		}
		cal.All.Counts, cal.All.Hours = hourly(all[:], new(cell))
		if b.extended {
			for k, kind := range kinds {
				if !slices.ContainsFunc(b.order, func(l *lane) bool { return l.spec.Kind == kind }) {
					continue
				}
				kc := KindCalibration{Kind: kind}
				var sum cell
				kc.Counts, kc.Hours = hourly(kindHours[k][:], &sum)
				if b.opts.Truth != nil {
					kc.Oracle = b.oracleOf(i, kind, &sum)
				}
				cal.Kinds = append(cal.Kinds, kc)
			}
		}
		r.Calibration = append(r.Calibration, cal)
	}
	pick := bestLookback
	if b.extended {
		pick = bestByKind
	}
	if best := pick(r.Calibration); best >= 0 {
		r.Calibration[best].Best = true
		r.BestLookbackDays = r.Calibration[best].LookbackDays
	}
	r.Decisions = b.rep.decisions(b)
	if r.Baselines = b.rep.rows(b); r.Baselines != nil {
		r.DroppedBaselines = b.rep.dropped
	}
	return r
}

// counts reduces a cell, with coverage_all in the extended shape.
func (b *Backtest) counts(c *cell, buf *[]float32) Counts {
	n := c.counts(buf)
	if b.extended {
		n.CoverageAll = fraction(c.coveredAll, c.all)
	}
	return n
}

// counts reduces a cell; buf is scratch space for sorting the ratios.
func (c *cell) counts(buf *[]float32) Counts {
	*buf = append((*buf)[:0], c.ratios...)
	return Counts{
		Probes: c.probes, OK: c.ok, Covered: c.covered, Coverage: fraction(c.covered, c.ok),
		MedianRatio: quantile(*buf, 0.5, 3), P90Ratio: quantile(*buf, 0.9, 3),
		FalseEligible: c.falseElig, FalseIneligible: c.falseInelig,
		NoPolicy: c.noPolicy, CensoredUncovered: c.censUncovered,
	}
}

// fraction is n/of to 4 decimals, nil when of is 0.
func fraction(n, of int) *float64 {
	if of == 0 {
		return nil
	}
	return new(policy.Round(float64(n)/float64(of), 4))
}

// quantile is percentile to prec decimals, nil without xs.
func quantile(xs []float32, q float64, prec int) *float64 {
	m, ok := percentile(xs, q)
	if !ok {
		return nil
	}
	return new(policy.Round(m, prec))
}

// percentile returns the nearest-rank q-quantile of xs (the value of rank
// ceil(q·n)), reordering xs (a selection, not a sort: a year's ratios are
// a million values).
func percentile(xs []float32, q float64) (float64, bool) {
	if len(xs) == 0 {
		return 0, false
	}
	k := int(math.Ceil(q*float64(len(xs)))) - 1
	k = min(max(k, 0), len(xs)-1)
	return float64(selectK(xs, k)), true
}

// selectK returns the value of rank k+1 in xs, leaving xs reordered so that
// xs[k] holds it, smaller or equal values before and greater or equal ones
// after (Hoare's selection, middle pivot).
func selectK(xs []float32, k int) float32 {
	lo, hi := 0, len(xs)-1
	for lo < hi {
		pivot := xs[lo+(hi-lo)/2]
		i, j := lo, hi
		for i <= j {
			for xs[i] < pivot {
				i++
			}
			for xs[j] > pivot {
				j--
			}
			if i <= j {
				xs[i], xs[j] = xs[j], xs[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return xs[k]
		}
	}
	return xs[k]
}

// TargetCoverage is the coverage a lookback must reach to be marked best:
// one ok probe in twenty may wait longer than next_queue_s.
const TargetCoverage = 0.95

// bestLookback picks the lookback with the best coverage at the lowest
// median ratio: among the lookbacks whose coverage over all lanes reaches
// TargetCoverage, the one with the lowest median ratio; when none does,
// the one with the highest coverage. Ties go to the lower median ratio,
// then to the shorter lookback. -1 when no lookback has a coverage.
func bestLookback(cals []Calibration) int {
	return best(cals, func(c *Calibration) (cov, ratio *float64) { return c.All.Coverage, c.All.MedianRatio })
}

// bestByKind is bestLookback in the extended shape: on the free lanes (the
// paid ones when there is no free lane) and by coverage_all, never on a
// figure that mixes the kinds.
func bestByKind(cals []Calibration) int {
	return best(cals, func(c *Calibration) (cov, ratio *float64) {
		k := cmp.Or(c.kind(policy.KindFree), c.kind(policy.KindPaid))
		if k == nil {
			return nil, nil
		}
		return k.CoverageAll, k.MedianRatio
	})
}

// best is bestLookback on the coverage and median ratio view reads.
func best(cals []Calibration, view func(*Calibration) (cov, ratio *float64)) int {
	best, bestCov, bestRatio := -1, 0.0, 0.0
	for i := range cals {
		cov, ratio := view(&cals[i])
		if cov == nil {
			continue
		}
		r := math.Inf(1)
		if ratio != nil {
			r = *ratio
		}
		reach := *cov >= TargetCoverage
		switch {
		case best < 0:
		case reach != (bestCov >= TargetCoverage):
			if !reach {
				continue
			}
		case !reach && *cov != bestCov:
			if *cov < bestCov {
				continue
			}
		case r >= bestRatio:
			continue
		}
		best, bestCov, bestRatio = i, *cov, r
	}
	return best
}
