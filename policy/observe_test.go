package policy

import (
	"bytes"
	"math"
	"math/rand/v2"
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
	f, _ := x.calibrated(x.lanes["free"], 14, h, DefaultCoverage)
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
