package lanesim

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

// heldOut returns the held-out profile of the given name.
func heldOut(t *testing.T, name string) HistoryProfile {
	t.Helper()
	i := slices.IndexFunc(HeldOutProfiles, func(p HistoryProfile) bool { return p.Name == name })
	if i < 0 {
		t.Fatalf("no held-out profile %q", name)
	}
	return HeldOutProfiles[i]
}

// freeWaits returns the free lane's waits of a year of profile name, each
// over its truth's median (a timeout counts as +Inf; 429s are left out),
// with the probes and truths.
func freeWaits(t *testing.T, name string) ([]float64, []store.Probe, []ProbeTruth) {
	t.Helper()
	ps, ts := genTruth(t, HistoryOptions{Start: histStart, Days: 365, Seed: 7, Profile: name, PaidFaults: true,
		Lanes: []HistoryLane{{"free", "free"}, {"paid", "paid"}}})
	var ratios []float64
	for i, p := range ps {
		if p.Lane != "free" || ts[i].Outage || p.Outcome == "rate_limited" {
			continue
		}
		r := math.Inf(1)
		if p.OK {
			r = p.QueueS / ts[i].MedianS
		}
		ratios = append(ratios, r)
	}
	return ratios, ps, ts
}

func share(xs []float64, above float64) float64 {
	n := 0
	for _, x := range xs {
		if x > above {
			n++
		}
	}
	return float64(n) / float64(len(xs))
}

// The mixture and Pareto profiles draw the tails they say: one wait in
// eight from the slow mode ten times the median, and a Pareto tail whose
// share beyond k medians is (2^(1/α) k)^-α; both keep their median.
func TestHistoryHeldOutTails(t *testing.T) {
	mix, _, _ := freeWaits(t, "mixture")
	p := heldOut(t, "mixture")
	// Beyond 3 medians: nearly the whole slow mode (σ 0.4 around 10×), and
	// the fast mode's 0.3 %.
	want := p.SlowShare*0.998 + (1-p.SlowShare)*0.003
	if got := share(mix, 3); math.Abs(got-want) > 4*math.Sqrt(want*(1-want)/float64(len(mix))) {
		t.Errorf("mixture: %.4f of the waits beyond 3 medians, want %.4f", got, want)
	}
	par, _, _ := freeWaits(t, "pareto")
	a := heldOut(t, "pareto").TailAlpha
	for _, k := range []float64{1, 3, 10, 30} {
		want := math.Min(0.5, math.Pow(math.Pow(2, 1/a)*k, -a))
		if k == 1 {
			want = 0.5
		}
		if got := share(par, k); math.Abs(got-want) > 4*math.Sqrt(want*(1-want)/float64(len(par)))+0.002 {
			t.Errorf("pareto: %.4f of the waits beyond %g medians, want %.4f", got, k, want)
		}
	}
}

// The weekly, drop, rise, sparse and upstream profiles change what they
// say and nothing else: weekends a third of weekdays, a level that falls
// to a quarter or rises fourfold two thirds in, a free lane probed 8 times
// a day, a paid lane slowed by the free lanes' busy days and failing in
// their outages.
func TestHistoryHeldOutWorlds(t *testing.T) {
	median := func(xs []float64) float64 {
		s := slices.Clone(xs)
		slices.Sort(s)
		return s[len(s)/2]
	}
	t.Run("weekly", func(t *testing.T) {
		_, ps, _ := freeWaits(t, "weekly")
		var we, wd []float64
		for _, p := range ps {
			if p.Lane != "free" || !p.OK {
				continue
			}
			if d := p.Time.Weekday(); d == time.Saturday || d == time.Sunday {
				we = append(we, p.QueueS)
			} else {
				wd = append(wd, p.QueueS)
			}
		}
		if r := median(we) / median(wd); math.Abs(math.Log(r/(1.0/3))) > 0.1 {
			t.Errorf("weekend median %.2f× the weekdays', want 1/3", r)
		}
	})
	for _, name := range []string{"drop", "rise"} {
		t.Run(name, func(t *testing.T) {
			ps, _ := genTruth(t, HistoryOptions{Start: histStart, Days: 90, Seed: 7, Profile: name,
				Lanes: []HistoryLane{{"free", "free"}, {"paid", "paid"}}})
			at := histStart.AddDate(0, 0, 60)
			var before, after []float64
			for _, p := range ps {
				if p.Lane != "free" || !p.OK {
					continue
				}
				if p.Time.Before(at) {
					before = append(before, p.QueueS)
				} else {
					after = append(after, p.QueueS)
				}
			}
			want := heldOut(t, name).Shift
			if r := median(after) / median(before); math.Abs(math.Log(r/want)) > 0.15 {
				t.Errorf("median after day 60 %.2f× before, want %g", r, want)
			}
		})
	}
	t.Run("sparse", func(t *testing.T) {
		ps := genHistory(t, HistoryOptions{Start: histStart, Days: 30, Seed: 7, Profile: "sparse",
			Lanes: []HistoryLane{{"free", "free"}, {"paid", "paid"}}})
		n := map[string]int{}
		for _, p := range ps {
			n[p.Lane]++
		}
		// One round of ten, fewer the rounds a 429's back-off skips.
		if n["paid"] != 30*72 || n["free"] > 30*72/10 || n["free"] < 30*72/10*95/100 {
			t.Errorf("probes in 30 days: %v, want paid 2160 and free at most 216 (one round of ten)", n)
		}
	})
	t.Run("upstream", func(t *testing.T) {
		_, ps, ts := freeWaits(t, "upstream")
		type day struct{ free, paid []float64 }
		days := map[int64]*day{}
		outages, failedInOutage, failedElse, paidElse := 0, 0, 0, 0
		for i, p := range ps {
			if p.Lane == "paid" {
				if ts[i].Outage {
					outages++
					if !p.OK {
						failedInOutage++
					}
				} else {
					paidElse++
					if !p.OK {
						failedElse++
					}
				}
			}
			if !p.OK {
				continue
			}
			d := days[p.Time.Unix()/86400]
			if d == nil {
				d = &day{}
				days[p.Time.Unix()/86400] = d
			}
			if p.Lane == "free" {
				d.free = append(d.free, math.Log(p.QueueS))
			} else {
				d.paid = append(d.paid, math.Log(p.QueueS))
			}
		}
		// The two lanes' daily medians move together.
		var xs, ys []float64
		for _, d := range days {
			if len(d.free) > 0 && len(d.paid) > 0 {
				xs, ys = append(xs, median(d.free)), append(ys, median(d.paid))
			}
		}
		if r := correlation(xs, ys); r < 0.3 {
			t.Errorf("correlation of the lanes' daily medians: %.2f, want them to move together", r)
		}
		if outages == 0 || math.Abs(float64(failedInOutage)/float64(outages)-0.5) > 0.1 || float64(failedElse)/float64(paidElse) > 0.005 {
			t.Errorf("paid failures: %d of %d probes in outages, %d of %d outside: want about half, and rare", failedInOutage, outages, failedElse, paidElse)
		}
	})
}

func correlation(xs, ys []float64) float64 {
	mean := func(v []float64) float64 {
		s := 0.0
		for _, x := range v {
			s += x
		}
		return s / float64(len(v))
	}
	mx, my := mean(xs), mean(ys)
	var sxy, sxx, syy float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
		syy += (ys[i] - my) * (ys[i] - my)
	}
	return sxy / math.Sqrt(sxx*syy)
}
