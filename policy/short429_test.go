package policy

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/probe"
	"github.com/lanewatch/lanewatch/sampler/budget"
	"github.com/lanewatch/lanewatch/store"
)

// short429Params is one free lane on a budget of 12 probes a day: one probe
// every 2 hours, so its basis may be 3 hours old (budget.BasisHours).
func short429Params() Params {
	return Params{Location: time.UTC, LookbackDays: 1, Lanes: []LaneSpec{{Name: "free", Kind: KindFree, BasisHours: 3}}}
}

// liveAt is the pipeline's live answer for the lane at instant now: the
// probes known by then rolled up into hours (store.Rollup, as the sampler
// stores them), the lane's state from its newest probe (States), the file
// of the hour holding now as of now (load.ForHour, the status page).
func liveAt(p Params, probes []store.Probe, now time.Time) Lane {
	var known []store.Probe
	var newest []store.Probe
	for _, pr := range probes {
		if !pr.Time.After(now) {
			known = append(known, pr)
			newest = []store.Probe{pr}
		}
	}
	f := ForHour(p, store.Rollup(known, time.UTC), States(newest, time.UTC), now)
	return f.Lanes[0]
}

func limited429(at time.Time, waitS float64) store.Probe {
	return store.Probe{Lane: "free", Kind: KindFree, Time: at, Outcome: string(probe.RateLimited), Status: 429, QuotaResetS: waitS}
}

func okProbe(at time.Time, queueS float64) store.Probe {
	return store.Probe{Lane: "free", Kind: KindFree, Time: at, OK: true, Outcome: string(probe.OK), Status: 200, QueueS: queueS, GenS: 0.4, Tokens: 16}
}

// The case, worked by hand: a lane on 12 probes a day is ok at
// 05:17; at 07:17 it answers 429 with Retry-After: 7. The back-off ends at
// 07:17:07, and with it the lane's quota_exhausted: at 07:24 and at 07:28
// (when the status page showed "until 07:24" beside eligible "no") it is
// eligible on its other evidence, and in the next hour it is not
// probe_failed (its basis, hour 07, holds a busy 429, no failure). Before
// issue 18 it stayed quota_exhausted for the rest of hour 07 and was
// probe_failed in hour 08.
//
// Beside it, the 429s that do say the quota is spent: a wait past
// store.BusyMaxS (Retry-After 7 but the request window resets in 7
// minutes), two 429s in one hour, and a wait to midnight.
func TestShort429HandWorked(t *testing.T) {
	day := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	at := func(h, m, s int) time.Time {
		return day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(s)*time.Second)
	}
	midnight := day.Add(24 * time.Hour)
	type want struct {
		now    time.Time
		reason string
		until  time.Time
	}
	cases := []struct {
		name   string
		probes []store.Probe
		wants  []want
	}{
		{"Retry-After 7 at 07:17", []store.Probe{okProbe(at(5, 17, 0), 2), limited429(at(7, 17, 0), 7), okProbe(at(9, 17, 0), 3)},
			[]want{
				{at(7, 16, 0), ReasonOK, time.Time{}},
				{at(7, 17, 3), ReasonQuotaExhausted, at(7, 17, 7)},
				{at(7, 17, 7), ReasonOK, time.Time{}},
				{at(7, 24, 0), ReasonOK, time.Time{}},
				{at(7, 28, 0), ReasonOK, time.Time{}},
				{at(8, 0, 0), ReasonOK, time.Time{}},
				{at(8, 30, 0), ReasonOK, time.Time{}},
				{at(9, 30, 0), ReasonOK, time.Time{}},
			}},
		{"Retry-After 7, the request window resets in 7 minutes (until 07:24)", []store.Probe{okProbe(at(5, 17, 0), 2), limited429(at(7, 17, 0), 420), okProbe(at(9, 17, 0), 3)},
			[]want{
				{at(7, 20, 0), ReasonQuotaExhausted, at(7, 24, 0)},
				// Past until the page never shows it: the lane is judged on
				// its records, and a wait past BusyMaxS is a failure.
				{at(7, 28, 0), ReasonProbeFailed, time.Time{}},
				{at(8, 30, 0), ReasonProbeFailed, time.Time{}},
				{at(9, 30, 0), ReasonOK, time.Time{}},
			}},
		{"two 429s in one hour: the quota is spent", []store.Probe{okProbe(at(5, 17, 0), 2), limited429(at(7, 7, 0), 7), limited429(at(7, 27, 0), 7)},
			[]want{
				{at(7, 20, 0), ReasonOK, time.Time{}}, // one busy 429 so far
				{at(7, 27, 5), ReasonQuotaExhausted, at(7, 27, 7)},
				{at(7, 28, 0), ReasonProbeFailed, time.Time{}},
				{at(8, 30, 0), ReasonProbeFailed, time.Time{}},
			}},
		{"a wait to midnight", []store.Probe{okProbe(at(5, 17, 0), 2), limited429(at(7, 17, 0), midnight.Sub(at(7, 17, 0)).Seconds())},
			[]want{
				{at(7, 28, 0), ReasonQuotaExhausted, midnight},
				{at(15, 0, 0), ReasonQuotaExhausted, midnight},
				{at(23, 59, 59), ReasonQuotaExhausted, midnight},
				{midnight.Add(time.Second), ReasonNoRecentSample, time.Time{}},
			}},
	}
	p := short429Params()
	for _, c := range cases {
		for _, w := range c.wants {
			t.Run(fmt.Sprintf("%s/%s", c.name, w.now.Format("15:04:05")), func(t *testing.T) {
				l := liveAt(p, c.probes, w.now)
				if l.Reason != w.reason || !l.Until.Equal(w.until) || l.Eligible != (w.reason == ReasonOK) {
					t.Errorf("at %s: reason %s until %s eligible %v, want %s until %s",
						w.now.Format(time.TimeOnly), l.Reason, l.Until.Format(time.TimeOnly), l.Eligible, w.reason, w.until.Format(time.TimeOnly))
				}
			})
		}
	}
}

// TestShort429Evidence drives random probe sequences of one budgeted lane
// (ok probes, timeouts, 429s with no wait, busy waits and long ones up to
// budget.MaxBackoff) and asks for the live answer at random instants. The
// rule's invariants hold at every instant:
//
//   - a back-off lasts what the server said: budget.Backoff of a 429 with
//     a wait is the probe's time plus the wait (at most MaxBackoff);
//   - ineligibility never outlasts the evidence: quota_exhausted only
//     while the newest probe's back-off runs (until > now), and
//     probe_failed only when the basis record holds a failure other than a
//     lone busy 429 (an oracle that reads the probes);
//   - a real exhaustion keeps the lane out for as long as it lasts: while
//     the newest probe's back-off runs the lane is quota_exhausted (or
//     never eligible), and an hour with two 429s fails its basis.
func TestShort429Evidence(t *testing.T) {
	p := short429Params()
	basisHours := p.Lanes[0].BasisHours
	for seed := uint64(1); seed <= 300; seed++ {
		rng := rand.New(rand.NewPCG(seed, 18))
		start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rng.IntN(24)) * time.Hour)
		var probes []store.Probe
		at := start
		for range 2 + rng.IntN(12) {
			at = at.Add(time.Duration(1+rng.IntN(150)) * time.Minute)
			var pr store.Probe
			switch k := rng.IntN(6); k {
			case 0, 1:
				pr = okProbe(at, float64(rng.IntN(30)))
			case 2:
				pr = store.Probe{Lane: "free", Kind: KindFree, Time: at, Outcome: string(probe.Timeout), QueueS: 120}
			case 3:
				pr = limited429(at, float64(1+rng.IntN(int(store.BusyMaxS))))
			case 4:
				pr = limited429(at, store.BusyMaxS+float64(rng.IntN(int(budget.MaxBackoff.Seconds()))))
			default:
				pr = limited429(at, 0)
			}
			probes = append(probes, pr)
		}
		for _, pr := range probes {
			if u, ok := budget.Backoff(pr, time.UTC); ok && pr.QuotaResetS > 0 {
				if want := pr.Time.Add(time.Duration(min(pr.QuotaResetS, budget.MaxBackoff.Seconds()) * float64(time.Second))); !u.Equal(want) {
					t.Fatalf("seed %d: back-off of %+v until %s, want %s (what the server said)", seed, pr, u, want)
				}
			}
		}
		for range 40 {
			now := start.Add(time.Duration(rng.Int64N(int64(at.Sub(start) + 30*time.Hour))))
			l := liveAt(p, probes, now)
			var newest *store.Probe
			for i := range probes {
				if !probes[i].Time.After(now) {
					newest = &probes[i]
				}
			}
			var backoff time.Time
			if newest != nil {
				backoff, _ = budget.Backoff(*newest, time.UTC)
			}
			fail := func(format string, args ...any) {
				t.Helper()
				t.Fatalf("seed %d at %s: %s; lane %+v; probes %+v", seed, now.Format(time.DateTime), fmt.Sprintf(format, args...), l, probes)
			}
			running := backoff.After(now)
			switch {
			case l.Reason == ReasonQuotaExhausted && !running:
				fail("quota_exhausted after the back-off (%s) ended", backoff.Format(time.DateTime))
			case l.Reason == ReasonQuotaExhausted && !l.Until.Equal(backoff.UTC().Truncate(time.Second)):
				fail("until %s, want the back-off's %s", l.Until, backoff)
			case running && l.Eligible:
				fail("eligible while the back-off (%s) runs", backoff.Format(time.DateTime))
			case running && l.Reason != ReasonQuotaExhausted:
				fail("%s while the back-off runs, want quota_exhausted", l.Reason)
			}
			if running {
				continue
			}
			// The oracle: the basis is the newest hour of the last
			// basisHours+1 with a probe; it fails on a probe that is not
			// ok and not the hour's only 429 with a busy wait.
			h := now.Truncate(time.Hour)
			basis, real := false, false
			for back := 0; back <= basisHours && !basis; back++ {
				from := h.Add(-time.Duration(back) * time.Hour)
				var in []store.Probe
				for _, pr := range probes {
					if !pr.Time.Before(from) && pr.Time.Before(from.Add(time.Hour)) && !pr.Time.After(now) {
						in = append(in, pr)
					}
				}
				basis = len(in) > 0
				limited := 0
				for _, pr := range in {
					if pr.Outcome == string(probe.RateLimited) {
						limited++
					}
				}
				for _, pr := range in {
					if !pr.OK && !(limited == 1 && store.Busy(pr)) {
						real = true
					}
				}
			}
			switch {
			case l.Reason == ReasonProbeFailed && !real:
				fail("probe_failed on a basis with no failure but a busy 429")
			case basis && real && l.Reason != ReasonProbeFailed:
				fail("%s on a basis with a failure, want probe_failed", l.Reason)
			case basis && !real && l.Reason != ReasonOK:
				fail("%s on a sound basis, want ok", l.Reason)
			}
		}
	}
}
