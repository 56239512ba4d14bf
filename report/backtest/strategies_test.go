package backtest

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"bufio"

	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/store"
)

func baseline(t *testing.T, r Report, class string, deadline float64, strategy string) Baseline {
	t.Helper()
	for _, b := range r.Baselines {
		if b.Class == class && b.DeadlineS == deadline && b.Strategy == strategy {
			return b
		}
	}
	t.Fatalf("no baseline %s/%v/%s in %+v", class, deadline, strategy, r.Baselines)
	return Baseline{}
}

// A day of a free lane always quieter than T: 5 s queue, 10 s to
// generate 800 tokens, first token long before any timeout. lanewatch
// (cut-over at min(60 − (1 + 5 + 2), 60 − 10, p99 5 + 2) = 7 s) never
// pays and abandons nothing; fallback@20 neither; fallback@2 abandons
// every job's free request and pays for every job.
func TestBaselinesQuietLane(t *testing.T) {
	from := day0.AddDate(0, 0, 2)
	opts := Options{Params: params(1), From: from, To: from.Add(24 * time.Hour), Fallbacks: []float64{2, 20}}
	r := run(t, opts, rounds(opts.ReadFrom(), opts.To, func(time.Time) (float64, bool) { return 5, true }))
	lw := baseline(t, r, "interactive", 60, "lanewatch")
	if lw.Jobs == 0 || lw.Met != lw.Jobs || lw.PaidUSD != 0 || lw.AbandonedFreeRequests != 0 || lw.FreeRequests != int64(lw.Jobs) {
		t.Errorf("lanewatch: %+v", lw)
	}
	if lw.MedianTimeS == nil || *lw.MedianTimeS != 15 || *lw.P90TimeS != 15 {
		t.Errorf("lanewatch times: %v %v, want 15", f(lw.MedianTimeS), f(lw.P90TimeS))
	}
	fb20 := baseline(t, r, "interactive", 60, "fallback@20")
	if fb20.Met != fb20.Jobs || fb20.PaidUSD != 0 || fb20.AbandonedFreeRequests != 0 {
		t.Errorf("fallback@20: %+v", fb20)
	}
	fb2 := baseline(t, r, "interactive", 60, "fallback@2")
	// Abandoned at 2 s, paid: 2 + 1 + 5 = 8 s, 800 × 0.002 / 1000 USD a job.
	if fb2.Met != fb2.Jobs || fb2.AbandonedFreeRequests != int64(fb2.Jobs) || *fb2.MedianTimeS != 8 ||
		fb2.PaidUSD != policy.Round(float64(fb2.Jobs)*0.0016, 4) {
		t.Errorf("fallback@2: %+v (median %v)", fb2, f(fb2.MedianTimeS))
	}
	cr2 := baseline(t, r, "interactive", 60, "cancel-retry@2")
	// Cancelled at 2, 4, ..., each retry behind the one before: never a
	// first token within 2 s; 30 requests, the last still queued at 60 s.
	if cr2.Met != 0 || cr2.FreeRequests != int64(30*cr2.Jobs) || cr2.AbandonedFreeRequests != cr2.FreeRequests {
		t.Errorf("cancel-retry@2: %+v", cr2)
	}
}

// A free lane always slower than the deadline (100 s queue, 60 s
// deadline): lanewatch's forecast gives no chance of a first token by
// the cut-over, so free_first is false: straight to paid, no free request,
// nothing abandoned. fallback@20 abandons one request a job.
func TestBaselinesSlowLane(t *testing.T) {
	from := day0.AddDate(0, 0, 2)
	opts := Options{Params: params(1), From: from, To: from.Add(24 * time.Hour), Fallbacks: []float64{20}}
	r := run(t, opts, rounds(opts.ReadFrom(), opts.To, func(time.Time) (float64, bool) { return 100, true }))
	lw := baseline(t, r, "interactive", 60, "lanewatch")
	if lw.Jobs == 0 || lw.Met != lw.Jobs || lw.FreeRequests != 0 || lw.AbandonedFreeRequests != 0 || *lw.MedianTimeS != 6 {
		t.Errorf("lanewatch: %+v (median %v)", lw, f(lw.MedianTimeS))
	}
	if want := policy.Round(float64(lw.Jobs)*0.0016, 4); lw.PaidUSD != want {
		t.Errorf("lanewatch paid %v, want %v", lw.PaidUSD, want)
	}
	fb := baseline(t, r, "interactive", 60, "fallback@20")
	if fb.Met != fb.Jobs || fb.AbandonedFreeRequests != int64(fb.Jobs) || *fb.MedianTimeS != 26 {
		t.Errorf("fallback@20: %+v (median %v)", fb, f(fb.MedianTimeS))
	}
	naive := baseline(t, r, "interactive", 60, "naive")
	if naive.Met != 0 || naive.AbandonedFreeRequests != int64(naive.Jobs) {
		t.Errorf("naive: %+v", naive)
	}
}

// cancel-retry@20 on a lane whose queue empties just after the job
// starts: the first request meets a 50 s queue and is cancelled at 20 s;
// the retry meets a 1 s queue, but waits behind its own cancelled request,
// whose turn comes at 50 s: no first token by 40 s, cancelled too; the
// third request's first token comes at 50 s as well (10 s after it was
// sent) and it ships at 50 + 10 = 60 s. Without the queue it keeps, the
// retry would have shipped at 20 + 1 + 10 = 31 s.
func TestCancelRetryWaitsBehindItsCancelledRequest(t *testing.T) {
	t0 := day0.UnixNano()
	at := func(s float64) int64 { return t0 + int64(s*1e9) }
	free := &lane{spec: policy.LaneSpec{Name: "free", Kind: policy.KindFree}}
	free.tl.ev = []event{
		{t: at(0), queue: 50, gen: 0.2, rate: 80, tokens: 16, ok: true},
		{t: at(30), queue: 1, gen: 0.2, rate: 80, tokens: 16, ok: true},
		{t: at(45), queue: 1, gen: 0.2, rate: 80, tokens: 16, ok: true},
	}
	b := &Backtest{naive: free}
	r := baseRun{b: b, t0: t0, d: 120, est: 800}
	r.play(baseStrategy{kind: baseCancelRetry, t: 20}, jobCut{})
	if !r.met || r.timeS != 60 || r.freeReq != 3 || r.abandoned != 2 || r.burned != 0 {
		t.Errorf("got met %v at %v, %d requests, %d abandoned, %d burned; want met at 60, 3, 2, 0",
			r.met, r.timeS, r.freeReq, r.abandoned, r.burned)
	}
	// The same lane, nothing cancelled ahead (a fresh job at 20 s):
	// first token at 21 s.
	r = baseRun{b: b, t0: at(20), d: 120, est: 800}
	r.play(baseStrategy{kind: baseCancelRetry, t: 20}, jobCut{})
	if !r.met || r.timeS != 11 || r.abandoned != 0 {
		t.Errorf("fresh job: met %v at %v, %d abandoned; want met at 11, 0", r.met, r.timeS, r.abandoned)
	}
}

// On random worlds the baselines' naive and paid rows are the decision
// replay's naive and paid rows: the same world, the same strategy.
func TestBaselinesNaiveAndPaidEqualTheDecisions(t *testing.T) {
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 23))
		from := day0.AddDate(0, 0, 2)
		opts := Options{Params: params(1), From: from, To: from.Add(36 * time.Hour), Fallbacks: []float64{10}, Deadlines: []float64{30}}
		opts.Params.Classes = append(opts.Params.Classes, policy.ClassSpec{Name: "batch", DeadlineS: 300, CeilingTokens: 20000, EstTokens: 4000, PaidUSDPer1k: 0.001})
		r := run(t, opts, rounds(opts.ReadFrom(), opts.To, func(time.Time) (float64, bool) {
			q := 2 + rng.ExpFloat64()*20
			return q, q < 60
		}))
		for _, c := range opts.Params.Classes {
			for _, s := range []string{StrategyNaive, StrategyPaid} {
				d := decision(t, r, c.Name, s)
				b := baseline(t, r, c.Name, c.DeadlineS, s)
				if b.Jobs != d.Jobs || b.Met != d.Met || b.PaidUSD != d.PaidUSD || b.BurnedFreeTokens != d.BurnedFreeTokens ||
					f(b.MedianTimeS) != f(d.MedianTimeS) {
					t.Errorf("seed %d %s/%s:\nbaseline %+v\ndecision %+v", seed, c.Name, s, b, d)
				}
				if s == StrategyNaive && b.FreeRequests != d.Attempts {
					t.Errorf("seed %d %s/naive: %d free requests, %d attempts", seed, c.Name, b.FreeRequests, d.Attempts)
				}
			}
		}
	}
}

// Without -fallback and -deadlines the report has no baselines: the
// decisions are as before, and the JSON, table and CSV unchanged.
func TestNoBaselinesByDefault(t *testing.T) {
	from := day0.AddDate(0, 0, 2)
	opts := Options{Params: params(1), From: from, To: from.Add(3 * time.Hour)}
	r := run(t, opts, rounds(opts.ReadFrom(), opts.To, func(time.Time) (float64, bool) { return 5, true }))
	if r.Baselines != nil || r.DroppedBaselines != 0 {
		t.Errorf("baselines %+v", r.Baselines)
	}
}

// TuneDays is 0..MaxLookbackDays days.
func TestTuneDaysBounds(t *testing.T) {
	from := day0.AddDate(0, 0, 2)
	for days, want := range map[int]string{366: "", 367: "tune 367: want 0..366 days"} {
		_, err := New(Options{Params: params(1), From: from, To: from.Add(time.Hour), Fallbacks: []float64{5}, TuneDays: days})
		if got := errString(err); got != want {
			t.Errorf("tune %d: error %q, want %q", days, got, want)
		}
	}
}

func TestBaselineOptionsChecked(t *testing.T) {
	from := day0.AddDate(0, 0, 2)
	for _, o := range []Options{
		{Fallbacks: []float64{0}}, {Fallbacks: []float64{-1}}, {Deadlines: []float64{0.5}},
		{Fallbacks: make([]float64, 0, MaxFallbacks+1)}, {Deadlines: []float64{2e9}}, {Fallbacks: []float64{5}, TuneDays: -1},
	} {
		if cap(o.Fallbacks) == MaxFallbacks+1 {
			for i := range MaxFallbacks + 1 {
				o.Fallbacks = append(o.Fallbacks, float64(i+1))
			}
		}
		o.Params, o.From, o.To = params(1), from, from.Add(time.Hour)
		if _, err := New(o); err == nil {
			t.Errorf("%v %v: no error", o.Fallbacks, o.Deadlines)
		}
	}
}

// On random worlds (queues, timeouts, 429 bursts, a failing paid lane),
// every baseline row keeps its invariants: abandoned <= free requests;
// fallback@T sends one free request a job; cancel-retry@T and naive never
// pay; paid sends no free request; met <= jobs, and every strategy sees the
// same jobs per class and deadline.
func TestBaselineInvariants(t *testing.T) {
	for seed := range uint64(6) {
		rng := rand.New(rand.NewPCG(seed, 230))
		from := day0.AddDate(0, 0, 2)
		opts := Options{Params: params(1), From: from, To: from.Add(30 * time.Hour),
			Fallbacks: []float64{1 + rng.Float64()*30, 20}, Deadlines: []float64{10 + rng.Float64()*100}}
		ps := rounds(opts.ReadFrom(), opts.To, func(time.Time) (float64, bool) {
			q := rng.ExpFloat64() * 30
			return q, q < 90
		})
		for i := range ps {
			switch p := &ps[i]; {
			case p.Kind == "free" && rng.IntN(20) == 0:
				p.OK, p.Outcome, p.Status, p.QueueS, p.QuotaResetS = false, "http_error", 429, 0, 600
			case p.Kind == "paid" && rng.IntN(30) == 0:
				p.OK, p.Outcome, p.Status = false, "http_error", 503
			case p.Kind == "paid":
				p.QueueS = 0.5 + rng.ExpFloat64()
			}
		}
		r := run(t, opts, ps)
		jobs := map[[2]string]int{}
		for _, b := range r.Baselines {
			k := [2]string{b.Class, secs(b.DeadlineS)}
			if n, ok := jobs[k]; ok && n != b.Jobs {
				t.Errorf("seed %d %+v: %d jobs, others %d", seed, b, b.Jobs, n)
			}
			jobs[k] = b.Jobs
			if b.Jobs == 0 || b.Met > b.Jobs || b.AbandonedFreeRequests > b.FreeRequests || b.FreeRequests < 0 || b.BurnedFreeTokens < 0 {
				t.Errorf("seed %d: %+v", seed, b)
			}
			switch {
			case b.Strategy == StrategyPaid && (b.FreeRequests != 0 || b.BurnedFreeTokens != 0):
				t.Errorf("seed %d paid sent free requests: %+v", seed, b)
			case (b.Strategy == StrategyNaive || len(b.Strategy) > 12 && b.Strategy[:12] == StrategyCancelRetry) && b.PaidUSD != 0:
				t.Errorf("seed %d %s paid: %+v", seed, b.Strategy, b)
			case len(b.Strategy) > 8 && b.Strategy[:8] == StrategyFallback && b.FreeRequests != int64(b.Jobs):
				t.Errorf("seed %d %s: %d free requests for %d jobs", seed, b.Strategy, b.FreeRequests, b.Jobs)
			}
			if b.Met > 0 && (b.MedianTimeS == nil || *b.MedianTimeS > b.DeadlineS || *b.P90TimeS < *b.MedianTimeS) {
				t.Errorf("seed %d times: %+v", seed, b)
			}
		}
		if len(jobs) != 2 {
			t.Errorf("seed %d: %d class-deadline cells, want 2", seed, len(jobs))
		}
	}
}

// The lanewatch baseline cancels at cutover_after_s exactly when
// policy.Running turns to cut_over: a free lane whose first token comes
// just before the cut-over ships free, just after it is abandoned for paid.
func TestLanewatchBaselineFollowsRunning(t *testing.T) {
	t0 := day0.UnixNano()
	for _, tc := range []struct {
		queue     float64
		abandoned int64
		paid      bool
	}{{19.99, 0, false}, {20, 0, false}, {20.01, 1, true}} {
		free := &lane{spec: policy.LaneSpec{Name: "free", Kind: policy.KindFree}}
		free.tl.ev = []event{{t: t0, queue: tc.queue, gen: 0.2, rate: 80, tokens: 16, ok: true}}
		paid := &lane{spec: policy.LaneSpec{Name: "paid", Kind: policy.KindPaid}}
		paid.tl.ev = []event{{t: t0 + 30e9, queue: 1, gen: 0.1, rate: 160, tokens: 16, ok: true}}
		b := &Backtest{naive: free, paid: paid, lanes: map[string]*lane{"free": free, "paid": paid}}
		bp := policy.BookPolicy{DeadlineS: 60, FreeEligible: true, PaidEligible: true, FreeLane: "free", PaidLane: "paid"}
		cut := policy.Cutover{AfterS: 20, FreeFirst: true}
		want := policy.Running(nil, tc.queue, bp, cut).Action == policy.CutOver
		r := baseRun{b: b, t0: t0, d: 60, est: 800}
		r.play(baseStrategy{kind: baseLanewatch}, jobCut{Cutover: cut, decided: true, book: bp, first: "free"})
		if !r.met || r.abandoned != tc.abandoned || (r.paidTokens > 0) != tc.paid || want != tc.paid {
			t.Errorf("queue %v: met %v, abandoned %d, paid tokens %d; Running cut_over %v", tc.queue, r.met, r.abandoned, r.paidTokens, want)
		}
	}
}

// The tuned baselines pick, among the fallback@T of the grid, the T that
// met the most deadlines, then paid the least, then took the least time,
// then the shortest: on the TuneDays days before the window (tuned, and
// tuned-hourly per hour of day), and again each week on the TuneDays
// days before it (tuned-weekly). Each then replays as the fallback@T it
// picked. Tuning days: a 25 s queue at hours 0-11, 5 s at 12-23; the
// window's first week 35 s, its second 25 s. A free answer takes 10 s to
// generate, the paid lane 6 s in all.
func TestTunedBaselines(t *testing.T) {
	from := day0.AddDate(0, 0, 10)
	opts := Options{Params: params(1), From: from, To: from.AddDate(0, 0, 14), Fallbacks: []float64{2, 10, 30, 40}, TuneDays: 7}
	queue := func(at time.Time) (float64, bool) {
		switch {
		case at.Before(from) && at.Hour() < 12:
			return 25, true
		case at.Before(from):
			return 5, true
		case at.Before(from.AddDate(0, 0, 7)):
			return 35, true
		}
		return 25, true
	}
	r := run(t, opts, rounds(opts.ReadFrom(), opts.To.Add(2*time.Hour), queue))
	tuned := baseline(t, r, "interactive", 60, StrategyTuned)
	weekly := baseline(t, r, "interactive", 60, StrategyTunedWeekly)
	hourly := baseline(t, r, "interactive", 60, StrategyTunedHourly)
	fb30 := baseline(t, r, "interactive", 60, "fallback@30")
	if got := tuned.TunedS; !slices.Equal(got, []float64{30}) {
		t.Errorf("tuned picked %v, want [30] (30 and 40 met every tuning job for nothing; the shorter wins)", got)
	}
	if got := weekly.TunedS; !slices.Equal(got, []float64{30, 40}) {
		t.Errorf("tuned-weekly picked %v, want [30 40] (the first week's 35 s queue makes 40 the best)", got)
	}
	wantHourly := make([]float64, 24)
	for h := range wantHourly {
		wantHourly[h] = 30
		if h >= 12 {
			wantHourly[h] = 10
		}
	}
	if got := hourly.TunedS; !slices.Equal(got, wantHourly) {
		t.Errorf("tuned-hourly picked %v, want %v", got, wantHourly)
	}
	tuned.TunedS, tuned.Strategy = nil, fb30.Strategy
	if !reflect.DeepEqual(tuned, fb30) {
		t.Errorf("tuned replays as fallback@30:\n%+v\n%+v", tuned, fb30)
	}
	// The window's jobs alone, but for the last hour's three, whose
	// deadline and lookahead pass the last probe.
	lw := baseline(t, r, "interactive", 60, "lanewatch")
	if want := 14*72 - 3; lw.Jobs != want || tuned.Jobs != want || weekly.Jobs != want || hourly.Jobs != want {
		t.Errorf("jobs: lanewatch %d, tuned %d, weekly %d, hourly %d; want the window's %d alone", lw.Jobs, tuned.Jobs, weekly.Jobs, hourly.Jobs, want)
	}
	// Paid: tuned every job of the first week (35 s > 30); weekly the
	// same, then none (40 waits out the 25 s queue); hourly the first week
	// all and the second week's afternoons (10 < 25), but the last three.
	const job = 800 * 0.002 / 1000
	for _, tc := range []struct {
		b    Baseline
		jobs int
	}{{tuned, 7 * 72}, {weekly, 7 * 72}, {hourly, 7*72 + 7*36 - 3}} {
		if want := policy.Round(float64(tc.jobs)*job, 4); tc.b.PaidUSD != want || tc.b.Met != tc.b.Jobs {
			t.Errorf("%s: met %d of %d, paid %v; want all met, paid %v", tc.b.Strategy, tc.b.Met, tc.b.Jobs, tc.b.PaidUSD, want)
		}
	}
}

// The tuned baselines tune on their TuneDays days alone, not on the older
// history a longer lookback reads: with a 35 s deadline, on the tuning day
// (a 20 s queue) fallback@10 and @30 both meet every job, @30 for nothing;
// on the 13 days before it (55 s) only @10 meets (@30 cuts over at 30 s
// and the paid lane's 6 s miss). Tuned on its day, tuned picks 30.
func TestTunedBaselinesTuneOnTheirDaysAlone(t *testing.T) {
	p := params(14)
	p.Classes[0].DeadlineS = 35
	from := day0.AddDate(0, 0, 15)
	opts := Options{Params: p, From: from, To: from.Add(6 * time.Hour), Fallbacks: []float64{10, 30}, TuneDays: 1}
	queue := func(at time.Time) (float64, bool) {
		if at.Before(from.AddDate(0, 0, -1)) {
			return 55, true
		}
		return 20, true
	}
	r := run(t, opts, rounds(opts.ReadFrom(), opts.To.Add(2*time.Hour), queue))
	if got := baseline(t, r, "interactive", 35, StrategyTuned).TunedS; !slices.Equal(got, []float64{30}) {
		t.Errorf("tuned picked %v, want [30]", got)
	}
}

// The tuned baselines may pick the grid's first T: on a lane that always
// answers in 5 s every fallback@T meets every job for nothing, and the
// shortest, 10 s, wins; each tuned row replays the window's jobs as
// fallback@10.
func TestTunedBaselinesPickTheFirstT(t *testing.T) {
	from := day0.AddDate(0, 0, 8)
	opts := Options{Params: params(1), From: from, To: from.AddDate(0, 0, 1), Fallbacks: []float64{10, 30}, TuneDays: 7}
	r := run(t, opts, rounds(opts.ReadFrom(), opts.To.Add(2*time.Hour), func(time.Time) (float64, bool) { return 5, true }))
	fb := baseline(t, r, "interactive", 60, "fallback@10")
	for _, s := range []string{StrategyTuned, StrategyTunedWeekly, StrategyTunedHourly} {
		b := baseline(t, r, "interactive", 60, s)
		if b.Jobs != fb.Jobs || b.Met != fb.Met || b.TunedS[0] != 10 {
			t.Errorf("%s: %+v; want fallback@10's %d jobs, its T", s, b, fb.Jobs)
		}
	}
}

// Without tuning jobs (the history starts at the window) the tuned
// baselines have nothing to pick from and are left out; -tune without
// -fallback asks for nothing.
func TestTunedBaselinesNeedHistory(t *testing.T) {
	from := day0.AddDate(0, 0, 2)
	opts := Options{Params: params(1), From: from, To: from.Add(24 * time.Hour), Fallbacks: []float64{10}, TuneDays: 7}
	r := run(t, opts, rounds(from, opts.To, func(time.Time) (float64, bool) { return 5, true }))
	for _, b := range r.Baselines {
		if strings.HasPrefix(b.Strategy, StrategyTuned) {
			t.Errorf("a tuned row without tuning jobs: %+v", b)
		}
	}
	if (Options{TuneDays: 7}).tuned() {
		t.Error("TuneDays without Fallbacks asks for tuned baselines")
	}
}

// Each class's decisions land in its own row (issue 22 #14:
// `ci*len(Strategies)+si` → `ci/len(Strategies)+si` put class 1's jobs in
// class 0's row). Jobs arrive at 10:06, 10:26, ... 11:46; interactive
// (60 s, horizon 1h01m) replays the first three, batch (600 s, horizon
// 1h10m) the first two, as the newest probe is at 11:47:01.
func TestDecisionsPerClass(t *testing.T) {
	p := params(1)
	p.Classes = append(p.Classes, policy.ClassSpec{Name: "batch", DeadlineS: 600, CeilingTokens: 20000, EstTokens: 4000, PaidUSDPer1k: 0.001})
	from := day0.AddDate(0, 0, 2).Add(10 * time.Hour)
	opts := Options{Params: p, From: from, To: from.Add(2 * time.Hour)}
	r := run(t, opts, rounds(opts.ReadFrom(), opts.To, func(time.Time) (float64, bool) { return 5, true }))
	want := []Decision{
		// 800 tokens: free 5 + 10 s, paid 1 + 5 s at 800 × 0.002 / 1000 USD.
		{Class: "interactive", Strategy: "naive", Jobs: 3, Met: 3, MetPct: 100, MedianTimeS: fp(15), Attempts: 3},
		{Class: "interactive", Strategy: "paid", Jobs: 3, Met: 3, MetPct: 100, MedianTimeS: fp(6), PaidUSD: 0.0048, Attempts: 3},
		{Class: "interactive", Strategy: "lanewatch", Jobs: 3, Met: 3, MetPct: 100, MedianTimeS: fp(15), Attempts: 3},
		// 4000 tokens: free 5 + 50 s, paid 1 + 25 s at 4000 × 0.001 / 1000 USD;
		// the policy lists the free lane first (55 <= 600).
		{Class: "batch", Strategy: "naive", Jobs: 2, Met: 2, MetPct: 100, MedianTimeS: fp(55), Attempts: 2},
		{Class: "batch", Strategy: "paid", Jobs: 2, Met: 2, MetPct: 100, MedianTimeS: fp(26), PaidUSD: 0.008, Attempts: 2},
		{Class: "batch", Strategy: "lanewatch", Jobs: 2, Met: 2, MetPct: 100, MedianTimeS: fp(55), Attempts: 2},
	}
	if !reflect.DeepEqual(r.Decisions, want) {
		t.Errorf("decisions\n got %+v\nwant %+v", r.Decisions, want)
		for _, d := range r.Decisions {
			t.Logf("%s/%s median %s", d.Class, d.Strategy, f(d.MedianTimeS))
		}
	}
	// 3 interactive jobs and 4 batch jobs left out, each for 3 strategies.
	if r.DroppedReplays != 3*3+4*3 {
		t.Errorf("dropped %d replays, want 21", r.DroppedReplays)
	}
}

// The sweeps take up to MaxFallbacks timeouts of at least MinFallbackS and
// up to MaxDeadlines deadlines of at least MinAttemptS, each at most
// policy.MaxSeconds, repeats counted once; the class's own deadline given
// again in -deadlines is replayed once.
// (backtest.go sweep: `len(out) > most` → `>=`; strategies.go seconds: `x < least` →
// `<=`, `x > policy.MaxSeconds` → `>=`; newBaselines `d != c.DeadlineS` →
// `==`.)
func TestBaselineSweepBounds(t *testing.T) {
	from := day0.AddDate(0, 0, 2)
	seq := func(n int) []float64 {
		var xs []float64
		for i := range n {
			xs = append(xs, float64(i+1))
		}
		return xs
	}
	for _, tc := range []struct {
		name                 string
		fallbacks, deadlines []float64
		ok                   bool
		deadlinesOfClass     []float64
	}{
		{"16 fallbacks", seq(MaxFallbacks), nil, true, []float64{60}},
		{"17 fallbacks, one repeated", append(seq(MaxFallbacks), 1), nil, true, []float64{60}},
		{"17 fallbacks", seq(MaxFallbacks + 1), nil, false, nil},
		{"the shortest fallback", []float64{MinFallbackS}, nil, true, []float64{60}},
		{"the longest fallback", []float64{policy.MaxSeconds}, nil, true, []float64{60}},
		{"past the longest fallback", []float64{policy.MaxSeconds * 1.0000001}, nil, false, nil},
		{"16 deadlines", nil, seq(MaxDeadlines), true, append([]float64{60}, seq(MaxDeadlines)...)},
		{"17 deadlines", nil, seq(MaxDeadlines + 1), false, nil},
		{"the shortest deadline", nil, []float64{MinAttemptS}, true, []float64{60, MinAttemptS}},
		{"the longest deadline", nil, []float64{policy.MaxSeconds}, true, []float64{60, policy.MaxSeconds}},
		{"the class's own deadline again", nil, []float64{30, 60}, true, []float64{60, 30}},
	} {
		o := Options{Params: params(1), From: from, To: from.Add(1), Fallbacks: tc.fallbacks, Deadlines: tc.deadlines}
		b, err := New(o)
		if (err == nil) != tc.ok {
			t.Errorf("%s: error %v, want ok %v", tc.name, err, tc.ok)
			continue
		}
		if err == nil && !slices.Equal(b.rep.deadlines[0], tc.deadlinesOfClass) {
			t.Errorf("%s: deadlines %v, want %v", tc.name, b.rep.deadlines[0], tc.deadlinesOfClass)
		}
	}
}

// met_pct is 100 × met / jobs rounded to 2 decimals, 0 without a job.
// (strategies.go rows: `a.jobs > 0` → `>= 0`, `<= 0`; `100*float64(a.met)
// /float64(a.jobs)` → `/`, `*`.)
func TestBaselineMetPct(t *testing.T) {
	bs := &replays{baselines: true, strategies: []baseStrategy{{kind: baseNaive, name: StrategyNaive}}, deadlines: [][]float64{{60, 30}},
		acc: [][]baseAcc{{{jobs: 3, met: 2, times: []float32{10, 20}}, {}}}}
	b := &Backtest{naive: &lane{}, opts: Options{Params: params(1)}}
	rows := bs.rows(b)
	if len(rows) != 2 || rows[0].MetPct != 66.67 || rows[1].MetPct != 0 || rows[1].Jobs != 0 {
		t.Errorf("rows %+v; want met_pct 66.67 for 2 of 3, 0 without a job", rows)
	}
}

// fallback@T needs both a free and a paid lane: with only a free lane the
// report has naive and cancel-retry rows, no fallback or paid row.
// (strategies.go configured: `b.naive != nil && b.paid != nil` → `||`.)
func TestFallbackNeedsBothLanes(t *testing.T) {
	from := day0.AddDate(0, 0, 2)
	opts := Options{Params: params(1), From: from, To: from.Add(3 * time.Hour), Fallbacks: []float64{10}}
	opts.Params.Lanes = opts.Params.Lanes[:1]
	var ps []store.Probe
	for _, p := range rounds(opts.ReadFrom(), opts.To, func(time.Time) (float64, bool) { return 100, true }) {
		if p.Lane == "free" {
			ps = append(ps, p)
		}
	}
	var got []string
	for _, b := range run(t, opts, ps).Baselines {
		got = append(got, b.Strategy)
	}
	if want := []string{StrategyNaive, StrategyLanewatch, "cancel-retry@10"}; !slices.Equal(got, want) {
		t.Errorf("strategies %v, want %v", got, want)
	}
}

// The table and the CSV have a baselines section only with baselines; the
// table says how many replays were left out when some were.
// (strategies.go writeBaselinesTable `r.Baselines == nil` → `!=`,
// `r.DroppedBaselines > 0` → `>=`, `<=`; writeBaselinesCSV's `== nil`.)
func TestBaselinesSections(t *testing.T) {
	m := 1.25
	one := []Baseline{{Class: "c", DeadlineS: 60, Strategy: "naive", Jobs: 2, Met: 1, MetPct: 50, MedianTimeS: &m, P90TimeS: &m, FreeRequests: 3}}
	for _, tc := range []struct {
		name         string
		r            Report
		table, noTab []string
		csv          string
	}{
		{"none", Report{}, nil, []string{"baselines"}, ""},
		{"one row", Report{Baselines: one}, []string{"\nbaselines: ", "naive"}, []string{"left out", "tuned:"},
			"\nclass,deadline_s,strategy,jobs,met,met_pct,paid_usd,median_time_s,p90_time_s,free_requests,abandoned_free_requests,burned_free_tokens,tuned_s\nc,60,naive,2,1,50,0,1.25,1.25,3,0,0,\n"},
		{"one row, 2 left out", Report{Baselines: one, DroppedBaselines: 2}, []string{"(2 replays left out"}, nil, ""},
	} {
		var tb strings.Builder
		bw := bufio.NewWriter(&tb)
		writeBaselinesTable(bw, &tc.r)
		_ = bw.Flush()
		for _, w := range tc.table {
			if !strings.Contains(tb.String(), w) {
				t.Errorf("%s: table %q lacks %q", tc.name, tb.String(), w)
			}
		}
		for _, w := range tc.noTab {
			if strings.Contains(tb.String(), w) {
				t.Errorf("%s: table %q has %q", tc.name, tb.String(), w)
			}
		}
		if tc.name == "one row, 2 left out" {
			continue
		}
		var cb strings.Builder
		if err := writeBaselinesCSV(&cb, &tc.r); err != nil || cb.String() != tc.csv {
			t.Errorf("%s: CSV %q, %v; want %q", tc.name, cb.String(), err, tc.csv)
		}
	}
}

// The tuner on its own: bestFallback's order (met, then paid tokens, then
// time, then the first T); the weekly pick made at each week's first job
// from the tuneDays days before that week alone, the days no later window
// holds dropped; the hourly pick falling back to the frozen one at an hour
// without tuning jobs.
func TestTunerPicks(t *testing.T) {
	acc := func(runs ...baseRun) tuneAcc {
		var a tuneAcc
		for i := range runs {
			a.add(&runs[i])
		}
		return a
	}
	met := func(tokens int64, s float64) baseRun { return baseRun{met: true, paidTokens: tokens, timeS: s} }
	missed := baseRun{}
	for _, tc := range []struct {
		name string
		accs []tuneAcc
		want int
	}{
		{"no jobs", []tuneAcc{{}, {}}, -1},
		{"more met wins", []tuneAcc{acc(met(0, 1), missed), acc(met(900, 9), met(900, 9))}, 1},
		{"then fewer paid tokens", []tuneAcc{acc(met(900, 1), met(0, 1)), acc(met(100, 9), met(0, 9))}, 1},
		{"then less time", []tuneAcc{acc(met(0, 5), met(0, 5)), acc(met(0, 4), met(0, 5))}, 1},
		{"then the first T", []tuneAcc{acc(met(0, 5)), acc(met(0, 5))}, 0},
		{"a fallback without jobs is skipped", []tuneAcc{{}, acc(missed)}, 1},
	} {
		if got := bestFallback(tc.accs); got != tc.want {
			t.Errorf("%s: bestFallback = %d, want %d", tc.name, got, tc.want)
		}
	}

	// Two fallbacks, tuneDays 2. Days -2 and -1 (tuning) favour T#1; week
	// 1's window, days 5 and 6, T#0 on the whole (3 to 1); days 4 and 7,
	// just outside it, T#1 by far; week 2's, days 12 and 13, T#1.
	tn := newTuner(2, 2)
	day := func(d int64, good int, n int) {
		accs := make([]tuneAcc, 2)
		for range n {
			accs[good].add(&baseRun{met: true, timeS: 1})
			accs[1-good].add(&baseRun{})
		}
		tn.days[d] = accs
	}
	day(-2, 1, 1)
	day(-1, 1, 1)
	tn.frozen = []tuneAcc{acc(missed), acc(met(0, 1))}
	tn.hourly[3] = []tuneAcc{acc(met(0, 1)), acc(missed)}
	tn.pick(2, 0)
	if tn.fixed != 1 || tn.weekly != 1 || tn.byHour[3] != 0 || tn.byHour[4] != 1 {
		t.Errorf("week 0: fixed %d weekly %d hourly[3] %d hourly[4] %d, want 1 1 0 1 (hour 4 has no tuning job: the frozen pick)",
			tn.fixed, tn.weekly, tn.byHour[3], tn.byHour[4])
	}
	day(4, 1, 9) // after week 0's pick, which drops the days before 5
	day(5, 0, 3)
	day(6, 1, 1)
	day(7, 1, 9)
	tn.pick(2, 6) // the same week: no new pick
	if len(tn.weeks) != 1 {
		t.Errorf("picks %v after two jobs of week 0, want one", tn.weeks)
	}
	day(12, 1, 1)
	day(13, 1, 1)
	tn.pick(2, 7) // week 1 from days 5 and 6
	if tn.weekly != 0 {
		t.Errorf("week 1: weekly %d, want 0 (days 5 and 6)", tn.weekly)
	}
	first := newTuner(2, 2) // a window whose first scored job is in week 1
	first.days[5] = []tuneAcc{acc(missed), acc(met(0, 1))}
	if first.pick(2, 7); first.weekly != 1 {
		t.Errorf("a first pick in week 1: weekly %d, want 1 (day 5)", first.weekly)
	}
	day(18, 0, 1) // already in (a later job's day): 18 is in no later window, 19 in week 3's [19, 21)
	day(19, 0, 1)
	tn.pick(2, 14) // week 2 from days 12 and 13
	if tn.weekly != 1 || !slices.Equal(tn.weeks, []int{1, 0, 1}) {
		t.Errorf("week 2: weekly %d, picks %v, want 1 and [1 0 1]", tn.weekly, tn.weeks)
	}
	if _, kept := tn.days[18]; kept {
		t.Error("day 18 kept after week 2's pick; no later window holds it")
	}
	if _, kept := tn.days[19]; !kept {
		t.Error("day 19 dropped at week 2's pick; week 3's window holds it")
	}
}
