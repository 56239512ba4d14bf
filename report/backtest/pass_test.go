package backtest

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

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

// With a warm-up (WarmupDays, the extended shape), a lane first probed
// inside the window is scored from its first probe's hour a day on: the
// free lane starts at 10:07 on the window's first day, so of its 114
// probes the 42 from 10:00 the next day are scored.
func TestWarmupStartsAtTheLanesFirstProbe(t *testing.T) {
	from := day0.AddDate(0, 0, 2)
	opts := Options{Params: params(1), WarmupDays: 1, From: from, To: from.AddDate(0, 0, 2)}
	start := from.Add(10*time.Hour + 7*time.Minute)
	var ps []store.Probe
	for _, p := range rounds(opts.ReadFrom(), opts.To, func(time.Time) (float64, bool) { return 5, true }) {
		if p.Lane == "paid" || !p.Time.Before(start) {
			ps = append(ps, p)
		}
	}
	r := run(t, opts, ps)
	if c := laneCal(t, r, 1, "free"); c.Probes != 42 || c.Hours[9].Probes != 0 || c.Hours[10].Probes != 3 {
		t.Errorf("free: %d probes scored (09:00: %d, 10:00: %d), want 42 (0, 3)", c.Probes, c.Hours[9].Probes, c.Hours[10].Probes)
	}
}

// Without a warm-up every probe is scored, even across a fall-back: in
// Berlin on 2026-10-25 the free lane is first probed at 02:07 CEST, in the
// first of the two 02:00 hours (time.Date gives the second one for that
// wall clock); its three probes there and the three of 02:00 CET are all
// scored.
func TestNoWarmupAcrossAFallBack(t *testing.T) {
	p := params(0)
	p.Location = mustLocBT(t, "Europe/Berlin")
	from := time.Date(2026, 10, 25, 0, 0, 0, 0, time.UTC) // 02:00 CEST
	opts := Options{Params: p, Coverages: []float64{0.9}, From: from, To: from.Add(2 * time.Hour)}
	var ps []store.Probe
	for _, pr := range rounds(opts.ReadFrom(), opts.To, func(time.Time) (float64, bool) { return 5, true }) {
		if pr.Lane == "paid" || !pr.Time.Before(from) {
			ps = append(ps, pr)
		}
	}
	if c := laneCal(t, run(t, opts, ps), 0, "free"); c.Probes != 6 || c.Hours[2].Probes != 6 {
		t.Errorf("free: %d probes scored (02:00: %d), want 6 (6)", c.Probes, c.Hours[2].Probes)
	}
}
