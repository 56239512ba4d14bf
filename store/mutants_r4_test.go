package store_test

// Tests written for gremlins' survivors in aggregate.go, recorder.go and
// reserve.go (issue 22, fourth round); each names the mutant it kills.
// Expected values are worked by hand from docs/schema.md.

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

// Prior.Rebuild names lane-hours to rewrite beside those the round's
// probes fall in: a reservation of an earlier hour that was never settled
// must count in its hour as a sample and a failure whose wait is unknown
// (docs/schema.md, "Reservations"), so the hour it made eligible no longer
// is. The extra lane-hour's time is keyed to its hour's start in the
// recorder's zone (Asia/Kolkata: hours start at :30 UTC), and naming it
// twice, or naming the round's own hour, writes each hour once.
// Kills recorder.go touchedWith `len(extra) == 0` → `!= 0` (extras
// ignored), `!seen[t]` → `seen[t]`, and the `hourOf` of the extra's hour
// dropped.
func TestRecordWithRebuildsTheNamedHours(t *testing.T) {
	kolkata, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		t.Skip(err)
	}
	h1 := time.Date(2026, 11, 30, 8, 30, 0, 0, time.UTC) // 14:00 in Kolkata
	h2 := h1.Add(time.Hour)
	stale := store.Probe{Lane: "a", Kind: "free", Time: h1.Add(10 * time.Minute), Outcome: store.OutcomeReserved}
	earlier := mutOK("a", h1.Add(5*time.Minute), 3)
	fresh := []store.Probe{mutOK("a", h2.Add(5*time.Minute), 2)}
	for _, tc := range []struct {
		name    string
		rebuild []store.LaneHour
		want    []store.Hourly
	}{
		{"none named: the round's hour alone", nil, []store.Hourly{
			{Lane: "a", Kind: "free", Hour: h2, WorstQueueS: 2, WorstGenS: 1, MinTokPerS: 8, Samples: 1, Eligible: true},
		}},
		{"the reservation's hour, by an instant inside it, twice, and the round's own", []store.LaneHour{
			{Lane: "a", Hour: stale.Time}, {Lane: "a", Hour: h1.Add(59 * time.Minute)}, {Lane: "a", Hour: h2},
		}, []store.Hourly{
			// 14:00: the ok probe and the reservation: 2 samples, 1 failure, not eligible, no censored wait.
			{Lane: "a", Kind: "free", Hour: h1, WorstQueueS: 3, WorstGenS: 1, MinTokPerS: 8, Samples: 2, Failures: 1},
			{Lane: "a", Kind: "free", Hour: h2, WorstQueueS: 2, WorstGenS: 1, MinTokPerS: 8, Samples: 1, Eligible: true},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &mutStore{probes: []store.Probe{earlier, stale}}
			got, err := store.NewRecorder(st, kolkata).RecordWith(context.Background(), fresh, store.Prior{Rebuild: tc.rebuild})
			if err != nil {
				t.Fatal(err)
			}
			if !sameHourly(got.Hourly, tc.want) || !sameHourly(st.hourly, tc.want) {
				t.Errorf("hour records %+v, written %+v; want %+v", got.Hourly, st.hourly, tc.want)
			}
		})
	}
}

// laterStore is a mutStore that rebuilds hours later, as a Spool with
// AfterReplay does (RebuildLater).
type laterStore struct {
	mutStore
	later []store.Probe
}

func (s *laterStore) RebuildLater(ps []store.Probe) { s.later = append(s.later, ps...) }

// A read refused for a reason that does not pass (a 401) still stores the
// round's probes, without their hours, and says so with ErrHoursNotRebuilt
// (which promises the probes are stored); a store that rebuilds later is
// handed the probes. When that write fails too, the error names the write
// and is no ErrHoursNotRebuilt: nothing was stored.
// Kills recorder.go unread `werr != nil` → `==`.
func TestRecordUnreadableWritesTheProbes(t *testing.T) {
	errRead := errors.New("http 401: token revoked")
	round := []store.Probe{mutOK("l", mutHour.Add(25*time.Minute), 7)}
	for _, tc := range []struct {
		name      string
		st        store.Store
		want      []error
		notWant   error
		written   []store.Probe
		rebuildOf func(store.Store) []store.Probe
	}{
		{"written, hours not rebuilt", &mutStore{readErr: errRead}, []error{store.ErrHoursNotRebuilt, errRead}, nil, round, nil},
		{"written, rebuilt later", &laterStore{mutStore: mutStore{readErr: errRead}}, []error{store.ErrHoursNotRebuilt, errRead}, nil, round,
			func(st store.Store) []store.Probe { return st.(*laterStore).later }},
		{"the write refused too", &mutStore{readErr: errRead, failAt: 1}, []error{errMutWrite, errRead}, store.ErrHoursNotRebuilt, nil, nil},
		{"the write refused, a later rebuilder", &laterStore{mutStore: mutStore{readErr: errRead, failAt: 1}}, []error{errMutWrite, errRead}, store.ErrHoursNotRebuilt, nil,
			func(st store.Store) []store.Probe { return st.(*laterStore).later }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := store.NewRecorder(tc.st, time.UTC).Record(context.Background(), round)
			for _, w := range tc.want {
				if !errors.Is(err, w) {
					t.Errorf("error %v does not wrap %v", err, w)
				}
			}
			if tc.notWant != nil && errors.Is(err, tc.notWant) {
				t.Errorf("error %v wraps %v", err, tc.notWant)
			}
			var ms *mutStore
			switch st := tc.st.(type) {
			case *mutStore:
				ms = st
			case *laterStore:
				ms = &st.mutStore
			}
			if got.Hourly != nil || got.Deferred || !slices.Equal(ms.written, tc.written) || ms.hourly != nil {
				t.Errorf("Record = %+v; stored %v and hours %v, want %v and none", got, ms.written, ms.hourly, tc.written)
			}
			if tc.rebuildOf != nil {
				if later := tc.rebuildOf(tc.st); !slices.Equal(later, tc.written) {
					t.Errorf("handed %v to rebuild later, want %v", later, tc.written)
				}
			}
		})
	}
}
