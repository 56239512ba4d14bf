package backtest

import (
	"math"
	"time"

	"github.com/lanewatch/lanewatch/internal/num"
	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/series"
)

// cell accumulates the calibration of one lane and hour of day.
type cell struct {
	probes, ok, covered    int
	falseElig, falseInelig int
	censUncovered          int
	noPolicy               int
	ratios                 []float32
}

// add scores probe p against the lane's policy in force just before it.
func (c *cell) add(l *policy.Lane, p *series.Probe) {
	c.probes++
	if l.Reason == policy.ReasonNeverSampled {
		c.noPolicy++
		return
	}
	if p.OK {
		c.ok++
		if p.QueueS <= l.NextQueueS {
			c.covered++
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
}

func (c *cell) merge(o *cell) {
	c.probes += o.probes
	c.ok += o.ok
	c.covered += o.covered
	c.falseElig += o.falseElig
	c.falseInelig += o.falseInelig
	c.censUncovered += o.censUncovered
	c.noPolicy += o.noPolicy
	c.ratios = append(c.ratios, o.ratios...)
}

// Counts is the calibration of a set of probes (see the package comment).
// Coverage and the ratios are null when there is nothing to compute them
// from. Coverage is rounded to 4 decimals, the ratios to 3.
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

// Calibration is the calibration under one lookback_days. Best marks the
// lookback with the best coverage at the lowest median ratio: the lowest
// median ratio among those reaching TargetCoverage, else the highest
// coverage.
type Calibration struct {
	LookbackDays int               `json:"lookback_days"`
	Best         bool              `json:"best"`
	Lanes        []LaneCalibration `json:"lanes"`
	All          AllCalibration    `json:"all"`
}

// Decision is the replay of one class under one strategy. MetPct is
// rounded to 2 decimals, MedianTimeS to 2 (null without a met job),
// PaidUSD to 4.
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
	// ProbesRead counts every probe fed; Ignored those of lanes not in the
	// config (or from To on).
	ProbesRead int `json:"probes_read"`
	Ignored    int `json:"ignored"`
	// BestLookbackDays is the lookback marked Best.
	BestLookbackDays int           `json:"best_lookback_days"`
	Calibration      []Calibration `json:"calibration"`
	// NaiveLane and PaidLane are the lanes of the naive and paid
	// strategies ("" when the config has none: the strategy is left out).
	NaiveLane string `json:"naive_lane"`
	PaidLane  string `json:"paid_lane"`
	// Jobs arrive ArrivalLeadS before each probe of ArrivalLane (the naive
	// lane, else the first lane).
	ArrivalLane      string  `json:"arrival_lane"`
	ArrivalLeadS     float64 `json:"arrival_lead_s"`
	DecisionLookback int     `json:"decision_lookback_days"`
	// DroppedReplays counts job replays left out because their deadline
	// plus an hour reaches past the newest probe.
	DroppedReplays int        `json:"dropped_replays"`
	Decisions      []Decision `json:"decisions"`
	// Baselines are the baseline replays (Options.Fallbacks,
	// Options.Deadlines), absent when neither was asked for;
	// DroppedBaselines counts those left out as DroppedReplays does.
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
		DroppedReplays:   b.dropped,
	}
	r.ArrivalLane = b.clock.spec.Name
	if b.naive != nil {
		r.NaiveLane = b.naive.spec.Name
	}
	if b.paid != nil {
		r.PaidLane = b.paid.spec.Name
	}
	var buf []float32
	for i, k := range b.lookbacks {
		cal := Calibration{LookbackDays: k, Lanes: make([]LaneCalibration, 0, len(b.order))}
		var all cell
		var allHours [24]cell
		for _, l := range b.order {
			lc := LaneCalibration{Lane: l.spec.Name, Hours: make([]HourCounts, 24)}
			var sum cell
			for h := range 24 {
				c := &b.cells[i][l.idx*24+h]
				lc.Hours[h] = HourCounts{Hour: h, Counts: c.counts(&buf)}
				sum.merge(c)
				allHours[h].merge(c)
			}
			lc.Counts = sum.counts(&buf)
			all.merge(&sum)
			cal.Lanes = append(cal.Lanes, lc)
		}
		cal.All.Counts = all.counts(&buf)
		cal.All.Hours = make([]HourCounts, 24)
		for h := range 24 {
			cal.All.Hours[h] = HourCounts{Hour: h, Counts: allHours[h].counts(&buf)}
		}
		r.Calibration = append(r.Calibration, cal)
	}
	if best := bestLookback(r.Calibration); best >= 0 {
		r.Calibration[best].Best = true
		r.BestLookbackDays = r.Calibration[best].LookbackDays
	}
	r.Decisions = []Decision{}
	for ci, c := range b.opts.Params.Classes {
		for si, s := range Strategies {
			a := &b.dec[ci*len(Strategies)+si]
			if a.jobs == 0 && ((s == StrategyNaive && b.naive == nil) || (s == StrategyPaid && b.paid == nil)) {
				continue
			}
			d := Decision{Class: c.Name, Strategy: s, Jobs: a.jobs, Met: a.met,
				BurnedFreeTokens: a.burnedFree, Attempts: a.attempts,
				PaidUSD: policy.Round(float64(a.paidTokens)/1000*c.PaidUSDPer1k, 4)}
			if a.jobs > 0 {
				d.MetPct = policy.Round(100*float64(a.met)/float64(a.jobs), 2)
			}
			if m, ok := percentile(a.times, 0.5); ok {
				m = policy.Round(m, 2)
				d.MedianTimeS = &m
			}
			r.Decisions = append(r.Decisions, d)
		}
	}
	if b.base != nil {
		r.Baselines, r.DroppedBaselines = b.base.rows(b), b.base.dropped
	}
	return r
}

// counts reduces a cell; buf is scratch space for sorting the ratios.
func (c *cell) counts(buf *[]float32) Counts {
	n := Counts{
		Probes: c.probes, OK: c.ok, Covered: c.covered,
		FalseEligible: c.falseElig, FalseIneligible: c.falseInelig,
		NoPolicy: c.noPolicy, CensoredUncovered: c.censUncovered,
	}
	if c.ok > 0 {
		v := policy.Round(float64(c.covered)/float64(c.ok), 4)
		n.Coverage = &v
	}
	*buf = append((*buf)[:0], c.ratios...)
	if m, ok := percentile(*buf, 0.5); ok {
		m = policy.Round(m, 3)
		n.MedianRatio = &m
	}
	if m, ok := percentile(*buf, 0.9); ok {
		m = policy.Round(m, 3)
		n.P90Ratio = &m
	}
	return n
}

// percentile returns the nearest-rank q-quantile of xs (the value of rank
// ceil(q·n)), reordering xs (a selection, not a sort: the year's ratios
// are a million values).
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
	ratio := func(c Calibration) float64 {
		if c.All.MedianRatio == nil {
			return math.Inf(1)
		}
		return *c.All.MedianRatio
	}
	reach := func(c Calibration) bool { return *c.All.Coverage >= TargetCoverage }
	best := -1
	for i, c := range cals {
		if c.All.Coverage == nil {
			continue
		}
		if best < 0 {
			best = i
			continue
		}
		b := cals[best]
		switch {
		case reach(c) != reach(b):
			if reach(c) {
				best = i
			}
		case !reach(c) && *c.All.Coverage != *b.All.Coverage:
			if *c.All.Coverage > *b.All.Coverage {
				best = i
			}
		case ratio(c) < ratio(b):
			best = i
		}
	}
	return best
}
