package spool_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
	"github.com/lanewatch/lanewatch/store/spool"
)

// besideOf is a Beside spool on the spool at path, whose inner store
// reads the writer's inner file and fails every write as sw says.
func besideOf(t *testing.T, inner, path string, mode string) (*spool.Spool, *switchStore) {
	t.Helper()
	ro, err := file.Open(inner, file.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ro.Close() })
	sw := &switchStore{Store: ro, mode: mode, status: 404}
	sp, err := spool.Open(sw, spool.Options{Path: path, Beside: true})
	if err != nil {
		t.Fatal(err)
	}
	return sp, sw
}

// A Beside spool (sampler probe next to the daemon) writes to the store,
// and leaves in the spool's inbox what the store fails, passing or
// refused: every reader counts its probes at once (the spool's writer,
// the process beside, a read-only reader), and the writer's next write
// moves them into its spool and replays them, rebuilding their hours,
// refused ones to the dead-letter file.
func TestBesideSpoolLeavesWhatTheStoreFailsInTheInbox(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	inner := newSwitchStore(t, "up", 0)
	path := filepath.Join(dir, "spool.lp")
	w, err := spool.Open(inner, spool.Options{Path: path, DeadLetter: filepath.Join(dir, "dead.lp"), Hours: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Write(ctx, store.Batch{}); err != nil { // the writer's inner file exists
		t.Fatal(err)
	}
	b, sw := besideOf(t, inner.Status().Where, path, "down")
	defer b.Close()
	hour := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	p := store.Probe{Lane: "a", Kind: "free", Time: hour.Add(time.Minute), QueueS: 2, GenS: 1, Tokens: 8, OK: true, Outcome: "ok", Status: 200}
	h := store.Aggregate("a", "free", "", hour, []store.Probe{p})
	if err := b.Write(ctx, store.Batch{Probes: []store.Probe{p}, Hourly: []store.Hourly{h}}); err != nil {
		t.Fatalf("a write the store fails: %v, want it left in the inbox", err)
	}
	if n := b.Status().Spooled; n != 2 {
		t.Errorf("the Beside spool says %d points wait, want 2", n)
	}
	inbox := path + store.InboxSuffix
	if b.Status().Inbox != inbox {
		t.Errorf("inbox %s, want %s", b.Status().Inbox, inbox)
	}
	ro, err := spool.Open(inner, spool.Options{Path: path, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	q := store.Between(hour, hour.Add(time.Hour))
	for name, st := range map[string]store.Store{"the writer": w, "the process beside": b, "a reader": ro} {
		ps, err := store.ReadProbes(ctx, st, q)
		if err != nil || len(ps) != 1 || ps[0] != p {
			t.Errorf("%s reads %+v, %v; want the probe in the inbox", name, ps, err)
		}
	}
	if local, err := store.ReadProbes(ctx, w, q); /*LOCAL*/ err != nil || len(local) != 1 {
		t.Errorf("the writer's local files give %+v, %v; want the probe in the inbox", local, err)
	}

	sw.set("refuse", 404) // refused for good: the writer's replay sorts it out
	r := store.Probe{Lane: "b", Kind: "free", Time: hour.Add(2 * time.Minute), Outcome: "timeout", QueueS: 30}
	if err := b.Write(ctx, store.Batch{Probes: []store.Probe{r}}); err != nil {
		t.Fatalf("a write the store refuses: %v, want it left in the inbox", err)
	}

	// The writer's next write: the inbox joins its spool and is replayed,
	// and the hours of its probes rebuilt.
	if err := w.Write(ctx, store.Batch{}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(inbox); err != nil || fi.Size() != 0 || w.Status().Spooled != 0 {
		t.Fatalf("inbox after the writer's write: %v, %v, spool depth %d; want both empty", fi, err, w.Status().Spooled)
	}
	stored, err := store.ReadProbes(ctx, inner, q)
	if err != nil || len(stored) != 2 || stored[0] != p || stored[1] != r {
		t.Fatalf("the store holds %+v, %v; want the two probes left in the inbox", stored, err)
	}
	bad, err := store.Check(ctx, inner, time.UTC, store.Window{From: hour, To: hour.Add(time.Hour)}, nil)
	if err != nil || len(bad) != 0 {
		t.Errorf("hours that disagree with their probes: %v, %v", bad, err)
	}
}

// Processes beside the writer append to the inbox while the writer takes
// it over at each write (it empties the inbox under the inbox's flock):
// no point is lost or read twice, whatever the interleaving.
func TestInboxLosesNothingToTheWritersTakeOver(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	inner := newSwitchStore(t, "up", 0)
	path := filepath.Join(dir, "spool.lp")
	w, err := spool.Open(inner, spool.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Write(ctx, store.Batch{}); err != nil {
		t.Fatal(err)
	}
	const besides, each = 6, 25
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	errs := make(chan error, besides*each)
	for i := range besides {
		b, _ := besideOf(t, inner.Status().Where, path, "down")
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer b.Close()
			for j := range each {
				p := store.Probe{Lane: fmt.Sprintf("l%d", i), Kind: "free", Time: base.Add(time.Duration(j) * time.Second), Outcome: "ok", OK: true}
				errs <- b.Write(ctx, store.Batch{Probes: []store.Probe{p}})
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		if err := w.Write(ctx, store.Batch{}); err != nil {
			t.Fatal(err)
		}
	}
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	ps, err := store.ReadProbes(ctx, inner, store.Between(base, base.Add(time.Hour)))
	if err != nil || len(ps) != besides*each {
		t.Fatalf("the store holds %d probes, %v; want %d", len(ps), err, besides*each)
	}
	lines := strings.Count(readFile(t, inner.Status().Where), "\nprobe,") + 1
	if lines != besides*each {
		t.Errorf("the store's file has %d probe lines, want %d (none replayed twice)", lines, besides*each)
	}
}
