package policy

import (
	"bytes"
	"math"
	"slices"
	"sort"
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
		if k := w.count(10); k < w.N()/3 || k > 2*w.N()/3 {
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
		if k := w.count(25); k > w.N()/10 {
			t.Errorf("after the lane turned four times slower, %d of %d waits still at most 25 s", k, w.N())
		}
		if k := w.count(60); k < w.N()*9/10 {
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

// chainChance is the failure chain worked out the long way: over the
// probes of the lookback (days) before the newest, of those that followed
// a probe like the newest (failed, or ok), (failed + 1) / (all + 2).
func chainChance(ps []store.Probe, days int) float64 {
	newest := &ps[len(ps)-1]
	from := newest.Time.AddDate(0, 0, -days)
	first := sort.Search(len(ps), func(i int) bool { return !ps[i].Time.Before(from) })
	var after, failed float64
	for i := first + 1; i < len(ps); i++ {
		if ps[i-1].OK == newest.OK {
			after++
			if !ps[i].OK {
				failed++
			}
		}
	}
	return (failed + 1) / (after + 2)
}

// upTo returns the probes before at and their hourly records: what a
// store holds at that instant.
func upTo(ps []store.Probe, at time.Time) ([]store.Probe, []store.Hourly) {
	var out []store.Probe
	byHour := map[[2]string][]store.Probe{}
	var keys [][2]string
	for _, p := range ps {
		if !p.Time.Before(at) {
			continue
		}
		out = append(out, p)
		k := [2]string{p.Lane, p.Time.Truncate(time.Hour).Format(time.RFC3339)}
		if byHour[k] == nil {
			keys = append(keys, k)
		}
		byHour[k] = append(byHour[k], p)
	}
	var hs []store.Hourly
	for _, k := range keys {
		h := byHour[k][0]
		hs = append(hs, store.Aggregate(h.Lane, h.Kind, "", h.Time.Truncate(time.Hour), byHour[k]))
	}
	return out, hs
}

// failingWorld: cutoverWorld with a free lane whose first two probes of
// every sixth hour fail (2, 8, 14 and 20h, at :07 and :27): after a
// failure the next fails one time in two.
func failingWorld(rule string) (Params, []store.Probe, []store.Hourly) {
	p, _, _ := cutoverWorld(rule)
	end := time.Date(2026, 11, 30, 15, 0, 0, 0, time.UTC)
	ps, hs := obsHistory(end, 20, func(t time.Time) (float64, bool) { return 10, !(t.Hour()%6 == 2 && t.Minute() < 30) })
	pp, ph := constantLane("paid", KindPaid, 2, end, 20)
	return p, append(ps, pp...), append(hs, ph...)
}

// A probe that failed this hour makes the lane ineligible this hour (the
// seed's rule, under either rule: probe_failed in the file, never in a
// class's lanes nor the book's free_eligible). Under the calibrated rule
// the class's decision may still start a job on it, its failure priced by
// the lane's chance of a failure after a failure (or after an ok probe,
// by its newest probe), the cut-over leaving the paid attempt room (60 s:
// 57 s); a failure of the hour before, still the basis while this hour has
// no probe, is priced and the lane eligible. The worst-of rule keeps the
// ban: its jobs start on the paid lane.
func TestFailureOfTheHourIsPriced(t *testing.T) {
	h := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		rule   string
		at     time.Time
		reason string
		start  string
	}{
		{RuleCalibrated, h.Add(30 * time.Minute), ReasonProbeFailed, "free"}, // the newest probe (14:27) failed
		{RuleCalibrated, h.Add(50 * time.Minute), ReasonProbeFailed, "free"}, // the newest (14:47) was ok
		{RuleMax, h.Add(50 * time.Minute), ReasonProbeFailed, "paid"},
		{RuleCalibrated, h.Add(time.Hour), ReasonOK, "free"}, // 15:00: the basis is 14h
		{RuleMax, h.Add(time.Hour), ReasonProbeFailed, "paid"},
	} {
		p, all, _ := failingWorld(tc.rule)
		ps, hs := upTo(all, tc.at)
		before := slices.DeleteFunc(slices.Clone(ps), func(p store.Probe) bool { return p.Lane != "free" })
		f := ForHourProbes(p, hs, ps, nil, tc.at)
		l, c := f.Lanes[0], f.Classes[0]
		lane, cut := c.Start()
		if l.Reason != tc.reason || lane != tc.start || c.Book.FreeEligible != (tc.reason == ReasonOK) || slices.Contains(c.Lanes, "free") != (tc.reason == ReasonOK) {
			t.Errorf("%s at %s: %s, start %s, book free_eligible %v, lanes %v; want %s, start %s", tc.rule, tc.at.Format("15:04"), l.Reason, lane, c.Book.FreeEligible, c.Lanes, tc.reason, tc.start)
		}
		if tc.rule == RuleMax {
			continue
		}
		if want := chainChance(before, 14); math.Abs(l.FailShare()-want) > 1e-12 {
			t.Errorf("%s: fail share %v, want %v", tc.at.Format("15:04"), l.FailShare(), want)
		}
		if c.Cutover == nil || *c.Cutover != (Cutover{AfterS: 57, FreeFirst: true}) || !cut {
			t.Errorf("%s: decision %+v (cut %v), want free first until 57 s", tc.at.Format("15:04"), c.Cutover, cut)
		}
	}
	// The chance after a failure is about one in two, after an ok probe
	// about one in seventeen.
	_, ps, _ := failingWorld(RuleCalibrated)
	at27 := slices.IndexFunc(ps, func(p store.Probe) bool { return p.Time.Equal(h.Add(27 * time.Minute)) })
	if a, b := chainChance(ps[:at27+1], 14), chainChance(ps[:at27+2], 14); math.Abs(a-0.5) > 0.02 || math.Abs(b-1.0/17) > 0.01 {
		t.Errorf("the world's chances: %v after a failure, %v after an ok probe", a, b)
	}
}

// A lane whose probe failed this hour is tried first only where the paid
// attempt fits after the cut-over: with a paid lane too slow for the
// deadline (70 s), the same lane eligible would be held to the last
// moment its own answer can ship, but failed it is not tried: nothing is
// sent.
func TestFailedLaneNeedsThePaidAttempt(t *testing.T) {
	p, _, _ := cutoverWorld(RuleCalibrated)
	p.Classes = p.Classes[:1]
	end := time.Date(2026, 11, 30, 15, 0, 0, 0, time.UTC)
	pp, ph := constantLane("paid", KindPaid, 70, end, 20)
	for _, tc := range []struct {
		failing bool
		want    Cutover
	}{{false, Cutover{AfterS: 59, FreeFirst: true}}, {true, Cutover{}}} {
		ps, hs := obsHistory(end, 20, func(t time.Time) (float64, bool) {
			return 10, !(tc.failing && t.Hour() == 14 && t.Day() == 30 && t.Minute() < 30)
		})
		c := ForHourProbes(p, append(hs, ph...), append(ps, pp...), nil, end.Add(-30*time.Minute)).Classes[0]
		if c.Cutover == nil || *c.Cutover != tc.want {
			t.Errorf("failing %v: decision %+v, want %+v", tc.failing, c.Cutover, tc.want)
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

// count returns how many of its waits are at most s seconds.
func (w WaitDist) count(s float64) int {
	k, _ := w.Within(s)
	return k
}
