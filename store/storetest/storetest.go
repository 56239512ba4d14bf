// Package storetest is the contract every store.Store passes: one suite,
// run against the embedded file and against a real InfluxDB.
package storetest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

// base is an hour start well inside what every store keeps.
var base = time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)

// Run runs the contract suite. open must return a fresh, empty store for
// each call; Run closes it.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	ctx := context.Background()
	fresh := func(t *testing.T) store.Store {
		t.Helper()
		s := open(t)
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		})
		return s
	}

	t.Run("empty store returns empty slices", func(t *testing.T) {
		s := fresh(t)
		ps, err := s.Probes(ctx, store.Between(base.Add(-24*time.Hour), base.Add(24*time.Hour)))
		if err != nil || ps == nil || len(ps) != 0 {
			t.Fatalf("Probes = %v, %v; want empty non-nil slice, nil", ps, err)
		}
		hs, err := s.Hourly(ctx, store.Between(base.Add(-24*time.Hour), base.Add(24*time.Hour)))
		if err != nil || hs == nil || len(hs) != 0 {
			t.Fatalf("Hourly = %v, %v; want empty non-nil slice, nil", hs, err)
		}
	})

	t.Run("field types round trip", func(t *testing.T) {
		s := fresh(t)
		probes := []store.Probe{
			{Lane: "free", Kind: "free", Time: base.Add(7*time.Minute + 3*time.Second + 123456789),
				QueueS: 35.25, GenS: 1.5, HeadersS: 0.125, Tokens: 1 << 40, OK: true, Outcome: "ok", Status: 200},
			{Lane: "paid", Kind: "paid", Time: base.Add(7*time.Minute + 4*time.Second),
				QueueS: 0, GenS: 0, HeadersS: 1e-9, Tokens: 0, OK: false, Outcome: `stream_error "quoted" \ ü`, Status: 0},
			{Lane: "zeros", Kind: "free", Time: base.Add(8 * time.Minute),
				Outcome: "", Status: -1, Tokens: -5, QueueS: 1e300},
		}
		hourly := []store.Hourly{
			{Lane: "free", Kind: "free", Hour: base, WorstQueueS: 35.25, WorstGenS: 1.5, MinTokPerS: 41.5, Samples: 3, Failures: 0, Eligible: true},
			{Lane: "paid", Kind: "paid", Hour: base, Samples: 1, Failures: 1, Eligible: false},
		}
		if err := s.Write(ctx, probes, hourly); err != nil {
			t.Fatalf("Write: %v", err)
		}
		gotP, err := s.Probes(ctx, store.Between(base, base.Add(time.Hour)))
		if err != nil {
			t.Fatalf("Probes: %v", err)
		}
		assertProbes(t, gotP, probes)
		gotH, err := s.Hourly(ctx, store.Between(base, base.Add(time.Hour)))
		if err != nil {
			t.Fatalf("Hourly: %v", err)
		}
		assertHourly(t, gotH, hourly)
	})

	t.Run("hourly rewrite of the same lane and hour replaces it", func(t *testing.T) {
		s := fresh(t)
		h := store.Hourly{Lane: "free", Kind: "free", Hour: base, WorstQueueS: 10, WorstGenS: 2, MinTokPerS: 50, Samples: 1, Eligible: true}
		other := store.Hourly{Lane: "free", Kind: "free", Hour: base.Add(time.Hour), WorstQueueS: 1, Samples: 1, Eligible: true}
		if err := s.Write(ctx, nil, []store.Hourly{h, other}); err != nil {
			t.Fatalf("Write 1: %v", err)
		}
		h2 := h
		h2.WorstQueueS, h2.Samples, h2.Failures, h2.Eligible = 40, 2, 1, false
		if err := s.Write(ctx, nil, []store.Hourly{h2}); err != nil {
			t.Fatalf("Write 2: %v", err)
		}
		got, err := s.Hourly(ctx, store.Between(base, base.Add(2*time.Hour)))
		if err != nil {
			t.Fatalf("Hourly: %v", err)
		}
		assertHourly(t, got, []store.Hourly{h2, other})
	})

	t.Run("probe at the same lane and time is replaced", func(t *testing.T) {
		s := fresh(t)
		p := store.Probe{Lane: "free", Kind: "free", Time: base.Add(time.Minute), QueueS: 3, OK: true, Outcome: "ok", Status: 200}
		if err := s.Write(ctx, []store.Probe{p}, nil); err != nil {
			t.Fatalf("Write 1: %v", err)
		}
		p.QueueS, p.OK, p.Outcome, p.Status = 120, false, "timeout", 0
		if err := s.Write(ctx, []store.Probe{p}, nil); err != nil {
			t.Fatalf("Write 2: %v", err)
		}
		got, err := s.Probes(ctx, store.Between(base, base.Add(time.Hour)))
		if err != nil {
			t.Fatalf("Probes: %v", err)
		}
		assertProbes(t, got, []store.Probe{p})
	})

	// A reservation is a request booked and not settled: the probe that
	// settles it, or its release, is written with the same series and
	// time. InfluxDB applies writes in the order it gets them, which need
	// not be the order they were sent (a booking it answers late, or one
	// a spool replays), and the file is read in the order of its lines:
	// in any order a reservation never replaces what settled it.
	t.Run("a reservation never replaces the point that settled it", func(t *testing.T) {
		at := base.Add(3 * time.Minute)
		booked := store.Probe{Lane: "free", Kind: "free", Time: at, Outcome: store.OutcomeReserved}
		settled := store.Probe{Lane: "free", Kind: "free", Time: at, QueueS: 8, GenS: 1, HeadersS: 0.5, Tokens: 9,
			OK: true, Outcome: "ok", Status: 200, QuotaRemaining: 3, QuotaKnown: true}
		released := store.Probe{Lane: "free", Kind: "free", Time: at, Outcome: store.OutcomeUnsent}
		for _, c := range []struct {
			name   string
			writes []store.Probe
			want   store.Probe
		}{
			{"booked alone", []store.Probe{booked}, booked},
			{"booked, then settled", []store.Probe{booked, settled}, settled},
			{"settled, then booked", []store.Probe{settled, booked}, settled},
			{"booked, settled, booked again", []store.Probe{booked, settled, booked}, settled},
			{"released, then booked", []store.Probe{booked, released, booked}, released},
		} {
			t.Run(c.name, func(t *testing.T) {
				s := fresh(t)
				for i, p := range c.writes {
					if err := s.Write(ctx, []store.Probe{p}, nil); err != nil {
						t.Fatalf("Write %d: %v", i+1, err)
					}
				}
				got, err := s.Probes(ctx, store.Between(base, base.Add(time.Hour)))
				if err != nil {
					t.Fatalf("Probes: %v", err)
				}
				assertProbes(t, got, []store.Probe{c.want})
			})
		}
	})

	t.Run("ranges include from, exclude to, sort by time then lane", func(t *testing.T) {
		s := fresh(t)
		at := func(lane string, d time.Duration) store.Probe {
			return store.Probe{Lane: lane, Kind: "free", Time: base.Add(d), QueueS: d.Seconds(), OK: true, Outcome: "ok"}
		}
		hr := func(lane string, h int) store.Hourly {
			return store.Hourly{Lane: lane, Kind: "free", Hour: base.Add(time.Duration(h) * time.Hour), Samples: int64(h)}
		}
		probes := []store.Probe{
			at("b", time.Hour), at("a", time.Hour-time.Nanosecond), at("b", 0), at("a", 0),
			at("a", -time.Nanosecond), at("c", 30*time.Minute),
		}
		hourly := []store.Hourly{hr("b", 1), hr("c", 0), hr("a", 0), hr("a", -1), hr("b", 0), hr("a", 1)}
		// Written in two rounds, in scrambled order.
		if err := s.Write(ctx, probes[:3], hourly[:3]); err != nil {
			t.Fatalf("Write: %v", err)
		}
		if err := s.Write(ctx, probes[3:], hourly[3:]); err != nil {
			t.Fatalf("Write: %v", err)
		}
		gotP, err := s.Probes(ctx, store.Between(base, base.Add(time.Hour)))
		if err != nil {
			t.Fatalf("Probes: %v", err)
		}
		assertProbes(t, gotP, []store.Probe{at("a", 0), at("b", 0), at("c", 30*time.Minute), at("a", time.Hour-time.Nanosecond)})
		gotH, err := s.Hourly(ctx, store.Between(base, base.Add(time.Hour)))
		if err != nil {
			t.Fatalf("Hourly: %v", err)
		}
		assertHourly(t, gotH, []store.Hourly{hr("a", 0), hr("b", 0), hr("c", 0)})
		gotH, err = s.Hourly(ctx, store.Between(base.Add(-time.Hour), base.Add(2*time.Hour)))
		if err != nil {
			t.Fatalf("Hourly wide: %v", err)
		}
		assertHourly(t, gotH, []store.Hourly{hr("a", -1), hr("a", 0), hr("b", 0), hr("c", 0), hr("a", 1), hr("b", 1)})
		for _, r := range []struct {
			name     string
			from, to time.Time
		}{
			{"to before from", base.Add(time.Hour), base},
			{"from equals to", base, base},
			{"range with no points", base.Add(48 * time.Hour), base.Add(72 * time.Hour)},
		} {
			ps, err := s.Probes(ctx, store.Between(r.from, r.to))
			if err != nil || len(ps) != 0 {
				t.Errorf("%s: Probes = %v, %v; want none", r.name, ps, err)
			}
			hs, err := s.Hourly(ctx, store.Between(r.from, r.to))
			if err != nil || len(hs) != 0 {
				t.Errorf("%s: Hourly = %v, %v; want none", r.name, hs, err)
			}
		}
	})

	t.Run("tricky lane names", func(t *testing.T) {
		s := fresh(t)
		var probes []store.Probe
		var hourly []store.Hourly
		for i, lane := range []string{"a-b_1", "A.b", "with space", "comma,equals=x", `back\slash`, "ünï"} {
			probes = append(probes, store.Probe{Lane: lane, Kind: "paid", Time: base.Add(time.Duration(i) * time.Second), QueueS: float64(i), OK: true, Outcome: "ok"})
			hourly = append(hourly, store.Hourly{Lane: lane, Kind: "paid", Hour: base, Samples: int64(i + 1)})
		}
		if err := s.Write(ctx, probes, hourly); err != nil {
			t.Fatalf("Write: %v", err)
		}
		gotP, err := s.Probes(ctx, store.Between(base, base.Add(time.Hour)))
		if err != nil {
			t.Fatalf("Probes: %v", err)
		}
		assertProbes(t, gotP, probes)
		gotH, err := s.Hourly(ctx, store.Between(base, base.Add(time.Hour)))
		if err != nil {
			t.Fatalf("Hourly: %v", err)
		}
		want := append([]store.Hourly(nil), hourly...)
		sortHourly(want)
		assertHourly(t, gotH, want)
	})

	t.Run("invalid point fails the round and stores nothing", func(t *testing.T) {
		good := store.Probe{Lane: "free", Kind: "free", Time: base, OK: true, Outcome: "ok"}
		goodH := store.Hourly{Lane: "free", Kind: "free", Hour: base}
		for _, c := range []struct {
			name   string
			probes []store.Probe
			hourly []store.Hourly
		}{
			{"empty lane", []store.Probe{good, {Kind: "free", Time: base}}, nil},
			{"empty kind", []store.Probe{good, {Lane: "x", Time: base}}, nil},
			{"zero time", []store.Probe{good}, []store.Hourly{goodH, {Lane: "x", Kind: "free"}}},
			{"NaN queue", []store.Probe{good, {Lane: "x", Kind: "free", Time: base, QueueS: math.NaN()}}, nil},
			{"Inf tok/s", []store.Probe{good}, []store.Hourly{{Lane: "x", Kind: "free", Hour: base, MinTokPerS: math.Inf(1)}}},
			{"bad UTF-8 outcome", []store.Probe{good, {Lane: "x", Kind: "free", Time: base, Outcome: "\xff"}}, nil},
			{"newline in lane", []store.Probe{good, {Lane: "x\ny", Kind: "free", Time: base}}, nil},
			{"year 3000", []store.Probe{good, {Lane: "x", Kind: "free", Time: time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)}}, nil},
		} {
			t.Run(c.name, func(t *testing.T) {
				s := fresh(t)
				if err := s.Write(ctx, c.probes, c.hourly); err == nil {
					t.Fatal("Write accepted an invalid point")
				}
				ps, err := s.Probes(ctx, store.Between(base.Add(-time.Hour), base.Add(time.Hour)))
				if err != nil || len(ps) != 0 {
					t.Fatalf("after a refused round Probes = %v, %v; want none", ps, err)
				}
				hs, err := s.Hourly(ctx, store.Between(base.Add(-time.Hour), base.Add(time.Hour)))
				if err != nil || len(hs) != 0 {
					t.Fatalf("after a refused round Hourly = %v, %v; want none", hs, err)
				}
			})
		}
	})

	t.Run("a read of some fields gives them as a full read does", func(t *testing.T) {
		s := fresh(t)
		hourly := []store.Hourly{
			{Lane: "a", Kind: "free", Site: "fra1", Hour: base, WorstQueueS: 12.5, WorstGenS: 1.5, MinTokPerS: 40, Samples: 3, Failures: 1, WorstCensoredS: 30},
			{Lane: "a", Kind: "free", Site: "iad1", Hour: base, WorstQueueS: 2, WorstGenS: 0.5, MinTokPerS: 80, Samples: 3, Eligible: true},
			{Lane: "b", Kind: "paid", Hour: base.Add(time.Hour), WorstQueueS: 0.25, Samples: 1, Eligible: true},
		}
		if err := s.Write(ctx, nil, hourly); err != nil {
			t.Fatalf("Write: %v", err)
		}
		q := store.Between(base, base.Add(2*time.Hour))
		q.Fields = []string{"worst_queue_s", "worst_censored_s", "samples", "failures"}
		got, err := s.Hourly(ctx, q)
		if err != nil {
			t.Fatalf("Hourly with Fields: %v", err)
		}
		want := hourly // in the order of a read
		if len(got) != len(want) {
			t.Fatalf("Hourly with Fields: %d points, want %d: %+v", len(got), len(want), got)
		}
		for i, h := range got {
			w := want[i]
			if h.Lane != w.Lane || h.Kind != w.Kind || h.Site != w.Site || !h.Hour.Equal(w.Hour) ||
				h.WorstQueueS != w.WorstQueueS || h.WorstCensoredS != w.WorstCensoredS || h.Samples != w.Samples || h.Failures != w.Failures {
				t.Errorf("point %d = %+v; want the key and the four fields of %+v", i, h, w)
			}
		}
	})

	t.Run("an hour at a time gives what Hourly gives", func(t *testing.T) {
		s := fresh(t)
		rng := rand.New(rand.NewPCG(7, 11))
		lanes := []string{"a", "b", "lane-10", "lane-9", "x y"}
		kinds := []string{"free", "paid", "free", "free", "paid"}
		sites := []string{"", "fra1", "iad1"}
		first := base.Add(-5 * 24 * time.Hour) // a span InfluxQL reads in pieces
		type key struct {
			lane, site string
			hour       int64
		}
		model := map[key]store.Hourly{} // the last write of each lane-hour and site
		for round := range 2 {          // the second round rewrites some of the first's
			var hs []store.Hourly
			for i := range 400 {
				l := rng.IntN(len(lanes))
				h := store.Hourly{Lane: lanes[l], Kind: kinds[l], Site: sites[rng.IntN(len(sites))],
					Hour: first.Add(time.Duration(rng.IntN(5*24+1)) * time.Hour), WorstQueueS: float64(round*1000 + i),
					WorstCensoredS: float64(rng.IntN(3)), Samples: int64(rng.IntN(4)), Failures: int64(rng.IntN(2))}
				hs = append(hs, h)
				model[key{h.Lane, h.Site, h.Hour.UnixNano()}] = h
			}
			if err := s.Write(ctx, nil, hs); err != nil {
				t.Fatalf("Write: %v", err)
			}
		}
		whole := store.Between(first, base.Add(time.Hour))
		bySite := store.Between(first.Add(30*time.Hour), base.Add(-7*time.Hour))
		bySite.Sites = []string{"", "fra1"}
		byLane := store.Between(first, base.Add(time.Hour))
		byLane.Lanes = []string{"a", "x y"}
		byLane.Fields = []string{"worst_queue_s", "worst_censored_s", "samples", "failures"}
		// Windows out of order, overlapping, one shorter than a read piece.
		windows := store.Query{Windows: []store.Window{
			{From: first.Add(50 * time.Hour), To: base.Add(time.Hour)},
			{From: first.Add(2 * time.Hour), To: first.Add(20 * time.Hour)},
			{From: first.Add(60 * time.Hour), To: first.Add(70 * time.Hour)},
		}}
		unsited := store.Between(first, base.Add(time.Hour)).Site("")
		manyLanes := store.Between(first, base.Add(time.Hour)) // more than a read names: picked after it
		manyLanes.Lanes = []string{"lane-9", "b"}
		for i := range 40 {
			manyLanes.Lanes = append(manyLanes.Lanes, fmt.Sprintf("absent-%02d", i))
		}
		for _, c := range []struct {
			name string
			q    store.Query
		}{{"whole span", whole}, {"some sites, a shorter window", bySite}, {"some lanes, four fields", byLane},
			{"three windows", windows}, {"the points without a site", unsited}, {"42 lanes", manyLanes}} {
			want, err := s.Hourly(ctx, c.q)
			if err != nil {
				t.Fatalf("%s: Hourly: %v", c.name, err)
			}
			n := 0
			for k, h := range model {
				ok := c.q.Sites == nil || slices.Contains(c.q.Sites, k.site)
				ok = ok && (c.q.Lanes == nil || slices.Contains(c.q.Lanes, k.lane))
				if ok && slices.ContainsFunc(c.q.Windows, func(w store.Window) bool { return w.Contains(h.Hour) }) {
					n++
				}
			}
			if len(want) != n || n == 0 {
				t.Fatalf("%s: Hourly gave %d points; the writes leave %d", c.name, len(want), n)
			}
			var got []store.Hourly
			var last time.Time
			err = store.EachHourly(ctx, s, c.q, func(hs []store.Hourly) error {
				if len(hs) == 0 {
					t.Errorf("%s: an empty run", c.name)
					return nil
				}
				if !hs[0].Hour.After(last) {
					t.Errorf("%s: a run of %v after one of %v: want each time once, in order", c.name, hs[0].Hour, last)
				}
				last = hs[0].Hour
				for _, h := range hs {
					if !h.Hour.Equal(last) {
						t.Errorf("%s: a run of %v holds a point of %v", c.name, last, h.Hour)
					}
				}
				got = append(got, hs...)
				return nil
			})
			if err != nil {
				t.Fatalf("%s: EachHourly: %v", c.name, err)
			}
			assertHourly(t, got, want)
		}
		// An error of fn stops the read and comes back as it is.
		stop := errors.New("enough")
		calls := 0
		err := store.EachHourly(ctx, s, whole, func([]store.Hourly) error {
			calls++
			if calls == 3 {
				return stop
			}
			return nil
		})
		if err != stop || calls != 3 {
			t.Errorf("EachHourly with fn failing on its third run = %v after %d runs; want %v after 3", err, calls, stop)
		}
	})

	t.Run("empty round is a no-op", func(t *testing.T) {
		s := fresh(t)
		if err := s.Write(ctx, nil, nil); err != nil {
			t.Fatalf("Write(nil, nil) = %v", err)
		}
		ps, err := s.Probes(ctx, store.Between(base.Add(-time.Hour), base.Add(time.Hour)))
		if err != nil || len(ps) != 0 {
			t.Fatalf("Probes = %v, %v; want none", ps, err)
		}
	})

	t.Run("concurrent writers lose nothing", func(t *testing.T) {
		s := fresh(t)
		const writers, rounds = 8, 5
		var wg sync.WaitGroup
		errs := make(chan error, writers*rounds)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				lane := fmt.Sprintf("lane%02d", w)
				for r := range rounds {
					p := store.Probe{Lane: lane, Kind: "free", Time: base.Add(time.Duration(r) * time.Minute), QueueS: float64(r), OK: true, Outcome: "ok"}
					h := store.Hourly{Lane: lane, Kind: "free", Hour: base, Samples: int64(r + 1)}
					errs <- s.Write(ctx, []store.Probe{p}, []store.Hourly{h})
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("Write: %v", err)
			}
		}
		ps, err := s.Probes(ctx, store.Between(base, base.Add(time.Hour)))
		if err != nil || len(ps) != writers*rounds {
			t.Fatalf("Probes: %d points, %v; want %d", len(ps), err, writers*rounds)
		}
		hs, err := s.Hourly(ctx, store.Between(base, base.Add(time.Hour)))
		if err != nil || len(hs) != writers {
			t.Fatalf("Hourly: %d points, %v; want %d", len(hs), err, writers)
		}
		for _, h := range hs {
			if h.Samples != rounds {
				t.Errorf("lane %s: samples %d, want %d (the last round of each writer)", h.Lane, h.Samples, rounds)
			}
		}
	})
}

func sortHourly(hs []store.Hourly) {
	slices.SortFunc(hs, func(a, b store.Hourly) int {
		return cmp.Or(a.Hour.Compare(b.Hour), cmp.Compare(a.Lane, b.Lane))
	})
}

// assertProbes compares in order; times compare as instants and must come back in UTC.
func assertProbes(t *testing.T, got, want []store.Probe) {
	t.Helper()
	assertPoints(t, "probe", "time", got, want, func(p *store.Probe) *time.Time { return &p.Time })
}

func assertHourly(t *testing.T, got, want []store.Hourly) {
	t.Helper()
	assertPoints(t, "hourly", "hour", got, want, func(h *store.Hourly) *time.Time { return &h.Hour })
}

// assertPoints compares points in order: their times (at, called timeName)
// as instants that must come back in UTC, everything else as values.
func assertPoints[T any](t *testing.T, what, timeName string, got, want []T, at func(*T) *time.Time) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d %s points, want %d:\n got %+v\nwant %+v", len(got), what, len(want), got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		gt, wt := at(&g), at(&w)
		if gt.Location() != time.UTC {
			t.Errorf("%s %d: %s in %v, want UTC", what, i, timeName, gt.Location())
		}
		if !gt.Equal(*wt) {
			t.Errorf("%s %d: %s %v, want %v", what, i, timeName, *gt, *wt)
		}
		*gt, *wt = time.Time{}, time.Time{}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s %d:\n got %+v\nwant %+v", what, i, g, w)
		}
	}
}
