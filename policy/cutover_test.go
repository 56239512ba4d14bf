package policy

import (
	"math"
	"math/rand/v2"
	"testing"
)

func pts(kv ...float64) []QuantilePoint {
	var out []QuantilePoint
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, QuantilePoint{Coverage: kv[i], QueueS: kv[i+1]})
	}
	return out
}

// A 60 s job, paid queue 2 s + 5 s of generation, free generation 10 s:
// latest = 60 − (2 + 5 + 2) = 51, useful = 60 − 10 = 50.
func TestCutoverFor(t *testing.T) {
	base := CutoverInput{DeadlineS: 60, PaidQueueS: 2, PaidGenS: 5, FreeGenS: 10, FreeEligible: true, PaidEligible: true}
	with := func(f func(*CutoverInput)) CutoverInput { in := base; f(&in); return in }
	for _, tc := range []struct {
		name string
		in   CutoverInput
		want Cutover
	}{
		{"quiet hour: capped at the free p99 + 2 s", with(func(in *CutoverInput) { in.Free = pts(0.5, 5, 0.9, 12, 0.95, 20, 0.99, 40) }),
			Cutover{AfterS: 42, FreeFirst: true, FreeChance: 0.99}},
		{"points in any order", with(func(in *CutoverInput) { in.Free = pts(0.99, 40, 0.5, 5, 0.95, 20, 0.9, 12) }),
			Cutover{AfterS: 42, FreeFirst: true, FreeChance: 0.99}},
		{"busy hour: the useful wait, even odds", with(func(in *CutoverInput) { in.Free = pts(0.5, 30, 0.9, 80, 0.99, 200) }),
			Cutover{AfterS: 50, FreeFirst: true, FreeChance: 0.5}},
		{"peak: not worth a first try", with(func(in *CutoverInput) { in.Free = pts(0.2, 45, 0.3, 52, 0.99, 200) }),
			Cutover{AfterS: 50, FreeFirst: false, FreeChance: 0.2}},
		{"peak: just worth it", with(func(in *CutoverInput) { in.Free = pts(0.2, 45, 0.3, 50, 0.99, 200) }),
			Cutover{AfterS: 50, FreeFirst: true, FreeChance: 0.3}},
		{"slow paid lane: latest decides", with(func(in *CutoverInput) { in.PaidQueueS = 20; in.Free = pts(0.5, 5, 0.99, 100) }),
			Cutover{AfterS: 33, FreeFirst: true, FreeChance: 0.5}},
		{"cap below every coverage given uses the largest", with(func(in *CutoverInput) { in.Free = pts(0.5, 5, 0.9, 30) }),
			Cutover{AfterS: 32, FreeFirst: true, FreeChance: 0.9}},
		{"no forecast", base, Cutover{AfterS: 50, FreeFirst: true, FreeChance: 1}},
		{"paid not eligible: wait while free can make it", with(func(in *CutoverInput) { in.PaidEligible = false; in.Free = pts(0.5, 55) }),
			Cutover{AfterS: 50, FreeFirst: true, FreeChance: 0}},
		{"free not eligible", with(func(in *CutoverInput) { in.FreeEligible = false; in.Free = pts(0.5, 5) }), Cutover{}},
		{"paid does not fit at once", with(func(in *CutoverInput) { in.DeadlineS = 5; in.Free = pts(0.5, 1) }),
			Cutover{AfterS: 0, FreeFirst: false, FreeChance: 0}},
		{"NaN deadline", with(func(in *CutoverInput) { in.DeadlineS = math.NaN() }), Cutover{AfterS: 0, FreeFirst: false, FreeChance: 1}},
		{"non-finite points dropped", with(func(in *CutoverInput) { in.Free = pts(0.5, math.Inf(1), 0.9, 10, math.NaN(), 1) }),
			Cutover{AfterS: 12, FreeFirst: true, FreeChance: 0.9}},
	} {
		if got := CutoverFor(tc.in); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// On random inputs: the cut-over leaves the paid attempt room (after_s +
// paid needs + margin <= deadline, or after_s is 0), never passes the free
// cap, and free_first implies the chance clears the bar.
func TestCutoverForInvariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 1))
	for i := range 20000 {
		in := CutoverInput{DeadlineS: rng.Float64() * 300, PaidQueueS: rng.Float64() * 30, PaidGenS: rng.Float64() * 30,
			FreeGenS: rng.Float64() * 30, FreeEligible: rng.IntN(8) > 0, PaidEligible: rng.IntN(8) > 0}
		q := rng.Float64() * 10
		for _, c := range CutoverCoverages {
			if rng.IntN(4) > 0 {
				q *= 1 + rng.Float64()
				in.Free = append(in.Free, QuantilePoint{c, q})
			}
		}
		c := CutoverFor(in)
		if c.AfterS < 0 || math.IsNaN(c.AfterS) {
			t.Fatalf("%d: %+v: negative after_s %v", i, in, c.AfterS)
		}
		if !in.FreeEligible && (c.FreeFirst || c.AfterS != 0) {
			t.Fatalf("%d: %+v: free not eligible, got %+v", i, in, c)
		}
		if in.FreeEligible && in.PaidEligible && c.AfterS > 0 {
			if c.AfterS+in.PaidQueueS+in.PaidGenS+CutoverMarginS > in.DeadlineS+1e-9 || c.AfterS > in.DeadlineS-in.FreeGenS+1e-9 {
				t.Fatalf("%d: %+v: after_s %v leaves the paid attempt no room", i, in, c.AfterS)
			}
			if len(in.Free) > 0 && c.AfterS > in.Free[len(in.Free)-1].QueueS+CutoverMarginS {
				t.Fatalf("%d: %+v: after_s %v past the largest free quantile", i, in, c.AfterS)
			}
		}
		if in.PaidEligible && c.FreeFirst && c.FreeChance < MinFreeFirstChance {
			t.Fatalf("%d: %+v: free_first with chance %v", i, in, c.FreeChance)
		}
	}
}

func TestRunning(t *testing.T) {
	p := BookPolicy{DeadlineS: 60, PaidEligible: true, FreeEligible: true}
	cut := Cutover{AfterS: 20, FreeFirst: true}
	prior := []Attempt{{QueueS: 3, GenS: 1}} // a fast failure: 4 s spent
	for _, tc := range []struct {
		name     string
		attempts []Attempt
		running  float64
		p        BookPolicy
		c        Cutover
		want     RunningDecision
	}{
		{"early", nil, 5, p, cut, RunningDecision{Wait, WhyRunningWait, 5}},
		{"just before", nil, 19.99, p, cut, RunningDecision{Wait, WhyRunningWait, 19.99}},
		{"exactly at the cut-over: still in time", nil, 20, p, cut, RunningDecision{Wait, WhyRunningWait, 20}},
		{"just past the cut-over", nil, 20.01, p, cut, RunningDecision{CutOver, WhyRunningCut, 20.01}},
		{"earlier attempts count", prior, 17, p, cut, RunningDecision{CutOver, WhyRunningCut, 21}},
		{"earlier attempts, still time", prior, 15, p, cut, RunningDecision{Wait, WhyRunningWait, 19}},
		{"free not first", nil, 0, p, Cutover{AfterS: 20}, RunningDecision{CutOver, WhyRunningNotFirst, 0}},
		{"paid closed", nil, 500, BookPolicy{DeadlineS: 60, FreeEligible: true}, cut, RunningDecision{Wait, WhyRunningPaidClosed, 500}},
		{"NaN running", nil, math.NaN(), p, cut, RunningDecision{CutOver, WhyRunningCut, math.NaN()}},
	} {
		got := Running(tc.attempts, tc.running, tc.p, tc.c)
		same := got.Action == tc.want.Action && got.Why == tc.want.Why &&
			(got.ElapsedS == tc.want.ElapsedS || math.IsNaN(got.ElapsedS) && math.IsNaN(tc.want.ElapsedS))
		if !same {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// Once the answer is cut_over it stays so as the attempt keeps running.
func TestRunningMonotone(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 2))
	for range 2000 {
		p := BookPolicy{PaidEligible: rng.IntN(4) > 0}
		c := Cutover{AfterS: rng.Float64() * 100, FreeFirst: rng.IntN(4) > 0}
		cut := false
		for s := 0.0; s < 150; s += rng.Float64() * 5 {
			d := Running(nil, s, p, c)
			if cut && d.Action != CutOver {
				t.Fatalf("%+v %+v: cut_over, then %s at %v", p, c, d.Action, s)
			}
			cut = d.Action == CutOver
		}
	}
}
