package policy

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

// Tests written for gremlins' survivors and hand-made mutants of
// classes.go, forecast.go and observe.go (issue 22, fifth round): each
// fails on the mutant named in its comment and passes on the code.

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
				w, _ := inOrder.calibrated(inOrder.lanes["free"], 14, at, cov)
				if g, _ := x.calibrated(x.lanes["free"], 14, at, cov); g != w {
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
			w, okW := fresh.calibrated(fresh.lanes["free"], 14, at, cov)
			g, okG := dropped.calibrated(dropped.lanes["free"], 14, at, cov)
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
		z, _ := x.calibrated(x.lanes["free"], 0, end, cov)
		f, _ := x.calibrated(x.lanes["free"], 14, end, cov)
		if z != f {
			t.Errorf("coverage %v: calibrated %+v under 0 days, %+v under 14", cov, z, f)
		}
	}
}

// A day ahead, a class with its own coverage reads each lane's day-ahead
// figure at that coverage (docs/policy.md, coverage; ForecastProbes): with
// waits spread from 5 to 45 s over the 20 days before the day, class b
// (0.5) books the free lane at the day-ahead 0.5 quantile, class a (the
// file's 0.95) at the lane's next_queue_s, and the two differ. The figures
// are worked out by a Calibrator of the probes before the day
// (CalibratedQuantile, DayAhead).
// (forecast.go: `cov != p.CoverageOr()` → `==`, which gives a class with
// its own coverage the file's figure.)
func TestForecastClassReadsItsOwnCoverage(t *testing.T) {
	day := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	ps := r5Probes(day.AddDate(0, 0, -20), day.AddDate(0, 0, 1), r5Spread(13))
	var obs []QueueObs
	for _, pr := range ps {
		if pr.Time.Before(day) {
			o, _ := ProbeObs(pr)
			obs = append(obs, o)
		}
	}
	files := ForecastProbes(obsParams(RuleCalibrated), r5Records(ps), ps, nil, day)
	for _, hr := range []int{3, 14} {
		start := day.Add(time.Duration(hr) * time.Hour)
		want := map[float64]float64{}
		for _, cov := range []float64{0.5, 0.95} {
			q, ok, err := CalibratedQuantile(CalibratedParams{LookbackDays: 14, DayAhead: true}, obs, start, cov)
			if err != nil || !ok || !q.Warm {
				t.Fatalf("hour %d, coverage %v: %+v %v %v; want a warm figure", hr, cov, q, ok, err)
			}
			want[cov] = min(ceil2(q.QueueS), MaxSeconds)
		}
		if want[0.5] == want[0.95] {
			t.Fatalf("hour %d: %v at both coverages: the test tells nothing", hr, want[0.5])
		}
		f := files[hr]
		a, b := f.Classes[0], f.Classes[1]
		if f.Lanes[0].NextQueueS != want[0.95] || a.Coverage != 0.95 || a.Book.NextQueueS != want[0.95] ||
			b.Coverage != 0.5 || b.Book.NextQueueS != want[0.5] {
			t.Errorf("hour %d: next_queue_s %v, class a (%v) %v, class b (%v) %v; want %v, %v, %v", hr, f.Lanes[0].NextQueueS,
				a.Coverage, a.Book.NextQueueS, b.Coverage, b.Book.NextQueueS, want[0.95], want[0.95], want[0.5])
		}
	}
}
