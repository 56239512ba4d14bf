package backtest

// Tests written against the rules that mutation testing (issue 22) found
// unguarded: each fails when its rule is broken in the way its comment
// names. Expected values are worked out by hand from the probes given:
// the free lane of rounds queues 5 s and decodes 80 tok/s (16 tokens in
// 0.2 s), the paid lane queues 1 s and decodes 160 tok/s.

import (
	"context"
	"encoding/csv"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/store"
)

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

// A failed attempt burns the failed probe's tokens, but never more than
// the job's est_tokens (issue 22 #15: `min(w.tokens, est)` → `w.tokens`).
// Every free probe fails after 6 s with 16 tokens; the class estimates 10.
// Naive makes 10 attempts of 6 s in its 60 s (all meet the same 10:07
// probe) and burns 10 × 10 tokens a job; the policy marks the free lane
// probe_failed, so lanewatch takes the paid lane: 1 + 10/160 = 1.0625 s,
// 10 tokens at 1 USD per 1000.
func TestBurnedTokensAreCappedAtTheEstimate(t *testing.T) {
	p := params(1)
	p.Classes = []policy.ClassSpec{{Name: "tiny", DeadlineS: 60, CeilingTokens: 4000, EstTokens: 10, PaidUSDPer1k: 1}}
	from := day0.AddDate(0, 0, 2).Add(10 * time.Hour)
	opts := Options{Params: p, From: from, To: from.Add(2 * time.Hour)}
	var ps []store.Probe
	for _, pr := range rounds(opts.ReadFrom(), opts.To, func(time.Time) (float64, bool) { return 6, true }) {
		if pr.Lane == "free" {
			pr.OK, pr.Outcome, pr.GenS, pr.Tokens = false, "stream_error", 0, 16
		}
		ps = append(ps, pr)
	}
	r := run(t, opts, ps)
	want := []Decision{
		{Class: "tiny", Strategy: "naive", Jobs: 3, Met: 0, MetPct: 0, BurnedFreeTokens: 3 * 10 * 10, Attempts: 3 * 10},
		// 1.0625 is exact in binary: half-even to 1.06.
		{Class: "tiny", Strategy: "paid", Jobs: 3, Met: 3, MetPct: 100, MedianTimeS: fp(1.06), PaidUSD: 0.03, Attempts: 3},
		{Class: "tiny", Strategy: "lanewatch", Jobs: 3, Met: 3, MetPct: 100, MedianTimeS: fp(1.06), PaidUSD: 0.03, Attempts: 3},
	}
	if !reflect.DeepEqual(r.Decisions, want) {
		t.Errorf("decisions\n got %+v\nwant %+v", r.Decisions, want)
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

// Run reads the warm-up before From: with lookback 0, the first probe of
// the window (10:07) is scored against the policy built from 09:00's
// probes, not as never sampled.
func TestRunReadsTheBasisBeforeFrom(t *testing.T) {
	from := day0.AddDate(0, 0, 2).Add(10 * time.Hour)
	opts := Options{Params: params(0), From: from, To: from.Add(time.Hour)}
	st := &listStore{probes: rounds(day0, opts.To, func(time.Time) (float64, bool) { return 5, true })}
	r, err := Run(context.Background(), st, opts)
	if err != nil {
		t.Fatal(err)
	}
	c := laneCal(t, r, 0, "free")
	if c.Probes != 3 || c.NoPolicy != 0 || c.OK != 3 || c.Covered != 3 || c.FalseIneligible != 0 {
		t.Errorf("free: %+v; want 3 probes, all with an eligible policy covering them", c.Counts)
	}
	// From 08:00 on: the rounds of 08:00 and 09:00 (free and paid) fed the
	// history, those of 10:00 were scored.
	if r.ProbesRead != 18 || !r.ReadFrom.Equal(from.Add(-2*time.Hour)) {
		t.Errorf("read %d probes from %s, want 18 from %s", r.ProbesRead, r.ReadFrom, from.Add(-2*time.Hour))
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

// Pruning keeps what the widest basis reads: a lane probed every three
// days (basis 72 hours) keeps its last record through the daily prunes,
// so its probe three days on is scored against an eligible policy, not
// as no_recent_sample.
func TestPruneKeepsAWideBasis(t *testing.T) {
	p := params(0)
	p.Lanes[0].BasisHours = 72
	first := day0.Add(10*time.Hour + 7*time.Minute)
	scored := day0.AddDate(0, 0, 3).Add(9*time.Hour + 7*time.Minute) // 71 hours after first's hour
	opts := Options{Params: p, From: day0.AddDate(0, 0, 2), To: day0.AddDate(0, 0, 3).Add(10 * time.Hour)}
	var ps []store.Probe
	for at := opts.ReadFrom().Add(8 * time.Minute); at.Before(opts.To); at = at.Add(time.Hour) {
		ps = append(ps, store.Probe{Lane: "paid", Kind: "paid", Time: at, QueueS: 1, GenS: 0.1, Tokens: 16, OK: true, Outcome: "ok", Status: 200})
	}
	for _, at := range []time.Time{first, scored} {
		ps = append(ps, store.Probe{Lane: "free", Kind: "free", Time: at, QueueS: 5, GenS: 0.2, Tokens: 16, OK: true, Outcome: "ok", Status: 200})
	}
	slices.SortFunc(ps, func(a, b store.Probe) int { return a.Time.Compare(b.Time) })
	b, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range ps {
		if err := b.Add(pr); err != nil {
			t.Fatal(err)
		}
	}
	r := b.Report()
	if b.epoch < 3 {
		t.Fatalf("%d prunes, want one a day", b.epoch)
	}
	if c := laneCal(t, r, 0, "free"); c.Probes != 1 || c.OK != 1 || c.Covered != 1 || c.FalseIneligible != 0 || c.NoPolicy != 0 {
		t.Errorf("free: %+v; want its one scored probe covered by an eligible policy", c.Counts)
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

// A lane's figures are taken anew in a new hour even when the lane has had
// no probe since (backtest.go's cache check `f.hour != h` → `==`, and its
// first `||` → `&&`, reused 10:00's figures at 11:06). The paid lane is
// probed at :30 (1 s, 160 tok/s); on day 1 at 11:30 it queued 58 s, so
// with a one-day lookback its 11:00 figure is 58 (58 + 5 > 60); the free
// lane queues 55 s and never fits. Jobs 10:06, 10:26 and 10:46 take the
// paid lane and meet its 10:30 and 11:30 probes (6 s); those of 11:06,
// 11:26 and 11:46 get a stop: no lane fits.
func TestFiguresOfANewHourAreTakenAnew(t *testing.T) {
	from := day0.AddDate(0, 0, 2).Add(10 * time.Hour)
	opts := Options{Params: params(1), From: from, To: from.Add(3 * time.Hour)}
	var ps []store.Probe
	for h := opts.ReadFrom(); h.Before(opts.To); h = h.Add(time.Hour) {
		for _, m := range []time.Duration{7, 27, 47} {
			ps = append(ps, probe("free", "free", h.Add(m*time.Minute), 55, 80))
		}
		q := 1.0
		if h.Equal(day0.AddDate(0, 0, 1).Add(11 * time.Hour)) {
			q = 58
		}
		ps = append(ps, probe("paid", "paid", h.Add(30*time.Minute), q, 160))
	}
	slices.SortFunc(ps, func(a, b store.Probe) int { return a.Time.Compare(b.Time) })
	r := run(t, opts, ps)
	want := Decision{Class: "interactive", Strategy: "lanewatch", Jobs: 6, Met: 3, MetPct: 50, MedianTimeS: fp(6), PaidUSD: 0.0048, Attempts: 3}
	if got := decision(t, r, "interactive", "lanewatch"); !reflect.DeepEqual(got, want) {
		t.Errorf("lanewatch\n got %+v (median %s)\nwant %+v", got, f(got.MedianTimeS), want)
	}
}

// The timeline keeps a probe's figures only when they are finite and
// positive: a negative or infinite queue_s or gen_s (a corrupt store
// line) counts as 0, negative tokens as none, and a rate needs an ok probe
// with tokens and a generation time (replay.go's `&&` → `||` in add).
// An attempt at the instant a back-off ends meets the next probe.
func TestTimelineFigures(t *testing.T) {
	base := day0.Add(10 * time.Hour)
	at := func(m int) int64 { return base.Add(time.Duration(m) * time.Minute).UnixNano() }
	for _, tc := range []struct {
		name string
		p    store.Probe
		want world
	}{
		{"ok", store.Probe{OK: true, QueueS: 4, GenS: 0.5, Tokens: 20}, world{ok: true, queue: 4, gen: 0.5, rate: 40, tokens: 20}},
		{"negative queue", store.Probe{OK: true, QueueS: -3, GenS: 0.5, Tokens: 20}, world{ok: true, gen: 0.5, rate: 40, tokens: 20}},
		{"infinite queue", store.Probe{OK: true, QueueS: math.Inf(1), GenS: 0.5, Tokens: 20}, world{ok: true, gen: 0.5, rate: 40, tokens: 20}},
		{"NaN queue", store.Probe{OK: true, QueueS: math.NaN(), GenS: 0.5, Tokens: 20}, world{ok: true, gen: 0.5, rate: 40, tokens: 20}},
		{"negative gen", store.Probe{QueueS: 30, GenS: -10, Tokens: 3}, world{queue: 30, tokens: 3}},
		{"infinite gen", store.Probe{QueueS: 30, GenS: math.Inf(1), Tokens: 3}, world{queue: 30, tokens: 3}},
		{"negative tokens", store.Probe{OK: true, QueueS: 1, GenS: 0.5, Tokens: -5}, world{ok: true, queue: 1, gen: 0.5}},
		{"failed with tokens: no rate", store.Probe{QueueS: 2, GenS: 0.5, Tokens: 8}, world{queue: 2, gen: 0.5, tokens: 8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tl timeline
			tc.p.Lane, tc.p.Time = "free", base.Add(7*time.Minute)
			if !tc.p.OK {
				tc.p.Outcome = "stream_error"
			}
			tl.add(tc.p, time.UTC)
			tc.want.until = at(7) + 1
			if got := tl.meet(at(0)); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	var tl timeline
	tl.add(store.Probe{Lane: "free", Time: base.Add(27 * time.Minute), Outcome: "rate_limited", Status: 429, QuotaResetS: 600}, time.UTC)
	tl.add(store.Probe{Lane: "free", Time: base.Add(47 * time.Minute), OK: true, Outcome: "ok", QueueS: 2, GenS: 0.2, Tokens: 20}, time.UTC)
	ok := world{ok: true, queue: 2, gen: 0.2, rate: 100, tokens: 20, until: at(47) + 1}
	if got := tl.meet(at(37)); got != ok {
		t.Errorf("at the end of the back-off: %+v, want %+v", got, ok)
	}
	if got, want := tl.meet(at(37)-1), (world{until: at(37)}); got != want {
		t.Errorf("a nanosecond before: %+v, want %+v", got, want)
	}
	// A probe exactly Lookahead after the attempt is out of its reach: it
	// fails fast until a nanosecond later, when the probe is within it.
	var far timeline
	far.add(store.Probe{Lane: "free", Time: base.Add(3 * time.Hour), OK: true, Outcome: "ok", QueueS: 9, GenS: 1, Tokens: 20}, time.UTC)
	if got, want := far.meet(at(120)), (world{until: at(120) + 1}); got != want {
		t.Errorf("an hour before a probe: %+v, want %+v", got, want)
	}
	if got, want := far.meet(at(120)+1), (world{ok: true, queue: 9, gen: 1, rate: 20, tokens: 20, until: at(180) + 1}); got != want {
		t.Errorf("just under an hour before a probe: %+v, want %+v", got, want)
	}
	// Inside a back-off, what an attempt meets changes just after the next
	// probe, or when the back-off ends, whichever comes first.
	for _, tc := range []struct {
		name string
		next int // minute of the probe after the 429 of 10:27 (back-off to 10:37)
		t    int64
		want int64
	}{
		{"a probe inside the back-off", 30, at(28), at(30) + 1},
		{"a probe as the back-off ends", 37, at(30), at(37)},
		{"a probe after the back-off", 40, at(30), at(37)},
	} {
		var tl timeline
		tl.add(store.Probe{Lane: "free", Time: base.Add(27 * time.Minute), Outcome: "rate_limited", Status: 429, QuotaResetS: 600}, time.UTC)
		tl.add(store.Probe{Lane: "free", Time: base.Add(time.Duration(tc.next) * time.Minute), OK: true, Outcome: "ok", QueueS: 2, GenS: 0.2, Tokens: 20}, time.UTC)
		if got := tl.meet(tc.t); got != (world{until: tc.want}) {
			t.Errorf("%s: %+v, want a fast failure until %d", tc.name, got, tc.want)
		}
	}
}

// An attempt that ends exactly at the deadline ships (replay.go's
// `end <= deadline` → `<`). The free lane queues 50 s and decodes 80 tok/s
// exactly (20 tokens in 0.25 s): 50 + 800/80 = 60 s, the deadline.
func TestAttemptEndingAtTheDeadlineShips(t *testing.T) {
	from := day0.AddDate(0, 0, 2).Add(10 * time.Hour)
	opts := Options{Params: params(1), From: from, To: from.Add(2 * time.Hour)}
	var ps []store.Probe
	for h := opts.ReadFrom(); h.Before(opts.To); h = h.Add(time.Hour) {
		for _, m := range []time.Duration{7, 27, 47} {
			ps = append(ps,
				store.Probe{Lane: "free", Kind: "free", Time: h.Add(m * time.Minute), QueueS: 50, GenS: 0.25, Tokens: 20, OK: true, Outcome: "ok", Status: 200},
				store.Probe{Lane: "paid", Kind: "paid", Time: h.Add(m*time.Minute + time.Second), QueueS: 1, GenS: 0.125, Tokens: 20, OK: true, Outcome: "ok", Status: 200})
		}
	}
	r := run(t, opts, ps)
	for _, want := range []Decision{
		{Class: "interactive", Strategy: "naive", Jobs: 3, Met: 3, MetPct: 100, MedianTimeS: fp(60), Attempts: 3},
		{Class: "interactive", Strategy: "lanewatch", Jobs: 3, Met: 3, MetPct: 100, MedianTimeS: fp(60), Attempts: 3},
	} {
		if got := decision(t, r, "interactive", want.Strategy); !reflect.DeepEqual(got, want) {
			t.Errorf("%s\n got %+v (median %s)\nwant %+v", want.Strategy, got, f(got.MedianTimeS), want)
		}
	}
}

// Trimming keeps, for a job that has yet to arrive, the probe before its
// arrival whose back-off it may meet (backtest.go's trim from
// `latest.Add(-ArrivalLead)` → `+`, with no job waiting). The paid lane
// answers 11:25 with a 429 (back-off to 11:35) and 11:29:40 and 11:30:20
// with 1 s, 160 tok/s; the replay trims at its 4096th probe (11:30, the
// padding before it is of a lane not configured); the free lane's probe at
// 11:30:10 brings a job at 11:29:10. Its paid strategy fails fast for 31
// attempts (the 429 is the newest probe until 11:29:40), then meets
// 11:30:20: 31 + 1 + 5 = 37 s.
func TestTrimKeepsTheBackoffAFutureJobMeets(t *testing.T) {
	p := params(1)
	p.Lanes = append(p.Lanes, policy.LaneSpec{Name: "spare", Kind: "paid"})
	from := day0.AddDate(0, 0, 2).Add(10 * time.Hour)
	opts := Options{Params: p, From: from, To: from.Add(3 * time.Hour)}
	ps := rounds(opts.ReadFrom(), from, func(time.Time) (float64, bool) { return 5, true })
	at := func(h, m, s int) time.Time {
		return day0.AddDate(0, 0, 2).Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(s)*time.Second)
	}
	ps = append(ps,
		store.Probe{Lane: "paid", Kind: "paid", Time: at(11, 25, 0), Outcome: "rate_limited", Status: 429, QuotaResetS: 600},
		probe("paid", "paid", at(11, 29, 40), 1, 160),
	)
	pad := make([]store.Probe, 4095-len(ps))
	for i := range pad {
		pad[i] = probe("unconfigured", "free", opts.ReadFrom(), 1, 1)
	}
	spare := probe("spare", "paid", at(11, 30, 0), 1, 160)
	spare.OK, spare.Outcome, spare.Status = false, "http_error", 503
	ps = append(append(pad, ps...), spare,
		probe("free", "free", at(11, 30, 10), 5, 80),
		probe("paid", "paid", at(11, 30, 20), 1, 160),
		probe("paid", "paid", at(12, 40, 0), 1, 160),
	)
	r := run(t, opts, ps)
	want := Decision{Class: "interactive", Strategy: "paid", Jobs: 1, Met: 1, MetPct: 100, MedianTimeS: fp(37), PaidUSD: 0.0016, Attempts: 32}
	if got := decision(t, r, "interactive", "paid"); !reflect.DeepEqual(got, want) {
		t.Errorf("paid\n got %+v (median %s)\nwant %+v", got, f(got.MedianTimeS), want)
	}
	if r.ProbesRead != 4099 || r.Ignored != len(pad) {
		t.Errorf("read %d, ignored %d; want 4099 and %d", r.ProbesRead, r.Ignored, len(pad))
	}
}

// A ratio needs a positive, finite queue_s: an ok probe that queued 0 s
// (or a corrupt negative or infinite figure) is covered, but adds no
// ratio (report.go's `Finite(q) && q > 0` → `||`, `> 0` → `>= 0`).
func TestRatioNeedsAPositiveQueue(t *testing.T) {
	l := policy.Lane{Name: "free", Kind: "free", Eligible: true, Reason: policy.ReasonOK, NextQueueS: 2}
	var c cell
	for _, q := range []float64{0, -1, math.Inf(1), math.NaN(), 4} {
		c.add(&l, &store.Probe{Lane: "free", OK: true, Outcome: "ok", QueueS: q})
	}
	var buf []float32
	n := c.counts(&buf)
	// 0 and -1 are within 2 s; +Inf, NaN and 4 are not. Only 4 gives a
	// ratio: 2/4.
	if n.OK != 5 || n.Covered != 2 || f(n.MedianRatio) != "0.5" || f(n.P90Ratio) != "0.5" || f(n.Coverage) != "0.4" {
		t.Errorf("%+v, median %s, p90 %s, coverage %s; want 5 ok, 2 covered, ratios 0.5, coverage 0.4",
			n, f(n.MedianRatio), f(n.P90Ratio), f(n.Coverage))
	}
}

// A lookback whose coverage is exactly TargetCoverage reaches it, and then
// its lower median ratio beats a better-covered lookback's (report.go's
// `>= TargetCoverage` → `>`).
func TestBestLookbackAtTheTarget(t *testing.T) {
	cal := func(days int, cov, ratio float64) Calibration {
		return Calibration{LookbackDays: days, All: AllCalibration{Counts: Counts{Coverage: &cov, MedianRatio: &ratio}}}
	}
	if got := bestLookback([]Calibration{cal(1, 0.95, 2), cal(7, 0.97, 3)}); got != 0 {
		t.Errorf("best %d, want 0 (0.95 reaches the target at the lower ratio)", got)
	}
	if got := bestLookback([]Calibration{cal(1, 0.9499, 2), cal(7, 0.97, 3)}); got != 1 {
		t.Errorf("best %d, want 1 (0.9499 does not reach the target)", got)
	}
}

// A streaming store hands over every probe, in order, in batches, however
// many batches it takes (run.go's `if addErr != nil { cancel() }` →
// `== nil` stopped the scan after the first batch).
func TestScanFeedHandsOverEveryBatch(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := &listStore{}
	for i := range 50_000 {
		st.probes = append(st.probes, store.Probe{Lane: "free", Time: start.Add(time.Duration(i) * time.Second)})
	}
	n := 0
	err := feed(context.Background(), st, start, start.Add(24*time.Hour), func(p store.Probe) error {
		if !p.Time.Equal(start.Add(time.Duration(n) * time.Second)) {
			return fmt.Errorf("probe %d at %s", n, p.Time)
		}
		n++
		return nil
	})
	if err != nil || n != 50_000 {
		t.Errorf("%v after %d probes, want all 50000", err, n)
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

// mtOutputReport is a small report built by hand for the writers.
func mtOutputReport() Report {
	cov, med, p90 := 1.0, 1.25, 2.0
	n := Counts{Probes: 4, OK: 3, Covered: 3, Coverage: &cov, MedianRatio: &med, P90Ratio: &p90, FalseEligible: 1, CensoredUncovered: 1}
	hours := []HourCounts{{Hour: 10, Counts: n}, {Hour: 11}}
	blind := Counts{Probes: 4}
	return Report{
		Timezone: "UTC", From: time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC), To: time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC),
		ReadFrom: time.Date(2026, 11, 2, 8, 0, 0, 0, time.UTC), Ignored: 3,
		Calibration: []Calibration{
			{LookbackDays: 1, Best: true, Lanes: []LaneCalibration{
				{Lane: "a-very-long-lane-name", Counts: n, Hours: hours},
				{Lane: "sixteen-chars-ab", Counts: n},
			}, All: AllCalibration{Counts: n, Hours: hours}},
			{LookbackDays: 7, Lanes: []LaneCalibration{{Lane: "a-very-long-lane-name", Counts: blind}}, All: AllCalibration{Counts: blind}},
		},
		NaiveLane: "free", ArrivalLane: "free", ArrivalLeadS: 60, DecisionLookback: 1, DroppedReplays: 2,
		Decisions: []Decision{{Class: "interactive", Strategy: "naive", Jobs: 3, Met: 2, MetPct: 66.67, MedianTimeS: fp(15), BurnedFreeTokens: 400, Attempts: 5}},
	}
}

// hasFields reports whether some line of out has exactly these
// whitespace-separated fields.
func hasFields(out string, fields ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		if slices.Equal(strings.Fields(line), fields) {
			return true
		}
	}
	return false
}

// WriteTable's lines, checked field by field against the hand-built
// report.
func TestWriteTableLines(t *testing.T) {
	var b strings.Builder
	r := mtOutputReport()
	if err := WriteTable(&b, &r, true); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range [][]string{
		strings.Fields("backtest of 2026-11-03T10:00Z .. 2026-11-03T12:00Z (UTC): 4 probes scored"),
		strings.Fields("warm-up from 2026-11-02T08:00Z: its probes feed the history, unscored"),
		strings.Fields("(3 probes of lanes not in the config left out)"),
		strings.Fields("lookback sweep, all lanes (* the lowest median ratio at coverage >= 0.95, else the best coverage)"),
		{"1", "d", "*", "4", "3", "1.000", "1.25", "2.00", "1", "0", "1"},
		{"7", "d", "4", "0", "-", "-", "-", "0", "0", "0"},
		strings.Fields("calibration, lookback 1 day (best): does the next attempt wait at most next_queue_s?"),
		strings.Fields("calibration, lookback 7 days: does the next attempt wait at most next_queue_s?"),
		{"a-very-long-lan~", "4", "3", "3", "1.000", "1.25", "2.00", "1", "0", "1", "0"},
		{"sixteen-chars-ab", "4", "3", "3", "1.000", "1.25", "2.00", "1", "0", "1", "0"},
		{"10", "4", "3", "3", "1.000", "1.25", "2.00", "1", "0", "1", "0"},
		{"all", "4", "3", "3", "1.000", "1.25", "2.00", "1", "0", "1", "0"},
		{"a-very-long-lan~", "4", "0", "0", "-", "-", "-", "0", "0", "0", "0"},
		strings.Fields("decisions: a job arrives 1m0s before each probe of free; naive retries free,"),
		strings.Fields("paid retries -; lanewatch follows the policy with lookback 1 day"),
		strings.Fields("(2 replays left out: their deadline + 1 h passes the newest probe)"),
		{"interactive", "naive", "3", "2", "66.7", "15.0", "400", "0.0000", "5"},
	} {
		if !hasFields(out, want...) {
			t.Errorf("no line %q in\n%s", strings.Join(want, " "), out)
		}
	}
	if hasFields(out, "11", "0", "0", "0", "-", "-", "-", "0", "0", "0", "0") || strings.Contains(out, "(no classes configured)") {
		t.Errorf("an hour without probes or the no-classes line in\n%s", out)
	}
	// One lookback, nothing ignored or dropped, no classes, no naive lane.
	r.Calibration, r.Ignored, r.DroppedReplays, r.Decisions, r.NaiveLane, r.DecisionLookback = r.Calibration[:1], 0, 0, nil, "", 7
	b.Reset()
	if err := WriteTable(&b, &r, false); err != nil {
		t.Fatal(err)
	}
	out = b.String()
	for _, want := range [][]string{
		strings.Fields("calibration, lookback 1 day: does the next attempt wait at most next_queue_s?"),
		strings.Fields("decisions: a job arrives 1m0s before each probe of free; naive retries -,"),
		strings.Fields("paid retries -; lanewatch follows the policy with lookback 7 days"),
		{"(no", "classes", "configured)"},
	} {
		if !hasFields(out, want...) {
			t.Errorf("no line %q in\n%s", strings.Join(want, " "), out)
		}
	}
	for _, not := range []string{"sweep", "left out", "(best)", "replays"} {
		if strings.Contains(out, not) {
			t.Errorf("%q in\n%s", not, out)
		}
	}
	if hasFields(out, "10", "4", "3", "3", "1.000", "1.25", "2.00", "1", "0", "1", "0") {
		t.Errorf("hour rows without byHour in\n%s", out)
	}
	// No calibration at all: nothing scored.
	r.Calibration = nil
	b.Reset()
	if err := WriteTable(&b, &r, false); err != nil || !strings.HasPrefix(b.String(), "backtest of 2026-11-03T10:00Z .. 2026-11-03T12:00Z (UTC): 0 probes scored\n") {
		t.Errorf("%v\n%s", err, b.String())
	}
}

// WriteCSV writes a row per lookback, lane and hour ("all" first), with
// the figures in their shortest form and an unknown one empty.
func TestWriteCSVRows(t *testing.T) {
	var b strings.Builder
	r := mtOutputReport()
	if err := WriteCSV(&b, &r, true); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(b.String())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"lookback_days", "lane", "hour", "probes", "ok", "covered", "coverage", "median_ratio", "p90_ratio", "false_eligible", "false_ineligible", "no_policy", "censored_uncovered", "best"},
		{"1", "a-very-long-lane-name", "all", "4", "3", "3", "1", "1.25", "2", "1", "0", "0", "1", "true"},
		{"1", "a-very-long-lane-name", "10", "4", "3", "3", "1", "1.25", "2", "1", "0", "0", "1", "true"},
		{"1", "a-very-long-lane-name", "11", "0", "0", "0", "", "", "", "0", "0", "0", "0", "true"},
		{"1", "sixteen-chars-ab", "all", "4", "3", "3", "1", "1.25", "2", "1", "0", "0", "1", "true"},
		{"1", "all", "all", "4", "3", "3", "1", "1.25", "2", "1", "0", "0", "1", "true"},
		{"1", "all", "10", "4", "3", "3", "1", "1.25", "2", "1", "0", "0", "1", "true"},
		{"1", "all", "11", "0", "0", "0", "", "", "", "0", "0", "0", "0", "true"},
		{"7", "a-very-long-lane-name", "all", "4", "0", "0", "", "", "", "0", "0", "0", "0", "false"},
		{"7", "all", "all", "4", "0", "0", "", "", "", "0", "0", "0", "0", "false"},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("rows\n got %q\nwant %q", rows, want)
	}
}
