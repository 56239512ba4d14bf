package policy

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

// constantLane returns three probes an hour of a constant lane (wait q s,
// 40 tokens in 1 s: tok_per_s 40) and their hourly records, for days days
// before end.
func constantLane(name, kind string, q float64, end time.Time, days int) ([]store.Probe, []store.Hourly) {
	var ps []store.Probe
	var hs []store.Hourly
	for h := end.AddDate(0, 0, -days); h.Before(end); h = h.Add(time.Hour) {
		var hour []store.Probe
		for _, m := range []int{7, 27, 47} {
			hour = append(hour, store.Probe{Lane: name, Kind: kind, Time: h.Add(time.Duration(m) * time.Minute),
				QueueS: q, GenS: 1, Tokens: 40, OK: true, Outcome: "ok"})
		}
		ps = append(ps, hour...)
		hs = append(hs, store.Aggregate(name, kind, "", h, hour))
	}
	return ps, hs
}

// cutoverWorld: a free lane that always waits 10 s and a paid one that
// always waits 2 s, both 40 tok/s; classes of 40 tokens (1 s of
// generation) at deadlines 60, 12 and 2 s.
func cutoverWorld(rule string) (Params, []store.Probe, []store.Hourly) {
	end := time.Date(2026, 11, 30, 15, 0, 0, 0, time.UTC)
	ps, hs := constantLane("free", KindFree, 10, end, 20)
	pp, ph := constantLane("paid", KindPaid, 2, end, 20)
	p := Params{Location: time.UTC, LookbackDays: 14, Rule: rule,
		Lanes: []LaneSpec{{Name: "free", Kind: KindFree}, {Name: "paid", Kind: KindPaid}},
		Classes: []ClassSpec{
			{Name: "d60", DeadlineS: 60, CeilingTokens: 100, EstTokens: 40, PaidUSDPer1k: 1},
			{Name: "d12", DeadlineS: 12, CeilingTokens: 100, EstTokens: 40, PaidUSDPer1k: 1},
			{Name: "d2", DeadlineS: 2, CeilingTokens: 100, EstTokens: 40, PaidUSDPer1k: 1},
		}}
	return p, append(ps, pp...), append(hs, ph...)
}

// The decision of each class, worked by hand from docs/policy.md (the
// default objective, cost):
//
//	d60: latest = 60 − (2 + 1) = 57, useful = 60 − 1 = 59: held until 57; every
//	     wait seen (10 s) ships by then: free first, cutover_after_s 57;
//	d12: latest = 12 − 3 = 9, useful 11: no wait seen is within 9, so waiting
//	     costs time and saves nothing: straight to the paid lane (free_first
//	     false, 0), the paid lane the class's first and the free lane, which
//	     fits alone (10 + 1 <= 12), after it;
//	d2:  the paid lane needs 3 s, a free wait 10: nothing (free_first false, 0),
//	     no lane listed.
//
// Live and a day ahead alike, written and read back the same, and absent
// under rule max.
func TestCutoverInFile(t *testing.T) {
	want := []Cutover{{AfterS: 57, FreeFirst: true}, {}, {}}
	wantLanes := [][]string{{"free", "paid"}, {"paid", "free"}, {}}
	h := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	p, ps, hs := cutoverWorld(RuleCalibrated)
	live := ForHourProbes(p, hs, ps, nil, h)
	day := ForecastProbes(p, hs, ps, nil, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))[14]
	for _, f := range []File{live, day} {
		for i, w := range want {
			c := f.Classes[i]
			if c.Cutover == nil || *c.Cutover != w || !slices.Equal(c.Lanes, wantLanes[i]) || c.Objective != ObjectiveCost {
				t.Errorf("%s %s: cut-over %+v, lanes %v, objective %q; want %+v, %v, cost", f.Basis, c.Name, c.Cutover, c.Lanes, c.Objective, w, wantLanes[i])
			}
		}
	}
	data := golden(t, "calibrated_cutover", live)
	for _, s := range []string{"    objective: cost\n    cutover_after_s: 57\n    free_first: true\n", "    cutover_after_s: 0\n    free_first: false\n"} {
		if !bytes.Contains(data, []byte(s)) {
			t.Errorf("the file does not hold %q:\n%s", s, data)
		}
	}
	back, err := ParseFile(data)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range want {
		if c := back.Classes[i].Cutover; c == nil || *c != w || back.Classes[i].Objective != ObjectiveCost {
			t.Errorf("read back %s: %+v, %q; want %+v, cost", back.Classes[i].Name, c, back.Classes[i].Objective, w)
		}
	}
	p.Rule = RuleMax
	for _, c := range ForHourProbes(p, hs, ps, nil, h).Classes {
		if c.Cutover != nil || c.Objective != "" {
			t.Errorf("rule max: class %s has a cut-over %+v or an objective %q", c.Name, c.Cutover, c.Objective)
		}
	}
}

// Without a paid lane there is nothing to cut over to: the free attempt
// may wait until only its generation is left (60 − 1 = 59 s), free first.
func TestCutoverWithoutPaidLane(t *testing.T) {
	h := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	ps, hs := obsHistory(h.Add(time.Hour), 20, func(time.Time) (float64, bool) { return 10, true })
	f := ForHourProbes(obsParams(RuleCalibrated), hs, ps, nil, h)
	for _, c := range f.Classes {
		if c.Cutover == nil || *c.Cutover != (Cutover{AfterS: 59, FreeFirst: true}) {
			t.Errorf("class %s: cut-over %+v, want 59 and free first", c.Name, c.Cutover)
		}
	}
}

// A file gives both cut-over keys or neither.
func TestCutoverKeysTogether(t *testing.T) {
	p, ps, hs := cutoverWorld(RuleCalibrated)
	data, err := Marshal(ForHourProbes(p, hs, ps, nil, time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)))
	if err != nil {
		t.Fatal(err)
	}
	for _, drop := range []string{"    cutover_after_s: 57\n", "    free_first: true\n"} {
		if _, err := ParseFile(bytes.Replace(data, []byte(drop), nil, 1)); err == nil {
			t.Errorf("a file without %q parsed", drop)
		}
	}
}

// Over random noisy worlds, every class of a calibrated file has a
// cut-over that a paid attempt could still follow (after_s within the
// deadline; with no free lane eligible, free first only on a lane whose
// probe failed this hour, the paid attempt fitting after the cut-over,
// else 0), written in hundredths and read back the same; a max file has
// none.
func TestCutoverInFileRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 2))
	h := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	seen := map[bool]int{} // classes by free_first
	for i := range 30 {
		p, _, _ := cutoverWorld(RuleCalibrated)
		for ci := range p.Classes {
			p.Classes[ci].DeadlineS = float64(1 + rng.IntN(120))
			if rng.IntN(3) == 0 {
				p.Classes[ci].DeadlineS = float64(1 + rng.IntN(10)) // tight: often nothing free ships in time
			}
		}
		var ps []store.Probe
		var hs []store.Hourly
		for _, l := range p.Lanes {
			scale := 1 + 30*rng.Float64()
			if l.Kind == KindPaid {
				scale = rng.Float64() * 5
			}
			lp, lh := obsHistory(h.Add(time.Hour), 1+rng.IntN(20), func(time.Time) (float64, bool) {
				return scale * math.Exp(rng.NormFloat64()), rng.IntN(30) > 0
			})
			for j := range lp {
				lp[j].Lane, lp[j].Kind = l.Name, l.Kind
			}
			for j := range lh {
				lh[j].Lane, lh[j].Kind = l.Name, l.Kind
			}
			ps, hs = append(ps, lp...), append(hs, lh...)
		}
		f := ForHourProbes(p, hs, ps, nil, h)
		data, err := Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseFile(data)
		if err != nil {
			t.Fatalf("world %d: %v\n%s", i, err, data)
		}
		for ci, c := range f.Classes {
			cut := c.Cutover
			if cut == nil {
				t.Fatalf("world %d class %s: no cut-over", i, c.Name)
			}
			if cut.AfterS < 0 || cut.AfterS > c.DeadlineS || math.Abs(cut.AfterS*100-math.Round(cut.AfterS*100)) > 1e-6 {
				t.Errorf("world %d class %s: after_s %v, deadline %v", i, c.Name, cut.AfterS, c.DeadlineS)
			}
			if !c.Book.FreeEligible && (cut.FreeFirst || cut.AfterS != 0) {
				free, paid := f.Lanes[slices.IndexFunc(f.Lanes, func(l Lane) bool { return l.Name == c.Book.FreeLane })], f.Lanes[1]
				paidGen, _ := NextGenS(paid.TokPerS, c.EstTokens)
				if !cut.FreeFirst || free.Reason != ReasonProbeFailed || !c.Book.PaidEligible || cut.AfterS+c.Book.PaidQueueS+paidGen > c.DeadlineS {
					t.Errorf("world %d class %s: no free lane eligible (%s: %s), cut-over %+v, paid %v + %v", i, c.Name, free.Name, free.Reason, *cut, c.Book.PaidQueueS, paidGen)
				}
			}
			seen[cut.FreeFirst]++
			if b := back.Classes[ci].Cutover; b == nil || *b != *cut {
				t.Errorf("world %d class %s: read back %+v, want %+v", i, c.Name, b, *cut)
			}
		}
		p.Rule = RuleMax
		if data, _ := Marshal(ForHourProbes(p, hs, ps, nil, h)); bytes.Contains(data, []byte("cutover_after_s")) || bytes.Contains(data, []byte("free_first")) {
			t.Fatalf("world %d: a max file with cut-over keys:\n%s", i, data)
		}
	}
	if seen[true] < 5 || seen[false] < 5 {
		t.Fatalf("free first in %d classes, not in %d: the worlds try too little", seen[true], seen[false])
	}
	if testing.Verbose() {
		t.Logf("free first in %d classes, not in %d", seen[true], seen[false])
	}
}
