package policy

import (
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

// A forecast hour is quota_exhausted while the quota is spent past that
// hour's start (issue 22 #5: the forecast's case was tested nowhere).
func TestForecastQuotaExhausted(t *testing.T) {
	day := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var recs []store.Hourly
	for hr := range 24 {
		recs = append(recs, mtRec("a", KindFree, "", day.Add(time.Duration(hr-24)*time.Hour), 2, 40, 0))
	}
	p := Params{LookbackDays: 1, Lanes: []LaneSpec{{Name: "a", Kind: KindFree}}}
	for _, tc := range []struct {
		name  string
		until time.Time
		last  int // the last hour that is quota_exhausted; -1: none
		want  time.Time
	}{
		{"until 05:30", day.Add(5*time.Hour + 30*time.Minute + 999*time.Millisecond), 5, day.Add(5*time.Hour + 30*time.Minute)},
		{"until 06:00 exactly", day.Add(6 * time.Hour), 5, day.Add(6 * time.Hour)},
		{"until 06:00 and a nanosecond", day.Add(6*time.Hour + time.Nanosecond), 6, day.Add(6 * time.Hour)},
		{"until midnight", day, -1, time.Time{}},
		{"none", time.Time{}, -1, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			states := []LaneState{{Lane: "a", LastSample: day.Add(-time.Hour), QuotaUntil: tc.until}}
			files := ForecastProbes(p, recs, nil, states, day.Add(13*time.Hour))
			for hr, f := range files {
				l := mtLane(t, f, "a")
				wantReason, wantUntil := ReasonOK, time.Time{}
				if hr <= tc.last {
					wantReason, wantUntil = ReasonQuotaExhausted, tc.want
				}
				if l.Reason != wantReason || l.Eligible != (wantReason == ReasonOK) || !l.Until.Equal(wantUntil) || l.NextQueueS != 2 || l.Samples != 3 {
					t.Fatalf("hour %02d: %+v; want %s until %v, queue 2 from 3 samples", hr, l, wantReason, wantUntil)
				}
			}
		})
	}
	// Never sampled outranks a quota; no history at the hour is
	// no_recent_sample once the quota is back.
	states := []LaneState{{Lane: "b", QuotaUntil: day.Add(time.Hour)}, {Lane: "c", LastSample: day.Add(-time.Hour), QuotaUntil: day.Add(time.Hour)}}
	p.Lanes = []LaneSpec{{Name: "b", Kind: KindFree}, {Name: "c", Kind: KindFree}}
	files := ForecastProbes(p, nil, nil, states, day)
	for _, tc := range []struct {
		hr         int
		lane, want string
	}{{0, "b", ReasonNeverSampled}, {0, "c", ReasonQuotaExhausted}, {1, "c", ReasonNoRecentSample}} {
		if l := mtLane(t, files[tc.hr], tc.lane); l.Reason != tc.want {
			t.Errorf("hour %02d lane %s: %s, want %s", tc.hr, tc.lane, l.Reason, tc.want)
		}
	}
}

// A day-ahead calibrated figure learns from the probes before the day
// alone (docs/policy.md, next_queue_s; ForecastProbes), and once its margin
// is warm it may be under the worst-of figure. A lane waits 10 s on every
// probe (3 an hour, 20 days) but once, 50 s at 14:07 on 2026-11-25; the
// day itself (2026-12-01) waits 99 s. Hour 14's profile over the 14 days
// before the day is 42 waits, one of 50: at 0.95 the rank ceil(0.95·42) − 1
// = 39 of the sorted 42 is 10, the margin of a lane that keeps to its
// profile is 1, so next_queue_s is 10 where the worst-of rule says 50.
// (forecast.go: the day's probes let in, `civilOf(...) >= d` → `>`, or
// `!ok || ...` → `&&`; queue's `c == nil` → `c != nil`, which always takes the
// worst-of figure.)
func TestForecastProbesCalibratedBelowTheWorst(t *testing.T) {
	day := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ps, hs := obsHistory(time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), 20, func(at time.Time) (float64, bool) {
		switch {
		case at.Day() == 1 && at.Month() == 12:
			return 99, true // the day itself: never read
		case at.Day() == 25 && at.Hour() == 14 && at.Minute() == 7:
			return 50, true
		}
		return 10, true
	})
	cal := ForecastProbes(obsParams(RuleCalibrated), hs, ps, nil, day)
	worst := ForecastProbes(obsParams(RuleMax), hs, nil, nil, day)
	for hr, want := range map[int][2]float64{13: {10, 10}, 14: {10, 50}, 15: {10, 10}} {
		if got := [2]float64{cal[hr].Lanes[0].NextQueueS, worst[hr].Lanes[0].NextQueueS}; got != want {
			t.Errorf("hour %d: next_queue_s calibrated, max = %v, want %v", hr, got, want)
		}
	}
}

// A day ahead, a class with its own coverage reads each lane's day-ahead
// figure at that coverage (docs/policy.md, coverage; ForecastProbes): with
// waits spread from 5 to 45 s over the 20 days before the day, class b
// (0.5) books the free lane at the day-ahead 0.5 quantile, class a (the
// file's 0.95) at the lane's next_queue_s, and the two differ. The figures
// are worked out by a Calibrator of the probes before the day
// (DayAhead).
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
			q, ok := calibratedQuantile(t, CalibratedParams{LookbackDays: 14, DayAhead: true}, obs, start, cov)
			if !ok || !q.Warm {
				t.Fatalf("hour %d, coverage %v: %+v %v; want a warm figure", hr, cov, q, ok)
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

// A forecast lane whose history holds a single ok probe (and no failed
// one) is eligible.
func TestForecastOneOKProbeIsEnough(t *testing.T) {
	p := Params{LookbackDays: 3, Lanes: []LaneSpec{{Name: "a", Kind: KindFree}, {Name: "b", Kind: KindFree}}}
	recs := []store.Hourly{
		{Lane: "a", Kind: KindFree, Hour: mtHour.Add(-48 * time.Hour), WorstQueueS: 2, MinTokPerS: 40, Samples: 1},
		{Lane: "b", Kind: KindFree, Hour: mtHour.Add(-48 * time.Hour), WorstQueueS: 2, MinTokPerS: 40, Samples: 1, Failures: 1},
	}
	f := ForecastProbes(p, recs, nil, nil, mtHour)[14]
	if l := f.Lanes[0]; !l.Eligible || l.Reason != ReasonOK || l.Samples != 1 {
		t.Errorf("a: %+v, want eligible from its one ok probe", l)
	}
	if l := f.Lanes[1]; l.Eligible || l.Reason != ReasonProbeFailed || l.Failures != 1 {
		t.Errorf("b: %+v, want probe_failed", l)
	}
}
