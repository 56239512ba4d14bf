package backtest

import (
	"reflect"
	"testing"
	"time"

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
