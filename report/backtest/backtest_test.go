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
	b.onEntryScore = func(p *store.Probe, i int, l *policy.Lane) {
		if p.Lane == "free" && b.entries[i].lookback == 7 && p.QueueS > l.NextQueueS {
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
			b.onEntryScore = func(pr *store.Probe, e int, got *policy.Lane) {
				k := b.entries[e].lookback
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

// The decisions follow the config's lookback_days, whichever other
// lookbacks the calibration scores (issue 22 #14: `==` → `!=` in the
// choice of the decisions' params). On day 1 the free lane queued 55 s at
// 10:00; on day 8 it queues 5 s. A 7-day lookback reaches day 1, so the
// policy at 10:06..10:46 of day 8 says 55 + 10 > 60 and lanewatch cuts
// over to the paid lane (6 s); shorter lookbacks send it to the free lane
// (15 s).
func TestDecisionsUseTheConfigsLookback(t *testing.T) {
	slow := day0.AddDate(0, 0, 1).Add(10 * time.Hour)
	free := func(at time.Time) (float64, bool) {
		if !at.Before(slow) && at.Before(slow.Add(time.Hour)) {
			return 55, true
		}
		return 5, true
	}
	viaPaid := Decision{Class: "interactive", Strategy: "lanewatch", Jobs: 3, Met: 3, MetPct: 100, MedianTimeS: fp(6), PaidUSD: 0.0048, Attempts: 3}
	viaFree := Decision{Class: "interactive", Strategy: "lanewatch", Jobs: 3, Met: 3, MetPct: 100, MedianTimeS: fp(15), Attempts: 3}
	for _, tc := range []struct {
		name      string
		lookback  int
		lookbacks []int
		want      Decision
	}{
		{"7 of 0 and 7", 7, []int{0, 7}, viaPaid},
		{"7, not among 0 and 1", 7, []int{0, 1}, viaPaid},
		{"7 of 1, 7 and 14", 7, []int{14, 7, 1}, viaPaid},
		{"0 of 0 and 7", 0, []int{0, 7}, viaFree},
		{"1 of 1 and 7", 1, []int{7, 1}, viaFree},
		{"7 alone", 7, nil, viaPaid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from := day0.AddDate(0, 0, 8).Add(10 * time.Hour)
			opts := Options{Params: params(tc.lookback), Lookbacks: tc.lookbacks, From: from, To: from.Add(2 * time.Hour)}
			r := run(t, opts, rounds(opts.ReadFrom(), opts.To, free))
			if got := decision(t, r, "interactive", "lanewatch"); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("lanewatch\n got %+v (median %s)\nwant %+v", got, f(got.MedianTimeS), tc.want)
			}
			if r.DecisionLookback != tc.lookback {
				t.Errorf("decision_lookback_days %d, want %d", r.DecisionLookback, tc.lookback)
			}
		})
	}
}

// ReadFrom is the warm-up start: the hour of From, the largest lookback
// (0..366) days before, less the widest basis and an hour (issue 22 #15:
// the margin was removable).
func TestReadFrom(t *testing.T) {
	ny := mustLocBT(t, "America/New_York")
	from := time.Date(2026, 11, 9, 10, 30, 0, 0, time.UTC)
	wide := params(7)
	wide.Lanes = append(wide.Lanes, policy.LaneSpec{Name: "sparse", Kind: "free", BasisHours: 30})
	nyP := params(7)
	nyP.Location = ny
	for _, tc := range []struct {
		name      string
		p         policy.Params
		lookbacks []int
		from      time.Time
		want      time.Time
	}{
		{"7 days, basis 1", params(7), nil, from, time.Date(2026, 11, 2, 8, 0, 0, 0, time.UTC)},
		{"0 days: the hour before From, and one more", params(0), nil, from, time.Date(2026, 11, 9, 8, 0, 0, 0, time.UTC)},
		{"the largest of the lookbacks", params(7), []int{3, 14}, from, time.Date(2026, 10, 26, 8, 0, 0, 0, time.UTC)},
		{"the config's lookback when larger", params(7), []int{1, 2}, from, time.Date(2026, 11, 2, 8, 0, 0, 0, time.UTC)},
		{"a basis of 30 hours", wide, nil, from, time.Date(2026, 11, 1, 3, 0, 0, 0, time.UTC)},
		{"a negative lookback counts as 0", params(-3), nil, from, time.Date(2026, 11, 9, 8, 0, 0, 0, time.UTC)},
		{"capped at 366 days", params(7), []int{400}, from, time.Date(2025, 11, 8, 8, 0, 0, 0, time.UTC)},
		// 2026-03-09 02:30 EDT; 7 days before is 03-02 02:00 EST (07:00Z).
		{"same wall-clock hour across DST", nyP, nil, time.Date(2026, 3, 9, 6, 30, 0, 0, time.UTC), time.Date(2026, 3, 2, 5, 0, 0, 0, time.UTC)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{Params: tc.p, Lookbacks: tc.lookbacks, From: tc.from, To: tc.from.Add(time.Hour)}
			if got := opts.ReadFrom(); !got.Equal(tc.want) {
				t.Errorf("ReadFrom %s, want %s", got.UTC(), tc.want)
			}
		})
	}
}

func mustLocBT(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// New takes up to MaxLookbacks distinct lookbacks of 0..MaxLookbackDays
// days each; duplicates count once.
func TestNewLookbackBounds(t *testing.T) {
	span := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		lookbacks []int
		want      string // "" for no error
	}{
		{"16 lookbacks", span(16), ""},
		{"17 lookbacks", span(17), "17 lookbacks: want at most 16"},
		{"17 with a duplicate", append(span(16), 3), ""},
		{"0 days", []int{0}, ""},
		{"366 days", []int{366}, ""},
		{"367 days", []int{1, 367}, "lookback 367: want 0..366 days"},
		{"-1 days", []int{-1, 7}, "lookback -1: want 0..366 days"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(Options{Params: params(7), Lookbacks: tc.lookbacks, From: day0, To: day0.Add(time.Hour)})
			if got := errString(err); got != tc.want {
				t.Fatalf("error %q, want %q", got, tc.want)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// The naive lane is the first free lane of the config, the paid lane the
// first paid one; jobs arrive before the naive lane's probes, else the
// first lane's. A strategy without its lane is left out of the report.
func TestStrategyLanes(t *testing.T) {
	for _, tc := range []struct {
		name               string
		lanes              []policy.LaneSpec
		naive, paid, clock string
		strategies         []string
	}{
		{"two of each", []policy.LaneSpec{{Name: "paid-b", Kind: "paid"}, {Name: "free-b", Kind: "free"}, {Name: "paid-a", Kind: "paid"}, {Name: "free-a", Kind: "free"}},
			"free-b", "paid-b", "free-b", Strategies},
		{"free lanes only", []policy.LaneSpec{{Name: "f1", Kind: "free"}, {Name: "f2", Kind: "free"}}, "f1", "", "f1", []string{StrategyNaive, StrategyLanewatch}},
		{"paid lanes only", []policy.LaneSpec{{Name: "p2", Kind: "paid"}, {Name: "p1", Kind: "paid"}}, "", "p2", "p2", []string{StrategyPaid, StrategyLanewatch}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := params(1)
			p.Lanes = tc.lanes
			b, err := New(Options{Params: p, From: day0, To: day0.Add(time.Hour)})
			if err != nil {
				t.Fatal(err)
			}
			r := b.Report()
			var got []string
			for _, d := range r.Decisions {
				got = append(got, d.Strategy)
			}
			if r.NaiveLane != tc.naive || r.PaidLane != tc.paid || r.ArrivalLane != tc.clock || !reflect.DeepEqual(got, tc.strategies) {
				t.Fatalf("naive %q, paid %q, arrival %q, strategies %v; want %q, %q, %q, %v",
					r.NaiveLane, r.PaidLane, r.ArrivalLane, got, tc.naive, tc.paid, tc.clock, tc.strategies)
			}
			// Nothing replayed: 0 %, no median; nothing scored: no coverage.
			for _, d := range r.Decisions {
				if want := (Decision{Class: "interactive", Strategy: d.Strategy}); !reflect.DeepEqual(d, want) {
					t.Errorf("%+v, want %+v", d, want)
				}
			}
			if c := r.Calibration[0].All; c.Coverage != nil || c.MedianRatio != nil || c.Probes != 0 {
				t.Errorf("calibration %+v (coverage %s), want none", c.Counts, f(c.Coverage))
			}
		})
	}
}

// probe is an ok probe of lane at t: queue seconds, 16 tokens at tokPerS.
func probe(lane, kind string, t time.Time, queue, tokPerS float64) store.Probe {
	return store.Probe{Lane: lane, Kind: kind, Time: t, QueueS: queue, GenS: 16 / tokPerS, Tokens: 16, OK: true, Outcome: "ok", Status: 200}
}

// A job takes the policy in force at its arrival, before any probe that
// follows it, even one added before the probe the job arrives ahead of
// (backtest.go's drain frontier `p.Time.Add(-ArrivalLead)` → `+`). The
// paid lane failed through 09:00 and recovers with a probe at 10:06:30;
// the free lane queues 55 s (55 + 10 > 60: it never fits). The job of
// 10:06 sees the paid lane probe_failed: no lane fits, the ledger says
// stop, no attempt. The jobs of 10:26 and 10:46 see it eligible and meet
// its 11:08 probe: 1 + 5 s.
func TestJobPolicyPredatesLaterProbes(t *testing.T) {
	from := day0.AddDate(0, 0, 2).Add(10 * time.Hour)
	opts := Options{Params: params(1), From: from, To: from.Add(2 * time.Hour)}
	var ps []store.Probe
	for h := opts.ReadFrom(); h.Before(opts.To); h = h.Add(time.Hour) {
		for _, m := range []time.Duration{7, 27, 47} {
			ps = append(ps, probe("free", "free", h.Add(m*time.Minute), 55, 80))
		}
		pd := probe("paid", "paid", h.Add(8*time.Minute), 1, 160)
		if h.Before(from) {
			pd.OK, pd.Outcome, pd.Status, pd.QueueS, pd.GenS, pd.Tokens = false, "http_error", 503, 0, 0, 0
		}
		ps = append(ps, pd)
	}
	ps = append(ps, probe("paid", "paid", from.Add(6*time.Minute+30*time.Second), 1, 160))
	slices.SortFunc(ps, func(a, b store.Probe) int { return a.Time.Compare(b.Time) })
	r := run(t, opts, ps)
	want := Decision{Class: "interactive", Strategy: "lanewatch", Jobs: 3, Met: 2, MetPct: 66.67, MedianTimeS: fp(6), PaidUSD: 0.0032, Attempts: 2}
	if got := decision(t, r, "interactive", "lanewatch"); !reflect.DeepEqual(got, want) {
		t.Errorf("lanewatch\n got %+v (median %s)\nwant %+v", got, f(got.MedianTimeS), want)
	}
}

// A job is replayed only once the probes it may meet are in: those up to
// an hour after its deadline (backtest.go's horizon `DeadlineS*Second` →
// `/`: a two-hour job was replayed an hour after its arrival). The free
// lane's probes at 10:07..11:07 time out after 30 s, 11:27's is fine
// (5 + 10 s). Relative to each job, naive fails in runs of 30 s attempts
// up to each failed probe, then meets the next:
//
//	10:06: 3 + 40 + 40 + 40 failed, ok at 3690 s → 3705 s, 124 attempts
//	10:26: 3 + 40 + 40 failed, ok at 2490 s → 2505 s, 84 attempts
//	10:46: 3 + 40 failed, ok at 1290 s → 1305 s, 44 attempts
//	11:06: 3 failed, ok at 90 s → 105 s, 4 attempts
//
// (11:26's horizon, 14:26, passes the newest probe, 14:08:01.)
func TestJobsWaitForTheProbesTheyMayMeet(t *testing.T) {
	p := params(1)
	p.Classes = []policy.ClassSpec{{Name: "long", DeadlineS: 7200, CeilingTokens: 1 << 30, EstTokens: 800, PaidUSDPer1k: 0.002}}
	from := day0.AddDate(0, 0, 2).Add(10 * time.Hour)
	opts := Options{Params: p, From: from, To: from.Add(5 * time.Hour)}
	var ps []store.Probe
	for h := opts.ReadFrom(); h.Before(opts.To); h = h.Add(time.Hour) {
		if h.Before(from) {
			for _, m := range []time.Duration{7, 27, 47} {
				ps = append(ps, probe("free", "free", h.Add(m*time.Minute), 5, 80))
			}
		}
		ps = append(ps, probe("paid", "paid", h.Add(8*time.Minute+time.Second), 1, 160))
	}
	for i, m := range []time.Duration{7, 27, 47, 67, 87} {
		pr := probe("free", "free", from.Add(m*time.Minute), 5, 80)
		if i < 4 {
			pr.OK, pr.Outcome, pr.Status, pr.QueueS, pr.GenS, pr.Tokens = false, "timeout", 0, 30, 0, 0
		}
		ps = append(ps, pr)
	}
	slices.SortFunc(ps, func(a, b store.Probe) int { return a.Time.Compare(b.Time) })
	r := run(t, opts, ps)
	want := Decision{Class: "long", Strategy: "naive", Jobs: 4, Met: 4, MetPct: 100, MedianTimeS: fp(1305), Attempts: 124 + 84 + 44 + 4}
	if got := decision(t, r, "long", "naive"); !reflect.DeepEqual(got, want) {
		t.Errorf("naive\n got %+v (median %s)\nwant %+v", got, f(got.MedianTimeS), want)
	}
	if r.DroppedReplays != 3 {
		t.Errorf("dropped %d replays, want 3 (the job of 11:26)", r.DroppedReplays)
	}
}

// Probes of lanes not in the config, and from To on, are counted as read
// and as ignored.
func TestIgnoredProbes(t *testing.T) {
	opts := Options{Params: params(1), From: day0, To: day0.Add(time.Hour)}
	ps := []store.Probe{
		probe("free", "free", day0.Add(time.Minute), 5, 80),
		probe("other", "free", day0.Add(2*time.Minute), 5, 80),
		probe("paid", "paid", day0.Add(3*time.Minute), 1, 160),
		probe("free", "free", opts.To, 5, 80),
		probe("other", "free", opts.To.Add(time.Minute), 5, 80),
	}
	r := run(t, opts, ps)
	if r.ProbesRead != 5 || r.Ignored != 3 {
		t.Errorf("read %d, ignored %d; want 5 and 3", r.ProbesRead, r.Ignored)
	}
}

// A job waits for its probes up to its deadline, however long (up to
// maxHorizon, 400 days): a 20-hour job meets the paid lane's recovery 17
// hours on (backtest.go's maxHorizon `400 * 24 * time.Hour` → `400 / 24 *`
// cut it at 16 hours). The free lane's one probe in the window (10:07)
// brings the job at 10:06; the paid lane fails fast at 10:08, 10:28, ...
// up to 03:08 the next day (61320 s after the job) and is fine from 03:28
// (1 + 800/160 s). The paid strategy fails once a second from 0 to 61320 s
// and ships at 61321 + 6 = 61327 s.
func TestLongDeadlineWaitsForTheLanesRecovery(t *testing.T) {
	p := params(1)
	p.Classes = []policy.ClassSpec{{Name: "day", DeadlineS: 72000, CeilingTokens: 1 << 30, EstTokens: 800, PaidUSDPer1k: 0.002}}
	from := day0.AddDate(0, 0, 2).Add(10 * time.Hour)
	recovery := from.Add(17*time.Hour + 28*time.Minute)
	opts := Options{Params: p, From: from, To: from.Add(23 * time.Hour)}
	ps := rounds(opts.ReadFrom(), from, func(time.Time) (float64, bool) { return 5, true })
	ps = append(ps, probe("free", "free", from.Add(7*time.Minute), 5, 80))
	for at := from.Add(8 * time.Minute); at.Before(opts.To); at = at.Add(20 * time.Minute) {
		pr := probe("paid", "paid", at, 1, 160)
		if at.Before(recovery) {
			pr.OK, pr.Outcome, pr.Status, pr.QueueS, pr.GenS, pr.Tokens = false, "http_error", 503, 0, 0, 0
		}
		ps = append(ps, pr)
	}
	r := run(t, opts, ps)
	want := Decision{Class: "day", Strategy: "paid", Jobs: 1, Met: 1, MetPct: 100, MedianTimeS: fp(61327), PaidUSD: 0.0016, Attempts: 61322}
	if got := decision(t, r, "day", "paid"); !reflect.DeepEqual(got, want) {
		t.Errorf("paid\n got %+v (median %s)\nwant %+v", got, f(got.MedianTimeS), want)
	}
}

// ReadFrom reaches back twice the lookback when any rule scored is the
// calibrated one, and a day before the tuning window when the tuned
// baselines are asked for (TuneDays with Fallbacks; TuneDays alone asks
// for nothing).
func TestReadFromForTheCalibratorsAndTheTuning(t *testing.T) {
	from := time.Date(2026, 11, 9, 10, 30, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		opts Options
		want time.Time
	}{
		{"a calibrated rule among the rules: 14 days", Options{Params: params(7), Rules: []string{policy.RuleMax, policy.RuleCalibrated}},
			time.Date(2026, 10, 26, 8, 0, 0, 0, time.UTC)},
		{"10 tuning days: 11 days", Options{Params: params(7), TuneDays: 10, Fallbacks: []float64{30}},
			time.Date(2026, 10, 29, 8, 0, 0, 0, time.UTC)},
		{"10 tuning days without fallbacks: 7 days", Options{Params: params(7), TuneDays: 10},
			time.Date(2026, 11, 2, 8, 0, 0, 0, time.UTC)},
		{"fallbacks without tuning days: 0 days", Options{Params: params(0), Fallbacks: []float64{30}},
			time.Date(2026, 11, 9, 8, 0, 0, 0, time.UTC)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.From, tc.opts.To = from, from.Add(time.Hour)
			if got := tc.opts.ReadFrom(); !got.Equal(tc.want) {
				t.Errorf("ReadFrom %s, want %s", got.UTC(), tc.want)
			}
		})
	}
}

// New takes up to MaxCoverages distinct coverages, a warm-up of
// 0..MaxLookbackDays days, and for the calibrated rule a lookback of at
// least a day.
func TestNewOptionBounds(t *testing.T) {
	covs := func(n int) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = 0.5 + float64(i)/100
		}
		return out
	}
	for _, tc := range []struct {
		name string
		edit func(o *Options)
		want string // "" for no error
	}{
		{"16 coverages", func(o *Options) { o.Coverages = covs(16) }, ""},
		{"17 coverages", func(o *Options) { o.Coverages = covs(17) }, "17 coverages: want at most 16"},
		{"warm-up 0", func(o *Options) { o.WarmupDays = 0 }, ""},
		{"warm-up 366", func(o *Options) { o.WarmupDays = 366 }, ""},
		{"warm-up 367", func(o *Options) { o.WarmupDays = 367 }, "warm-up 367: want 0..366 days"},
		{"warm-up -1", func(o *Options) { o.WarmupDays = -1 }, "warm-up -1: want 0..366 days"},
		{"calibrated, 1 day", func(o *Options) { o.Rules, o.Lookbacks = []string{policy.RuleCalibrated}, []int{1} }, ""},
		{"calibrated, 0 days", func(o *Options) { o.Rules, o.Lookbacks = []string{policy.RuleCalibrated}, []int{0, 1} },
			"lookback 0: the calibrated rule learns from at least 1 day"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{Params: params(7), From: day0, To: day0.Add(time.Hour)}
			tc.edit(&opts)
			_, err := New(opts)
			if got := errString(err); got != tc.want {
				t.Fatalf("error %q, want %q", got, tc.want)
			}
		})
	}
}

// The report has the extended shape (a rule per calibration, the
// decisions' rule) when a coverage, a warm-up, a truth or the calibrated
// rule is asked for, each alone; and the decisions follow the one rule
// asked for.
func TestExtendedShape(t *testing.T) {
	truth := func(*store.Probe) (float64, float64, bool) { return 1, 0.1, true }
	for _, tc := range []struct {
		name string
		edit func(o *Options)
		rule string // the report's decision_rule; "" for the old shape
	}{
		{"nothing asked", func(*Options) {}, ""},
		{"a coverage", func(o *Options) { o.Coverages = []float64{0.9} }, policy.RuleMax},
		{"a warm-up", func(o *Options) { o.WarmupDays = 1 }, policy.RuleMax},
		{"a truth", func(o *Options) { o.Truth = truth }, policy.RuleMax},
		{"the calibrated rule alone", func(o *Options) { o.Rules = []string{policy.RuleCalibrated} }, policy.RuleCalibrated},
		{"both rules: the config's decides", func(o *Options) { o.Rules = []string{policy.RuleCalibrated, policy.RuleMax} }, policy.RuleMax},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{Params: params(7), From: day0, To: day0.Add(time.Hour)}
			tc.edit(&opts)
			b, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			r := b.Report()
			if r.DecisionRule != tc.rule {
				t.Errorf("decision_rule %q, want %q", r.DecisionRule, tc.rule)
			}
			if ext := tc.rule != ""; (r.Calibration[0].Rule != "") != ext {
				t.Errorf("calibration rule %q; extended shape %v", r.Calibration[0].Rule, ext)
			}
		})
	}
}

// The decisions take the config's coverage among the coverages scored.
func TestDecisionsUseTheConfigsCoverage(t *testing.T) {
	p := params(7)
	p.Rule, p.Coverage = policy.RuleCalibrated, 0.9
	b, err := New(Options{Params: p, Coverages: []float64{0.8, 0.9}, From: day0, To: day0.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if r := b.Report(); r.DecisionRule != policy.RuleCalibrated || f(r.DecisionCoverage) != "0.9" {
		t.Errorf("decision_rule %q, decision_coverage %s; want calibrated, 0.9", r.DecisionRule, f(r.DecisionCoverage))
	}
}

// The history keeps, for a run that scores the calibrated rule (twice its
// lookback) and the max rule, every day the max rule's lookback reads: the
// free lane's 50 s at 10:00 seven days before From sets the max rule's
// figure then (a ratio of 10 over its 5 s), through the daily prunes.
func TestHistoryKeepsTheLookbackOfEveryRule(t *testing.T) {
	spike := day0.AddDate(0, 0, 1).Add(10 * time.Hour)
	free := func(at time.Time) (float64, bool) {
		if !at.Before(spike) && at.Before(spike.Add(time.Hour)) {
			return 50, true
		}
		return 5, true
	}
	from := day0.AddDate(0, 0, 8).Add(10 * time.Hour)
	opts := Options{Params: params(7), Rules: []string{policy.RuleCalibrated, policy.RuleMax}, From: from, To: from.Add(time.Hour)}
	r := run(t, opts, rounds(opts.ReadFrom(), opts.To, free))
	i := slices.IndexFunc(r.Calibration, func(c Calibration) bool { return c.Rule == policy.RuleMax })
	if i < 0 {
		t.Fatal("no calibration of the max rule")
	}
	if c := r.Calibration[i].Lanes[0]; c.Lane != "free" || c.Probes != 3 || f(c.MedianRatio) != "10" {
		t.Errorf("max rule, lane %s: %d probes, median ratio %s; want 3 at 10", c.Lane, c.Probes, f(c.MedianRatio))
	}
}
