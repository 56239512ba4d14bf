package policy

import (
	"math"
	"math/rand/v2"
	"testing"
)

// A 60 s job: paid queue 2 s + 5 s of generation (latest cut-over 53 s),
// free generation 10 s (useful 50 s); a paid attempt costs 1 USD. Five
// waits seen: 5, 10, 20, 40 and 55 s.
func decideBase() DecisionInput {
	return DecisionInput{DeadlineS: 60, PaidUSD: 1, PaidEligible: true, PaidQueueS: 2, PaidGenS: 5,
		FreeEligible: true, FreeGenS: 10, Free: WaitsOf(5, 10, 20, 40, 55)}
}

func TestDecide(t *testing.T) {
	with := func(f func(*DecisionInput)) DecisionInput { in := decideBase(); f(&in); return in }
	for _, tc := range []struct {
		name string
		in   DecisionInput
		want Plan
	}{
		// Held until min(53, 50): four of the five waits (and none of the
		// next attempt's sixth) ship; the other 2/6 pay.
		{"cost: the latest both bounds allow", decideBase(),
			Plan{Cutover{50, true}, Score{1, 2.0 / 6, (5+10+20+40+4*10)/6.0 + 2.0/6*(50+7)}, 4.0 / 6}},
		// A slower paid lane: latest 60 - 20 - 5 = 35 binds; 3 of 6 ship.
		{"cost: the paid lane's bound", with(func(in *DecisionInput) { in.PaidQueueS = 20 }),
			Plan{Cutover{35, true}, Score{1, 0.5, (5+10+20+3*10)/6.0 + 0.5*(35+25)}, 0.5}},
		// Half the probes fail: each ship chance halves.
		{"cost: failures priced", with(func(in *DecisionInput) { in.FreeFailP = 0.5 }),
			Plan{Cutover{50, true}, Score{1, 1 - 2.0/6, 0.5*(5+10+20+40+4*10)/6.0 + (1-2.0/6)*(50+7)}, 2.0 / 6}},
		// No wait seen within the bounds: waiting only costs time.
		{"cost: nothing ships in time: paid first", with(func(in *DecisionInput) { in.Free = WaitsOf(55, 70) }),
			Plan{Score: Score{1, 1, 7}}},
		// The paid lane takes 7 s, a free answer 15 s at best: paid first.
		{"time: the paid lane is faster", with(func(in *DecisionInput) { in.Objective = ObjectiveTime }),
			Plan{Score: Score{1, 1, 7}}},
		// A free lane faster than the paid one: under time, a short cut-over.
		{"time: a fast free lane", with(func(in *DecisionInput) {
			in.Objective, in.FreeGenS, in.PaidQueueS, in.Free = ObjectiveTime, 1, 20, WaitsOf(1, 1, 2, 2, 3)
		}), Plan{Cutover{3, true}, Score{1, 1.0 / 6, (1+1+2+2+3+5)/6.0 + (3+25)/6.0}, 5.0 / 6}},
		// No paid lane: the free lane is held until it can no longer ship.
		{"no paid lane", with(func(in *DecisionInput) { in.PaidEligible = false }),
			Plan{Cutover{50, true}, Score{4.0 / 6, 0, (5+10+20+40+4*10)/6.0 + 2.0/6*60}, 4.0 / 6}},
		{"no paid lane, no wait that ships: nothing", with(func(in *DecisionInput) { in.PaidEligible, in.Free = false, WaitsOf(51) }),
			Plan{Score: Score{TimeS: 60}}},
		{"free not eligible", with(func(in *DecisionInput) { in.FreeEligible = false }), Plan{Score: Score{1, 1, 7}}},
		{"nothing fits", with(func(in *DecisionInput) { in.DeadlineS = 6 }), Plan{Score: Score{TimeS: 6}}},
		{"NaN deadline", with(func(in *DecisionInput) { in.DeadlineS = math.NaN() }), Plan{}},
		{"infinite deadline: no time left", with(func(in *DecisionInput) { in.DeadlineS = math.Inf(1) }), Plan{}},
		{"negative deadline: no time left", with(func(in *DecisionInput) { in.DeadlineS = -5 }), Plan{}},
		// 2 + 5 s of the paid lane end at the 7 s deadline: it fits.
		{"the paid attempt ends at the deadline", with(func(in *DecisionInput) { in.DeadlineS = 7 }), Plan{Score: Score{1, 1, 7}}},
		// A free lane whose generation time is unknown has no plan.
		{"time: free generation not finite", with(func(in *DecisionInput) { in.Objective, in.FreeGenS = ObjectiveTime, math.NaN() }),
			Plan{Score: Score{1, 1, 7}}},
		// Money ties at 0, so time decides among the cut-overs, as under time.
		{"cost: a paid attempt costing nothing, a fast free lane", with(func(in *DecisionInput) {
			in.PaidUSD, in.FreeGenS, in.PaidQueueS, in.Free = 0, 1, 20, WaitsOf(1, 1, 2, 2, 3)
		}), Plan{Cutover{3, true}, Score{1, 0, (1+1+2+2+3+5)/6.0 + (3+25)/6.0}, 5.0 / 6}},
		// A free paid lane: money ties, time decides, as under time.
		{"a paid attempt costing nothing", with(func(in *DecisionInput) { in.PaidUSD = 0 }), Plan{Score: Score{1, 0, 7}}},
	} {
		got := Decide(tc.in)
		if got.Cutover != tc.want.Cutover || math.Abs(got.Met-tc.want.Met) > 1e-9 || math.Abs(got.USD-tc.want.USD) > 1e-9 ||
			math.Abs(got.TimeS-tc.want.TimeS) > 1e-9 || math.Abs(got.Ships-tc.want.Ships) > 1e-9 {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// FreeFirst's own plans, which order a class's lanes: none without a wait
// seen; with a paid attempt that fits only at once (latest cut-over 0), no
// cut-over at 0 s but the free lane held as long as it can ship.
func TestFreeFirst(t *testing.T) {
	with := func(f func(*DecisionInput)) DecisionInput { in := decideBase(); f(&in); return in }
	alone := Plan{Cutover{6, true}, Score{1.0 / 6, 0, (5+1)/6.0 + 5.0/6*7}, 1.0 / 6}
	for _, tc := range []struct {
		name string
		in   DecisionInput
		want Plan
		ok   bool
	}{
		{"no wait seen", with(func(in *DecisionInput) { in.Free = WaitsOf() }), Plan{}, false},
		{"cost: the paid lane fits only at once", with(func(in *DecisionInput) { in.DeadlineS, in.FreeGenS = 7, 1 }), alone, true},
		{"time: the paid lane fits only at once", with(func(in *DecisionInput) { in.DeadlineS, in.FreeGenS, in.Objective = 7, 1, ObjectiveTime }), alone, true},
	} {
		got, ok := tc.in.FreeFirst()
		if ok != tc.ok || got.Cutover != tc.want.Cutover || math.Abs(got.Met-tc.want.Met) > 1e-9 || math.Abs(got.USD-tc.want.USD) > 1e-9 ||
			math.Abs(got.TimeS-tc.want.TimeS) > 1e-9 || math.Abs(got.Ships-tc.want.Ships) > 1e-9 {
			t.Errorf("%s: got %+v %v, want %+v %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// Better is lexicographic: Met, then USD and time in the objective's
// order; differences under 1e-12 tie.
func TestBetter(t *testing.T) {
	for _, tc := range []struct {
		obj  string
		a, b Score
		want bool
	}{
		{ObjectiveCost, Score{1, 5, 5}, Score{0.99, 0, 0}, true},
		{ObjectiveCost, Score{1, 1, 50}, Score{1, 2, 5}, true},
		{ObjectiveTime, Score{1, 1, 50}, Score{1, 2, 5}, false},
		{"", Score{1, 1, 5}, Score{1, 1, 6}, true},
		{ObjectiveTime, Score{1, 1, 5}, Score{1, 2, 5}, true},
		{ObjectiveCost, Score{1, 1, 5}, Score{1, 1 + 1e-13, 5 + 1e-13}, false},
		{ObjectiveCost, Score{1, 1, 5}, Score{1, 1, 5}, false},
	} {
		if got := Better(tc.obj, tc.a, tc.b); got != tc.want {
			t.Errorf("Better(%q, %+v, %+v) = %v", tc.obj, tc.a, tc.b, got)
		}
	}
}

// On random inputs no fixed cut-over does better than the decision: for
// every T of CutoverGridS and each bound within the free lane's useful
// wait, the free-first plan at T neither meets more nor (meeting as
// much) pays less under cost, and is not Better under time; the decision
// never waits past the useful wait, and a free first try that cuts over
// leaves the paid attempt its room.
func TestDecideNeverWorseThanAFixedT(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 30))
	for i := range 3000 {
		in := DecisionInput{DeadlineS: float64(1 + rng.IntN(200)), PaidUSD: rng.Float64() * 2,
			PaidEligible: rng.IntN(5) > 0, PaidQueueS: rng.ExpFloat64() * 5, PaidGenS: rng.Float64() * 20,
			FreeEligible: rng.IntN(8) > 0, FreeGenS: rng.Float64() * 40, FreeFailP: max(0, rng.Float64()-0.6)}
		if rng.IntN(2) == 0 {
			in.Objective = ObjectiveTime
		}
		var ws []float64
		scale := math.Exp(rng.NormFloat64() * 2)
		for range rng.IntN(60) {
			ws = append(ws, scale*math.Exp(rng.NormFloat64()))
		}
		in.Free = WaitsOf(ws...)
		got := Decide(in)
		d, useful := in.DeadlineS, in.DeadlineS-in.FreeGenS
		latest, fits := in.latest()
		if got.FreeFirst && (got.AfterS > useful || got.AfterS <= 0) {
			t.Fatalf("case %d %+v: waits past the useful %v: %+v", i, in, useful, got)
		}
		if got.FreeFirst && got.AfterS <= latest && fits && got.AfterS+in.PaidQueueS+in.PaidGenS > d+1e-9 {
			t.Fatalf("case %d %+v: the paid attempt does not fit after %+v", i, in, got)
		}
		if !fits {
			latest = math.Inf(-1)
		}
		cands := append([]float64{useful, latest}, CutoverGridS...)
		for _, T := range cands {
			if !(T > 0) || T > useful || !in.FreeEligible || in.Free.N() == 0 {
				continue
			}
			p := in.freePlan(T, d, latest)
			worse := Better(in.Objective, p.Score, got.Score)
			if ObjectiveOr(in.Objective) == ObjectiveCost && in.PaidUSD > 0 {
				worse = p.Met > got.Met+1e-12 || (math.Abs(p.Met-got.Met) <= 1e-12 && p.USD < got.USD-1e-12)
			}
			if worse {
				t.Fatalf("case %d %+v: fixed T %v gives %+v, better than the decision %+v", i, in, T, p, got)
			}
		}
	}
}
