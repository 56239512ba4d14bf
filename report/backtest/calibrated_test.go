package backtest

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/store"
)

// calibratedParams is params(lookback) under the calibrated rule.
func calibratedParams(lookback int) policy.Params {
	p := params(lookback)
	p.Rule = policy.RuleCalibrated
	return p
}

// kindCal returns the calibration of kind under the entry (rule, lookback,
// target coverage; 0 for max).
func kindCal(t *testing.T, r Report, rule string, lookback int, cov float64, kind string) KindCalibration {
	t.Helper()
	for _, c := range r.Calibration {
		if c.Rule != rule || c.LookbackDays != lookback || (c.TargetCoverage == nil) != (cov == 0) || (cov != 0 && *c.TargetCoverage != cov) {
			continue
		}
		if k := c.kind(kind); k != nil {
			return *k
		}
	}
	t.Fatalf("no calibration %s %d @%v of kind %s", rule, lookback, cov, kind)
	return KindCalibration{}
}

// A lane that always waits 12.5 s: once warm the calibrated figure is
// 12.5 s at every coverage (profile 12.5 × level 1 × margin 1): coverage 1
// and ratio 1, as the worst-of.
func TestCalibratedConstantLane(t *testing.T) {
	opts := Options{Params: calibratedParams(14), Rules: []string{policy.RuleCalibrated, policy.RuleMax},
		Coverages: []float64{0.9, 0.95, 0.99}, From: day0.AddDate(0, 0, 15), To: day0.AddDate(0, 0, 17)}
	r := run(t, opts, rounds(opts.ReadFrom(), opts.To, func(time.Time) (float64, bool) { return 12.5, true }))
	if len(r.Calibration) != 4 {
		t.Fatalf("%d calibrations, want 3 calibrated and 1 max", len(r.Calibration))
	}
	for _, c := range r.Calibration {
		for _, k := range c.Kinds {
			if k.Probes != 144 || k.OK != 144 || k.Covered != 144 || f(k.Coverage) != "1" || f(k.CoverageAll) != "1" ||
				f(k.MedianRatio) != "1" || f(k.P90Ratio) != "1" {
				t.Errorf("%s %s: %+v coverage_all %s", c.name(), k.Kind, k.Counts, f(k.CoverageAll))
			}
		}
		if c.WarmupDays != 14 {
			t.Errorf("%s: warm-up %d days, want the lookback, 14", c.name(), c.WarmupDays)
		}
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, &r, false); err != nil {
		t.Fatal(err)
	}
	if s := buf.String(); !bytes.Contains(buf.Bytes(), []byte("sweep, free lanes")) || bytes.Contains(buf.Bytes(), []byte("\nall ")) {
		t.Errorf("table: want per-kind sweeps and no mixed row:\n%s", s)
	}
}

// A lane that doubles from 10 s to 20 s: the calibrated rule misses the
// first probe after the change (figure 10) and none after, at every
// coverage: the second, in the same hour, meets the hour's worst, 20 (the
// floor of issue 28; the rule alone read 10·2^0.3 = 12.32 there, the fast
// level 0.3 of the way, and missed it too), and two residuals above the
// tail in a row then move the level at once.
func TestCalibratedDoublingLane(t *testing.T) {
	change := day0.AddDate(0, 0, 16)
	opts := Options{Params: calibratedParams(14), Coverages: []float64{0.9, 0.95, 0.99},
		From: day0.AddDate(0, 0, 15), To: day0.AddDate(0, 0, 18)}
	b, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	uncovered := map[int][]time.Time{}
	var second []float64
	b.onEntryScore = func(p *store.Probe, i int, l *policy.Lane) {
		if p.Lane != "free" {
			return
		}
		if p.QueueS > l.NextQueueS {
			uncovered[i] = append(uncovered[i], p.Time)
		}
		if p.Time.Equal(change.Add(27 * time.Minute)) {
			second = append(second, l.NextQueueS)
		}
	}
	for _, p := range rounds(opts.ReadFrom(), opts.To, func(at time.Time) (float64, bool) {
		if at.Before(change) {
			return 10, true
		}
		return 20, true
	}) {
		if err := b.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	b.Report()
	want := []time.Time{change.Add(7 * time.Minute)}
	for i := range b.entries {
		if !slices.Equal(uncovered[i], want) {
			t.Errorf("entry %d: uncovered at %v, want %v", i, uncovered[i], want)
		}
	}
	for _, q := range second {
		if q != 20 {
			t.Errorf("the second probe after the change met %v, want the hour's worst, 20", q)
		}
	}
}

// A lane whose probes all time out after 30 s never reads quiet: its figure
// is at least the timeout at every coverage, so coverage_all is 1 (every
// timeout reached), and coverage has no ok probe to count.
func TestCalibratedOnlyTimeouts(t *testing.T) {
	opts := Options{Params: calibratedParams(14), Coverages: []float64{0.5, 0.9, 0.99},
		From: day0.AddDate(0, 0, 15), To: day0.AddDate(0, 0, 16)}
	b, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	low := 0
	b.onEntryScore = func(p *store.Probe, _ int, l *policy.Lane) {
		if p.Lane == "free" && (l.NextQueueS < 30 || l.Eligible) {
			low++
		}
	}
	for _, p := range rounds(opts.ReadFrom(), opts.To, func(time.Time) (float64, bool) { return 30, false }) {
		if err := b.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	r := b.Report()
	if low > 0 {
		t.Errorf("%d scores read the timed-out lane under 30 s or eligible", low)
	}
	for _, cov := range []float64{0.5, 0.9, 0.99} {
		k := kindCal(t, r, policy.RuleCalibrated, 14, cov, "free")
		if k.Probes != 72 || k.OK != 0 || k.Coverage != nil || f(k.CoverageAll) != "1" || k.CensoredUncovered != 0 {
			t.Errorf("@%v: %+v coverage_all %s", cov, k.Counts, f(k.CoverageAll))
		}
	}
}

// coverage_all counts a timeout as a miss unless next_queue_s reached the
// wait it was cut at, and leaves 429s out.
func TestCoverageAll(t *testing.T) {
	lane := &policy.Lane{Reason: policy.ReasonOK, Eligible: true, NextQueueS: 10}
	var c cell
	for _, p := range []store.Probe{
		{OK: true, QueueS: 5},                                        // covered
		{OK: true, QueueS: 11},                                       // missed
		{OK: false, QueueS: 10, Outcome: "timeout"},                  // cut at 10: covered
		{OK: false, QueueS: 30, Outcome: "timeout"},                  // cut at 30: missed
		{OK: false, QueueS: 0, Outcome: "http_error"},                // no wait: covered
		{OK: false, QueueS: 2, Outcome: "rate_limited", Status: 429}, // left out
	} {
		c.add(lane, &p)
	}
	if c.all != 5 || c.coveredAll != 3 || c.ok != 2 || c.covered != 1 {
		t.Errorf("all %d covered_all %d ok %d covered %d; want 5 3 2 1", c.all, c.coveredAll, c.ok, c.covered)
	}
}

// The max rule asked for explicitly, alone and without the new options,
// gives the report of before, byte for byte; in issue 19's shape its
// figures per lane are the same.
func TestRuleMaxIsTheOldReport(t *testing.T) {
	ps := rounds(day0, day0.AddDate(0, 0, 11), func(at time.Time) (float64, bool) {
		q := float64(5 + (at.Hour()*7+at.Minute())%13)
		return q, at.Minute() != 27 || at.Hour()%5 != 0
	})
	base := Options{Params: params(3), Lookbacks: []int{1, 3, 7}, From: day0.AddDate(0, 0, 8), To: day0.AddDate(0, 0, 11)}
	old := run(t, base, ps)
	explicit := base
	explicit.Rules = []string{policy.RuleMax}
	got := run(t, explicit, ps)
	for _, w := range []func(*bytes.Buffer, *Report) error{
		func(b *bytes.Buffer, r *Report) error { return WriteTable(b, r, true) },
		func(b *bytes.Buffer, r *Report) error { return WriteCSV(b, r, true) },
		func(b *bytes.Buffer, r *Report) error { return WriteJSON(b, r, true) },
	} {
		var a, b bytes.Buffer
		if err := w(&a, &old); err != nil {
			t.Fatal(err)
		}
		if err := w(&b, &got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Errorf("-rule max differs from the old report:\n%s\nvs\n%s", a.String(), b.String())
		}
	}
	ext := base
	ext.Rules = []string{policy.RuleMax}
	ext.Coverages = []float64{0.95}
	x := run(t, ext, ps)
	for i, c := range x.Calibration {
		for j, l := range c.Lanes {
			o := old.Calibration[i].Lanes[j].Counts
			l.CoverageAll = nil
			a, _ := json.Marshal(l.Counts)
			b, _ := json.Marshal(o)
			if !bytes.Equal(a, b) {
				t.Errorf("lookback %d lane %s: %s, the old report %s", c.LookbackDays, l.Lane, a, b)
			}
		}
	}
}

// The oracle of a lane that always waits its true median: every probe is
// covered from z = 0, so at the rule's coverage (1) the oracle's figure is
// the median, its ratio 1, the rule's ratio to it 1; at the target 0.95 the
// oracle misses none.
func TestOracleOfAConstantLane(t *testing.T) {
	opts := Options{Params: calibratedParams(14), From: day0.AddDate(0, 0, 15), To: day0.AddDate(0, 0, 17),
		Truth: func(p *store.Probe) (float64, float64, bool) {
			if p.Lane == "free" {
				return 12.5, 0.5, true
			}
			return 1, 0.1, true
		}}
	r := run(t, opts, rounds(opts.ReadFrom(), opts.To, func(time.Time) (float64, bool) { return 12.5, true }))
	for _, kind := range []string{"free", "paid"} {
		o := kindCal(t, r, policy.RuleCalibrated, 14, 0.95, kind).Oracle
		if o == nil || o.Probes != 144 || o.Coverage != 1 || f(o.OracleMedianRatio) != "1" || f(o.RatioToOracle) != "1" ||
			o.Misses != 0 || o.OracleMisses != 0 || o.OracleCoverage != 1 {
			t.Errorf("%s: oracle %+v", kind, o)
		}
	}
}

// A truth the oracle cannot use leaves its probe out, as does a truth
// that says it does not know: of the free lane's three probes an hour only
// the :07 one (sigma 0, a point mass) counts; at :27 the truth is invalid
// in turn (median NaN, 0 or -1; sigma -1, NaN or +Inf), at :47 not known.
func TestOracleLeavesOutWhatItCannotUse(t *testing.T) {
	bad := [][2]float64{{math.NaN(), 0.5}, {0, 0.5}, {-1, 0.5}, {12.5, -1}, {12.5, math.NaN()}, {12.5, math.Inf(1)}}
	opts := Options{Params: calibratedParams(14), From: day0.AddDate(0, 0, 15), To: day0.AddDate(0, 0, 17),
		Truth: func(p *store.Probe) (float64, float64, bool) {
			if p.Lane != "free" {
				return 1, 0.1, true
			}
			switch p.Time.Minute() {
			case 7:
				return 12.5, 0, true
			case 27:
				b := bad[p.Time.Hour()%len(bad)]
				return b[0], b[1], true
			}
			return 12.5, 0.5, false
		}}
	r := run(t, opts, rounds(opts.ReadFrom(), opts.To, func(time.Time) (float64, bool) { return 12.5, true }))
	if o := kindCal(t, r, policy.RuleCalibrated, 14, 0.95, "free").Oracle; o == nil || o.Probes != 48 || o.OracleMisses != 0 {
		t.Errorf("free: oracle %+v, want the 48 probes of :07 alone, none missed by a point mass at their wait", o)
	}
	if o := kindCal(t, r, policy.RuleCalibrated, 14, 0.95, "paid").Oracle; o == nil || o.Probes != 144 {
		t.Errorf("paid: oracle %+v, want its 144 probes", o)
	}
}

func TestNormalQuantile(t *testing.T) {
	for _, c := range []struct{ p, z float64 }{{0.5, 0}, {0.05, -1.6448536269514722}, {0.95, 1.6448536269514722}, {0.99, 2.3263478740408408}, {0.9, 1.2815515655446004}} {
		if z := normalQuantile(c.p); z-c.z > 1e-9 || c.z-z > 1e-9 {
			t.Errorf("normalQuantile(%v) = %v, want %v", c.p, z, c.z)
		}
	}
}

// The oracle's figures at their edges, on the free lane's three probes of
// one hour (max rule, target 0.95): a lane that queues 0 s has no ratio;
// a truth far below every wait (a point mass at 1e-50 s) gives the oracle
// a median ratio of 0 and the rule no finite ratio to it; a failure cut at
// an infinite wait counts as covered (its wait unknown, as coverage_all
// counts it); and the oracle covers a wait its figure at the target's z
// equals.
func TestOracleFiguresAtTheirEdges(t *testing.T) {
	// at is the true median (sigma 1) whose figure at the target's z is
	// 12.5 s to the last bit: a wait there is covered.
	zt, at := normalQuantile(TargetCoverage), math.Exp(math.Log(12.5)-normalQuantile(TargetCoverage))
	for i := 0; math.Log(12.5)-math.Log(at) != zt; i++ {
		if i == 64 {
			t.Fatalf("no median puts 12.5 s at z %v", zt)
		}
		if math.Log(12.5)-math.Log(at) > zt {
			at = math.Nextafter(at, math.Inf(1))
		} else {
			at = math.Nextafter(at, 0)
		}
	}
	for _, tc := range []struct {
		name            string
		queue           float64
		ok              bool
		median, sigma   float64
		oracleRatio     string
		ratioToOracle   string
		misses, oMisses int
	}{
		{"no wait", 0, true, 12.5, 0.5, "null", "null", 0, 0},
		{"a truth far below the waits", 12.5, true, 1e-50, 0, "0", "null", 1, 3},
		{"failures cut at an infinite wait", math.Inf(1), false, 12.5, 0.5, "null", "null", 0, 0},
		{"a wait at the oracle's figure", 12.5, true, at, 1, "1", "1", 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from := day0.AddDate(0, 0, 2).Add(10 * time.Hour)
			opts := Options{Params: params(1), From: from, To: from.Add(time.Hour),
				Truth: func(*store.Probe) (float64, float64, bool) { return tc.median, tc.sigma, true }}
			r := run(t, opts, rounds(opts.ReadFrom(), opts.To, func(at time.Time) (float64, bool) {
				if at.Before(from) {
					return 5, true
				}
				return tc.queue, tc.ok
			}))
			o := kindCal(t, r, policy.RuleMax, 1, 0, "free").Oracle
			if o == nil || o.Probes != 3 || f(o.OracleMedianRatio) != tc.oracleRatio || f(o.RatioToOracle) != tc.ratioToOracle ||
				o.Misses != tc.misses || o.OracleMisses != tc.oMisses {
				t.Fatalf("oracle %+v (median ratio %s, ratio to it %s); want 3 probes, %s, %s, %d and %d misses",
					o, f(o.OracleMedianRatio), f(o.RatioToOracle), tc.oracleRatio, tc.ratioToOracle, tc.misses, tc.oMisses)
			}
		})
	}
}

// The oracle leaves out a 429 and a lane's first probe (no policy before
// it), as coverage_all does: with a lookback of 0 (no warm-up), the free
// lane first probed at 10:07 inside the window, its 10:27 probe a 429,
// only the 10:47 one counts; the paid lane's three all do.
func TestOracleLeavesOutA429AndALanesFirstProbe(t *testing.T) {
	from := day0.AddDate(0, 0, 2).Add(10 * time.Hour)
	opts := Options{Params: params(0), From: from, To: from.Add(time.Hour),
		Truth: func(*store.Probe) (float64, float64, bool) { return 5, 0.5, true }}
	var ps []store.Probe
	for _, p := range rounds(opts.ReadFrom(), opts.To, func(time.Time) (float64, bool) { return 5, true }) {
		switch {
		case p.Lane == "free" && p.Time.Before(from):
			continue
		case p.Lane == "free" && p.Time.Minute() == 27:
			p.OK, p.Outcome, p.Status, p.QueueS, p.QuotaResetS = false, store.OutcomeRateLimited, 429, 0, 7
		}
		ps = append(ps, p)
	}
	r := run(t, opts, ps)
	for kind, want := range map[string]int{"free": 1, "paid": 3} {
		if o := kindCal(t, r, policy.RuleMax, 0, 0, kind).Oracle; o == nil || o.Probes != want {
			t.Errorf("%s: oracle %+v, want %d probes", kind, o, want)
		}
	}
}

// At coverage 0.5 the oracle's figure is the true median (z = 0 exactly):
// a lane that always waits its true median is covered at every probe, so
// the oracle misses none.
func TestOracleAtCoverageOneHalf(t *testing.T) {
	p := calibratedParams(1)
	p.Coverage = 0.5
	from := day0.AddDate(0, 0, 3).Add(10 * time.Hour)
	opts := Options{Params: p, From: from, To: from.Add(time.Hour),
		Truth: func(*store.Probe) (float64, float64, bool) { return 12.5, 0.5, true }}
	r := run(t, opts, rounds(opts.ReadFrom(), opts.To, func(time.Time) (float64, bool) { return 12.5, true }))
	if o := kindCal(t, r, policy.RuleCalibrated, 1, 0.5, "free").Oracle; o == nil || o.Probes != 3 || o.OracleMisses != 0 || o.OracleCoverage != 1 {
		t.Errorf("oracle %+v, want 3 probes, none missed (oracle coverage 1)", o)
	}
}
