package store_test

// These tests pin rules of Aggregate, Recorder and Rebuild that mutation
// testing (issue 22) found no test deciding; each names the mutant it
// kills. Expected values are worked by hand.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

// mutStore is a Store in memory: Probes returns every stored probe (or
// readErr), Write appends what it is given (or fails from its failAt-th
// call on, counting from 1). It counts its calls.
type mutStore struct {
	probes  []store.Probe
	readErr error
	failAt  int
	writes  int
	written []store.Probe
	hourly  []store.Hourly
	reads   int
}

var errMutWrite = errors.New("write refused")

func (s *mutStore) Write(_ context.Context, ps []store.Probe, hs []store.Hourly) error {
	s.writes++
	if s.failAt > 0 && s.writes >= s.failAt {
		return errMutWrite
	}
	s.written = append(s.written, ps...)
	s.hourly = append(s.hourly, hs...)
	return nil
}

func (s *mutStore) Probes(context.Context, store.Query) ([]store.Probe, error) {
	s.reads++
	if s.readErr != nil {
		return nil, s.readErr
	}
	return slices.Clone(s.probes), nil
}

func (s *mutStore) Hourly(context.Context, store.Query) ([]store.Hourly, error) { return nil, nil }
func (s *mutStore) Close() error                                                { return nil }

// mutSpool is a mutStore that is also a Deferrer, like a Spool: Defer
// keeps the points (or fails with deferErr).
type mutSpool struct {
	mutStore
	deferErr       error
	deferred       []store.Probe
	deferredHourly []store.Hourly
	defers         int
}

func (s *mutSpool) Defer(_ context.Context, ps []store.Probe, hs []store.Hourly) error {
	s.defers++
	if s.deferErr != nil {
		return s.deferErr
	}
	s.deferred = append(s.deferred, ps...)
	s.deferredHourly = append(s.deferredHourly, hs...)
	return nil
}

var mutHour = time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)

func mutOK(lane string, at time.Time, queue float64) store.Probe {
	return store.Probe{Lane: lane, Kind: "free", Time: at, QueueS: queue, GenS: 1, Tokens: 8, OK: true, Outcome: "ok"}
}

// worst_censored_s is the longest wait a failed probe sat through, whatever
// the order of the failures. Kills aggregate.go `num.Finite(bound) && bound
// > h.WorstCensoredS` → `||` (the last failed wait would win).
func TestAggregateWorstCensoredIsTheLongest(t *testing.T) {
	fail := func(outcome string, queue float64) store.Probe {
		return store.Probe{Lane: "l", Kind: "free", QueueS: queue, Outcome: outcome}
	}
	for _, c := range []struct {
		name   string
		probes []store.Probe
		want   float64
	}{
		{"longest first", []store.Probe{fail("timeout", 120), fail("timeout", 9)}, 120},
		{"longest last", []store.Probe{fail("timeout", 9), fail("timeout", 120)}, 120},
		{"longest in the middle", []store.Probe{fail("empty", 3), fail("timeout", 30), fail("stream_error", 0)}, 30},
		{"an ok probe's queue is not censored", []store.Probe{mutOK("l", mutHour, 50), fail("timeout", 4)}, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := store.Aggregate("l", "free", "", mutHour, c.probes)
			if h.WorstCensoredS != c.want {
				t.Fatalf("worst_censored_s = %v, want %v", h.WorstCensoredS, c.want)
			}
		})
	}
}

// Record reads the hour, adds the round and writes probes and refreshed
// hours in one Write.
func TestRecordWritesTheRoundWithItsHour(t *testing.T) {
	st := &mutStore{probes: []store.Probe{mutOK("l", mutHour.Add(5*time.Minute), 2)}}
	fresh := []store.Probe{mutOK("l", mutHour.Add(25*time.Minute), 7)}
	got, err := store.NewRecorder(st, time.UTC).Record(context.Background(), fresh)
	if err != nil || got.Deferred {
		t.Fatalf("Record = %+v, %v; want written, nil", got, err)
	}
	// The hour holds both probes: worst queue 7, 2 samples, 8 tokens / 1 s.
	want := store.Hourly{Lane: "l", Kind: "free", Hour: mutHour, WorstQueueS: 7, WorstGenS: 1, MinTokPerS: 8, Samples: 2, Eligible: true}
	if len(got.Hourly) != 1 || got.Hourly[0] != want {
		t.Fatalf("Record hourly %+v, want [%+v]", got.Hourly, want)
	}
	if st.writes != 1 || !slices.Equal(st.written, fresh) || !slices.Equal(st.hourly, got.Hourly) {
		t.Fatalf("%d writes of %v and %v, want one of the round and its hour", st.writes, st.written, st.hourly)
	}
}

// Record's failures: which read errors go to the spool, and that a failed
// spool or write is never reported as stored. Kills recorder.go `!ok ||
// !errors.Is(err, ErrUnavailable)` → `&&`, the Defer error dropped, and the
// Write error dropped.
func TestRecordFailures(t *testing.T) {
	unavailable := fmt.Errorf("dial influx: %w", store.ErrUnavailable)
	errRead := errors.New("http 401: token revoked")
	errDefer := errors.New("spool: disk full")
	round := []store.Probe{mutOK("l", mutHour.Add(25*time.Minute), 7)}
	for _, c := range []struct {
		name      string
		store     store.Store
		wantErr   []error // each errors.Is the error; nil: no error
		deferred  bool    // Recorded.Deferred
		deferCall int     // Defer calls
	}{
		{"unreadable, spooling: deferred", &mutSpool{mutStore: mutStore{readErr: unavailable}}, nil, true, 1},
		{"unreadable, spool refuses: an error naming both",
			&mutSpool{mutStore: mutStore{readErr: unavailable}, deferErr: errDefer}, []error{store.ErrUnavailable, errDefer}, false, 1},
		{"read refused for good, spooling: returned, not spooled",
			&mutSpool{mutStore: mutStore{readErr: errRead}}, []error{errRead}, false, 0},
		{"unreadable, no spool: returned", &mutStore{readErr: unavailable}, []error{store.ErrUnavailable}, false, 0},
		{"write refused: returned", &mutSpool{mutStore: mutStore{failAt: 1}}, []error{errMutWrite}, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := store.NewRecorder(c.store, time.UTC).Record(context.Background(), round)
			if c.wantErr == nil && err != nil {
				t.Fatalf("Record error %v, want nil", err)
			}
			if c.wantErr != nil && err == nil {
				t.Fatalf("Record = %+v, nil; want an error", got)
			}
			for _, want := range c.wantErr {
				if !errors.Is(err, want) {
					t.Errorf("error %v does not wrap %v", err, want)
				}
			}
			if got.Deferred != c.deferred || (err != nil && got.Hourly != nil) {
				t.Errorf("Record = %+v, want deferred %v and no hours on an error", got, c.deferred)
			}
			if ds, ok := c.store.(*mutSpool); ok {
				if ds.defers != c.deferCall {
					t.Errorf("%d Defer calls, want %d", ds.defers, c.deferCall)
				}
				if c.deferred && (!slices.Equal(ds.deferred, round) || ds.deferredHourly != nil || ds.writes != 0) {
					t.Errorf("spooled %v and %v with %d writes; want the round's probes alone, no write", ds.deferred, ds.deferredHourly, ds.writes)
				}
			}
		})
	}
}

// mutHours returns one probe of lane l in each of n consecutive hours
// from mutHour, and the lane-hours they touch.
func mutHours(n int) ([]store.Probe, []store.LaneHour) {
	var ps []store.Probe
	var touched []store.LaneHour
	for i := range n {
		h := mutHour.Add(time.Duration(i) * time.Hour)
		ps = append(ps, mutOK("l", h.Add(time.Minute), float64(i%7)))
		touched = append(touched, store.LaneHour{Lane: "l", Hour: h})
	}
	return ps, touched
}

// Rebuild writes every hour, in batches of 5,000, and stops at the first
// batch refused, returning what it wrote. 5,001 hours take two writes.
// Kills recorder.go writeHourly `err != nil` → `==` (only the first batch
// written), its `return n, err` dropped, and Rebuild's write error or read
// error swallowed.
func TestRebuildInBatches(t *testing.T) {
	const n = 5001
	probes, touched := mutHours(n)
	for _, c := range []struct {
		name     string
		failAt   int // the Write call that fails first (0: none)
		readErr  error
		writes   int // Write calls made
		returned int // hourly points returned
		stored   int // hourly points the store kept
	}{
		{"all written", 0, nil, 2, n, n},
		{"second batch refused", 2, nil, 2, 5000, 5000},
		{"first batch refused", 1, nil, 1, 0, 0},
		{"unreadable", 0, errors.New("http 404: database not found"), 0, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := &mutStore{probes: probes, failAt: c.failAt, readErr: c.readErr}
			got, err := store.Rebuild(context.Background(), st, time.UTC, touched)
			if wantErr := c.failAt > 0 || c.readErr != nil; (err != nil) != wantErr {
				t.Fatalf("Rebuild error %v, want an error: %v", err, wantErr)
			}
			if c.failAt > 0 && !errors.Is(err, errMutWrite) || c.readErr != nil && !errors.Is(err, c.readErr) {
				t.Errorf("error %v does not wrap the store's", err)
			}
			if st.writes != c.writes || len(got) != c.returned || len(st.hourly) != c.stored {
				t.Fatalf("%d writes, %d returned, %d stored; want %d, %d, %d",
					st.writes, len(got), len(st.hourly), c.writes, c.returned, c.stored)
			}
			if len(st.written) != 0 {
				t.Errorf("Rebuild wrote %d probes, want none (hours only)", len(st.written))
			}
			// What was returned is what was stored, hour by hour, each the
			// aggregate of its one probe.
			for i, h := range got {
				want := store.Hourly{Lane: "l", Kind: "free", Hour: mutHour.Add(time.Duration(i) * time.Hour),
					WorstQueueS: float64(i % 7), WorstGenS: 1, MinTokPerS: 8, Samples: 1, Eligible: true}
				if h != want || st.hourly[i] != want {
					t.Fatalf("hour %d: returned %+v, stored %+v, want %+v", i, h, st.hourly[i], want)
				}
			}
		})
	}
}

// After a replay the hours of the replayed probes are rebuilt; a refused
// rebuild is the replay's error.
func TestRebuildAfterReplay(t *testing.T) {
	probes, _ := mutHours(2)
	st := &mutStore{probes: probes}
	if err := store.RebuildAfterReplay(time.UTC)(context.Background(), st, probes); err != nil || len(st.hourly) != 2 {
		t.Fatalf("rebuild after replay: %v, %d hours; want nil, 2", err, len(st.hourly))
	}
	st = &mutStore{probes: probes, failAt: 1}
	if err := store.RebuildAfterReplay(time.UTC)(context.Background(), st, probes); !errors.Is(err, errMutWrite) {
		t.Fatalf("rebuild after replay with a refused write: %v, want the write's error", err)
	}
}

// A probe with gen_s 0 gives no rate, whatever its token count (an
// imported point may hold a negative one): -5 / 0 would be -Inf.
func TestAggregateNoRateWithoutGen(t *testing.T) {
	p := store.Probe{Lane: "l", Kind: "free", QueueS: 3, GenS: 0, Tokens: -5, OK: true, Outcome: "ok"}
	h := store.Aggregate("l", "free", "", mutHour, []store.Probe{p, mutOK("l", mutHour, 1)})
	if h.MinTokPerS != 8 {
		t.Fatalf("min_tok_per_s = %v, want 8 (the one probe with a gen_s)", h.MinTokPerS)
	}
}
