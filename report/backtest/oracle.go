package backtest

import (
	"math"
	"slices"
	"time"

	"github.com/lanewatch/lanewatch/internal/num"
	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/store"
)

// oracleObs is a scored probe with its truth.
type oracleObs struct {
	lane  int32
	hour  int64 // the probe's hour start, Unix s
	v     float64
	ok    bool
	logM  float64 // log of the true median
	sigma float64
}

// addOracle keeps p with its truth for the oracle's figures (a probe with
// no earlier probe of its lane, no truth or a 429 is left out, as
// coverage_all leaves it out).
func (b *Backtest) addOracle(l *lane, p *store.Probe, hour time.Time) {
	if l.version == 0 || rateLimited(p) {
		return
	}
	m, sigma, ok := b.opts.Truth(p)
	if !ok || !num.Finite(m) || m <= 0 || !num.Finite(sigma) || sigma < 0 {
		return
	}
	v := p.QueueS
	if !num.Finite(v) || v < 0 {
		v = 0
	}
	b.oracle = append(b.oracle, oracleObs{lane: int32(l.idx), hour: hour.Unix(), v: v, ok: p.OK, logM: math.Log(m), sigma: sigma})
}

// zOf returns the z from which the oracle's figure covers o: the figure
// exp(logM + sigma·z) reaches the wait (the wait it was cut at, for a
// failure); -Inf when any figure does.
func (o *oracleObs) zOf() float64 {
	if o.v <= 0 {
		return math.Inf(-1)
	}
	d := math.Log(o.v) - o.logM
	if o.sigma == 0 {
		if d <= 0 {
			return math.Inf(-1)
		}
		return math.Inf(1)
	}
	return d / o.sigma
}

// oracleOf compares entry i with the oracle over the lanes of kind whose
// scored probes have a truth; sum is the entry's cell of that kind.
func (b *Backtest) oracleOf(i int, kind string, sum *cell) *Oracle {
	e := b.entries[i]
	var zs []float64
	var obs []*oracleObs
	for j := range b.oracle {
		o := &b.oracle[j]
		l := b.order[o.lane]
		if l.spec.Kind != kind || !b.warm(l, time.Unix(o.hour, 0), e.warmup) {
			continue
		}
		obs = append(obs, o)
		zs = append(zs, o.zOf())
	}
	out := &Oracle{Probes: len(obs)}
	if len(obs) == 0 {
		return out
	}
	// The rule's coverage over the same probes: its coverage_all (the
	// probes without a truth are few; the figure is the kind's).
	cov := 0.0
	if sum.all > 0 {
		cov = float64(sum.coveredAll) / float64(sum.all)
	}
	out.Coverage = policy.Round(cov, 4)
	out.Misses = sum.all - sum.coveredAll
	sorted := slices.Sorted(slices.Values(zs))
	k := min(max(int(math.Ceil(cov*float64(len(sorted))-1e-9)), 1), len(sorted))
	z := sorted[k-1]
	if !num.Finite(z) { // every probe is covered by any figure, or none can be
		z = 0
	}
	var ratios []float32
	for _, o := range obs {
		if o.ok && o.v > 0 {
			ratios = append(ratios, float32(math.Exp(o.logM+o.sigma*z)/o.v))
		}
	}
	if m, ok := percentile(ratios, 0.5); ok {
		out.OracleMedianRatio = new(policy.Round(m, 3))
		ratios = append(ratios[:0], sum.ratios...)
		if rm, ok := percentile(ratios, 0.5); ok && m > 0 {
			out.RatioToOracle = new(policy.Round(rm/m, 3))
		}
	}
	target := e.coverage
	if e.rule != policy.RuleCalibrated {
		target = TargetCoverage
	}
	zt := normalQuantile(target)
	covered := 0
	for _, z := range zs {
		if z <= zt {
			covered++
		}
	}
	out.OracleMisses = len(zs) - covered
	out.OracleCoverage = policy.Round(float64(covered)/float64(len(zs)), 4)
	return out
}

// normalQuantile returns the standard normal's p-quantile (0 < p < 1).
func normalQuantile(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }
