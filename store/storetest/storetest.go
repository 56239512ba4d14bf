// Package storetest is the contract every store.Store passes: one suite,
// run against the embedded file, InfluxDB and a spool around each.
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
	"strings"
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
	write := func(t *testing.T, s store.Store, b store.Batch) {
		t.Helper()
		if err := s.Write(ctx, b); err != nil {
			t.Fatalf("Write: %v", err)
		}
	}
	hour := store.Between(base, base.Add(time.Hour))

	t.Run("empty store reads nothing", func(t *testing.T) {
		s := fresh(t)
		days := store.Between(base.Add(-24*time.Hour), base.Add(24*time.Hour))
		expect(t, store.ReadProbes, s, days)
		expect(t, store.ReadHourly, s, days)
		if s.Status().Where == "" {
			t.Error("Status names no store")
		}
	})

	t.Run("field types round trip, each measurement read in turn", func(t *testing.T) {
		s := fresh(t)
		b := store.Batch{
			Probes: []store.Probe{
				{Lane: "free", Kind: "free", Time: base.Add(7*time.Minute + 3*time.Second + 123456789),
					QueueS: 35.25, GenS: 1.5, HeadersS: 0.125, Tokens: 1 << 40, OK: true, Outcome: "ok", Status: 200},
				{Lane: "paid", Kind: "paid", Time: base.Add(7*time.Minute + 4*time.Second),
					HeadersS: 1e-9, Outcome: `stream_error "quoted" \ ü`, QuotaRemaining: 0, QuotaKnown: true, QuotaResetS: 2.5},
				{Lane: "zeros", Kind: "free", Time: base.Add(8 * time.Minute), Status: -1, Tokens: -5, QueueS: 1e300},
			},
			Hourly: []store.Hourly{
				{Lane: "free", Kind: "free", Hour: base, WorstQueueS: 35.25, WorstGenS: 1.5, MinTokPerS: 41.5, Samples: 3, Eligible: true},
				{Lane: "paid", Kind: "paid", Hour: base, Samples: 1, Failures: 1, WorstCensoredS: 30},
			},
			Heartbeats: []store.Heartbeat{{Instance: "h-1", Shard: "0/2", Site: "eu", Time: base.Add(time.Minute), Host: "host a",
				StartNS: base.UnixNano() - 7, Version: "v1.2.3 (devel)", IntervalS: 60, Sites: "eu,us"}},
		}
		write(t, s, b)
		var got store.Batch
		var order []string
		err := s.Read(ctx, hour, store.Reader{
			Probe: func(p store.Probe) error {
				got.Probes = append(got.Probes, p)
				order = append(order, "probe")
				return nil
			},
			Hourly: func(h store.Hourly) error {
				got.Hourly = append(got.Hourly, h)
				order = append(order, "hourly")
				return nil
			},
			Heartbeat: func(h store.Heartbeat) error {
				got.Heartbeats = append(got.Heartbeats, h)
				order = append(order, "beat")
				return nil
			},
		})
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		assertPoints(t, got.Probes, b.Probes)
		assertPoints(t, got.Hourly, b.Hourly)
		assertPoints(t, got.Heartbeats, b.Heartbeats)
		if want := []string{"hourly", "hourly", "probe", "probe", "probe", "beat"}; !slices.Equal(order, want) {
			t.Errorf("read in the order %v, want %v", order, want)
		}
		if err := s.Read(ctx, hour, store.Reader{Local: true, Probe: func(store.Probe) error { return errors.New("called") }}); err != nil {
			t.Errorf("a Local read of what is in the store: %v; want nothing handed over", err)
		}
	})

	t.Run("a later write of a point's key replaces it", func(t *testing.T) {
		s := fresh(t)
		h := store.Hourly{Lane: "free", Kind: "free", Hour: base, WorstQueueS: 10, WorstGenS: 2, MinTokPerS: 50, Samples: 1, Eligible: true}
		other := store.Hourly{Lane: "free", Kind: "free", Hour: base.Add(time.Hour), WorstQueueS: 1, Samples: 1, Eligible: true}
		p := store.Probe{Lane: "free", Kind: "free", Time: base.Add(time.Minute), QueueS: 3, OK: true, Outcome: "ok", Status: 200}
		write(t, s, store.Batch{Probes: []store.Probe{p}, Hourly: []store.Hourly{h, other}})
		h.WorstQueueS, h.Samples, h.Failures, h.Eligible = 40, 2, 1, false
		p.QueueS, p.OK, p.Outcome, p.Status = 120, false, "timeout", 0
		write(t, s, store.Batch{Probes: []store.Probe{p}, Hourly: []store.Hourly{h}})
		expect(t, store.ReadHourly, s, store.Between(base, base.Add(2*time.Hour)), h, other)
		expect(t, store.ReadProbes, s, hour, p)
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
				for _, p := range c.writes {
					write(t, s, store.Batch{Probes: []store.Probe{p}})
				}
				expect(t, store.ReadProbes, s, hour, c.want)
				// A read naming fields without the outcome tells them apart too.
				named := hour
				named.Fields = []string{"queue_s"}
				got, err := store.ReadProbes(ctx, s, named)
				if err != nil || len(got) != 1 || (got[0].Outcome == store.OutcomeReserved) != (c.want.Outcome == store.OutcomeReserved) {
					t.Fatalf("read naming queue_s: %+v, %v; want one point, reserved: %v", got, err, c.want.Outcome == store.OutcomeReserved)
				}
			})
		}
	})

	t.Run("windows include from, exclude to; points sorted by time then series", func(t *testing.T) {
		s := fresh(t)
		at := func(lane string, d time.Duration) store.Probe {
			return store.Probe{Lane: lane, Kind: "free", Time: base.Add(d), QueueS: d.Seconds(), OK: true, Outcome: "ok"}
		}
		hr := func(lane string, h int) store.Hourly {
			return store.Hourly{Lane: lane, Kind: "free", Hour: base.Add(time.Duration(h) * time.Hour), Samples: int64(h)}
		}
		probes := []store.Probe{at("b", time.Hour), at("a", time.Hour-time.Nanosecond), at("b", 0), at("a", 0), at("a", -time.Nanosecond), at("c", 30*time.Minute)}
		hourly := []store.Hourly{hr("b", 1), hr("c", 0), hr("a", 0), hr("a", -1), hr("b", 0), hr("a", 1)}
		// Written in two rounds, in scrambled order.
		write(t, s, store.Batch{Probes: probes[:3], Hourly: hourly[:3]})
		write(t, s, store.Batch{Probes: probes[3:], Hourly: hourly[3:]})
		expect(t, store.ReadProbes, s, hour, at("a", 0), at("b", 0), at("c", 30*time.Minute), at("a", time.Hour-time.Nanosecond))
		expect(t, store.ReadHourly, s, hour, hr("a", 0), hr("b", 0), hr("c", 0))
		expect(t, store.ReadHourly, s, store.Between(base.Add(-time.Hour), base.Add(2*time.Hour)),
			hr("a", -1), hr("a", 0), hr("b", 0), hr("c", 0), hr("a", 1), hr("b", 1))
		for _, r := range []struct {
			name     string
			from, to time.Time
		}{
			{"to before from", base.Add(time.Hour), base},
			{"from equals to", base, base},
			{"range with no points", base.Add(48 * time.Hour), base.Add(72 * time.Hour)},
		} {
			ps, err := store.ReadProbes(ctx, s, store.Between(r.from, r.to))
			hs, herr := store.ReadHourly(ctx, s, store.Between(r.from, r.to))
			if err != nil || herr != nil || len(ps)+len(hs) != 0 {
				t.Errorf("%s: Probes = %v, %v; Hourly = %v, %v; want none", r.name, ps, err, hs, herr)
			}
		}
	})

	t.Run("tricky lane names", func(t *testing.T) {
		s := fresh(t)
		var b store.Batch
		for i, lane := range []string{"a-b_1", "A.b", "with space", "comma,equals=x", `back\slash`, "ünï", `quo"te`} {
			b.Probes = append(b.Probes, store.Probe{Lane: lane, Kind: "paid", Time: base.Add(time.Duration(i) * time.Second), QueueS: float64(i), OK: true, Outcome: "ok"})
			b.Hourly = append(b.Hourly, store.Hourly{Lane: lane, Kind: "paid", Hour: base, Samples: int64(i + 1)})
		}
		write(t, s, b)
		expect(t, store.ReadProbes, s, hour, b.Probes...)
		want := slices.Clone(b.Hourly)
		slices.SortFunc(want, func(a, b store.Hourly) int { return cmp.Compare(a.Lane, b.Lane) })
		expect(t, store.ReadHourly, s, hour, want...)
	})

	t.Run("an invalid point fails the batch and stores nothing", func(t *testing.T) {
		good := store.Probe{Lane: "free", Kind: "free", Time: base, OK: true, Outcome: "ok"}
		goodH := store.Hourly{Lane: "free", Kind: "free", Hour: base}
		for _, c := range []struct {
			name string
			b    store.Batch
		}{
			{"empty lane", store.Batch{Probes: []store.Probe{good, {Kind: "free", Time: base}}}},
			{"empty kind", store.Batch{Probes: []store.Probe{good, {Lane: "x", Time: base}}}},
			{"zero time", store.Batch{Probes: []store.Probe{good}, Hourly: []store.Hourly{goodH, {Lane: "x", Kind: "free"}}}},
			{"NaN queue", store.Batch{Probes: []store.Probe{good, {Lane: "x", Kind: "free", Time: base, QueueS: math.NaN()}}}},
			{"Inf tok/s", store.Batch{Probes: []store.Probe{good}, Hourly: []store.Hourly{{Lane: "x", Kind: "free", Hour: base, MinTokPerS: math.Inf(1)}}}},
			{"bad UTF-8 outcome", store.Batch{Probes: []store.Probe{good, {Lane: "x", Kind: "free", Time: base, Outcome: "\xff"}}}},
			{"newline in lane", store.Batch{Probes: []store.Probe{good, {Lane: "x\ny", Kind: "free", Time: base}}}},
			{"year 3000", store.Batch{Probes: []store.Probe{good, {Lane: "x", Kind: "free", Time: time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)}}}},
			{"a heartbeat without a shard", store.Batch{Probes: []store.Probe{good}, Heartbeats: []store.Heartbeat{{Instance: "i", Time: base}}}},
		} {
			t.Run(c.name, func(t *testing.T) {
				s := fresh(t)
				if err := s.Write(ctx, c.b); err == nil {
					t.Fatal("Write accepted an invalid point")
				}
				expect(t, store.ReadProbes, s, store.Between(base.Add(-time.Hour), base.Add(time.Hour)))
				expect(t, store.ReadHourly, s, store.Between(base.Add(-time.Hour), base.Add(time.Hour)))
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
		write(t, s, store.Batch{Hourly: hourly, Probes: []store.Probe{{Lane: "a", Kind: "free", Time: base, Outcome: store.OutcomeReserved}}})
		q := store.Between(base, base.Add(2*time.Hour))
		q.Fields = []string{"worst_queue_s", "worst_censored_s", "samples", "failures"}
		got, err := store.ReadHourly(ctx, s, q)
		if err != nil || len(got) != len(hourly) {
			t.Fatalf("Hourly with Fields: %+v, %v; want %d points", got, err, len(hourly))
		}
		for i, h := range got {
			w := hourly[i]
			if h.Lane != w.Lane || h.Kind != w.Kind || h.Site != w.Site || !h.Hour.Equal(w.Hour) ||
				h.WorstQueueS != w.WorstQueueS || h.WorstCensoredS != w.WorstCensoredS || h.Samples != w.Samples || h.Failures != w.Failures {
				t.Errorf("point %d = %+v; want the key and the four fields of %+v", i, h, w)
			}
		}
		q.Fields = []string{"outcome"} // a reservation is its marker field alone: still read
		if ps, err := store.ReadProbes(ctx, s, q); err != nil || len(ps) != 1 || ps[0].Outcome != store.OutcomeReserved {
			t.Errorf("probes with Fields outcome: %+v, %v; want the reservation", ps, err)
		}
		q.Fields = []string{"worst_queue_s", "no_such_field"}
		if _, err := store.ReadHourly(ctx, s, q); err == nil {
			t.Error("a read naming a field no measurement has: no error")
		}
	})

	t.Run("a read hands each time once, in order, as the points stand", func(t *testing.T) {
		s := fresh(t)
		rng := rand.New(rand.NewPCG(7, 11))
		lanes := []string{"a", "b", "lane-10", "lane-9", "x y"}
		kinds := []string{"free", "paid", "free", "free", "paid"}
		sites := []string{"", "fra1", "iad1"}
		first := base.Add(-5 * 24 * time.Hour) // a span InfluxDB is read in pieces of
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
			write(t, s, store.Batch{Hourly: hs})
		}
		whole := store.Between(first, base.Add(time.Hour))
		bySite := store.Between(first.Add(30*time.Hour), base.Add(-7*time.Hour))
		bySite.Sites = []string{"", "fra1"}
		byLane := whole.OfLanes("a", "x y")
		byLane.Fields = []string{"worst_queue_s", "worst_censored_s", "samples", "failures"}
		// Windows out of order, overlapping, one shorter than a read piece.
		windows := store.Query{Windows: []store.Window{
			{From: first.Add(50 * time.Hour), To: base.Add(time.Hour)},
			{From: first.Add(2 * time.Hour), To: first.Add(20 * time.Hour)},
			{From: first.Add(60 * time.Hour), To: first.Add(70 * time.Hour)},
		}}
		manyLanes := whole.OfLanes("lane-9", "b") // more than a read names: picked after it
		for i := range 40 {
			manyLanes.Lanes = append(manyLanes.Lanes, fmt.Sprintf("absent-%02d", i))
		}
		for _, c := range []struct {
			name string
			q    store.Query
		}{{"whole span", whole}, {"some sites, a shorter window", bySite}, {"some lanes, four fields", byLane},
			{"three windows", windows}, {"the points without a site", whole.Site("")}, {"42 lanes", manyLanes}} {
			var want []store.Hourly
			for k, h := range model {
				if (c.q.Sites == nil || slices.Contains(c.q.Sites, k.site)) && (c.q.Lanes == nil || slices.Contains(c.q.Lanes, k.lane)) &&
					slices.ContainsFunc(c.q.Windows, func(w store.Window) bool { return w.Contains(h.Hour) }) {
					want = append(want, h)
				}
			}
			slices.SortFunc(want, func(a, b store.Hourly) int {
				return cmp.Or(a.Hour.Compare(b.Hour), cmp.Compare(a.Lane, b.Lane), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Site, b.Site))
			})
			got, err := store.ReadHourly(ctx, s, c.q)
			if err != nil || len(want) == 0 {
				t.Fatalf("%s: Hourly: %v (the writes leave %d points)", c.name, err, len(want))
			}
			if c.q.Fields != nil { // the fields not named: a store may fill them or not
				for _, hs := range [][]store.Hourly{got, want} {
					for i := range hs {
						hs[i].WorstGenS, hs[i].MinTokPerS, hs[i].Eligible = 0, 0, false
					}
				}
			}
			assertPoints(t, got, want)
		}
		// An error of a callback stops the read and comes back as it is.
		stop := errors.New("enough")
		calls := 0
		err := s.Read(ctx, whole, store.Reader{Hourly: func(store.Hourly) error {
			if calls++; calls == 3 {
				return stop
			}
			return nil
		}})
		if err != stop || calls != 3 {
			t.Errorf("Read with a callback failing on its third point = %v after %d calls; want %v after 3", err, calls, stop)
		}
	})

	t.Run("a newest read hands each series' newest point of each window", func(t *testing.T) {
		s := fresh(t)
		seed := uint64(time.Now().UnixNano())
		t.Logf("seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, 3))
		first := base.Add(-3 * 24 * time.Hour)
		lanes, kinds, sites := []string{"a", "b", "x y"}, []string{"free", "paid"}, []string{"", "fra1", "iad1"}
		for range 3 { // later rounds settle or rewrite some of the earlier's
			var ps []store.Probe
			for range 150 {
				p := store.Probe{Lane: lanes[rng.IntN(len(lanes))], Kind: kinds[rng.IntN(len(kinds))], Site: sites[rng.IntN(len(sites))],
					Time: first.Add(time.Duration(rng.IntN(3*24*4)) * 15 * time.Minute), Outcome: "ok", OK: true, QueueS: rng.Float64()}
				if rng.IntN(4) == 0 {
					p = store.Probe{Lane: p.Lane, Kind: p.Kind, Site: p.Site, Time: p.Time, Outcome: store.OutcomeReserved}
				}
				ps = append(ps, p)
			}
			write(t, s, store.Batch{Probes: ps})
		}
		w := func(from, to int) store.Window {
			return store.Window{From: first.Add(time.Duration(from) * time.Hour), To: first.Add(time.Duration(to) * time.Hour)}
		}
		many := []string{"a", "x y"} // more than a read names: picked after it
		for i := range 40 {
			many = append(many, fmt.Sprintf("absent-%02d", i))
		}
		for _, c := range []struct {
			name  string
			q     store.Query
			spans []store.Window // the windows as Newest joins them
		}{
			{"one window", store.Query{Windows: []store.Window{w(0, 72)}}, []store.Window{w(0, 72)}},
			{"windows that touch stay apart", store.Query{Windows: []store.Window{w(30, 72), w(0, 30)}}, []store.Window{w(0, 30), w(30, 72)}},
			{"windows that overlap are one", store.Query{Windows: []store.Window{w(10, 40), w(0, 20), w(50, 60)}}, []store.Window{w(0, 40), w(50, 60)}},
			{"some sites and fields", store.Query{Windows: []store.Window{w(0, 72)}, Sites: []string{"", "iad1"}, Fields: []string{"outcome", "queue_s"}},
				[]store.Window{w(0, 72)}},
			{"42 lanes", store.Query{Windows: []store.Window{w(0, 36), w(36, 72)}, Lanes: many}, []store.Window{w(0, 36), w(36, 72)}},
		} {
			// The oracle: each joined window read whole, the last point of
			// each series kept (a read hands them in time order).
			var want []store.Probe
			for _, sp := range c.spans {
				q := c.q
				q.Windows = []store.Window{sp}
				all, err := store.ReadProbes(ctx, s, q)
				if err != nil {
					t.Fatalf("%s: whole read: %v", c.name, err)
				}
				last := map[store.Key]int{}
				for i, p := range all {
					k := store.KeyOf(&p)
					k.NS = 0
					last[k] = i
				}
				for i, p := range all {
					k := store.KeyOf(&p)
					if k.NS = 0; last[k] == i {
						want = append(want, p)
					}
				}
			}
			q := c.q
			q.Newest = true
			got, err := store.ReadProbes(ctx, s, q)
			if err != nil || len(want) == 0 {
				t.Fatalf("%s: Newest: %v (the oracle has %d points)", c.name, err, len(want))
			}
			if c.q.Fields != nil { // the fields not named (outcome, queue_s): a store may fill them or not
				for _, ps := range [][]store.Probe{got, want} {
					for i, p := range ps {
						ps[i] = store.Probe{Lane: p.Lane, Kind: p.Kind, Site: p.Site, Time: p.Time, Outcome: p.Outcome, QueueS: p.QueueS}
					}
				}
			}
			assertPoints(t, got, want)
		}
		// A newest point without the fields named is still the newest.
		quota := store.Probe{Lane: "q", Kind: "free", Time: first, Outcome: "rate_limited", Status: 429, QuotaRemaining: 0, QuotaKnown: true}
		later := store.Probe{Lane: "q", Kind: "free", Time: first.Add(time.Minute), Outcome: "ok", OK: true, QueueS: 1}
		write(t, s, store.Batch{Probes: []store.Probe{quota, later}})
		q := store.Query{Windows: []store.Window{w(0, 1)}, Lanes: []string{"q"}, Fields: []string{"quota_remaining"}, Newest: true}
		if got, err := store.ReadProbes(ctx, s, q); err != nil || len(got) != 1 || !got[0].Time.Equal(later.Time) {
			t.Errorf("newest probe of lane q, fields quota_remaining: %+v, %v; want the one at %v", got, err, later.Time)
		}
		stop := errors.New("enough")
		calls := 0
		err := s.Read(ctx, store.Query{Windows: []store.Window{w(0, 72)}, Newest: true}, store.Reader{Probe: func(store.Probe) error {
			if calls++; calls == 2 {
				return stop
			}
			return nil
		}})
		if err != stop || calls != 2 {
			t.Errorf("Newest read with a callback failing on its second point = %v after %d calls; want %v after 2", err, calls, stop)
		}
	})

	t.Run("an empty batch is a no-op", func(t *testing.T) {
		s := fresh(t)
		write(t, s, store.Batch{})
		expect(t, store.ReadProbes, s, store.Between(base.Add(-time.Hour), base.Add(time.Hour)))
	})

	t.Run("concurrent writers lose nothing", func(t *testing.T) {
		s := fresh(t)
		const writers, rounds = 8, 5
		var wg sync.WaitGroup
		errs := make(chan error, writers*rounds)
		for w := range writers {
			wg.Go(func() {
				lane := fmt.Sprintf("lane%02d", w)
				for r := range rounds {
					p := store.Probe{Lane: lane, Kind: "free", Time: base.Add(time.Duration(r) * time.Minute), QueueS: float64(r), OK: true, Outcome: "ok"}
					h := store.Hourly{Lane: lane, Kind: "free", Hour: base, Samples: int64(r + 1)}
					errs <- s.Write(ctx, store.Batch{Probes: []store.Probe{p}, Hourly: []store.Hourly{h}})
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("Write: %v", err)
			}
		}
		ps, err := store.ReadProbes(ctx, s, hour)
		if err != nil || len(ps) != writers*rounds {
			t.Fatalf("Probes: %d points, %v; want %d", len(ps), err, writers*rounds)
		}
		hs, err := store.ReadHourly(ctx, s, hour)
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

// expect reads q from s with read (store.ReadProbes, ReadHourly) and
// compares the points with want (assertPoints).
func expect[T store.Point](t *testing.T, read func(context.Context, store.Store, store.Query) ([]T, error), s store.Store, q store.Query, want ...T) {
	t.Helper()
	got, err := read(context.Background(), s, q)
	if err != nil {
		t.Fatal(err)
	}
	assertPoints(t, got, want)
}

// assertPoints compares points in order: their times as instants that must
// come back in UTC, everything else as values.
func assertPoints[T store.Point](t *testing.T, got, want []T) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d points, want %d:\n got %+v\nwant %+v", len(got), len(want), got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		gk, wk := store.KeyOf(&g), store.KeyOf(&w)
		if gk != wk {
			t.Errorf("point %d is %+v, want %+v", i, gk, wk)
		}
		if !reflect.DeepEqual(utc(g), utc(w)) || !reflect.DeepEqual(utc(g), g) {
			t.Errorf("point %d (times must come back in UTC):\n got %+v\nwant %+v", i, g, w)
		}
	}
}

// utc is p with its time in UTC.
func utc[T store.Point](p T) T {
	switch x := any(&p).(type) {
	case *store.Probe:
		x.Time = x.Time.UTC()
	case *store.Hourly:
		x.Hour = x.Hour.UTC()
	case *store.Heartbeat:
		x.Time = x.Time.UTC()
	}
	return p
}

// Warnings collects a store's warnings (its options' Warn), safe for
// concurrent use.
type Warnings struct {
	mu   sync.Mutex
	msgs []string
}

// Warn records one warning: msg and its key=value pairs.
func (w *Warnings) Warn(msg string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	b.WriteString(msg)
	for i := 0; i+1 < len(args); i += 2 {
		fmt.Fprintf(&b, " %v=%v", args[i], args[i+1])
	}
	w.msgs = append(w.msgs, b.String())
}

// All is every warning, a line each.
func (w *Warnings) All() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.msgs, "\n")
}

// Count is how many warnings there were.
func (w *Warnings) Count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.msgs)
}

// FailOnWarn is a Warn that fails t.
func FailOnWarn(t testing.TB) func(string, ...any) {
	return func(msg string, args ...any) {
		t.Errorf("unexpected warning: %s %v", msg, args)
	}
}

// EachHour reads the hourly points q selects from st and hands fn each
// time's points, once the next time's first point (or the end) came.
func EachHour(ctx context.Context, st store.Store, q store.Query, fn func([]store.Hourly) error) error {
	var run []store.Hourly
	err := st.Read(ctx, q, store.Reader{Hourly: func(h store.Hourly) error {
		if len(run) > 0 && !h.Hour.Equal(run[0].Hour) {
			if err := fn(run); err != nil {
				return err
			}
			run = nil
		}
		run = append(run, h)
		return nil
	}})
	if err == nil && len(run) > 0 {
		err = fn(run)
	}
	return err
}

// HourlyRuns reads q and returns EachHour's runs.
func HourlyRuns(st store.Store, q store.Query) ([][]store.Hourly, error) {
	var runs [][]store.Hourly
	err := EachHour(context.Background(), st, q, func(hs []store.Hourly) error {
		runs = append(runs, slices.Clone(hs))
		return nil
	})
	return runs, err
}
