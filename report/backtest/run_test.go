package backtest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/lanesim"
	"github.com/lanewatch/lanewatch/store"
)

// feedHistory is 5 days of generated history for three lanes, ending at
// feedEnd.
var (
	feedHistory = lanesim.HistoryOptions{
		Start: time.Date(2026, 10, 30, 0, 0, 0, 0, time.UTC),
		Days:  5,
		Seed:  11,
		Lanes: []lanesim.HistoryLane{{Name: "free", Kind: "free"}, {Name: "free2", Kind: "free"}, {Name: "paid", Kind: "paid"}},
	}
	feedEnd = time.Date(2026, 11, 4, 0, 0, 0, 0, time.UTC)
)

// historyFile returns a file store holding feedHistory as the sampler
// writes it (rounds in time order, through a Recorder).
func historyFile(t *testing.T) *store.File {
	t.Helper()
	st, err := store.OpenFile(filepath.Join(t.TempDir(), "samples.lp"), store.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	rec := store.NewRecorder(st, time.UTC)
	if err := lanesim.History(feedHistory, func(day []store.Probe) error {
		_, err := rec.Record(context.Background(), day)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestFeedReadsEverySpanOnce: the window is read in spans, every probe once,
// in time order.
func TestFeedReadsEverySpanOnce(t *testing.T) {
	st := historyFile(t)
	from, to := feedHistory.Start.Add(-time.Hour), feedEnd.Add(time.Hour)
	want, _ := st.Probes(context.Background(), store.Between(from, to))
	var got []store.Probe
	if err := feed(context.Background(), st, from, to, func(p store.Probe) error {
		got = append(got, p)
		return nil
	}, noRestart(t)); err != nil {
		t.Fatal(err)
	}
	if len(want) < 1000 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("feed gave %d probes, the store holds %d", len(got), len(want))
	}
}

func noRestart(t *testing.T) func() error {
	return func() error {
		t.Error("feed restarted over a store in time order")
		return nil
	}
}

// TestFeedRestartsOnAnOutOfOrderFile: an import appends older history
// after a month of sampler rounds; the one pass has handed out probes when
// it meets the old line, so feed restarts the replay and reads in spans:
// every probe once, in time order, as the store holds them.
func TestFeedRestartsOnAnOutOfOrderFile(t *testing.T) {
	st := historyFile(t)
	old := store.Probe{Lane: "free", Kind: "free", Time: feedHistory.Start.Add(36*time.Hour + time.Second), QueueS: 7, OK: true, Outcome: "ok"}
	if err := st.Write(context.Background(), []store.Probe{old}, nil); err != nil {
		t.Fatal(err)
	}
	from, to := feedHistory.Start.Add(-time.Hour), feedEnd.Add(time.Hour)
	want, _ := st.Probes(context.Background(), store.Between(from, to))
	var got []store.Probe
	restarts, before := 0, 0
	if err := feed(context.Background(), st, from, to, func(p store.Probe) error {
		got = append(got, p)
		return nil
	}, func() error {
		restarts++
		before, got = len(got), nil
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if restarts != 1 || before == 0 {
		t.Fatalf("%d restarts after %d probes; want one, after some", restarts, before)
	}
	if !slices.ContainsFunc(got, func(p store.Probe) bool { return p.Time.Equal(old.Time) }) || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("feed gave %d probes, the store holds %d", len(got), len(want))
	}
}

// spanStore serves probes of a fixed list and fails its failAt-th read.
type spanStore struct {
	store.Store // nil: only Probes is called
	probes      []store.Probe
	reads       int
	failAt      int
}

func (s *spanStore) Probes(_ context.Context, q store.Query) ([]store.Probe, error) {
	s.reads++
	if s.reads == s.failAt {
		return nil, errors.New("disk on fire")
	}
	var out []store.Probe
	for _, p := range s.probes {
		if q.Windows[0].Contains(p.Time) {
			out = append(out, p)
		}
	}
	return out, nil
}

func TestFeedStopsOnErrors(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var ps []store.Probe
	for i := range 24 * 60 {
		ps = append(ps, store.Probe{Lane: "free", Time: start.Add(time.Duration(i) * time.Hour)})
	}
	to := start.AddDate(0, 0, 60)
	st := &spanStore{probes: ps, failAt: 2}
	n := 0
	err := feed(context.Background(), st, start, to, func(store.Probe) error { n++; return nil }, noRestart(t))
	if err == nil || !strings.Contains(err.Error(), "store: read probes: disk on fire") || n != 7*24 {
		t.Errorf("store error: %v after %d probes, want it after the first week (168)", err, n)
	}
	stop := errors.New("enough")
	st = &spanStore{probes: ps}
	n = 0
	err = feed(context.Background(), st, start, to, func(store.Probe) error {
		if n++; n == 10 {
			return stop
		}
		return nil
	}, noRestart(t))
	if !errors.Is(err, stop) || n != 10 {
		t.Errorf("add error: %v after %d probes", err, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := feed(ctx, &spanStore{probes: ps}, start, to, func(store.Probe) error { return nil }, noRestart(t)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// Run reads the warm-up before From: with lookback 0, the first probe of
// the window (10:07) is scored against the policy built from 09:00's
// probes, not as never sampled.
func TestRunReadsTheBasisBeforeFrom(t *testing.T) {
	from := day0.AddDate(0, 0, 2).Add(10 * time.Hour)
	opts := Options{Params: params(0), From: from, To: from.Add(time.Hour)}
	st := &spanStore{probes: rounds(day0, opts.To, func(time.Time) (float64, bool) { return 5, true })}
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

// scanStore streams a fixed list of probes in time order.
type scanStore struct {
	store.Store // nil: only ScanProbes is called
	probes      []store.Probe
}

func (s *scanStore) ScanProbes(ctx context.Context, q store.Query, fn func(store.Probe) error) (bool, error) {
	for _, p := range s.probes {
		if !q.Windows[0].Contains(p.Time) {
			continue
		}
		if err := fn(p); err != nil {
			return true, err
		}
	}
	return true, ctx.Err()
}

// A streaming store hands over every probe, in order, in batches, however
// many batches it takes (run.go's `if addErr != nil { cancel() }` →
// `== nil` stopped the scan after the first batch).
func TestScanFeedHandsOverEveryBatch(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := &scanStore{}
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
	}, noRestart(t))
	if err != nil || n != 50_000 {
		t.Errorf("%v after %d probes, want all 50000", err, n)
	}
}

// The window is read a week first, then in spans as long as the probe
// rate seen so far allows readTarget probes (at most 92 days, at least
// one), or four times longer after an empty span. Over 60 days: hourly
// probes (24 a day: 75000/24 days, held to 92) take 2 reads; a probe every
// 20 s (4320 a day: 17.4 days, whole days: 17) takes 1 + 4 reads (53 days
// left); an empty store 7, 28 and 92 days: 3 reads.
func TestFeedSpanLengths(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	to := start.AddDate(0, 0, 60)
	for _, tc := range []struct {
		name  string
		every time.Duration // 0: no probes
		reads int
	}{
		{"hourly", time.Hour, 2},
		{"every 20 s", 20 * time.Second, 5},
		{"empty", 0, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &spanStore{failAt: 1000} // a runaway loop of reads fails
			if tc.every > 0 {
				for at := start; at.Before(to); at = at.Add(tc.every) {
					st.probes = append(st.probes, store.Probe{Lane: "free", Time: at})
				}
			}
			n := 0
			err := feed(context.Background(), st, start, to, func(store.Probe) error { n++; return nil }, noRestart(t))
			if err != nil || n != len(st.probes) || st.reads != tc.reads {
				t.Errorf("%v; %d probes of %d in %d reads, want all in %d", err, n, len(st.probes), st.reads, tc.reads)
			}
		})
	}
}
