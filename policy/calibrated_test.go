package policy

import (
	"cmp"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

var calStart = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

// rounds returns the probe times of days days from start: :07, :27, :47.
func rounds(start time.Time, days int) []time.Time {
	var ts []time.Time
	for h := range days * 24 {
		for _, m := range []int{7, 27, 47} {
			ts = append(ts, start.Add(time.Duration(h)*time.Hour+time.Duration(m)*time.Minute))
		}
	}
	return ts
}

func newCal(t *testing.T, p CalibratedParams) *Calibrator {
	t.Helper()
	return NewCalibrator(p)
}

func mustAdd(t *testing.T, c *Calibrator, o QueueObs) {
	t.Helper()
	if err := c.Add(o); err != nil {
		t.Fatal(err)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }

var calCoverages = []float64{0.5, 0.9, 0.95, 0.99}

// A lane that always waits 10 s: the profile is 10 s, the level 1 and the
// margin 1 at every coverage from the second probe on, so the forecast is
// the constant; it is warm once there are residuals enough for the
// quantile (k = ceil(c (n+1)) <= n).
func TestCalibratedConstantLane(t *testing.T) {
	for _, cov := range calCoverages {
		c := newCal(t, CalibratedParams{})
		for i, at := range rounds(calStart, 15) {
			f, ok := c.Quantile(at, cov)
			if i == 0 {
				if ok {
					t.Fatalf("c=%v: a forecast before any observation: %+v", cov, f)
				}
			} else {
				if !ok || !near(f.QueueS, 10) || !near(f.ProfileS, 10) || f.Level != 1 || f.Margin != 1 {
					t.Fatalf("c=%v, probe %d: %+v, want 10 s = 10 × 1 × 1", cov, i, f)
				}
				needed := int(math.Ceil(cov/(1-cov) - 1e-9)) // k = ceil(c (n+1)) <= n
				if f.Warm != (f.Residuals >= needed) || f.Residuals != min(i-1, 14*72) {
					t.Fatalf("c=%v, probe %d: %d residuals, warm %v; want %d residuals, warm from %d", cov, i, f.Residuals, f.Warm, min(i-1, 14*72), needed)
				}
			}
			mustAdd(t, c, QueueObs{Time: at, Value: 10})
		}
	}
}

// A constant lane that doubles (or halves) after 14 days recovers within
// two probes, worked by hand: the first probe after the shift meets the old
// forecast, 10 s; its residual ln 2 lies above the residuals' upper tail
// (all 0), so the level only follows the EWMAs: the slow one moves by 0.1 ×
// ln 2, the fast one by 0.3 × ln 2, and the level is the larger: the second
// probe meets 10 × 2^0.3 s; its residual is above the tail too, so the
// level jumps to ln 2 (the smaller residual minus the residuals' median, 0),
// and every later probe of the day meets 20 s. Halving mirrors it, but the
// level is the larger EWMA, the slow one: 20 × 2^-0.1 s.
func TestCalibratedShift(t *testing.T) {
	for _, tc := range []struct {
		name       string
		from, to   float64
		want       []float64 // forecasts for the first probes after the shift
		wantMisses int       // in the 24 h after the shift
	}{
		{"doubles", 10, 20, []float64{10, 10 * math.Pow(2, 0.3), 20, 20}, 2},
		{"halves", 20, 10, []float64{20, 20 * math.Pow(2, -0.1), 10, 10}, 0},
	} {
		for _, cov := range []float64{0.9, 0.95, 0.99} {
			c := newCal(t, CalibratedParams{})
			shift := calStart.AddDate(0, 0, 14)
			var got []float64
			misses := 0
			for _, at := range rounds(calStart, 15) {
				v := tc.from
				if !at.Before(shift) {
					v = tc.to
					f, ok := c.Quantile(at, cov)
					if !ok {
						t.Fatal("no forecast")
					}
					got = append(got, f.QueueS)
					if v > f.QueueS*(1+1e-12) {
						misses++
					}
				}
				mustAdd(t, c, QueueObs{Time: at, Value: v})
			}
			for i, w := range tc.want {
				if !near(got[i], w) {
					t.Errorf("%s, c=%v: forecast %d after the shift %.4f s, want %.4f (all: %.4f)", tc.name, cov, i+1, got[i], w, got[:len(tc.want)])
				}
			}
			for i, g := range got[len(tc.want):] {
				if !near(g, tc.to) {
					t.Fatalf("%s, c=%v: forecast %d after the shift %.4f s, want %v", tc.name, cov, i+len(tc.want)+1, g, tc.to)
				}
			}
			if misses != tc.wantMisses || len(got) != 72 {
				t.Errorf("%s, c=%v: %d misses in %d probes after the shift, want %d", tc.name, cov, misses, len(got), tc.wantMisses)
			}
		}
	}
}

// A lane whose probes all time out never reads quieter than the timeout:
// the profile is the bound (censored observations rank above nothing but
// each other), a censored residual never lowers the level, and every
// residual is 0.
func TestCalibratedOnlyTimeouts(t *testing.T) {
	for _, timeout := range []float64{30, 120} {
		for _, cov := range calCoverages {
			c := newCal(t, CalibratedParams{})
			for i, at := range rounds(calStart, 16) {
				if f, ok := c.Quantile(at, cov); i > 0 && (!ok || f.QueueS < timeout*(1-1e-12)) {
					t.Fatalf("timeout %v, c=%v, probe %d: %+v, want at least the timeout", timeout, cov, i, f)
				}
				mustAdd(t, c, QueueObs{Time: at, Value: timeout, Censored: true})
			}
		}
	}
}

// A quiet lane that starts timing out reads at least the timeout from the
// third timeout on: two censored residuals above the tail move the level to
// the bound's.
func TestCalibratedGoesDown(t *testing.T) {
	for _, cov := range []float64{0.9, 0.95, 0.99} {
		c := newCal(t, CalibratedParams{})
		r := rand.New(rand.NewPCG(1, 2))
		down := calStart.AddDate(0, 0, 14)
		n := 0
		for _, at := range rounds(calStart, 15) {
			o := QueueObs{Time: at, Value: 5 * math.Exp(0.5*r.NormFloat64())}
			if !at.Before(down) {
				if f, _ := c.Quantile(at, cov); n >= 2 && f.QueueS < 120 {
					t.Fatalf("c=%v: timeout %d of the outage: forecast %.2f s, want at least the timeout", cov, n+1, f.QueueS)
				}
				o, n = QueueObs{Time: at, Value: 120, Censored: true}, n+1
			}
			mustAdd(t, c, o)
		}
	}
}

// genLane is a lane with a known queue distribution: lognormal with median
// base × curve(hour) × a factor per day (exp(daySigma·Z)) and a σ that may
// follow the curve (sigma + sigmaLoad × (curve - 1)), cut at a timeout.
type genLane struct {
	base, daySigma, sigma, sigmaLoad, timeout float64
	curve                                     [24]float64
}

type genProbe struct {
	at            time.Time
	v             float64 // observed: the wait, or the timeout
	censored      bool
	median, sigma float64
}

func (g genLane) probes(r *rand.Rand, start time.Time, days int, shiftAt time.Time, shift float64) []genProbe {
	var out []genProbe
	day := 1.0
	for i, at := range rounds(start, days) {
		if i%72 == 0 {
			day = math.Exp(g.daySigma * r.NormFloat64())
		}
		mult := g.curve[at.Hour()]
		p := genProbe{at: at, median: g.base * mult * day, sigma: g.sigma + g.sigmaLoad*(mult-1)}
		if !shiftAt.IsZero() && !at.Before(shiftAt) {
			p.median *= shift
		}
		p.v = p.median * math.Exp(p.sigma*r.NormFloat64())
		if p.v >= g.timeout {
			p.v, p.censored = g.timeout, true
		}
		out = append(out, p)
	}
	return out
}

var (
	harshLike = genLane{base: 3, daySigma: 0.25, sigma: 0.9, timeout: 120,
		curve: [24]float64{0.5, 0.52, 0.53, 0.55, 0.57, 0.58, 0.6, 1.23, 1.87, 2.5, 2.88, 3.25, 3.63, 4, 3.63, 3.25, 2.88, 2.5, 2.13, 1.75, 1.38, 1, 0.83, 0.67}}
	mildLike = genLane{base: 0.55, daySigma: 0.1, sigma: 0.45, sigmaLoad: 0.33, timeout: 120,
		curve: [24]float64{0.8, 0.81, 0.82, 0.83, 0.83, 0.84, 0.85, 0.93, 1.02, 1.1, 1.14, 1.18, 1.21, 1.25, 1.21, 1.18, 1.14, 1.1, 1.05, 1, 0.95, 0.9, 0.87, 0.83}}
)

func zOf(c float64) float64 { return math.Sqrt2 * math.Erfinv(2*c-1) }

// mcResult is what a Monte-Carlo run of the rule measured over the scored
// probes: coverage (a timed-out probe is covered when the forecast reaches
// its timeout) and the median and p90 of forecast / oracle quantile
// (median × exp(σ z_c)).
type mcResult struct {
	probes                int
	coverage              float64
	medianRatio, p90Ratio float64
}

// runMC feeds the rule each lane's probes and scores the forecasts of the
// probes after warm days.
func runMC(t *testing.T, lanes [][]genProbe, cov float64, warm int) mcResult {
	t.Helper()
	var ratios []float64
	covered, n := 0, 0
	for _, ps := range lanes {
		c := newCal(t, CalibratedParams{})
		from := ps[0].at.AddDate(0, 0, warm)
		for _, p := range ps {
			if f, ok := c.Quantile(p.at, cov); ok && !p.at.Before(from) {
				n++
				if (!p.censored && p.v <= f.QueueS) || (p.censored && f.QueueS >= p.v) {
					covered++
				}
				ratios = append(ratios, f.QueueS/(p.median*math.Exp(p.sigma*zOf(cov))))
			}
			mustAdd(t, c, QueueObs{Time: p.at, Value: p.v, Censored: p.censored})
		}
	}
	slices.Sort(ratios)
	return mcResult{probes: n, coverage: float64(covered) / float64(n),
		medianRatio: ratios[len(ratios)/2], p90Ratio: ratios[len(ratios)*9/10]}
}

// TestCalibratedMonteCarlo generates lanes with known medians and σ (a
// harsh world like lanesim's default profile and a mild one), 14 days of
// warm-up and 56 scored, and checks that the coverage the rule achieves is
// within 2 points of c at 0.90 and 0.95 and 1 point at 0.99, and that its
// median ratio to the oracle's quantile (which knows each probe's
// distribution) stays under the bound.
func TestCalibratedMonteCarlo(t *testing.T) {
	worlds := []struct {
		name string
		lane genLane
	}{{"harsh", harshLike}, {"mild", mildLike}}
	for _, w := range worlds {
		var lanes [][]genProbe
		for seed := range uint64(4) {
			lanes = append(lanes, w.lane.probes(rand.New(rand.NewPCG(seed, 19)), calStart, 70, time.Time{}, 1))
		}
		for _, tc := range []struct{ cov, tol, maxRatio float64 }{{0.90, 0.02, 1.15}, {0.95, 0.02, 1.15}, {0.99, 0.01, 1.45}} {
			r := runMC(t, lanes, tc.cov, 14)
			t.Logf("%s c=%.2f: %d probes, coverage %.4f, forecast/oracle median %.3f, p90 %.3f",
				w.name, tc.cov, r.probes, r.coverage, r.medianRatio, r.p90Ratio)
			if math.Abs(r.coverage-tc.cov) > tc.tol || r.medianRatio > tc.maxRatio || r.medianRatio < 0.9 {
				t.Errorf("%s c=%.2f: coverage %.4f (want %.2f ± %.3f), median ratio to the oracle %.3f (want at most %.2f)",
					w.name, tc.cov, r.coverage, tc.cov, tc.tol, r.medianRatio, tc.maxRatio)
			}
		}
	}
}

// TestCalibratedMonteCarloDoubling doubles the generated lanes' queue after
// 28 days and counts the misses of the next 24 h: at most the oracle's
// (which doubles at once) plus 2 a lane, on average.
func TestCalibratedMonteCarloDoubling(t *testing.T) {
	for _, w := range []genLane{harshLike, mildLike} {
		for _, cov := range []float64{0.9, 0.95} {
			shift := calStart.AddDate(0, 0, 28)
			misses, oracle, lanes := 0, 0, 0
			for seed := range uint64(32) {
				ps := w.probes(rand.New(rand.NewPCG(seed, 23)), calStart, 29, shift, 2)
				c := newCal(t, CalibratedParams{})
				for _, p := range ps {
					if !p.at.Before(shift) {
						f, _ := c.Quantile(p.at, cov)
						q := p.median * math.Exp(p.sigma*zOf(cov))
						if p.v > f.QueueS || (p.censored && f.QueueS < p.v) {
							misses++
						}
						if p.v > q || (p.censored && q < p.v) {
							oracle++
						}
					}
					mustAdd(t, c, QueueObs{Time: p.at, Value: p.v, Censored: p.censored})
				}
				lanes++
			}
			per, perOracle := float64(misses)/float64(lanes), float64(oracle)/float64(lanes)
			t.Logf("σ %.2f c=%.2f: %.2f misses a lane in the 24 h after the doubling, the oracle %.2f", w.sigma, cov, per, perOracle)
			if per > perOracle+2 {
				t.Errorf("σ %.2f c=%.2f: %.2f misses a lane after the doubling, the oracle %.2f: want at most 2 more", w.sigma, cov, per, perOracle)
			}
		}
	}
}

// The rule's invariants, over random lanes (lognormal waits, some
// timeouts, random shifts): every forecast is positive and finite; it does
// not fall as the coverage rises; the Calibrator fed one observation at a
// time gives what a new one fed the sorted slice gives; later
// observations do not change an earlier forecast (causal); and scaling
// every wait scales the forecast.
func TestCalibratedInvariants(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for trial := range 20 {
		level := math.Exp(2 * r.NormFloat64())
		var obs []QueueObs
		at := calStart
		for range 200 + r.IntN(800) {
			at = at.Add(time.Duration(1+r.IntN(60)) * time.Minute)
			if r.Float64() < 0.01 {
				level *= math.Exp(2 * r.NormFloat64())
			}
			o := QueueObs{Time: at, Value: max(0.01, level*math.Exp(r.NormFloat64()))} // above the floor: scaling stays exact
			if r.Float64() < 0.05 {
				o.Censored = true
			}
			obs = append(obs, o)
		}
		c := newCal(t, CalibratedParams{LookbackDays: 1 + r.IntN(3)})
		p := c.p
		for i, o := range obs {
			if i%97 == 0 {
				t0 := o.Time
				prev := 0.0
				for _, cov := range []float64{0.05, 0.5, 0.9, 0.95, 0.99, 0.999} {
					f, ok := c.Quantile(t0, cov)
					if i == 0 {
						if ok {
							t.Fatalf("trial %d: a forecast with no observation", trial)
						}
						continue
					}
					if !ok || !(f.QueueS > 0) || math.IsInf(f.QueueS, 0) || f.QueueS < prev {
						t.Fatalf("trial %d, obs %d, c=%v: %+v (the lower coverage gave %v)", trial, i, cov, f, prev)
					}
					prev = f.QueueS
					g, gok := calibratedQuantile(t, p, obs, t0, cov) // all of obs: the later ones must not count
					if gok != ok || g != f {
						t.Fatalf("trial %d, obs %d, c=%v: from the slice %+v %v, Calibrator %+v", trial, i, cov, g, gok, f)
					}
					if cov != 0.9 {
						continue
					}
					scaled := make([]QueueObs, i)
					for j, o := range obs[:i] {
						o.Value *= 1000
						scaled[j] = o
					}
					s, _ := calibratedQuantile(t, p, scaled, t0, cov)
					if math.Abs(s.QueueS/f.QueueS/1000-1) > 1e-9 {
						t.Fatalf("trial %d, obs %d, c=%v: waits ×1000 gave %v, want 1000 × %v", trial, i, cov, s.QueueS, f.QueueS)
					}
				}
			}
			mustAdd(t, c, o)
		}
	}
}

func TestCalibratedErrors(t *testing.T) {
	for _, cov := range []float64{0, 1, -0.5, 1.5, math.NaN()} {
		if err := CheckCoverage(cov); err == nil {
			t.Errorf("coverage %v: no error", cov)
		}
		if _, ok := newCal(t, CalibratedParams{}).Quantile(calStart, cov); ok {
			t.Errorf("Quantile at coverage %v: a forecast", cov)
		}
	}
	c := newCal(t, CalibratedParams{})
	mustAdd(t, c, QueueObs{Time: calStart.Add(time.Hour), Value: 1})
	if err := c.Add(QueueObs{Time: calStart, Value: 1}); !errors.Is(err, ErrObsOrder) {
		t.Errorf("an observation out of order: %v, want ErrObsOrder", err)
	}
	if _, ok := c.Quantile(calStart, 0.9); ok {
		t.Error("a forecast for an instant before the last observation")
	}
	// Non-finite and negative waits are left out.
	for _, v := range []float64{math.NaN(), math.Inf(1), -1} {
		mustAdd(t, c, QueueObs{Time: calStart.Add(2 * time.Hour), Value: v})
	}
	if f, ok := c.Quantile(calStart.Add(3*time.Hour), 0.9); !ok || f.QueueS != 1 || f.Residuals != 0 {
		t.Errorf("after bad waits: %+v, %v; want the one good observation, 1 s", f, ok)
	}
}

// BenchmarkCalibrator is the rule's cost per probe in a backtest: a
// forecast, then the probe added, over a year of a lane.
func BenchmarkCalibrator(b *testing.B) {
	ps := harshLike.probes(rand.New(rand.NewPCG(1, 1)), calStart, 365, time.Time{}, 1)
	b.ResetTimer()
	for range b.N {
		c := NewCalibrator(CalibratedParams{})
		for _, p := range ps {
			c.Quantile(p.at, 0.95)
			_ = c.Add(QueueObs{Time: p.at, Value: p.v, Censored: p.censored})
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ps)), "ns/probe")
}

// The window's k-th smallest of its newer items (kth, which skips the
// older ones in place) is the one of a sorted copy without them, ties
// included, over random windows.
func TestOrderedWindowKth(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 200 {
		w := orderedWindow[float64]{cmp: cmp.Compare[float64]}
		for i := range 1 + r.IntN(60) {
			w.add(int64(i), float64(r.IntN(5))) // few values: many ties
		}
		if trial%3 == 0 {
			w.evict(int64(r.IntN(10)))
		}
		from := int64(r.IntN(70))
		var v []float64
		for _, it := range w.live(from) {
			v = append(v, it.v)
		}
		slices.Sort(v)
		if want := len(w.sorted) - len(w.stale(from)); len(v) != want || !slices.IsSorted(v) {
			t.Fatalf("trial %d: view of %d items, want %d sorted", trial, len(v), want)
		}
		for k := 1; k <= len(v); k++ {
			if got := w.kth(from, k); got != v[k-1] {
				t.Fatalf("trial %d: kth(%d, %d) = %v, want %v (sorted %v, view %v)", trial, from, k, got, v[k-1], w.sorted, v)
			}
		}
	}
}

// dayAheadCoverage forecasts each scored day's probes from the state at
// its midnight (the observations before the day; none of the day's are
// added before the day is scored), as policy.Forecast does, and returns
// the coverage and the median ratio to the oracle's quantile.
func dayAheadCoverage(t *testing.T, lanes [][]genProbe, p CalibratedParams, cov float64, warm int) (float64, float64) {
	t.Helper()
	covered, n := 0, 0
	var ratios []float64
	for _, ps := range lanes {
		c := newCal(t, p)
		from := ps[0].at.AddDate(0, 0, warm)
		for start := 0; start < len(ps); {
			end := start
			for end < len(ps) && ps[end].at.Truncate(24*time.Hour).Equal(ps[start].at.Truncate(24*time.Hour)) {
				end++
			}
			for _, q := range ps[start:end] {
				if f, ok := c.Quantile(q.at, cov); ok && !q.at.Before(from) {
					n++
					if q.v <= f.QueueS {
						covered++
					}
					ratios = append(ratios, f.QueueS/(q.median*math.Exp(q.sigma*zOf(cov))))
				}
			}
			for _, q := range ps[start:end] {
				mustAdd(t, c, QueueObs{Time: q.at, Value: q.v, Censored: q.censored})
			}
			start = end
		}
	}
	slices.Sort(ratios)
	return float64(covered) / float64(n), ratios[len(ratios)/2]
}

// A day ahead, the one-probe-ahead margin under-covers (its residuals are
// measured against a level that is fresh at each probe, the forecast's is
// up to a day old); DayAhead, residuals against the profile alone, covers
// within 2 points of the target on both worlds.
func TestCalibratedDayAhead(t *testing.T) {
	for _, w := range []struct {
		name string
		lane genLane
	}{{"harsh", harshLike}, {"mild", mildLike}} {
		var lanes [][]genProbe
		for seed := range uint64(4) {
			lanes = append(lanes, w.lane.probes(rand.New(rand.NewPCG(seed, 23)), calStart, 70, time.Time{}, 1))
		}
		for _, cov := range []float64{0.9, 0.95} {
			live, liveRatio := dayAheadCoverage(t, lanes, CalibratedParams{}, cov, 14)
			ahead, aheadRatio := dayAheadCoverage(t, lanes, CalibratedParams{DayAhead: true}, cov, 14)
			t.Logf("%s @%v a day ahead: with the level %.4f (ratio %.3f), DayAhead %.4f (ratio %.3f)", w.name, cov, live, liveRatio, ahead, aheadRatio)
			if math.Abs(ahead-cov) > 0.02 {
				t.Errorf("%s @%v: DayAhead covers %.4f a day ahead, want within 0.02", w.name, cov, ahead)
			}
		}
	}
}

// A wait of 0 is an observation (a first token at once), counted as
// MinQueueObsS so that it has a logarithm; only negative and non-finite
// waits are left out. One observation of 0 s: the forecast is 1 ms.
// (calibrated.go Add: `o.Value < 0` → `o.Value <= 0`.)
func TestCalibratedWaitOfZeroCounts(t *testing.T) {
	c := newCal(t, CalibratedParams{})
	mustAdd(t, c, QueueObs{Time: calStart, Value: 0})
	f, ok := c.Quantile(calStart.Add(time.Minute), 0.9)
	if !ok || !near(f.QueueS, MinQueueObsS) || !near(f.ProfileS, MinQueueObsS) {
		t.Errorf("after one wait of 0 s: %+v, %v; want a forecast of %v s", f, ok, MinQueueObsS)
	}
}

// The shift rule needs calibratedShiftMin (20) residuals: before that two
// observations in a row below the profile move the level by the EWMAs
// only, never by a jump. Three waits in one hour of day, 10 s then 5 s
// twice: the second meets the profile 10 s (residual e = d = -ln 2; slow
// EWMA -0.1 ln 2, fast -0.3 ln 2, level the larger, -0.1 ln 2); the third
// meets the upper median of {5, 10}, 10 s: e = -ln 2, d = -0.9 ln 2; slow
// 0.9 × -0.1 ln 2 + 0.1 × -ln 2 = -0.19 ln 2, fast 0.7 × -0.3 ln 2 + 0.3 ×
// -ln 2 = -0.51 ln 2, level -0.19 ln 2 (a jump would make it -ln 2). The
// forecast after them: profile 5 s (upper median of {5, 5, 10}), level
// 2^-0.19, margin at 0.5 the 2nd of the residuals {-ln 2, -0.9 ln 2}
// (k = ceil(0.5 × 3)): 2^-0.9.
// (calibrated.go Add: `detect && !o.Censored && d < lo` → `(detect ||
// !o.Censored) && d < lo`.)
func TestCalibratedNoShiftBeforeEnoughResiduals(t *testing.T) {
	c := newCal(t, CalibratedParams{})
	for i, v := range []float64{10, 5, 5} {
		mustAdd(t, c, QueueObs{Time: calStart.Add(time.Duration(i) * time.Minute), Value: v})
	}
	f, ok := c.Quantile(calStart.Add(3*time.Minute), 0.5)
	want := CalibratedFigure{QueueS: 5 * math.Pow(2, -0.19) * math.Pow(2, -0.9), ProfileS: 5, Level: math.Pow(2, -0.19), Margin: math.Pow(2, -0.9), Residuals: 2, Warm: true}
	if !ok || !near(f.QueueS, want.QueueS) || !near(f.ProfileS, want.ProfileS) || !near(f.Level, want.Level) || !near(f.Margin, want.Margin) ||
		f.Residuals != want.Residuals || f.Warm != want.Warm {
		t.Errorf("got %+v, %v; want %+v", f, ok, want)
	}
}

// The window of a forecast for t is the lookback before it, [t - lookback,
// t]: a probe exactly one lookback after another is forecast with the
// older one still in the window, so its residual has a profile. Lookback
// 1 day, two probes 24 h apart, 100 s then 1 s: the second leaves a
// residual and the hour's profile is the upper median of {1, 100}, 100 s.
func TestCalibratedWindowEdge(t *testing.T) {
	c := newCal(t, CalibratedParams{LookbackDays: 1})
	second := calStart.Add(24 * time.Hour)
	mustAdd(t, c, QueueObs{Time: calStart, Value: 100})
	mustAdd(t, c, QueueObs{Time: second, Value: 1})
	if f, ok := c.Quantile(second, 0.5); !ok || f.Residuals != 1 || !near(f.ProfileS, 100) {
		t.Errorf("%+v, %v; want 1 residual, profile 100 s", f, ok)
	}
}

// A shift moves both EWMAs to the smaller (upward) or larger (downward)
// of the two residuals minus the residuals' median. The state is set by
// hand: 20 residuals 0, 0.1, ..., 1.9 (upper tail s[18] = 1.8, lower tail
// s[0] = 0, median s[10] = 1.0), a profile of 10 s for the hour and a level
// of 0, the previous observation beyond the tail with residual ±5. A wait
// of 10·e^4 s (e = 4 > 1.8) jumps the level to min(4, 5) - 1 = 3; a wait of
// 10·e^-4 s (e = -4 < 0) to max(-4, -5) - 1 = -5. The tails are the
// order statistics s[ceil(0.95 n) - 1] and s[ceil(0.05 n) - 1], and 20
// residuals are enough to tell a shift.
// (calibrated.go shiftBounds: `n < calibratedShiftMin` → `<=`, the tails'
// `ceil(q n) - 1` → `+ 1`; Add: `min(e, c.prevE) - med` → `+ med`, `max(e, c.prevE)
// - med` → `+ med`.)
func TestCalibratedShiftJumpsByTheMedian(t *testing.T) {
	for _, tc := range []struct {
		name      string
		up        bool
		e, level  float64
		prevE     float64
		wantLevel float64
	}{
		{"up", true, 4, 0, 5, 3},
		{"down", false, -4, 0, -5, -5},
		// Just past the upper tail (1.85 > s[18] = 1.8): a jump to 0.85.
		{"up, just past the tail", true, 1.85, 0, 5, 0.85},
		// Not under the lower tail (0.1 >= s[0] = 0): no jump; the level
		// is the larger EWMA, 0.3 × 0.1.
		{"down, not past the tail", false, 0.1, 0, -5, 0.03},
	} {
		c := newCal(t, CalibratedParams{})
		t0 := calStart.UnixNano()
		for i := range 20 {
			c.resid.add(t0, float64(i)/10)
		}
		c.hours[0].add(t0, profileKey{v: math.Log(10)})
		c.last, c.seen = calStart, true
		c.prevHi, c.prevLo, c.prevE = tc.up, !tc.up, tc.prevE
		mustAdd(t, c, QueueObs{Time: calStart.Add(time.Minute), Value: 10 * math.Exp(tc.e)})
		f, ok := c.Quantile(calStart.Add(2*time.Minute), 0.5)
		if !ok || !near(math.Log(f.Level), tc.wantLevel) {
			t.Errorf("%s: level e^%v (%+v, %v), want e^%v", tc.name, math.Log(f.Level), f, ok, tc.wantLevel)
		}
	}
}

// A censored observation ranks above every uncensored one in the profile
// (it is at least its bound, so it can only raise the median), whatever
// the order they come in: waits of 100 s and 200 s and a timeout at 1 s in
// one hour of day have the upper median 200 s, the ranks [100, 200, 1+].
// (calibrated.go cmpProfileKey: `return -1` → `return 1`.)
func TestCalibratedCensoredRanksAbove(t *testing.T) {
	obs := []QueueObs{{Value: 100}, {Value: 200}, {Value: 1, Censored: true}}
	for _, order := range [][]int{{0, 1, 2}, {2, 0, 1}, {0, 2, 1}, {2, 1, 0}} {
		c := newCal(t, CalibratedParams{})
		for i, j := range order {
			o := obs[j]
			o.Time = calStart.Add(time.Duration(i) * time.Minute)
			mustAdd(t, c, o)
		}
		if f, ok := c.Quantile(calStart.Add(10*time.Minute), 0.5); !ok || !near(f.ProfileS, 200) {
			t.Errorf("order %v: profile %v s (%+v, %v), want 200", order, f.ProfileS, f, ok)
		}
	}
}

// An hour of day with no observation in the window reads the median of
// every hour's observations in it, without those that have left it.
// Lookback 1 day: 30 s at 00:00 and 20 s at 05:00; a forecast for 03:00
// the next day (no observation at 03:00) has 00:00's out of its window:
// the profile is 20 s (with it, the upper median of {20, 30}, 30 s).
// (calibrated.go view: `w.head+len(w.stale(from))` → `-`.)
func TestCalibratedProfileOfAnEmptyHourLeavesOldObservations(t *testing.T) {
	c := newCal(t, CalibratedParams{LookbackDays: 1})
	mustAdd(t, c, QueueObs{Time: calStart, Value: 30})
	mustAdd(t, c, QueueObs{Time: calStart.Add(5 * time.Hour), Value: 20})
	if f, ok := c.Quantile(calStart.Add(27*time.Hour), 0.5); !ok || !near(f.ProfileS, 20) {
		t.Errorf("profile %v s (%+v, %v), want 20", f.ProfileS, f, ok)
	}
}

// calibratedQuantile is the calibrated rule as a function: the forecast
// at coverage cov for an attempt at t from the observations before t (obs
// need not be sorted).
func calibratedQuantile(t *testing.T, p CalibratedParams, obs []QueueObs, at time.Time, cov float64) (CalibratedFigure, bool) {
	t.Helper()
	c := newCal(t, p)
	sorted := slices.Clone(obs)
	slices.SortStableFunc(sorted, func(a, b QueueObs) int { return a.Time.Compare(b.Time) })
	for _, o := range sorted {
		if !o.Time.Before(at) {
			break
		}
		mustAdd(t, c, o)
	}
	return c.Quantile(at, cov)
}

// Within counts and sums the distribution's live waits at most s, each
// moved to the level (exp(P(h) + L + d)): the same as a count over its
// hours' items one by one, at every s, with items of other hours gone
// stale in place and s above the largest wait (the shortcut) or below.
func TestWaitDistWithinIsACountOfItsWaits(t *testing.T) {
	c := newCal(t, CalibratedParams{})
	for i, ts := range rounds(calStart, 20) {
		v := 10 * math.Exp(0.6*math.Sin(float64(i)*0.7))
		if ts.Hour() == 14 && ts.Minute() == 27 {
			v = 80 // a slower round in the hour asked for
		}
		mustAdd(t, c, QueueObs{Time: ts, Value: v})
	}
	// Half a day on, the 13h and 15h items of 14 days ago are stale
	// but still held.
	at := calStart.AddDate(0, 0, 20).Add(14*time.Hour + 50*time.Minute)
	c.p.Location = time.UTC
	w, ok := c.Waits(at)
	if !ok || w.N() == 0 {
		t.Fatal("no waits")
	}
	var waits []float64
	stale := 0
	for j := range 24 {
		if w.hours&(1<<j) == 0 {
			continue
		}
		for _, it := range c.waits[j].items[c.waits[j].head:] {
			if it.t < w.from {
				stale++
				continue
			}
			waits = append(waits, math.Exp(w.base+it.v.d))
		}
	}
	if len(waits) != w.N() {
		t.Fatalf("N() = %d, %d live waits", w.N(), len(waits))
	}
	slices.Sort(waits)
	for _, s := range []float64{0, 1, waits[0] * 1.001, 5, 9, 10, 11, 15, 30, waits[len(waits)-1] * 0.999, waits[len(waits)-1] * 2} {
		n, sum := 0, 0.0
		for _, v := range waits {
			if v <= s {
				n++
				sum += v
			}
		}
		gotN, gotSum := w.Within(s)
		if gotN != n || math.Abs(gotSum-sum) > 1e-9*math.Max(1, sum) {
			t.Errorf("Within(%g) = %d, %g; want %d, %g (%d waits, %d stale)", s, gotN, gotSum, n, sum, len(waits), stale)
		}
	}
}

// Waits widens to the neighbouring hours only while it holds fewer than
// MinWaitSamples, out to the hour opposite (12 away), and answers false
// when the lane has no ok wait at all.
func TestCalibratorWaitsWidening(t *testing.T) {
	t.Run("exactly enough in the hour: its own alone", func(t *testing.T) {
		c := newCal(t, CalibratedParams{})
		mustAdd(t, c, QueueObs{Time: calStart.Add(time.Hour), Value: 10}) // a profile to measure the first against
		for d := range MinWaitSamples / 3 {
			for _, h := range []int{13, 14, 15} {
				for _, m := range []int{7, 27, 47} {
					mustAdd(t, c, QueueObs{Time: calStart.AddDate(0, 0, d).Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute), Value: 10})
				}
			}
		}
		w, ok := c.Waits(calStart.AddDate(0, 0, MinWaitSamples/3).Add(14 * time.Hour))
		if !ok || w.N() != MinWaitSamples || w.hours != hoursSet(14) {
			t.Errorf("%d waits over hours %b, want %d of 14h alone", w.N(), w.hours, MinWaitSamples)
		}
	})
	t.Run("only the opposite hour has waits", func(t *testing.T) {
		c := newCal(t, CalibratedParams{})
		for d := range 5 {
			mustAdd(t, c, QueueObs{Time: calStart.AddDate(0, 0, d).Add(2*time.Hour + 7*time.Minute), Value: 10})
		}
		w, ok := c.Waits(calStart.AddDate(0, 0, 5).Add(14 * time.Hour))
		if !ok || w.N() != 4 || w.hours&hoursSet(2) == 0 {
			t.Errorf("ok %v, %d waits over hours %b, want the 2h's 4", ok, w.N(), w.hours)
		}
	})
	t.Run("timeouts alone: no wait", func(t *testing.T) {
		c := newCal(t, CalibratedParams{})
		for i, ts := range rounds(calStart, 3) {
			mustAdd(t, c, QueueObs{Time: ts, Value: 60 + float64(i%3), Censored: true})
		}
		if w, ok := c.Waits(calStart.AddDate(0, 0, 3)); ok || w.N() != 0 {
			t.Errorf("ok %v with %d waits, want none", ok, w.N())
		}
	})
}
