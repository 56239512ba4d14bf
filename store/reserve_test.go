package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

func TestBooked(t *testing.T) {
	dead := &store.RefusedError{Points: 2, Status: 403, DeadLetter: "dead.lp", Err: errors.New("403")}
	for _, c := range []struct {
		name    string
		err     error
		durable bool
	}{
		{"stored or spooled", nil, true},
		{"refused into the dead-letter file", dead, true},
		{"refused, kept nowhere", &store.RefusedError{Points: 2, Status: 403, Err: errors.New("403")}, false},
		{"a dead letter joined with a loss", errors.Join(dead, errors.New("spool is full")), false},
		{"disk full", fmt.Errorf("write: %w", os.ErrPermission), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := store.Booked(c.err) == nil; got != c.durable {
				t.Errorf("Booked(%v) durable = %v, want %v", c.err, got, c.durable)
			}
		})
	}
}

// refusing is a store that refuses every write for good.
type refusing struct{ store.Store }

func (refusing) Write(context.Context, []store.Probe, []store.Hourly) error {
	return &store.RefusedError{Status: 403, Err: errors.New("403 Forbidden")}
}

// A probe the store refused was sent: the spool's reads merge the
// dead-letter file's probes (after a restart too), LocalProbes reads them
// without the store, and a dead-lettered reservation never replaces the
// probe that settled it.
func TestSpoolReadsMergeTheDeadLetter(t *testing.T) {
	dir := t.TempDir()
	file, err := store.OpenFile(filepath.Join(dir, "samples.lp"), store.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	so := store.SpoolOptions{Path: filepath.Join(dir, "spool.lp"), DeadLetter: filepath.Join(dir, "dead.lp")}
	ctx := context.Background()
	sp, err := store.OpenSpool(refusing{nopClose{file}}, so)
	if err != nil {
		t.Fatal(err)
	}
	booked := store.Probe{Lane: "a", Kind: "free", Time: at, Outcome: store.OutcomeReserved}
	refused := store.Probe{Lane: "b", Kind: "free", Time: at, Outcome: "rate_limited", Status: 429}
	if err := store.Booked(sp.Write(ctx, []store.Probe{booked, refused}, nil)); err != nil {
		t.Fatalf("the refused points are not in the dead-letter file: %v", err)
	}
	settled := booked
	settled.Outcome, settled.OK, settled.QueueS = "ok", true, 1
	if err := file.Write(ctx, []store.Probe{settled}, nil); err != nil {
		t.Fatal(err)
	}
	_ = sp.Close()
	sp, err = store.OpenSpool(nopClose{file}, so) // a new process
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	q := store.Between(at.Add(-time.Hour), at.Add(time.Hour))
	ps, err := sp.Probes(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0].Outcome != "ok" || ps[1].Outcome != "rate_limited" {
		t.Fatalf("read %+v; want a settled ok and the refused 429", ps)
	}
	local, err := sp.LocalProbes(ctx, q)
	if err != nil || len(local) != 2 {
		t.Fatalf("LocalProbes = %+v, %v; want the 2 dead-lettered points", local, err)
	}
}

type nopClose struct{ store.Store }

func (nopClose) Close() error { return nil }
