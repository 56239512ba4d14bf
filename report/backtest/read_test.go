package backtest_test

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/lanesim"
	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/report/backtest"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
)

// backtestHistory is 5 days of generated history for three lanes, and a
// backtest of its last two days.
var (
	backtestHistory = lanesim.HistoryOptions{
		Start: time.Date(2026, 10, 30, 0, 0, 0, 0, time.UTC),
		Days:  5,
		Seed:  11,
		Lanes: []lanesim.HistoryLane{{Name: "free", Kind: "free"}, {Name: "free2", Kind: "free"}, {Name: "paid", Kind: "paid"}},
	}
	backtestOptions = backtest.Options{
		Params: policy.Params{Location: time.UTC, LookbackDays: 1,
			Lanes:   []policy.LaneSpec{{Name: "free", Kind: "free"}, {Name: "free2", Kind: "free"}, {Name: "paid", Kind: "paid"}},
			Classes: []policy.ClassSpec{{Name: "interactive", DeadlineS: 60, CeilingTokens: 4000, EstTokens: 800, PaidUSDPer1k: 0.002}}},
		From: time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC),
		To:   time.Date(2026, 11, 4, 0, 0, 0, 0, time.UTC),
	}
)

// historyFile returns a file store holding backtestHistory as the sampler
// writes it (rounds in time order, through a Recorder), then late the
// probes of late, as an import of older history appends them.
func historyFile(t *testing.T, late []store.Probe) *file.Store {
	t.Helper()
	st, err := file.Open(filepath.Join(t.TempDir(), "samples.lp"), file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	rec := store.NewRecorder(st, time.UTC)
	if err := lanesim.History(backtestHistory, func(day []store.Probe, _ []lanesim.ProbeTruth) error {
		_, err := rec.Record(context.Background(), day)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := st.Write(context.Background(), store.Batch{Probes: late}); err != nil {
		t.Fatal(err)
	}
	return st
}

// Backtest replays every probe of the window and of its warm-up before
// From once, in time order: the report of a file with older history appended late is
// that of the same probes in order, and it counts every probe the store
// holds there.
func TestBacktestReadsEveryProbeOnce(t *testing.T) {
	ctx := context.Background()
	old := store.Probe{Lane: "free", Kind: "free", Time: backtestOptions.From.Add(-12*time.Hour + time.Second), QueueS: 7, OK: true, Outcome: "ok"}
	late := historyFile(t, []store.Probe{old})
	all, err := store.ReadProbes(ctx, late, store.Between(backtestOptions.ReadFrom(), backtestOptions.To))
	if err != nil {
		t.Fatal(err)
	}
	inOrder := historyFile(t, nil)
	if err := inOrder.Write(ctx, store.Batch{Probes: []store.Probe{old}}); err != nil {
		t.Fatal(err)
	}
	var reports []backtest.Report
	for _, st := range []store.Store{late, inOrder} {
		rep, first, err := backtest.Read(ctx, st, backtestOptions)
		if err != nil {
			t.Fatal(err)
		}
		if rep.ProbesRead != len(all) || len(all) < 500 || !first.Equal(all[0].Time) || !rep.ReadFrom.Equal(backtestOptions.ReadFrom()) {
			t.Errorf("read %d probes from %s, the first at %s; the store holds %d from %s, the first at %s",
				rep.ProbesRead, rep.ReadFrom, first, len(all), backtestOptions.ReadFrom(), all[0].Time)
		}
		// The warm-up read before From gives the window's first probes a
		// policy: none is scored as never sampled.
		for _, l := range rep.Calibration[0].Lanes {
			if l.NoPolicy != 0 {
				t.Errorf("lane %s: %d probes without a policy", l.Lane, l.NoPolicy)
			}
		}
		reports = append(reports, rep)
	}
	if !reflect.DeepEqual(reports[0], reports[1]) {
		t.Errorf("the report of a file with a probe appended late differs from the report of the same probes in order")
	}
}

// failing is a store whose reads fail.
type failing struct{ store.Store }

func (failing) Read(context.Context, store.Query, store.Reader) error {
	return errors.New("disk on fire")
}

// failingLate is a store whose reads fail after one probe.
type failingLate struct{ store.Store }

func (failingLate) Read(_ context.Context, _ store.Query, r store.Reader) error {
	if err := r.Probe(store.Probe{Lane: "free", Kind: "free", Time: backtestOptions.From, QueueS: 1, OK: true, Outcome: "ok"}); err != nil {
		return err
	}
	return errors.New("disk on fire")
}

// A store error ends the backtest with it, even after some probes were
// read, as does a cancelled context.
func TestBacktestStopsOnErrors(t *testing.T) {
	for _, st := range []store.Store{failing{}, failingLate{}} {
		if _, _, err := backtest.Read(context.Background(), st, backtestOptions); err == nil || !strings.Contains(err.Error(), "store: read probes: disk on fire") {
			t.Errorf("%T: store error: %v", st, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := backtest.Read(ctx, historyFile(t, nil), backtestOptions); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// A store with no probe in the window gives the report of nothing read,
// and no first probe.
func TestBacktestOfAnEmptyStore(t *testing.T) {
	st, err := file.Open(filepath.Join(t.TempDir(), "samples.lp"), file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	rep, first, err := backtest.Read(context.Background(), st, backtestOptions)
	if err != nil || rep.ProbesRead != 0 || !first.IsZero() {
		t.Errorf("read %d probes, the first at %s, error %v; want none, no first, no error", rep.ProbesRead, first, err)
	}
}
