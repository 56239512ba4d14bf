package backtest

import (
	"reflect"
	"testing"
	"time"

	"math"
	"math/rand/v2"
	"slices"

	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/store"
)

func decision(t *testing.T, r Report, class, strategy string) Decision {
	t.Helper()
	for _, d := range r.Decisions {
		if d.Class == class && d.Strategy == strategy {
			return d
		}
	}
	t.Fatalf("no decision for %s/%s in %+v", class, strategy, r.Decisions)
	return Decision{}
}

func fp(x float64) *float64 { return &x }

// The free lane: 5 s queue, 80 tok/s (16 tokens in 0.2 s), so an 800-token
// job takes 5 + 10 s. The paid lane: 1 s queue, 160 tok/s: 1 + 5 s, at
// 800 × 0.002 / 1000 = 0.0016 USD.
func TestReplayHealthyLanes(t *testing.T) {
	opts := Options{Params: params(1), From: day0.AddDate(0, 0, 2).Add(10 * time.Hour), To: day0.AddDate(0, 0, 2).Add(12 * time.Hour)}
	r := run(t, opts, rounds(opts.ReadFrom(), opts.To, func(time.Time) (float64, bool) { return 5, true }))
	// Jobs arrive a minute before 10:07, 10:27, 10:47, 11:07, ...; those
	// whose 60 s deadline plus an hour of lookahead pass the newest probe
	// (11:47:01) are not replayed: 10:06, 10:26 and 10:46 are.
	want := map[string]Decision{
		"naive":     {Class: "interactive", Strategy: "naive", Jobs: 3, Met: 3, MetPct: 100, MedianTimeS: fp(15), Attempts: 3},
		"paid":      {Class: "interactive", Strategy: "paid", Jobs: 3, Met: 3, MetPct: 100, MedianTimeS: fp(6), PaidUSD: 0.0048, Attempts: 3},
		"lanewatch": {Class: "interactive", Strategy: "lanewatch", Jobs: 3, Met: 3, MetPct: 100, MedianTimeS: fp(15), Attempts: 3},
	}
	for s, w := range want {
		if got := decision(t, r, "interactive", s); !reflect.DeepEqual(got, w) {
			t.Errorf("%s:\n got %+v (median %v)\nwant %+v", s, got, f(got.MedianTimeS), w)
		}
	}
	if r.DroppedReplays != 3*3 {
		t.Errorf("dropped %d replays, want 9", r.DroppedReplays)
	}
}

// From 10:00 on day 2 every free probe times out after 30 s. The job of
// 10:06 sees a policy that still has the free lane eligible: naive spends
// the deadline on two 30 s attempts (the second meets the same 10:07
// probe); lanewatch's first one ends in an error, so the ledger cuts over
// (no retry_free after an error, though remaining 30 s >= 5 + 10 fits
// one): paid at 30 s, met at 36 s. From 10:26 the policy says probe_failed
// and lanewatch goes to the paid lane at once.
func TestReplayOutage(t *testing.T) {
	outage := day0.AddDate(0, 0, 2).Add(10 * time.Hour)
	opts := Options{Params: params(1), From: outage, To: outage.Add(2 * time.Hour)}
	r := run(t, opts, rounds(opts.ReadFrom(), opts.To, func(at time.Time) (float64, bool) {
		if at.Before(outage) {
			return 5, true
		}
		return 30, false
	}))
	want := map[string]Decision{
		"naive":     {Class: "interactive", Strategy: "naive", Jobs: 3, Met: 0, MetPct: 0, Attempts: 6},
		"paid":      {Class: "interactive", Strategy: "paid", Jobs: 3, Met: 3, MetPct: 100, MedianTimeS: fp(6), PaidUSD: 0.0048, Attempts: 3},
		"lanewatch": {Class: "interactive", Strategy: "lanewatch", Jobs: 3, Met: 3, MetPct: 100, MedianTimeS: fp(6), PaidUSD: 0.0048, Attempts: 4},
	}
	for s, w := range want {
		if got := decision(t, r, "interactive", s); !reflect.DeepEqual(got, w) {
			t.Errorf("%s:\n got %+v (median %v)\nwant %+v", s, got, f(got.MedianTimeS), w)
		}
	}
	// The calibration sees the same: 10:07 was promised eligible.
	if c := laneCal(t, r, 1, "free"); c.FalseEligible != 1 || c.CensoredUncovered != 1 {
		t.Errorf("free: %+v", c.Counts)
	}
}

// A free lane queueing 55 s cannot finish 800 tokens at 80 tok/s inside
// 60 s: naive is cut at the deadline having emitted (60-55)·80 = 400
// tokens, burned. The policy knows (55 + 10 > 60) and sends lanewatch to
// the paid lane.
func TestReplayCutAtDeadline(t *testing.T) {
	opts := Options{Params: params(1), From: day0.AddDate(0, 0, 2).Add(10 * time.Hour), To: day0.AddDate(0, 0, 2).Add(12 * time.Hour)}
	r := run(t, opts, rounds(opts.ReadFrom(), opts.To, func(time.Time) (float64, bool) { return 55, true }))
	if d := decision(t, r, "interactive", "naive"); d.Met != 0 || d.BurnedFreeTokens != 3*400 || d.Attempts != 3 {
		t.Errorf("naive: %+v", d)
	}
	if d := decision(t, r, "interactive", "lanewatch"); d.Met != 3 || d.BurnedFreeTokens != 0 || d.PaidUSD != 0.0048 {
		t.Errorf("lanewatch: %+v", d)
	}
}

func TestMeet(t *testing.T) {
	base := day0.Add(10 * time.Hour)
	at := func(m, s int) int64 {
		return base.Add(time.Duration(m)*time.Minute + time.Duration(s)*time.Second).UnixNano()
	}
	var tl timeline
	for _, p := range []store.Probe{
		{Time: base.Add(7 * time.Minute), OK: true, Outcome: "ok", QueueS: 4, GenS: 0.5, Tokens: 20},
		{Time: base.Add(27 * time.Minute), Outcome: "rate_limited", Status: 429, QuotaResetS: 600},
		{Time: base.Add(47 * time.Minute), OK: true, Outcome: "ok", QueueS: 2, GenS: 0.2, Tokens: 20},
		{Time: base.Add(3 * time.Hour), OK: true, Outcome: "ok", QueueS: 9, GenS: 1, Tokens: 20},
	} {
		tl.add(p, time.UTC)
	}
	for _, tc := range []struct {
		name string
		t    int64
		want world
	}{
		{"before the first probe", at(0, 0), world{ok: true, queue: 4, gen: 0.5, rate: 40, tokens: 20, until: at(7, 0) + 1}},
		{"at a probe", at(7, 0), world{ok: true, queue: 4, gen: 0.5, rate: 40, tokens: 20, until: at(7, 0) + 1}},
		{"meets the 429", at(20, 0), world{until: at(27, 0) + 1}},
		{"inside its back-off", at(30, 0), world{until: at(37, 0)}},
		{"after the back-off", at(40, 0), world{ok: true, queue: 2, gen: 0.2, rate: 100, tokens: 20, until: at(47, 0) + 1}},
		{"no probe within the hour", at(50, 0), world{until: base.Add(2*time.Hour).UnixNano() + 1}},
		{"a probe just within the hour", at(121, 0), world{ok: true, queue: 9, gen: 1, rate: 20, tokens: 20, until: base.Add(3*time.Hour).UnixNano() + 1}},
		{"after the last probe", at(200, 0), world{until: never}},
	} {
		if got := tl.meet(tc.t); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
	tl.trim(at(30, 0))
	if tl.ev[tl.head].t != at(27, 0) {
		t.Errorf("trim kept from %d, want the 429 at %d", tl.ev[tl.head].t, at(27, 0))
	}
}

// The free lane answers 10:07 with a 429 (reset in 600 s). The job of
// 10:06 has a policy with the free lane eligible, so every attempt fails
// fast (1 s each) until the deadline for naive: 60 attempts. lanewatch's
// first fails in an error, and the ledger cuts over at once (it used to
// retry the free lane 45 more times, while 60 - m >= 5 + 10): the paid lane
// ships at 1 + 6 = 7 s. The jobs of 10:26 and 10:46 see probe_failed and go
// paid: 6 s.
func TestReplayLedgerCutsOverInA429Burst(t *testing.T) {
	from := day0.AddDate(0, 0, 2).Add(10 * time.Hour)
	opts := Options{Params: params(1), From: from, To: from.Add(2 * time.Hour)}
	var ps []store.Probe
	for _, p := range rounds(opts.ReadFrom(), opts.To, func(time.Time) (float64, bool) { return 5, true }) {
		if p.Lane == "free" && p.Time.Equal(from.Add(7*time.Minute)) {
			p.OK, p.Outcome, p.Status, p.QueueS, p.GenS, p.Tokens, p.QuotaResetS = false, "rate_limited", 429, 0, 0, 0, 600
		}
		ps = append(ps, p)
	}
	r := run(t, opts, ps)
	want := map[string]Decision{
		"naive":     {Class: "interactive", Strategy: "naive", Jobs: 3, Met: 2, MetPct: 66.67, MedianTimeS: fp(15), Attempts: 62},
		"lanewatch": {Class: "interactive", Strategy: "lanewatch", Jobs: 3, Met: 3, MetPct: 100, MedianTimeS: fp(6), PaidUSD: 0.0048, Attempts: 4},
	}
	for s, w := range want {
		if got := decision(t, r, "interactive", s); !reflect.DeepEqual(got, w) {
			t.Errorf("%s:\n got %+v (median %v)\nwant %+v", s, got, f(got.MedianTimeS), w)
		}
	}
}

// Without a free lane there is no naive strategy; jobs arrive before the
// probes of the first lane, and lanewatch takes the paid lane.
func TestReplayWithoutAFreeLane(t *testing.T) {
	p := params(1)
	p.Lanes = p.Lanes[1:]
	from := day0.AddDate(0, 0, 2).Add(10 * time.Hour)
	opts := Options{Params: p, From: from, To: from.Add(2 * time.Hour)}
	var ps []store.Probe
	for _, pr := range rounds(opts.ReadFrom(), opts.To, func(time.Time) (float64, bool) { return 5, true }) {
		if pr.Lane == "paid" {
			ps = append(ps, pr)
		}
	}
	r := run(t, opts, ps)
	if len(r.Decisions) != 2 || r.NaiveLane != "" {
		t.Fatalf("decisions %+v, naive lane %q", r.Decisions, r.NaiveLane)
	}
	for _, s := range []string{"paid", "lanewatch"} {
		if d := decision(t, r, "interactive", s); d.Jobs != 3 || d.Met != 3 || f(d.MedianTimeS) != "6" {
			t.Errorf("%s: %+v", s, d)
		}
	}
}

// Without a paid lane, under a rule that decides (calibrated): when the
// free lane ships in 5 + 10 s, lanewatch sends each job there with no
// cut-over, as naive does; when its 55 s queue leaves no plan that meets
// the 60 s deadline, lanewatch sends nothing (the decision is to stop)
// while naive still tries.
func TestReplayDecidedWithoutAPaidLane(t *testing.T) {
	for _, tc := range []struct {
		queue     float64
		met       int
		median    string
		lanewatch int64 // attempts
	}{{5, 3, "15", 3}, {55, 0, "null", 0}} {
		p := calibratedParams(1)
		p.Lanes = p.Lanes[:1]
		from := day0.AddDate(0, 0, 2).Add(10 * time.Hour)
		opts := Options{Params: p, From: from, To: from.Add(2 * time.Hour)}
		var ps []store.Probe
		for _, pr := range rounds(opts.ReadFrom(), opts.To, func(time.Time) (float64, bool) { return tc.queue, true }) {
			if pr.Lane == "free" {
				ps = append(ps, pr)
			}
		}
		r := run(t, opts, ps)
		naive, lw := decision(t, r, "interactive", "naive"), decision(t, r, "interactive", "lanewatch")
		for _, d := range []Decision{naive, lw} {
			if d.Jobs != 3 || d.Met != tc.met || f(d.MedianTimeS) != tc.median || d.PaidUSD != 0 {
				t.Errorf("queue %v s, %s: %+v (median %s), want 3 jobs, %d met, median %s, nothing paid", tc.queue, d.Strategy, d, f(d.MedianTimeS), tc.met, tc.median)
			}
		}
		if naive.Attempts < 3 || lw.Attempts != tc.lanewatch {
			t.Errorf("queue %v s: attempts naive %d, lanewatch %d; want at least 3 and %d", tc.queue, naive.Attempts, lw.Attempts, tc.lanewatch)
		}
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

// One attempt of a baseline on a lane whose next probe met queue q and
// generated 16 tokens in 0.2 s (80 tok/s), for a job of 800 tokens (10 s
// to generate) and a 60 s deadline: a first token at 50 s ships at 60 s,
// exactly the deadline (met); at 55 s the job is cut at 60 s with 5 s × 80
// = 400 tokens emitted (burned on a free lane, paid on a paid one); at
// 60 s there is no first token by the deadline: the free request is
// abandoned and nothing is emitted, nor when it would come at 70 s.
// (strategies.go attempt: `end <= r.d` → `<`, `first >= r.d && free` →
// `>`, `g > 0 && w.rate > 0` → `||`, the emitted tokens of a cut.)
func TestBaselineAttemptAtTheDeadline(t *testing.T) {
	t0 := day0.UnixNano()
	for _, tc := range []struct {
		name                      string
		kind                      string
		queue                     float64
		met                       bool
		timeS                     float64
		abandoned, burned, tokens int64
		step                      stepKind
	}{
		{"free, ships at the deadline", policy.KindFree, 50, true, 60, 0, 0, 0, stepShipped},
		{"free, cut with 400 tokens out", policy.KindFree, 55, false, 0, 0, 400, 0, stepCut},
		{"free, no first token by the deadline", policy.KindFree, 60, false, 0, 1, 0, 0, stepCut},
		{"paid, ships at the deadline", policy.KindPaid, 50, true, 60, 0, 0, 800, stepShipped},
		{"paid, cut with 400 tokens paid", policy.KindPaid, 55, false, 0, 0, 0, 400, stepCut},
		{"paid, no first token by the deadline", policy.KindPaid, 60, false, 0, 0, 0, 0, stepCut},
		{"free, first token 10 s past the deadline", policy.KindFree, 70, false, 0, 1, 0, 0, stepCut},
		{"paid, first token 10 s past the deadline", policy.KindPaid, 70, false, 0, 0, 0, 0, stepCut},
	} {
		l := &lane{spec: policy.LaneSpec{Name: "l", Kind: tc.kind}}
		l.tl.ev = []event{{t: t0, queue: tc.queue, gen: 0.2, rate: 80, tokens: 16, ok: true}}
		r := baseRun{b: &Backtest{}, t0: t0, d: 60, est: 800}
		st := r.attempt(l, 0, noCancel, 0, false)
		if st.kind != tc.step || r.met != tc.met || r.timeS != tc.timeS || r.abandoned != tc.abandoned || r.burned != tc.burned || r.paidTokens != tc.tokens {
			t.Errorf("%s: step %v, met %v at %v, %d abandoned, %d burned, %d paid tokens; want step %v, met %v at %v, %d, %d, %d",
				tc.name, st.kind, r.met, r.timeS, r.abandoned, r.burned, r.paidTokens, tc.step, tc.met, tc.timeS, tc.abandoned, tc.burned, tc.tokens)
		}
	}
}

// An attempt that meets a failure (no first token): cancelled at cancelAt
// when its failure would come later (before the deadline), else a failed
// attempt that costs its queue and generation (at least MinAttemptS),
// ending at the deadline at the latest, its first token (for the queue it
// keeps, cancelled) at start + queue. 60 s deadline, free lane.
// (strategies.go attempt: `at+w.queue > cancelAt && cancelAt < r.d` (the
// 6 mutants of the line), `r.abandoned++` → `--`, `max(at+w.queue,
// behind)` → `at-w.queue`, `w.queue+w.gen` → `-`, `r.d-at` → `r.d+at`,
// `limit - at` → `limit + at`.)
func TestBaselineAttemptThatFails(t *testing.T) {
	t0 := day0.UnixNano()
	for _, tc := range []struct {
		name                string
		ev                  []event // the lane's probes
		at, cancelAt        float64
		run                 bool
		step                step
		attempts, abandoned int64
	}{
		{"a 30 s timeout cancelled at 20 s", []event{{t: t0, queue: 30}}, 0, 20, false,
			step{kind: stepAbandoned, end: 20, first: 30}, 1, 1},
		{"a 20 s timeout and a cancel at 20 s: it fails first", []event{{t: t0, queue: 20}}, 0, 20, false,
			step{kind: stepFailed, end: 20, n: 1}, 1, 0},
		{"a 5 s failure before the cancel", []event{{t: t0, queue: 5}}, 0, 20, false,
			step{kind: stepFailed, end: 5, n: 1}, 1, 0},
		{"a cancel at the deadline is no cancel", []event{{t: t0, queue: 70}}, 0, 60, false,
			step{kind: stepFailed, end: 60, n: 1}, 1, 0},
		{"a failure costs queue + generation", []event{{t: t0, queue: 5, gen: 3}}, 0, noCancel, false,
			step{kind: stepFailed, end: 8, n: 1}, 1, 0},
		{"a failure ends at the deadline at the latest", []event{{t: t0 + 58e9, queue: 5}}, 58, noCancel, false,
			step{kind: stepFailed, end: 60, n: 1}, 1, 0},
		{"no probe: 50 fast failures of 1 s from 10 s to the deadline", nil, 10, noCancel, true,
			step{kind: stepFailed, end: 60, n: 50}, 50, 0},
	} {
		l := &lane{spec: policy.LaneSpec{Name: "free", Kind: policy.KindFree}}
		l.tl.ev = tc.ev
		r := baseRun{b: &Backtest{}, t0: t0, d: 60, est: 800}
		st := r.attempt(l, tc.at, tc.cancelAt, 0, tc.run)
		if st != tc.step || r.attempts != tc.attempts || r.freeReq != tc.attempts || r.abandoned != tc.abandoned {
			t.Errorf("%s: %+v, %d attempts (%d free), %d abandoned; want %+v, %d, %d", tc.name, st, r.attempts, r.freeReq, r.abandoned, tc.step, tc.attempts, tc.abandoned)
		}
	}
}

// Every baseline sends at most maxBaselineAttempts requests a job, and
// none at or after the deadline. cancel-retry@1 on a lane whose queue is
// always 10^6 s: one request a second, each cancelled; over 10 s 10 of
// them, over 200,000 s 100,000. naive on a lane that always fails at once
// (1 s an attempt, each meeting a probe of its own) the same; lanewatch
// (free_first, no paid lane) sends one: a failed attempt is an error, and
// the ledger answers no free retry after one.
// (strategies.go countOne `r.attempts++` → `--`; the loops of repeat,
// cancel-retry and lanewatch: `at < r.d` → `<=`, `r.attempts <
// maxBaselineAttempts` → `<=`, `&&` → `||`.)
func TestBaselineAttemptsBounded(t *testing.T) {
	t0 := day0.UnixNano()
	// ok: a probe every 30 min that met a 10^6 s queue; not ok: a probe
	// every second that failed at once (each attempt meets its own).
	long := func(d float64, ok bool) *lane {
		l := &lane{spec: policy.LaneSpec{Name: "free", Kind: policy.KindFree}}
		step, ev := 1.0, event{}
		if ok {
			step, ev = 1800, event{queue: 1e6, ok: true, rate: 80, tokens: 16}
		}
		for s := 0.0; s <= d; s += step {
			ev.t = t0 + int64(s*1e9)
			l.tl.ev = append(l.tl.ev, ev)
		}
		return l
	}
	for _, tc := range []struct {
		name string
		s    baseStrategy
		ok   bool // the lane's probes: ok (queue 10^6 s) or failed at once
		d    float64
		want int64
	}{
		{"cancel-retry@1, 10 s", baseStrategy{kind: baseCancelRetry, t: 1}, true, 10, 10},
		{"cancel-retry@1, 200,000 s", baseStrategy{kind: baseCancelRetry, t: 1}, true, 200000, maxBaselineAttempts},
		{"naive, 200,000 s of fast failures", baseStrategy{kind: baseNaive}, false, 200000, maxBaselineAttempts},
		{"lanewatch free first, 200,000 s of fast failures", baseStrategy{kind: baseLanewatch}, false, 200000, 1},
	} {
		l := long(tc.d, tc.ok)
		b := &Backtest{naive: l, lanes: map[string]*lane{"free": l}}
		bp := policy.BookPolicy{FreeLane: "free", FreeEligible: true}
		r := baseRun{b: b, t0: t0, d: tc.d, est: 800}
		r.play(tc.s, jobCut{Cutover: policy.Cutover{AfterS: tc.d, FreeFirst: true}, decided: true, book: bp, first: "free"})
		if r.freeReq != tc.want || r.met {
			t.Errorf("%s: %d free requests (met %v), want %d", tc.name, r.freeReq, r.met, tc.want)
		}
	}
}

// lanewatch with free_first and a paid lane: a free attempt that fails by
// itself before cutover_after_s (20 s) is an error, and the job cuts over
// to the paid lane then, as at 20 s (docs/backtest.md, "Baselines"); the
// free lane's next probe (a 3 s queue) is never met. Paid: its probe's 1 s
// queue and 5 s (160 tok/s): met at 5 + 6 = 11 s, or 20 + 6 = 26 s, 800
// paid tokens, one free request.
func TestLanewatchBaselineCutsOverAfterAFreeFailure(t *testing.T) {
	t0 := day0.UnixNano()
	for _, tc := range []struct {
		name             string
		free             []event
		timeS            float64
		freeReq, paidTok int64
	}{
		{"a failure at 5 s, cut over", []event{{t: t0, queue: 5}, {t: t0 + 5e9, queue: 3, gen: 0.2, rate: 80, tokens: 16, ok: true}}, 11, 1, 800},
		{"a failure at 20 s, cut over", []event{{t: t0, queue: 20}, {t: t0 + 20e9, queue: 3, gen: 0.2, rate: 80, tokens: 16, ok: true}}, 26, 1, 800},
	} {
		free := &lane{spec: policy.LaneSpec{Name: "free", Kind: policy.KindFree}}
		free.tl.ev = tc.free
		paid := &lane{spec: policy.LaneSpec{Name: "paid", Kind: policy.KindPaid}}
		paid.tl.ev = []event{{t: t0 + 30e9, queue: 1, gen: 0.1, rate: 160, tokens: 16, ok: true}}
		b := &Backtest{naive: free, paid: paid, lanes: map[string]*lane{"free": free, "paid": paid}}
		bp := policy.BookPolicy{DeadlineS: 60, FreeEligible: true, PaidEligible: true, FreeLane: "free", PaidLane: "paid"}
		r := baseRun{b: b, t0: t0, d: 60, est: 800}
		r.play(baseStrategy{kind: baseLanewatch}, jobCut{Cutover: policy.Cutover{AfterS: 20, FreeFirst: true}, decided: true, book: bp, first: "free"})
		if !r.met || r.timeS != tc.timeS || r.freeReq != tc.freeReq || r.paidTokens != tc.paidTok || r.abandoned != 0 {
			t.Errorf("%s: met %v at %v, %d free requests, %d paid tokens, %d abandoned; want met at %v, %d, %d, 0",
				tc.name, r.met, r.timeS, r.freeReq, r.paidTokens, r.abandoned, tc.timeS, tc.freeReq, tc.paidTok)
		}
	}
}

// A first token from a probe that reported no decode rate (0 tokens)
// ships at once, as in the decision replay: a 5 s queue, met at 5 s.
// (strategies.go attempt: `w.rate > 0` → `>= 0`.)
func TestBaselineAttemptWithoutARate(t *testing.T) {
	t0 := day0.UnixNano()
	l := &lane{spec: policy.LaneSpec{Name: "free", Kind: policy.KindFree}}
	l.tl.ev = []event{{t: t0, queue: 5, ok: true}}
	r := baseRun{b: &Backtest{}, t0: t0, d: 60, est: 800}
	if st := r.attempt(l, 0, noCancel, 0, false); st.kind != stepShipped || !r.met || r.timeS != 5 {
		t.Errorf("step %+v, met %v at %v; want shipped at 5", st, r.met, r.timeS)
	}
}

// The lanewatch baseline follows the policy in force at each job's
// arrival for the class at each deadline: the decision, book and starting
// lane (Class.Start) History.ClassesAt gives for the class moved to that
// deadline.
func TestLanewatchBaselineFollowsThePolicy(t *testing.T) {
	from := day0.AddDate(0, 0, 15)
	p := params(14)
	p.Rule = policy.RuleCalibrated
	opts := Options{Params: p, From: from, To: from.Add(6 * time.Hour), Fallbacks: []float64{20}, Deadlines: []float64{12, 30, 90}}
	b, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 9))
	for _, pr := range rounds(opts.ReadFrom(), opts.To, func(time.Time) (float64, bool) { return 3 * math.Exp(rng.NormFloat64()), rng.IntN(40) > 0 }) {
		if err := b.Add(pr); err != nil {
			t.Fatal(err)
		}
	}
	j := &job{t0: opts.To.Add(time.Minute)}
	b.evaluate(j)
	cuts := j.cuts[0]
	for di, d := range []float64{60, 12, 30, 90} {
		q := b.params[b.decide]
		q.Classes = []policy.ClassSpec{p.Classes[0]}
		q.Classes[0].DeadlineS = d
		c := b.hist.ClassesAt(q, b.figs, b.hourOf(j.t0).start)[0]
		first, _ := c.Start()
		if got := cuts[di]; c.Cutover == nil || got.Cutover != *c.Cutover || !got.decided || got.book != c.Book || got.first != first {
			t.Errorf("deadline %v: the baseline's %+v, the policy's %+v %+v %q", d, got, c.Cutover, c.Book, first)
		}
	}
}

// A class that lists no lane sends nothing: no request, nothing paid.
func TestLanewatchBaselineSendsNothingWithoutALane(t *testing.T) {
	t0 := day0.UnixNano()
	free := &lane{spec: policy.LaneSpec{Name: "free", Kind: policy.KindFree}}
	free.tl.ev = []event{{t: t0, queue: 1, gen: 0.2, rate: 80, tokens: 16, ok: true}}
	paid := &lane{spec: policy.LaneSpec{Name: "paid", Kind: policy.KindPaid}}
	paid.tl.ev = []event{{t: t0, queue: 1, gen: 0.1, rate: 160, tokens: 16, ok: true}}
	b := &Backtest{naive: free, paid: paid, lanes: map[string]*lane{"free": free, "paid": paid}}
	bp := policy.BookPolicy{DeadlineS: 5, FreeEligible: true, PaidEligible: true, FreeLane: "free", PaidLane: "paid"}
	r := baseRun{b: b, t0: t0, d: 5, est: 800}
	r.play(baseStrategy{kind: baseLanewatch}, jobCut{decided: true, book: bp})
	if r.attempts != 0 || r.freeReq != 0 || r.paidTokens != 0 || r.met {
		t.Errorf("no lane listed: %+v", r)
	}
}

// Under the worst-of rule (no decision) lanewatch follows the ledger: a
// failed free attempt is an error, then the paid lane while policy.Book
// cuts over. It never sends at or after the deadline: a free attempt that
// fails past it ends the job at 60 s even when the book, whose paid figure
// is 0 s, would still cut over to a paid lane that would answer at once;
// and it sends at most maxBaselineAttempts (a paid lane with no probe to
// meet fails fast, 1 s an attempt, for 200,000 s).
func TestLedgerBaseline(t *testing.T) {
	t0 := day0.UnixNano()
	for _, tc := range []struct {
		name     string
		d        float64
		paid     []event
		attempts int64
	}{
		{"a failure past the deadline", 60, []event{{t: t0 + 60e9, ok: true, tokens: 16}}, 1},
		{"fast paid failures", 200000, nil, maxBaselineAttempts},
	} {
		free := &lane{spec: policy.LaneSpec{Name: "free", Kind: policy.KindFree}}
		free.tl.ev = []event{{t: t0, queue: 70}}
		paid := &lane{spec: policy.LaneSpec{Name: "paid", Kind: policy.KindPaid}}
		paid.tl.ev = tc.paid
		b := &Backtest{naive: free, paid: paid, lanes: map[string]*lane{"free": free, "paid": paid}}
		bp := policy.BookPolicy{DeadlineS: tc.d, CeilingTokens: 4000, NextEstTokens: 800,
			FreeEligible: true, PaidEligible: true, FreeLane: "free", PaidLane: "paid"}
		r := baseRun{b: b, t0: t0, d: tc.d, est: 800}
		r.play(baseStrategy{kind: baseLanewatch}, jobCut{book: bp, first: "free"})
		if r.met || r.attempts != tc.attempts || r.freeReq != 1 {
			t.Errorf("%s: met %v, %d attempts, %d free; want not met, %d, 1", tc.name, r.met, r.attempts, r.freeReq, tc.attempts)
		}
	}
}

// Trimming a timeline at t changes nothing an attempt at or after t
// meets, ties included: on random timelines (probes on whole seconds, some
// asking for a back-off) meet(u) for every u >= t, on a second or between,
// is the same before and after trim(t), t itself often a probe's instant.
func TestTrimKeepsWhatLaterAttemptsMeet(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 29))
	const s = int64(time.Second)
	for range 500 {
		var full timeline
		at := int64(0)
		for range 1 + rng.IntN(12) {
			at += s * int64(rng.IntN(4))
			e := event{t: at, queue: float64(rng.IntN(5)), ok: rng.IntN(3) > 0}
			if rng.IntN(3) == 0 {
				e.ok, e.backoff = false, at+s*int64(1+rng.IntN(8))
			}
			full.ev = append(full.ev, e)
		}
		cut := s * int64(rng.IntN(int(at/s)+2))
		trimmed := timeline{ev: slices.Clone(full.ev)}
		trimmed.trim(cut)
		for u := cut; u <= at+10*s; u += s / 2 {
			if got, want := trimmed.meet(u), full.meet(u); got != want {
				t.Fatalf("events %+v trimmed at %d: meet(%d) %+v, want %+v", full.ev, cut, u, got, want)
			}
		}
	}
}

// Trimming keeps the probe before a job's arrival whose back-off the job
// meets. The paid lane answers 11:25 with a 429 (back-off to 11:35), then
// with 1 s, 160 tok/s at PAID and 11:30:20; the free probe at 11:30:10
// brings a job at 11:29:10; the replay trims at its 4096th probe (the
// padding before it is of a lane not configured).
//   - at the job's instant (PAID 11:29:10, the 4096th): the job's paid
//     strategy fails fast at 11:29:10 (the 429 is the newest probe before
//     it), then meets 11:30:20: 1 + 1 + 5 = 7 s, two attempts;
//   - ahead of a job yet to arrive (PAID 11:29:40, a spare paid lane's 503
//     at 11:30 the 4096th; pass.go's trim from `b.latest.Add(-ArrivalLead)`
//     → `+`): it fails fast for 31 attempts until 11:29:40, then meets
//     11:30:20: 31 + 1 + 5 = 37 s.
func TestTrimKeepsTheBackoffAJobMeets(t *testing.T) {
	at := func(h, m, s int) time.Time {
		return day0.AddDate(0, 0, 2).Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(s)*time.Second)
	}
	spare := probe("spare", "paid", at(11, 30, 0), 1, 160)
	spare.OK, spare.Outcome, spare.Status = false, "http_error", 503
	for _, tc := range []struct {
		name     string
		paid     time.Time
		extra    []store.Probe
		median   float64
		attempts int64
	}{
		{"at the job's instant", at(11, 29, 10), nil, 7, 2},
		{"ahead of a job yet to arrive", at(11, 29, 40), []store.Probe{spare}, 37, 32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := params(1)
			p.Lanes = append(p.Lanes, policy.LaneSpec{Name: "spare", Kind: "paid"})
			from := day0.AddDate(0, 0, 2).Add(10 * time.Hour)
			opts := Options{Params: p, From: from, To: from.Add(3 * time.Hour)}
			ps := rounds(opts.ReadFrom(), from, func(time.Time) (float64, bool) { return 5, true })
			ps = append(ps,
				store.Probe{Lane: "paid", Kind: "paid", Time: at(11, 25, 0), Outcome: "rate_limited", Status: 429, QuotaResetS: 600},
				probe("paid", "paid", tc.paid, 1, 160),
			)
			pad := make([]store.Probe, 4095-len(ps))
			for i := range pad {
				pad[i] = probe("unconfigured", "free", opts.ReadFrom(), 1, 1)
			}
			ps = append(append(append(pad, ps...), tc.extra...),
				probe("free", "free", at(11, 30, 10), 5, 80),
				probe("paid", "paid", at(11, 30, 20), 1, 160),
				probe("paid", "paid", at(12, 40, 0), 1, 160),
			)
			r := run(t, opts, ps)
			want := Decision{Class: "interactive", Strategy: "paid", Jobs: 1, Met: 1, MetPct: 100, MedianTimeS: fp(tc.median), PaidUSD: 0.0016, Attempts: tc.attempts}
			if got := decision(t, r, "interactive", "paid"); !reflect.DeepEqual(got, want) {
				t.Errorf("paid\n got %+v (median %s)\nwant %+v", got, f(got.MedianTimeS), want)
			}
			if r.ProbesRead != len(ps) || r.Ignored != len(pad) {
				t.Errorf("read %d, ignored %d; want %d and %d", r.ProbesRead, r.Ignored, len(ps), len(pad))
			}
		})
	}
}
