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
	"github.com/lanewatch/lanewatch/store/file"
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
func historyFile(t *testing.T) *file.Store {
	t.Helper()
	st, err := file.Open(filepath.Join(t.TempDir(), "samples.lp"), file.Options{})
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

// TestFeedReadsEveryProbeOnce: every probe of the window once, in time
// order.
func TestFeedReadsEveryProbeOnce(t *testing.T) {
	st := historyFile(t)
	from, to := feedHistory.Start.Add(-time.Hour), feedEnd.Add(time.Hour)
	want, _ := store.ReadProbes(context.Background(), st, store.Between(from, to))
	var got []store.Probe
	if err := feed(context.Background(), st, from, to, func(p store.Probe) error {
		got = append(got, p)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(want) < 1000 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("feed gave %d probes, the store holds %d", len(got), len(want))
	}
}

// TestFeedOfAnOutOfOrderFile: an import appends older history after a
// month of sampler rounds; feed still hands over every probe once, in
// time order, as the store holds them.
func TestFeedOfAnOutOfOrderFile(t *testing.T) {
	st := historyFile(t)
	old := store.Probe{Lane: "free", Kind: "free", Time: feedHistory.Start.Add(36*time.Hour + time.Second), QueueS: 7, OK: true, Outcome: "ok"}
	if err := st.Write(context.Background(), store.Batch{Probes: []store.Probe{old}}); err != nil {
		t.Fatal(err)
	}
	from, to := feedHistory.Start.Add(-time.Hour), feedEnd.Add(time.Hour)
	want, _ := store.ReadProbes(context.Background(), st, store.Between(from, to))
	var got []store.Probe
	if err := feed(context.Background(), st, from, to, func(p store.Probe) error {
		got = append(got, p)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(got, func(p store.Probe) bool { return p.Time.Equal(old.Time) }) || fmt.Sprint(got) != fmt.Sprint(want) ||
		!slices.IsSortedFunc(got, func(a, b store.Probe) int { return a.Time.Compare(b.Time) }) {
		t.Errorf("feed gave %d probes, the store holds %d", len(got), len(want))
	}
}

// listStore streams a fixed list of probes in time order, failing after
// failAfter of them (0: never).
type listStore struct {
	store.Store // nil: only Read is called
	probes      []store.Probe
	failAfter   int
}

func (s *listStore) Read(ctx context.Context, q store.Query, r store.Reader) error {
	for i, p := range s.probes {
		if i > 0 && i == s.failAfter {
			return errors.New("disk on fire")
		}
		if !q.Windows[0].Contains(p.Time) || r.Probe == nil {
			continue
		}
		if err := r.Probe(p); err != nil {
			return err
		}
	}
	return ctx.Err()
}

func TestFeedStopsOnErrors(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var ps []store.Probe
	for i := range 24 * 60 {
		ps = append(ps, store.Probe{Lane: "free", Time: start.Add(time.Duration(i) * time.Hour)})
	}
	to := start.AddDate(0, 0, 60)
	st := &listStore{probes: ps, failAfter: 7 * 24}
	n := 0
	err := feed(context.Background(), st, start, to, func(store.Probe) error { n++; return nil })
	if err == nil || !strings.Contains(err.Error(), "store: read probes: disk on fire") || n > 7*24 {
		t.Errorf("store error: %v after %d probes, want it, and none of the probes after the failure", err, n)
	}
	stop := errors.New("enough")
	st = &listStore{probes: ps}
	n = 0
	err = feed(context.Background(), st, start, to, func(store.Probe) error {
		if n++; n == 10 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 10 {
		t.Errorf("add error: %v after %d probes", err, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := feed(ctx, &listStore{probes: ps}, start, to, func(store.Probe) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
