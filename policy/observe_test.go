package policy

import (
	"bytes"
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

// obsHistory returns three probes an hour of lane free (waits from q) and
// their hourly records, for days days before end.
func obsHistory(end time.Time, days int, q func(t time.Time) (float64, bool)) ([]store.Probe, []store.Hourly) {
	var ps []store.Probe
	var hs []store.Hourly
	for h := end.AddDate(0, 0, -days); h.Before(end); h = h.Add(time.Hour) {
		var hour []store.Probe
		for _, m := range []int{7, 27, 47} {
			at := h.Add(time.Duration(m) * time.Minute)
			v, ok := q(at)
			p := store.Probe{Lane: "free", Kind: KindFree, Time: at, QueueS: v, GenS: 1, Tokens: 40, OK: ok, Outcome: "ok"}
			if !ok {
				p.Outcome, p.GenS, p.Tokens = "timeout", 0, 0
			}
			hour = append(hour, p)
		}
		ps = append(ps, hour...)
		hs = append(hs, store.Aggregate("free", KindFree, "", h, hour))
	}
	return ps, hs
}

func obsParams(rule string) Params {
	return Params{Location: time.UTC, LookbackDays: 14, Rule: rule,
		Lanes: []LaneSpec{{Name: "free", Kind: KindFree}},
		Classes: []ClassSpec{
			{Name: "a", DeadlineS: 60, CeilingTokens: 100, EstTokens: 40},
			{Name: "b", DeadlineS: 60, CeilingTokens: 100, EstTokens: 40, Coverage: 0.5},
		}}
}

// A constant lane's calibrated file says 10 s at the policy's coverage and
// at a class's own, writes rule and coverage, and reads back the same.
func TestForHourProbesConstantLane(t *testing.T) {
	h := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	ps, hs := obsHistory(h.Add(time.Hour), 20, func(time.Time) (float64, bool) { return 10, true })
	f := ForHourProbes(obsParams(RuleCalibrated), hs, ps, nil, h)
	if f.Rule != RuleCalibrated || f.Coverage != DefaultCoverage || f.Lanes[0].NextQueueS != 10 {
		t.Fatalf("rule %q coverage %v next_queue_s %v; want calibrated 0.95 10", f.Rule, f.Coverage, f.Lanes[0].NextQueueS)
	}
	for i, want := range []float64{0.95, 0.5} {
		if c := f.Classes[i]; c.Coverage != want || c.Book.NextQueueS != 10 {
			t.Errorf("class %s: coverage %v book next_queue_s %v; want %v and 10", c.Name, c.Coverage, c.Book.NextQueueS, want)
		}
	}
	data, err := Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte("\nbasis: live\nrule: calibrated\ncoverage: 0.95\n")) || !bytes.Contains(data, []byte("    est_tokens: 40\n    coverage: 0.5\n")) {
		t.Errorf("the file does not say its rule and coverages:\n%s", data)
	}
	back, err := ParseFile(data)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Marshal(back)
	if !bytes.Equal(again, data) {
		t.Errorf("read back and written again:\n%s\nwant\n%s", again, data)
	}
}

// Rule "max" is the rule before the knob: the same bytes as no rule, no
// rule or coverage key, whatever the probes given.
func TestRuleMaxIsByteIdentical(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 1))
	h := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	for range 20 {
		ps, hs := obsHistory(h.Add(time.Hour), 1+rng.IntN(20), func(time.Time) (float64, bool) {
			return math.Exp(rng.NormFloat64()), rng.IntN(20) > 0
		})
		p := obsParams("")
		a, _ := Marshal(ForHour(p, hs, nil, h))
		p.Rule = RuleMax
		b, _ := Marshal(ForHourProbes(p, hs, ps, nil, h))
		if !bytes.Equal(a, b) || strings.Contains(string(b), "rule:") || strings.Contains(string(b), "coverage:") {
			t.Fatalf("rule max:\n%s\nno rule:\n%s", b, a)
		}
	}
}

// A lane that only times out (30 s) never reads quiet under the calibrated
// rule, at any coverage; and a class at a lower coverage than the policy's
// reads a noisy lane's figure lower, never higher.
func TestForHourProbesTimeoutsAndClassCoverage(t *testing.T) {
	h := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	ps, hs := obsHistory(h.Add(time.Hour), 20, func(time.Time) (float64, bool) { return 30, false })
	for _, c := range []float64{0.1, 0.5, 0.95, 0.999} {
		p := obsParams(RuleCalibrated)
		p.Coverage = c
		f := ForHourProbes(p, hs, ps, nil, h)
		if l := f.Lanes[0]; l.NextQueueS < 30 || l.Eligible {
			t.Errorf("@%v: only timeouts read %v eligible %v", c, l.NextQueueS, l.Eligible)
		}
	}
	rng := rand.New(rand.NewPCG(19, 2))
	ps, hs = obsHistory(h.Add(time.Hour), 20, func(time.Time) (float64, bool) { return 5 * math.Exp(rng.NormFloat64()), true })
	f := ForHourProbes(obsParams(RuleCalibrated), hs, ps, nil, h)
	if a, b := f.Classes[0].Book.NextQueueS, f.Classes[1].Book.NextQueueS; !(b < a) || a != f.Lanes[0].NextQueueS {
		t.Errorf("class @0.95 reads %v, class @0.5 %v, the lane %v: want the 0.5 class lower", a, b, f.Lanes[0].NextQueueS)
	}
}

// A day ahead, the calibrated forecast of a constant lane is its wait at
// every hour and coverage, says its rule, and ignores the day's own probes.
func TestForecastProbesConstantLane(t *testing.T) {
	day := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ps, hs := obsHistory(time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), 20, func(at time.Time) (float64, bool) {
		if at.Day() == 1 && at.Month() == 12 {
			return 99, true // the day itself: never read
		}
		return 10, true
	})
	for _, f := range ForecastProbes(obsParams(RuleCalibrated), hs, ps, nil, day) {
		if f.Rule != RuleCalibrated || f.Basis != BasisForecast || f.Lanes[0].NextQueueS != 10 || f.Classes[1].Coverage != 0.5 || f.Classes[1].Book.NextQueueS != 10 {
			t.Fatalf("%s: rule %q lane %+v class %+v", f.Hour, f.Rule, f.Lanes[0], f.Classes[1])
		}
	}
}

// The live figure is never under the worst ok queue its basis records
// already hold (issue 28; the seed's rule: keep the worst sample of the
// hour you run). A lane steady at 10 s whose probe this hour waited 30 s:
// the calibrated rule alone reads well under 30 after one such probe; the
// file says 30. A forecast has no basis and no floor.
func TestLiveFigureFlooredByTheBasisWorst(t *testing.T) {
	h := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	slow := h.Add(7 * time.Minute)
	ps, hs := obsHistory(h.Add(time.Hour), 20, func(at time.Time) (float64, bool) {
		if at.Equal(slow) {
			return 30, true
		}
		return 10 + math.Sin(float64(at.Unix()))/2, true
	})
	x := HourHistory(obsParams(RuleCalibrated), hs, h)
	for _, p := range ps {
		x.AddProbe(p)
	}
	f, _ := calibratedFigure(x, x.lanes["free"], 14, h, DefaultCoverage)
	if f.QueueS >= 29 {
		t.Fatalf("the rule alone reads %v s: the test needs it under the basis worst", f.QueueS)
	}
	l := ForHourProbes(obsParams(RuleCalibrated), hs, ps, nil, h).Lanes[0]
	if l.NextQueueS != 30 {
		t.Errorf("next_queue_s %v, want the hour's worst 30 (the rule alone: %.2f)", l.NextQueueS, f.QueueS)
	}
}

// The failure chain a History keeps up to date, one probe at a time, with
// old hours dropped as a replay drops them, is the chain worked out the
// long way from the probes that count (ok, or a failure of the lane: not
// a busy 429, a reservation, a cancelled or an unsent probe) over the
// lookback before the newest: on random lanes that fail in runs.
func TestFailChainOverRandomProbes(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	outcomes := []string{"ok", "timeout", store.OutcomeRateLimited, store.OutcomeCancelled, store.OutcomeReserved, store.OutcomeUnsent}
	for world := range 20 {
		days := 1 + rng.IntN(4)
		x := NewHistory(time.UTC)
		var chain []store.Probe // the probes that count, in order
		at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
		failing := false
		for i := range 1000 {
			at = at.Add(time.Duration(rng.IntN(40)) * time.Minute) // equal times too
			if rng.IntN(10) == 0 {
				failing = !failing
			}
			p := store.Probe{Lane: "free", Kind: KindFree, Time: at, QueueS: 1 + rng.Float64(), OK: true, Outcome: "ok"}
			if o := outcomes[rng.IntN(len(outcomes))]; failing && o != "ok" || !failing && rng.IntN(30) == 0 {
				p.OK, p.Outcome = false, o
				if o == store.OutcomeRateLimited && rng.IntN(2) == 0 {
					p.QuotaResetS = 10 // busy: no failure
				}
			}
			x.AddProbe(p)
			if _, counts := probeFailed(p); counts {
				chain = append(chain, p)
			}
			if len(chain) > 0 && rng.IntN(50) == 0 {
				x.Drop(chain[len(chain)-1].Time.AddDate(0, 0, -2*days)) // older than the lookback
			}
			got, ok := x.failChance(x.lanes["free"], days)
			if len(chain) == 0 {
				if ok {
					t.Fatalf("world %d probe %d: a chance %v with no probe in the chain", world, i, got)
				}
				continue
			}
			if want := chainChance(chain, days); !ok || math.Abs(got-want) > 1e-12 {
				t.Fatalf("world %d probe %d (%s %s): chance %v, %v; want %v", world, i, p.Time.Format(time.RFC3339), p.Outcome, got, ok, want)
			}
		}
	}
}

// A probe is an observation of the calibrated rule (ProbeObs, docs/policy.md
// next_queue_s): an ok probe's queue_s as it is (0 included), a failed
// one's as a lower bound (censored, a timeout's wait); a 429 (by outcome
// or by status, whatever its wait), a failure with no wait, and a wait that
// is not a finite number >= 0 are no observation.
// (observe.go ProbeObs: line 17's `||` → `&&` and `< 0` → `<= 0`; line
// 20's `&&` and `||` swapped, `==` → `!=`, `<= 0` → `< 0`.)
func TestProbeObsRules(t *testing.T) {
	at := time.Date(2026, 11, 30, 14, 7, 0, 0, time.UTC)
	ok := func(q float64) store.Probe {
		return store.Probe{Time: at, OK: true, Outcome: "ok", Status: 200, QueueS: q}
	}
	failed := func(outcome string, status int64, q float64) store.Probe {
		return store.Probe{Time: at, Outcome: outcome, Status: status, QueueS: q}
	}
	for _, tc := range []struct {
		name string
		p    store.Probe
		want QueueObs
		ok   bool
	}{
		{"ok", ok(3), QueueObs{Time: at, Value: 3}, true},
		{"ok, no wait", ok(0), QueueObs{Time: at, Value: 0}, true},
		{"timeout", failed("timeout", 0, 30), QueueObs{Time: at, Value: 30, Censored: true}, true},
		{"5xx after a wait", failed("http_error", 503, 4), QueueObs{Time: at, Value: 4, Censored: true}, true},
		{"429 by outcome", failed(store.OutcomeRateLimited, 0, 5), QueueObs{}, false},
		{"429 by status", failed("http_error", 429, 5), QueueObs{}, false},
		{"failure, no wait", failed("http_error", 503, 0), QueueObs{}, false},
		{"negative", ok(-1), QueueObs{}, false},
		{"NaN", ok(math.NaN()), QueueObs{}, false},
		{"+Inf", ok(math.Inf(1)), QueueObs{}, false},
		{"-Inf", ok(math.Inf(-1)), QueueObs{}, false},
	} {
		if got, ok := ProbeObs(tc.p); ok != tc.ok || got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// Drop keeps the calibrated rule's figures as if the dropped probes had
// never been added, for as long as they are older than every lookback a
// later policy reads (History.Drop): a replay Drops the days no policy can
// read and goes on adding probes. A lane waits 10 s for 30 days (3 probes
// an hour) and then 40 s on the next day; one History drops the first 10
// days after the lane's figure was asked for (its calibrator fed), the
// other keeps them. Every later figure, under the 14-day lookback, is the
// same in both, and the 40 s day is in both (next_queue_s 40 by its end:
// the calibrated rule takes the shift).
// (observe.go calibrated: the count a calibrator resumes from,
// `c.fed-lh.obsBase` → `+` and `lh.obsBase + len(lh.obs)` → `-`.)
// Waits that swing tell a calibrator that kept what it learned from one
// fed afresh from what Drop left; the flat lane ends at its new 40 s.
func TestDropKeepsTheCalibratedFigures(t *testing.T) {
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	swing := func(tt time.Time) (float64, bool) { return 10 * math.Exp(0.6*math.Sin(float64(tt.Unix())/5000)), true }
	for _, tc := range []struct {
		name          string
		before, after func(time.Time) (float64, bool)
		last          float64 // the figure at the end; 0: any
	}{
		{"flat", func(time.Time) (float64, bool) { return 10, true }, func(time.Time) (float64, bool) { return 40, true }, 40},
		{"swinging", swing, swing, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps, _ := obsHistory(start.AddDate(0, 0, 30), 30, tc.before)
			later, _ := obsHistory(start.AddDate(0, 0, 31), 1, tc.after)
			p := obsParams(RuleCalibrated)
			spec := p.Lanes[0]
			kept, dropped := NewHistory(time.UTC), NewHistory(time.UTC)
			for _, x := range []*History{kept, dropped} {
				for _, pr := range ps {
					x.AddProbe(pr)
				}
				x.LaneAt(p, spec, LaneState{}, start.AddDate(0, 0, 30))
			}
			dropped.Drop(start.AddDate(0, 0, 10))
			var last float64
			for i, pr := range later {
				kept.AddProbe(pr)
				dropped.AddProbe(pr)
				at := pr.Time.Add(time.Minute)
				k, d := kept.LaneAt(p, spec, LaneState{}, at), dropped.LaneAt(p, spec, LaneState{}, at)
				if k.NextQueueS != d.NextQueueS {
					t.Fatalf("probe %d (%s): next_queue_s %v after Drop, %v without", i, pr.Time, d.NextQueueS, k.NextQueueS)
				}
				last = d.NextQueueS
			}
			if tc.last != 0 && last != tc.last {
				t.Errorf("next_queue_s %v at the end of the later day, want %v", last, tc.last)
			}
		})
	}
}

// A History answers each lookback with its own calibrator (a replay sweeps
// several on one History): asked under 7 days and then 14, it gives what a
// History asked under one of them alone gives. The lane waits 40 s for its
// first 10 days and 10 s for the last 10 (3 probes an hour), so that the
// two lookbacks' figures differ (the test checks that they do; it does not
// work them out: 26.4 s under 7 days, 10 s under 14 at the time of writing).
// (observe.go calibrated: `lh.cals[i].days == days` → `!=`, which answers
// one lookback with another's calibrator.)
func TestCalibratedLookbacksOnOneHistory(t *testing.T) {
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	ps, _ := obsHistory(start.AddDate(0, 0, 20), 20, func(at time.Time) (float64, bool) {
		if at.Before(start.AddDate(0, 0, 10)) {
			return 40, true
		}
		return 10, true
	})
	at := start.AddDate(0, 0, 20)
	fig := func(x *History, days int) float64 {
		p := obsParams(RuleCalibrated)
		p.LookbackDays = days
		return x.LaneAt(p, p.Lanes[0], LaneState{}, at).NextQueueS
	}
	fresh := func() *History {
		x := NewHistory(time.UTC)
		for _, pr := range ps {
			x.AddProbe(pr)
		}
		return x
	}
	alone := map[int]float64{7: fig(fresh(), 7), 14: fig(fresh(), 14)}
	if alone[7] == alone[14] {
		t.Fatalf("the lookbacks give the same figure %v: the test tells nothing", alone[7])
	}
	x := fresh()
	for _, days := range []int{7, 14, 7, 14} {
		if got := fig(x, days); got != alone[days] {
			t.Errorf("lookback %d on a shared History: %v, alone %v", days, got, alone[days])
		}
	}
}

// r5Probes returns ok probes of lane free every 20 minutes (at :00, :20,
// :40) from `from` until `to`, each waiting q(i, t) seconds, i counting
// from 0.
func r5Probes(from, to time.Time, q func(i int, t time.Time) float64) []store.Probe {
	var ps []store.Probe
	for at, i := from, 0; at.Before(to); at, i = at.Add(20*time.Minute), i+1 {
		ps = append(ps, store.Probe{Lane: "free", Kind: KindFree, Time: at, QueueS: q(i, at),
			GenS: 1, Tokens: 40, OK: true, Outcome: "ok", Status: 200})
	}
	return ps
}

// r5Records returns the hourly records of probes of one lane, hour by hour.
func r5Records(ps []store.Probe) []store.Hourly {
	var hs []store.Hourly
	for i := 0; i < len(ps); {
		h := ps[i].Time.Truncate(time.Hour)
		j := i
		for j < len(ps) && ps[j].Time.Truncate(time.Hour).Equal(h) {
			j++
		}
		hs = append(hs, store.Aggregate(ps[i].Lane, ps[i].Kind, "", h, ps[i:j]))
		i = j
	}
	return hs
}

// r5Spread returns waits drawn from a fixed seed, 5 to 45 s, so that the
// calibrated rule's quantiles differ from one coverage to the next.
func r5Spread(seed uint64) func(int, time.Time) float64 {
	r := rand.New(rand.NewPCG(seed, 5))
	return func(int, time.Time) float64 { return 5 + 40*r.Float64() }
}

// A lane without observations of the calibrated rule reads its worst-of
// figure (docs/policy.md, next_queue_s: "worst alone when the lane has no
// observation"), whether it has hourly records and no probe (paid) or
// nothing at all (spare), in the lane's figures and in a class with its
// own coverage; the lane with probes (free) reads its calibrated one.
// (observe.go calibrated: `lh == nil || len(lh.obs) == 0` → `&&`, which
// reads past a lane it has no observation of.)
func TestCalibratedLaneWithoutObservationsReadsTheWorst(t *testing.T) {
	h := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	ps, hs := obsHistory(h.Add(time.Hour), 20, func(time.Time) (float64, bool) { return 10, true })
	paid, _ := obsHistory(h.Add(time.Hour), 20, func(time.Time) (float64, bool) { return 7, true })
	for at := h.AddDate(0, 0, -20); at.Before(h.Add(time.Hour)); at = at.Add(time.Hour) {
		var hour []store.Probe
		for _, pr := range paid {
			if !pr.Time.Before(at) && pr.Time.Before(at.Add(time.Hour)) {
				pr.Lane, pr.Kind = "paid", KindPaid
				hour = append(hour, pr)
			}
		}
		hs = append(hs, store.Aggregate("paid", KindPaid, "", at, hour))
	}
	params := func(rule string) Params {
		p := obsParams(rule)
		p.Lanes = append(p.Lanes, LaneSpec{Name: "paid", Kind: KindPaid}, LaneSpec{Name: "spare", Kind: KindPaid})
		return p
	}
	cal := ForHourProbes(params(RuleCalibrated), hs, ps, nil, h)
	worst := ForHourProbes(params(RuleMax), hs, ps, nil, h)
	for i, want := range []struct {
		name   string
		queue  float64
		reason string
	}{{"free", 10, ReasonOK}, {"paid", 7, ReasonOK}, {"spare", 0, ReasonNeverSampled}} {
		l := cal.Lanes[i]
		if l.Name != want.name || l.NextQueueS != want.queue || l.Reason != want.reason || l.NextQueueS != worst.Lanes[i].NextQueueS {
			t.Errorf("lane %s: next_queue_s %v (%s), worst-of file %v; want %v (%s)", l.Name, l.NextQueueS, l.Reason,
				worst.Lanes[i].NextQueueS, want.queue, want.reason)
		}
	}
	// Class b (coverage 0.5) reads each lane at its coverage: the paid
	// lane's is its worst-of 7 s.
	if b := cal.Classes[1].Book; b.PaidLane != "paid" || b.PaidQueueS != 7 || b.NextQueueS != 10 {
		t.Errorf("class b: book %+v; want paid lane paid at 7 s, free at 10 s", b)
	}
}

// The probes a History is given out of time order are put in their place
// (History.AddProbe): fed in any order, with figures asked on the way, it
// gives at the end the figures of one fed in order. Random waits and
// random late arrivals, several seeds.
// (observe.go AddProbe: the search's `return -1` → `return 1`, which puts
// every late probe first.)
func TestAddProbeOutOfOrderIsPutInItsPlace(t *testing.T) {
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	end := start.AddDate(0, 0, 16)
	p := obsParams(RuleCalibrated)
	for seed := uint64(1); seed <= 4; seed++ {
		ps := r5Probes(start, end, r5Spread(seed))
		inOrder := NewHistory(time.UTC)
		for _, pr := range ps {
			inOrder.AddProbe(pr)
		}
		r := rand.New(rand.NewPCG(seed, 9))
		shuffled := slices.Clone(ps)
		// Late arrivals: each probe swaps with one up to 30 places on.
		for i := range shuffled {
			if j := i + r.IntN(31); j < len(shuffled) {
				shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
			}
		}
		x := NewHistory(time.UTC)
		late := 0
		for i, pr := range shuffled {
			if i > 0 && pr.Time.Before(shuffled[i-1].Time) {
				late++
			}
			x.AddProbe(pr)
			if i%97 == 0 {
				x.LaneAt(p, p.Lanes[0], LaneState{}, pr.Time)
			}
		}
		if late == 0 {
			t.Fatalf("seed %d: no probe came late: the test tells nothing", seed)
		}
		for _, at := range []time.Time{end, end.Add(5 * time.Hour)} {
			want := inOrder.LaneAt(p, p.Lanes[0], LaneState{}, at)
			if got := x.LaneAt(p, p.Lanes[0], LaneState{}, at); got.NextQueueS != want.NextQueueS {
				t.Errorf("seed %d, %d late probes, at %s: next_queue_s %v, in order %v", seed, late, at, got.NextQueueS, want.NextQueueS)
			}
			for _, cov := range []float64{0.5, 0.95} {
				w, _ := calibratedFigure(inOrder, inOrder.lanes["free"], 14, at, cov)
				if g, _ := calibratedFigure(x, x.lanes["free"], 14, at, cov); g != w {
					t.Errorf("seed %d at %s, coverage %v: calibrated %+v, in order %+v", seed, at, cov, g, w)
				}
			}
		}
	}
}

// Asking for a figure changes nothing (Calibrator.Quantile): a History
// asked after every probe, and twice at the end, gives the figures of one
// asked only now and then. Random waits.
// (observe.go calibrated: `c.fed = lh.obsBase + len(lh.obs)` → `-`, which
// has the calibrator read its observations again at every figure and count
// the newest once more each time.)
func TestAskingForAFigureChangesNothing(t *testing.T) {
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	ps := r5Probes(start, start.AddDate(0, 0, 8), r5Spread(7))
	p := obsParams(RuleCalibrated)
	often, seldom := NewHistory(time.UTC), NewHistory(time.UTC)
	for i, pr := range ps {
		often.AddProbe(pr)
		seldom.AddProbe(pr)
		g := often.LaneAt(p, p.Lanes[0], LaneState{}, pr.Time)
		if i%50 != 49 && i != len(ps)-1 {
			continue
		}
		if i == len(ps)-1 {
			g = often.LaneAt(p, p.Lanes[0], LaneState{}, pr.Time) // asked twice
		}
		w := seldom.LaneAt(p, p.Lanes[0], LaneState{}, pr.Time)
		if g.NextQueueS != w.NextQueueS {
			t.Fatalf("probe %d (%s): next_queue_s %v asked at every probe, %v asked now and then", i, pr.Time, g.NextQueueS, w.NextQueueS)
		}
	}
}

// After a Drop, a lane's figures are as if the dropped probes had never
// been added (History.Drop): the observations before `before` go, the one
// exactly at it stays. A History fed 10 days of probes (waits 25 to 65 s,
// then one of 99 s at `before`, then 1.25 to 11.25 s) and dropped at day 5 gives
// the figures of one fed from day 5 on, under the calibrated rule's
// lookback (14 days, which would still reach back to the dropped ones).
// (observe.go dropObs: `Unix() < cut` → `<=`, which drops the probe at
// the cut as well, → `>=`, which drops none, and `n == 0` → `n != 0`,
// which returns before dropping any.)
func TestDropIsAsIfTheProbesWereNeverAdded(t *testing.T) {
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	before, end := start.AddDate(0, 0, 5), start.AddDate(0, 0, 10)
	old := r5Spread(3)
	late := r5Spread(4)
	ps := r5Probes(start, end, func(i int, at time.Time) float64 {
		switch {
		case at.Before(before):
			return 20 + old(i, at)
		case at.Equal(before):
			return 99
		}
		return late(i, at) / 4
	})
	p := obsParams(RuleCalibrated)
	dropped, fresh := NewHistory(time.UTC), NewHistory(time.UTC)
	for _, pr := range ps {
		dropped.AddProbe(pr)
		if !pr.Time.Before(before) {
			fresh.AddProbe(pr)
		}
	}
	dropped.Drop(before)
	for _, at := range []time.Time{end, end.Add(3 * time.Hour)} {
		for _, cov := range []float64{0.5, 0.95} {
			w, okW := calibratedFigure(fresh, fresh.lanes["free"], 14, at, cov)
			g, okG := calibratedFigure(dropped, dropped.lanes["free"], 14, at, cov)
			if g != w || okG != okW {
				t.Errorf("at %s, coverage %v: calibrated %+v after Drop, %+v never added", at, cov, g, w)
			}
		}
		w := fresh.LaneAt(p, p.Lanes[0], LaneState{}, at)
		if g := dropped.LaneAt(p, p.Lanes[0], LaneState{}, at); g.NextQueueS != w.NextQueueS {
			t.Errorf("at %s: next_queue_s %v after Drop, %v never added", at, g.NextQueueS, w.NextQueueS)
		}
	}
}

// A lookback of 0 is the calibrated rule's default (Params: "it ignores
// LookbackDays <= 0 (its default, 14)"): on one History, asked under 14
// days, then, after a Drop, under 0 and under 14 again, the figures under
// 0 and 14 are one. Random waits; the Drop keeps the last two days only.
// (observe.go calibrated: `days <= 0` → `days < 0`, which keeps a
// calibrator for 0 apart from the one for 14, started after the Drop.)
func TestLookbackZeroIsTheCalibratedDefault(t *testing.T) {
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	end := start.AddDate(0, 0, 10)
	ps := r5Probes(start, end, r5Spread(11))
	x := NewHistory(time.UTC)
	for _, pr := range ps {
		x.AddProbe(pr)
	}
	lane := func(days int) float64 {
		p := obsParams(RuleCalibrated)
		p.LookbackDays = days
		return x.LaneAt(p, p.Lanes[0], LaneState{}, end).NextQueueS
	}
	first := lane(14)
	x.Drop(end.AddDate(0, 0, -2))
	zero, again := lane(0), lane(14)
	if zero != again {
		t.Errorf("next_queue_s after the Drop under 0 days %v, under 14 %v (before it, under 14: %v); want one figure", zero, again, first)
	}
	for _, cov := range []float64{0.5, 0.95} {
		z, _ := x.calibrator(x.lanes["free"], 0).Quantile(end, cov)
		f, _ := x.calibrator(x.lanes["free"], 14).Quantile(end, cov)
		if z != f {
			t.Errorf("coverage %v: calibrated %+v under 0 days, %+v under 14", cov, z, f)
		}
	}
}

// calibratedFigure is the lane's calibrated figure at instant t (moved to
// its newest observation when that is later) and coverage cov, over a
// lookback of days; false when the lane has no observation.
func calibratedFigure(x *History, lh *laneHistory, days int, t time.Time, cov float64) (CalibratedFigure, bool) {
	c := x.calibrator(lh, days)
	if c == nil {
		return CalibratedFigure{}, false
	}
	return c.Quantile(later(t, c.last), cov)
}

// A lane's first probes may be ones the failure chain skips (a cancelled
// or reserved probe with a wait, kept for the calibrated rule alone); the
// chain then starts at the first probe that counts, and probes that never
// count make none.
func TestFailChanceAfterProbesThatDoNotCount(t *testing.T) {
	at := time.Date(2026, 11, 1, 0, 7, 0, 0, time.UTC)
	x := NewHistory(time.UTC)
	var chain []store.Probe
	for i, o := range []string{store.OutcomeCancelled, store.OutcomeReserved, "ok", "timeout", "ok", "ok", "ok"} {
		p := store.Probe{Lane: "free", Kind: KindFree, Time: at.Add(time.Duration(i) * 20 * time.Minute), QueueS: 3, OK: o == "ok", Outcome: o}
		x.AddProbe(p)
		if _, counts := probeFailed(p); counts {
			chain = append(chain, p)
		}
	}
	for _, days := range []int{1, 0} { // 0: the default lookback
		got, ok := x.failChance(x.lanes["free"], days)
		if want := chainChance(chain, cmp.Or(days, DefaultCalibratedLookbackDays)); !ok || math.Abs(got-want) > 1e-12 {
			t.Errorf("lookback %d: chance %v, %v; want %v", days, got, ok, want)
		}
	}
	// Probes that never count make no chain at all.
	skipped := NewHistory(time.UTC)
	skipped.AddProbe(store.Probe{Lane: "free", Kind: KindFree, Time: at, QueueS: 3, Outcome: store.OutcomeCancelled})
	if got, ok := skipped.failChance(skipped.lanes["free"], 1); ok {
		t.Errorf("a chance %v from a cancelled probe alone", got)
	}
}
