package policy

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

// Waits holds the hour of day's ok waits, with the neighbouring hours'
// while there are fewer than MinWaitSamples, each moved to the lane's
// level: a lane probed three times an hour has its own hour's 42 waits of
// 14 days; one probed once a day at each hour, 14, takes the hours around
// (h±1: 41, the 13h of 14 days ago being just out of the window); a lane that turns four times slower has its waits moved up
// with it. Timeouts are no wait.
func TestCalibratorWaits(t *testing.T) {
	at := calStart.AddDate(0, 0, 20).Add(14 * time.Hour)
	t.Run("three an hour", func(t *testing.T) {
		c := newCal(t, CalibratedParams{})
		for i, ts := range rounds(calStart, 20) {
			mustAdd(t, c, QueueObs{Time: ts, Value: 10 * math.Exp(0.3*math.Sin(float64(i))), Censored: i%50 == 0})
		}
		w, ok := c.Waits(at)
		if !ok || w.N() < 40 || w.N() > 42 || w.hours != hoursSet(14) {
			t.Fatalf("%d waits over hours %v, want the 14h's own ~42", w.N(), w.hours)
		}
		if k := w.Count(10); k < w.N()/3 || k > 2*w.N()/3 {
			t.Errorf("%d of %d waits at most the median 10 s", k, w.N())
		}
	})
	t.Run("once a day an hour", func(t *testing.T) {
		c := newCal(t, CalibratedParams{})
		for d := range 20 {
			for h := range 24 {
				mustAdd(t, c, QueueObs{Time: calStart.AddDate(0, 0, d).Add(time.Duration(h)*time.Hour + 7*time.Minute), Value: 10})
			}
		}
		w, _ := c.Waits(at)
		if w.N() != 41 || w.hours != hoursSet(13, 14, 15) {
			t.Errorf("%d waits over hours %v, want 41 over 13-15h", w.N(), w.hours)
		}
	})
	t.Run("a level four times up", func(t *testing.T) {
		c := newCal(t, CalibratedParams{})
		ts := rounds(calStart, 21)
		for i, tm := range ts {
			v := 10 * math.Exp(0.2*math.Sin(float64(i)))
			if tm.After(at.Add(-2 * time.Hour)) {
				v *= 4
			}
			mustAdd(t, c, QueueObs{Time: tm, Value: v})
			if tm.After(at) {
				break
			}
		}
		w, _ := c.Waits(at.Add(time.Hour))
		if k := w.Count(25); k > w.N()/10 {
			t.Errorf("after the lane turned four times slower, %d of %d waits still at most 25 s", k, w.N())
		}
		if k := w.Count(60); k < w.N()*9/10 {
			t.Errorf("after the lane turned four times slower, only %d of %d waits at most 60 s", k, w.N())
		}
	})
}

func hoursSet(hs ...int) uint32 {
	var out uint32
	for _, h := range hs {
		out |= 1 << h
	}
	return out
}

// threeLanes: free lanes aslow (1.51 s) and zfast (0.06 s) and a paid lane
// (1 s), each 40 tok/s, 20 days three probes an hour; one 60 s class of
// 40 tokens.
func threeLanes(rule string, end time.Time) (Params, []store.Probe, []store.Hourly) {
	var ps []store.Probe
	var hs []store.Hourly
	for _, l := range []struct {
		name, kind string
		q          float64
	}{{"aslow", KindFree, 1.51}, {"zfast", KindFree, 0.06}, {"paid", KindPaid, 1}} {
		p, h := constantLane(l.name, l.kind, l.q, end, 20)
		ps, hs = append(ps, p...), append(hs, h...)
	}
	return Params{Location: time.UTC, LookbackDays: 14, Rule: rule,
		Lanes:   []LaneSpec{{Name: "aslow", Kind: KindFree}, {Name: "zfast", Kind: KindFree}, {Name: "paid", Kind: KindPaid}},
		Classes: []ClassSpec{{Name: "ci", DeadlineS: 60, CeilingTokens: 100, EstTokens: 40, PaidUSDPer1k: 1}}}, ps, hs
}

// The class's lanes come in the order of its decision: of two free lanes
// that both ship every time, the faster is first, is the book's free lane
// and carries the cut-over (issue 30: by name, aslow came first with no
// cut-over for it). The worst-of rule keeps its order of before (free
// first, by name; its files have no decision).
func TestClassLanesInTheDecisionsOrder(t *testing.T) {
	h := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	p, ps, hs := threeLanes(RuleCalibrated, h.Add(time.Hour))
	c := ForHourProbes(p, hs, ps, nil, h).Classes[0]
	if !slices.Equal(c.Lanes, []string{"zfast", "aslow", "paid"}) || c.Book.FreeLane != "zfast" || c.Cutover == nil ||
		!c.Cutover.FreeFirst || c.Cutover.AfterS != 58 {
		t.Errorf("calibrated: lanes %v, free lane %q, cut-over %+v; want [zfast aslow paid], zfast, free first until 58 s", c.Lanes, c.Book.FreeLane, c.Cutover)
	}
	p.Rule = RuleMax
	if c := ForHourProbes(p, hs, ps, nil, h).Classes[0]; !slices.Equal(c.Lanes, []string{"aslow", "zfast", "paid"}) || c.Book.FreeLane != "zfast" {
		t.Errorf("max: lanes %v, free lane %q; want [aslow zfast paid] and zfast", c.Lanes, c.Book.FreeLane)
	}
}

// A probe that failed this hour makes the lane ineligible this hour (the
// seed's rule, under either rule); under the calibrated rule a failure of
// the hour before, still the basis while this hour has no probe, is
// priced instead: the lane is eligible and its decisions take a third of
// its attempts to fail (FailShare). The worst-of rule keeps the ban.
func TestFailureOfTheHourBeforeIsPriced(t *testing.T) {
	end := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	failed := end.Add(-time.Hour + 27*time.Minute) // 13:27
	ps, hs := obsHistory(end, 20, func(t time.Time) (float64, bool) { return 10, !t.Equal(failed) })
	for _, tc := range []struct {
		rule   string
		at     time.Time
		reason string
		share  float64
	}{
		{RuleCalibrated, end.Add(-10 * time.Minute), ReasonProbeFailed, -1}, // 13:50: this hour's failure
		{RuleMax, end.Add(-10 * time.Minute), ReasonProbeFailed, -1},
		{RuleCalibrated, end, ReasonOK, 1.0 / 3}, // 14:00: the basis is 13h
		{RuleMax, end, ReasonProbeFailed, -1},
	} {
		f := ForHourProbes(obsParams(tc.rule), hs, ps, nil, tc.at)
		l := f.Lanes[0]
		if l.Reason != tc.reason || (tc.share >= 0 && math.Abs(l.FailShare()-tc.share) > 1e-9) {
			t.Errorf("%s at %s: %s, fail share %v; want %s, %v", tc.rule, tc.at.Format("15:04"), l.Reason, l.FailShare(), tc.reason, tc.share)
		}
		if tc.reason == ReasonOK && !f.Classes[0].Book.FreeEligible {
			t.Errorf("%s at %s: the book's free lane is not eligible", tc.rule, tc.at.Format("15:04"))
		}
	}
}

// A forecast hour whose lookback holds a failed probe beside ok ones is
// eligible under the calibrated rule, the failure priced (issue 30: one
// failure in 14 days banned the hour on every later day); under the
// worst-of rule it stays probe_failed. A lookback of failures alone is
// probe_failed under both.
func TestForecastFailurePriced(t *testing.T) {
	day := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	failed := day.AddDate(0, 0, -3).Add(14*time.Hour + 27*time.Minute)
	ps, hs := obsHistory(day, 20, func(t time.Time) (float64, bool) { return 10, !t.Equal(failed) && t.Hour() != 3 })
	for _, tc := range []struct {
		rule         string
		at14, at03   string
		free14Stated bool
	}{
		{RuleCalibrated, ReasonOK, ReasonProbeFailed, true},
		{RuleMax, ReasonProbeFailed, ReasonProbeFailed, false},
	} {
		fs := ForecastProbes(obsParams(tc.rule), hs, ps, nil, day)
		if r := fs[14].Lanes[0].Reason; r != tc.at14 {
			t.Errorf("%s: 14h %s, want %s", tc.rule, r, tc.at14)
		}
		if r := fs[3].Lanes[0].Reason; r != tc.at03 {
			t.Errorf("%s: 03h %s, want %s", tc.rule, r, tc.at03)
		}
		if got := fs[14].Lanes[0].FailShare(); tc.free14Stated && math.Abs(got-1.0/42) > 1e-9 {
			t.Errorf("%s: 14h fail share %v, want 1/42", tc.rule, got)
		}
	}
}

// A free lane whose wait at the coverage does not fit the deadline alone
// is not listed, but a free-first decision still starts on it (Start),
// with its cut-over keeping the deadline: a lane waiting 5 to 60 s for a
// 30 s class, the paid lane 2 s. The worst-of rule has no decision: its
// jobs start on the first listed lane.
func TestStartOnAFreeLaneThatDoesNotFitAlone(t *testing.T) {
	h := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	end := h.Add(time.Hour)
	i := 0
	ps, hs := obsHistory(end, 20, func(time.Time) (float64, bool) { i++; return 5 + float64(i*7%12)*5, true })
	pp, ph := constantLane("paid", KindPaid, 2, end, 20)
	p := Params{Location: time.UTC, LookbackDays: 14, Rule: RuleCalibrated,
		Lanes:   []LaneSpec{{Name: "free", Kind: KindFree}, {Name: "paid", Kind: KindPaid}},
		Classes: []ClassSpec{{Name: "c", DeadlineS: 30, CeilingTokens: 100, EstTokens: 40, PaidUSDPer1k: 1}}}
	c := ForHourProbes(p, append(hs, ph...), append(ps, pp...), nil, h).Classes[0]
	lane, cut := c.Start()
	if !slices.Equal(c.Lanes, []string{"paid"}) || c.Cutover == nil || !c.Cutover.FreeFirst || c.Cutover.AfterS != 27 || lane != "free" || !cut {
		t.Errorf("lanes %v, decision %+v, start %q (cut %v); want [paid], free first until 27 s, start free with a cut-over", c.Lanes, c.Cutover, lane, cut)
	}
	p.Rule = RuleMax
	c = ForHourProbes(p, append(hs, ph...), append(ps, pp...), nil, h).Classes[0]
	if lane, cut := c.Start(); lane != "paid" || cut {
		t.Errorf("max: start %q (cut %v), want paid", lane, cut)
	}
}

// A class whose objective is time goes where the result comes first: on
// cutoverWorld at 60 s (a free answer in 10 + 1 s, a paid one in 2 + 1 s)
// the cost class holds the free lane until 57 s, the time class goes
// straight to the paid lane; each file says its objective and reads back.
func TestObjectiveTimeInFile(t *testing.T) {
	p, ps, hs := cutoverWorld(RuleCalibrated)
	p.Classes = p.Classes[:1]
	p.Classes = append(p.Classes, p.Classes[0])
	p.Classes[1].Name, p.Classes[1].Objective = "fast", ObjectiveTime
	f := ForHourProbes(p, hs, ps, nil, time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC))
	for i, want := range []struct {
		obj   string
		cut   Cutover
		lanes []string
	}{{ObjectiveCost, Cutover{57, true}, []string{"free", "paid"}}, {ObjectiveTime, Cutover{}, []string{"paid", "free"}}} {
		c := f.Classes[i]
		if c.Objective != want.obj || c.Cutover == nil || *c.Cutover != want.cut || !slices.Equal(c.Lanes, want.lanes) {
			t.Errorf("class %s: objective %q, decision %+v, lanes %v; want %q, %+v, %v", c.Name, c.Objective, c.Cutover, c.Lanes, want.obj, want.cut, want.lanes)
		}
	}
	data, err := Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseFile(data)
	if err != nil {
		t.Fatal(err)
	}
	if back.Classes[1].Objective != ObjectiveTime || !bytes.Contains(data, []byte("    objective: time\n")) {
		t.Errorf("read back objective %q from:\n%s", back.Classes[1].Objective, data)
	}
	if _, err := ParseFile(bytes.Replace(data, []byte("objective: time"), []byte("objective: speed"), 1)); err == nil || !strings.Contains(err.Error(), "objective") {
		t.Errorf("an unknown objective: %v", err)
	}
}
