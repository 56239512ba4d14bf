package backtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/store"
)

var day0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

func params(lookback int) policy.Params {
	return policy.Params{
		Location:     time.UTC,
		LookbackDays: lookback,
		Lanes:        []policy.LaneSpec{{Name: "free", Kind: "free"}, {Name: "paid", Kind: "paid"}},
		Classes: []policy.ClassSpec{
			{Name: "interactive", DeadlineS: 60, CeilingTokens: 4000, EstTokens: 800, PaidUSDPer1k: 0.002},
		},
	}
}

// probeFn says what the free lane's probe at t looks like; ok false with a
// queue is a timeout after that wait.
type probeFn func(t time.Time) (queue float64, ok bool)

// rounds returns three rounds an hour (:07, :27, :47) of the free lane (as
// free says) and a steady paid lane (1 s queue, 160 tok/s), in [from, to).
func rounds(from, to time.Time, free probeFn) []store.Probe {
	var ps []store.Probe
	for h := from.Truncate(time.Hour); h.Before(to); h = h.Add(time.Hour) {
		for _, m := range []int{7, 27, 47} {
			at := h.Add(time.Duration(m) * time.Minute)
			if at.Before(from) || !at.Before(to) {
				continue
			}
			q, ok := free(at)
			f := store.Probe{Lane: "free", Kind: "free", Time: at, QueueS: q, GenS: 0.2, Tokens: 16, OK: true, Outcome: "ok", Status: 200}
			if !ok {
				f.OK, f.Outcome, f.Status, f.GenS, f.Tokens = false, "timeout", 0, 0, 0
			}
			ps = append(ps, f, store.Probe{Lane: "paid", Kind: "paid", Time: at.Add(time.Second), QueueS: 1, GenS: 0.1, Tokens: 16, OK: true, Outcome: "ok", Status: 200})
		}
	}
	return ps
}

func run(t *testing.T, opts Options, ps []store.Probe) Report {
	t.Helper()
	b, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if err := b.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	return b.Report()
}

func laneCal(t *testing.T, r Report, lookback int, lane string) LaneCalibration {
	t.Helper()
	for _, c := range r.Calibration {
		if c.LookbackDays != lookback {
			continue
		}
		for _, l := range c.Lanes {
			if l.Lane == lane {
				return l
			}
		}
	}
	t.Fatalf("no calibration of lane %s at lookback %d", lane, lookback)
	return LaneCalibration{}
}

func f(x *float64) string {
	if x == nil {
		return "null"
	}
	return fmt.Sprint(*x)
}

func TestConstantQueueIsCoveredAtRatioOne(t *testing.T) {
	opts := Options{Params: params(7), Lookbacks: []int{0, 1, 7}, From: day0.AddDate(0, 0, 8), To: day0.AddDate(0, 0, 10)}
	r := run(t, opts, rounds(opts.ReadFrom(), opts.To, func(time.Time) (float64, bool) { return 12.5, true }))
	for _, k := range []int{0, 1, 7} {
		c := laneCal(t, r, k, "free")
		if c.Probes != 144 || c.OK != 144 || c.Covered != 144 || c.NoPolicy != 0 || c.FalseEligible != 0 || c.FalseIneligible != 0 {
			t.Errorf("lookback %d: %+v", k, c.Counts)
		}
		if f(c.Coverage) != "1" || f(c.MedianRatio) != "1" || f(c.P90Ratio) != "1" {
			t.Errorf("lookback %d: coverage %s, median %s, p90 %s; want 1, 1, 1", k, f(c.Coverage), f(c.MedianRatio), f(c.P90Ratio))
		}
	}
	// Every lookback covers as well at the same ratio: the shortest wins.
	if r.BestLookbackDays != 0 || !r.Calibration[0].Best {
		t.Errorf("best lookback %d, want 0", r.BestLookbackDays)
	}
}

func TestDoubledQueueIsUncoveredOnceAfterTheChange(t *testing.T) {
	change := day0.AddDate(0, 0, 9)
	opts := Options{Params: params(7), Lookbacks: []int{1, 7}, From: day0.AddDate(0, 0, 8), To: day0.AddDate(0, 0, 11)}
	var uncovered []time.Time
	b, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	b.onScore = func(p *store.Probe, k int, l *policy.Lane) {
		if p.Lane == "free" && k == 7 && p.QueueS > l.NextQueueS {
			uncovered = append(uncovered, p.Time)
		}
	}
	for _, p := range rounds(opts.ReadFrom(), opts.To, func(at time.Time) (float64, bool) {
		if at.Before(change) {
			return 10, true
		}
		return 20, true
	}) {
		if err := b.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	r := b.Report()
	if want := []time.Time{change.Add(7 * time.Minute)}; !slices.Equal(uncovered, want) {
		t.Errorf("uncovered at %v, want %v", uncovered, want)
	}
	for _, k := range []int{1, 7} {
		c := laneCal(t, r, k, "free")
		if c.Probes != 216 || c.Covered != 215 || f(c.Coverage) != fmt.Sprint(policy.Round(215.0/216, 4)) {
			t.Errorf("lookback %d: %+v coverage %s", k, c.Counts, f(c.Coverage))
		}
		if f(c.MedianRatio) != "1" || f(c.P90Ratio) != "1" {
			t.Errorf("lookback %d: median %s p90 %s, want 1 1", k, f(c.MedianRatio), f(c.P90Ratio))
		}
		// The one miss is at midnight: hour 0 holds it, with ratio 0.5 as its lowest.
		h := c.Hours[0]
		if h.Probes != 9 || h.Covered != 8 {
			t.Errorf("lookback %d hour 0: %+v", k, h.Counts)
		}
	}
}

func TestOneFailedProbe(t *testing.T) {
	fail := day0.AddDate(0, 0, 9).Add(10*time.Hour + 27*time.Minute) // the second probe of 10:00
	for _, tc := range []struct {
		name  string
		queue float64 // the failed probe's known wait
	}{
		{"error at once", 0},
		{"timed out after 90 s", 90},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{Params: params(7), From: day0.AddDate(0, 0, 8), To: day0.AddDate(0, 0, 11)}
			r := run(t, opts, rounds(opts.ReadFrom(), opts.To, func(at time.Time) (float64, bool) {
				if at.Equal(fail) {
					return tc.queue, false
				}
				return 10, true
			}))
			c := laneCal(t, r, 7, "free")
			// The failed probe itself was promised eligible; the live rules
			// then mark the lane probe_failed for the rest of 10:00 (10:47)
			// and for 11:07, whose basis is 10:00 until 11:00 has a sample.
			if c.FalseEligible != 1 || c.FalseIneligible != 2 || c.OK != 215 {
				t.Errorf("%+v", c.Counts)
			}
			if c.Hours[10].FalseEligible != 1 || c.Hours[10].FalseIneligible != 1 || c.Hours[11].FalseIneligible != 1 {
				t.Errorf("hour 10: %+v, hour 11: %+v", c.Hours[10].Counts, c.Hours[11].Counts)
			}
			// A 90 s wait before the timeout is a lower bound above the 10 s figure.
			if want := map[float64]int{0: 0, 90: 1}[tc.queue]; c.CensoredUncovered != want {
				t.Errorf("censored_uncovered %d, want %d", c.CensoredUncovered, want)
			}
			all := r.Calibration[0].All
			if all.FalseEligible != 1 || all.FalseIneligible != 2 || all.Probes != 432 {
				t.Errorf("all: %+v", all.Counts)
			}
		})
	}
}

func TestNoPolicyBeforeTheFirstProbe(t *testing.T) {
	opts := Options{Params: params(1), From: day0, To: day0.Add(2 * time.Hour)}
	r := run(t, opts, rounds(day0, opts.To, func(time.Time) (float64, bool) { return 3, true }))
	c := laneCal(t, r, 1, "free")
	if c.Probes != 6 || c.NoPolicy != 1 || c.OK != 5 || c.Covered != 5 {
		t.Errorf("%+v", c.Counts)
	}
}

// TestIncrementalEqualsPolicygen replays random histories (several sites,
// failures, 429s with and without a reset, a DST change, a lane with a
// wider basis, pruning) and checks every score against the policy built from
// scratch the way policygen -hour builds it from a store holding the probes
// before the scored one, and every record against store.Aggregate of its
// lane-hour's probes so far.
func TestIncrementalEqualsPolicygen(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 99))
			p := policy.Params{
				Location:     ny,
				LookbackDays: 2,
				Lanes: []policy.LaneSpec{
					{Name: "a", Kind: "free"}, {Name: "b", Kind: "paid"}, {Name: "c", Kind: "free", BasisHours: 3},
					{Name: "d", Kind: "free", BasisHours: 30}, // a basis as old as the lookback
				},
				Classes: []policy.ClassSpec{{Name: "x", DeadlineS: 300, CeilingTokens: 5000, EstTokens: 500, PaidUSDPer1k: 0.01}},
			}
			start := time.Date(2026, 3, 3, 0, 0, 0, 0, ny) // DST starts on 2026-03-08
			opts := Options{Params: p, Lookbacks: []int{0, 1, 3}, From: start.AddDate(0, 0, 4), To: start.AddDate(0, 0, 9)}
			var ps []store.Probe
			for at := start; at.Before(opts.To); at = at.Add(time.Duration(rng.IntN(50)) * time.Minute) {
				lane := []string{"a", "b", "c", "d", "x"}[rng.IntN(5)]
				if (lane == "c" || lane == "d") && rng.IntN(3) > 0 {
					continue // sparse
				}
				pr := store.Probe{Lane: lane, Kind: map[string]string{"a": "free", "b": "paid", "c": "free", "d": "free", "x": "free"}[lane],
					Site: []string{"", "s2"}[rng.IntN(2)], Time: at.Add(time.Duration(rng.IntN(1000)) * time.Millisecond),
					QueueS: math.Round(rng.ExpFloat64()*2000) / 100, GenS: 0.1 + rng.Float64(), Tokens: 16, OK: true, Outcome: "ok", Status: 200}
				switch rng.IntN(12) {
				case 0:
					pr.OK, pr.Outcome, pr.Status, pr.GenS, pr.Tokens = false, "timeout", 0, 0, 0
				case 1:
					pr.OK, pr.Outcome, pr.Status, pr.QueueS, pr.GenS, pr.Tokens = false, "rate_limited", 429, 0, 0, 0
					pr.QuotaResetS = float64(rng.IntN(3) * 1800)
				case 2:
					pr.OK, pr.Outcome, pr.Status, pr.QueueS, pr.GenS, pr.Tokens = false, "http_error", 503, 0, 0, 0
				case 3:
					pr.QuotaKnown, pr.QuotaRemaining = true, 0
				}
				ps = append(ps, pr)
			}
			slices.SortStableFunc(ps, func(x, y store.Probe) int { return x.Time.Compare(y.Time) })

			b, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			b.pruneEvery = 7 * time.Hour // mid-day, often
			var before []store.Probe     // probes applied so far
			scores := 0
			b.onScore = func(pr *store.Probe, k int, got *policy.Lane) {
				scores++
				pk := p
				pk.LookbackDays = k
				recs := store.Rollup(before, ny)
				latest := map[[2]string]store.Probe{}
				for _, q := range before {
					latest[[2]string{q.Lane, q.Site}] = q
				}
				var newest []store.Probe
				for _, q := range latest {
					newest = append(newest, q)
				}
				file := policy.ForHour(pk, recs, policy.States(newest, ny), pr.Time)
				i := slices.IndexFunc(file.Lanes, func(l policy.Lane) bool { return l.Name == pr.Lane })
				if want := file.Lanes[i]; !reflect.DeepEqual(*got, want) {
					t.Fatalf("probe %s %s at %s, lookback %d:\n got %+v\nwant %+v", pr.Lane, pr.Site, pr.Time, k, *got, want)
				}
			}
			b.onApply = func(pr *store.Probe, r store.Hourly) {
				before = append(before, *pr)
				var hour []store.Probe
				for _, q := range before {
					if q.Lane == r.Lane && q.Site == r.Site && store.HourStart(q.Time, ny).Equal(r.Hour) {
						hour = append(hour, q)
					}
				}
				if want := store.Aggregate(r.Lane, pr.Kind, r.Site, r.Hour, hour); r != want {
					t.Fatalf("record\n got %+v\nwant %+v", r, want)
				}
			}
			for _, pr := range ps {
				if err := b.Add(pr); err != nil {
					t.Fatal(err)
				}
			}
			b.Report()
			t.Logf("%d scores, %d probes, %d prunes", scores, len(ps), b.epoch)
			if scores == 0 {
				t.Fatal("nothing scored")
			}
		})
	}
}

func TestBestLookback(t *testing.T) {
	cal := func(days int, cov, ratio float64) Calibration {
		c := Calibration{LookbackDays: days}
		if cov >= 0 {
			c.All.Coverage = &cov
		}
		if ratio >= 0 {
			c.All.MedianRatio = &ratio
		}
		return c
	}
	for _, tc := range []struct {
		name string
		cals []Calibration
		want int
	}{
		{"the shortest that reaches the target", []Calibration{cal(1, 0.84, 2), cal(3, 0.92, 2.7), cal(7, 0.97, 4.5), cal(14, 0.99, 10)}, 2},
		{"none reaches it: the best coverage", []Calibration{cal(1, 0.80, 2), cal(3, 0.90, 2.7), cal(7, 0.85, 2.5)}, 1},
		{"equal coverage: the lower ratio", []Calibration{cal(1, 0.90, 3), cal(3, 0.90, 2)}, 1},
		{"equal in all: the shorter", []Calibration{cal(1, 1, 1), cal(7, 1, 1)}, 0},
		{"a lookback without data", []Calibration{cal(1, -1, -1), cal(3, 0.96, -1)}, 1},
		{"nothing to go on", []Calibration{cal(1, -1, -1)}, -1},
	} {
		if got := bestLookback(tc.cals); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestPercentileEqualsSortedRank: the selection gives the nearest rank of
// the sorted values, for random lengths, duplicates and quantiles.
func TestPercentileEqualsSortedRank(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for n := range 2000 {
		xs := make([]float32, 1+rng.IntN(1+n))
		for i := range xs {
			xs[i] = float32(rng.IntN(1 + rng.IntN(50))) // many ties
		}
		q := []float64{0, 0.1, 0.5, 0.9, 0.99, 1}[rng.IntN(6)]
		sorted := slices.Clone(xs)
		slices.Sort(sorted)
		k := min(max(int(math.Ceil(q*float64(len(xs))))-1, 0), len(xs)-1)
		if got, ok := percentile(xs, q); !ok || got != float64(sorted[k]) {
			t.Fatalf("n=%d q=%g: %g, want %g", len(xs), q, got, sorted[k])
		}
	}
}

// TestHourOfEqualsHoursStart: the kept hour is always the one hours.Start
// gives, across DST changes of an hour and of half an hour.
func TestHourOfEqualsHoursStart(t *testing.T) {
	for _, name := range []string{"UTC", "America/New_York", "Australia/Lord_Howe", "Asia/Kathmandu"} {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Fatal(err)
		}
		b := &Backtest{loc: loc}
		rng := rand.New(rand.NewPCG(9, 10))
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for range 200000 {
			at = at.Add(time.Duration(rng.Int64N(int64(10 * time.Minute))))
			if rng.IntN(50) == 0 {
				at = at.Add(-time.Duration(rng.Int64N(int64(3 * time.Hour))))
			}
			got := b.hourOf(at)
			want := store.HourStart(at, loc)
			if !got.start.Equal(want) || got.hod != at.In(loc).Hour() {
				t.Fatalf("%s: hour of %s: %s (%d), want %s (%d)", name, at, got.start, got.hod, want, at.In(loc).Hour())
			}
		}
	}
}
