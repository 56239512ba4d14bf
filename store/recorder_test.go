package store_test

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

// readCounter counts the probe reads of the store it wraps.
type readCounter struct {
	store.Store
	reads atomic.Int64
}

func (c *readCounter) Probes(ctx context.Context, q store.Query) ([]store.Probe, error) {
	c.reads.Add(1)
	return c.Store.Probes(ctx, q)
}

func openCounted(t *testing.T) *readCounter {
	t.Helper()
	f, err := store.OpenFile(filepath.Join(t.TempDir(), "s.lp"), store.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return &readCounter{Store: f}
}

// RecordWith uses the probes read already when their query covers every
// lane-hour the new probes touch, and reads the store itself otherwise; the
// hour records it writes are those Record writes.
func TestRecordWithReadsOnlyWhatThePriorMisses(t *testing.T) {
	h := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	stored := []store.Probe{
		{Lane: "a", Kind: "free", Site: "eu", Time: h.Add(5 * time.Minute), OK: true, Outcome: "ok", QueueS: 4, GenS: 1, Tokens: 8},
		{Lane: "a", Kind: "free", Site: "eu", Time: h.Add(-10 * time.Minute), OK: true, Outcome: "ok", QueueS: 9, GenS: 1, Tokens: 8},
		{Lane: "b", Kind: "free", Site: "eu", Time: h.Add(7 * time.Minute), OK: false, Outcome: "timeout", QueueS: 30},
	}
	fresh := []store.Probe{
		{Lane: "a", Kind: "free", Site: "eu", Time: h.Add(20 * time.Minute), OK: true, Outcome: "ok", QueueS: 1, GenS: 1, Tokens: 8},
		{Lane: "b", Kind: "free", Site: "eu", Time: h.Add(20 * time.Minute), OK: true, Outcome: "ok", QueueS: 2, GenS: 1, Tokens: 8},
	}
	whole := store.Query{Windows: []store.Window{{From: h.Add(-2 * time.Hour), To: h.Add(time.Hour)}}, Sites: []string{"eu"}, Lanes: []string{"a", "b"}}
	cases := []struct {
		name  string
		q     store.Query
		reads int64
	}{
		{"covering", whole, 0},
		{"covering in two adjoining windows", store.Query{Windows: []store.Window{{From: h, To: h.Add(30 * time.Minute)}, {From: h.Add(30 * time.Minute), To: h.Add(time.Hour)}}}, 0},
		{"every site and lane", store.Between(h, h.Add(time.Hour)), 0},
		{"zero prior", store.Query{}, 1},
		{"hour cut short", store.Query{Windows: []store.Window{{From: h, To: h.Add(30 * time.Minute)}}}, 1},
		{"lane missing", whole.OfLanes("a"), 1},
		{"site missing", whole.Site("us"), 1},
		{"no site", store.Query{Windows: whole.Windows, Sites: []string{}}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			st := openCounted(t)
			if err := st.Write(ctx, stored, nil); err != nil {
				t.Fatal(err)
			}
			prior, err := st.Probes(ctx, c.q)
			if err != nil {
				t.Fatal(err)
			}
			st.reads.Store(0)
			got, err := store.NewRecorder(st, time.UTC).RecordWith(ctx, fresh, store.Prior{Query: c.q, Probes: prior})
			if err != nil {
				t.Fatal(err)
			}
			if n := st.reads.Load(); n != c.reads {
				t.Errorf("%d reads, want %d", n, c.reads)
			}
			want := store.Rollup(append(slices.Clone(stored[:1]), append(stored[2:], fresh...)...), time.UTC)
			if !sameHourly(got.Hourly, want) {
				t.Errorf("hour records %+v, want %+v", got.Hourly, want)
			}
		})
	}
}

// Random stores, rounds and priors: the hour records RecordWith writes are
// always the aggregate of every stored probe of their hour, whichever
// prior it was given.
func TestRecordWithKeepsTheInvariant(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	base := time.Date(2026, 3, 29, 0, 0, 0, 0, time.UTC)
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	lanes, sites := []string{"a", "b", "c"}, []string{"", "eu"}
	probe := func() store.Probe {
		ok := rng.IntN(3) > 0
		p := store.Probe{Lane: lanes[rng.IntN(len(lanes))], Kind: "free", Site: sites[rng.IntN(len(sites))],
			Time: base.Add(time.Duration(rng.IntN(6*60)) * time.Minute), OK: ok, Outcome: "ok", QueueS: rng.Float64() * 10, GenS: 1, Tokens: 8}
		if !ok {
			p.Outcome, p.GenS, p.Tokens = "timeout", 0, 0
		}
		return p
	}
	for i := range 200 {
		ctx := context.Background()
		st := openCounted(t)
		var old []store.Probe
		for range rng.IntN(20) {
			old = append(old, probe())
		}
		rec := store.NewRecorder(st, loc)
		if _, err := rec.Record(ctx, old); err != nil {
			t.Fatal(err)
		}
		var fresh []store.Probe
		for range 1 + rng.IntN(5) {
			fresh = append(fresh, probe())
		}
		from := base.Add(time.Duration(rng.IntN(7*60)-60) * time.Minute)
		q := store.Query{Windows: []store.Window{{From: from, To: from.Add(time.Duration(rng.IntN(7*60)) * time.Minute)}}}
		if rng.IntN(2) == 0 {
			q.Lanes = lanes[:1+rng.IntN(len(lanes))]
		}
		if rng.IntN(2) == 0 {
			q.Sites = sites[rng.IntN(len(sites)):]
		}
		prior, err := st.Probes(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rec.RecordWith(ctx, fresh, store.Prior{Query: q, Probes: prior}); err != nil {
			t.Fatal(err)
		}
		bad, err := store.Check(ctx, st, loc, store.Window{From: base.Add(-2 * time.Hour), To: base.Add(8 * time.Hour)}, nil)
		if err != nil || len(bad) > 0 {
			t.Fatalf("case %d (prior %+v): hours that disagree with their probes: %v, %v", i, q, bad, err)
		}
	}
}

func sameHourly(a, b []store.Hourly) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !store.SameHourly(a[i], b[i]) {
			return false
		}
	}
	return true
}
