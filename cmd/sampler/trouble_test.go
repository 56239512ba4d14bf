package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/sampler"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
)

// A failed round's log line says where its points went (issue 18: never
// nowhere without saying so).
func TestRoundTroubleSaysWhere(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("book the round: %w: disk full", sampler.ErrNotBooked), "round not probed"},
		{fmt.Errorf("store round: %w: 401", store.ErrHoursNotRebuilt), "stored without its hours"},
		{fmt.Errorf("store round: %w", &store.RefusedError{Points: 2, DeadLetter: "data/dead.lp", Err: errors.New("403")}), "dead-letter file data/dead.lp"},
		{errors.New("store round: spool is full"), "reservations, written before the probes, still count them"},
	} {
		if got := roundTrouble(c.err); !strings.Contains(got, c.want) {
			t.Errorf("roundTrouble(%v) = %q, want it to say %q", c.err, got, c.want)
		}
	}
}

// rollup -check names an hour that disagrees because it holds a
// reservation not settled (incomplete), and rollup then counts it.
func TestRollupCheckNamesIncompleteHours(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "@every 1s", map[string]string{"free": "http://127.0.0.1:9"})
	st, err := file.Open(filepath.Join(dir, "samples.lp"), file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-2 * time.Hour).Truncate(time.Hour).Add(10 * time.Minute)
	ctx := context.Background()
	ok := store.Probe{Lane: "free", Kind: "free", Time: at, QueueS: 1, GenS: 1, Tokens: 4, OK: true, Outcome: "ok", Status: 200}
	if _, err := store.NewRecorder(st, time.UTC).Record(ctx, []store.Probe{ok}); err != nil {
		t.Fatal(err)
	}
	booked := store.Probe{Lane: "free", Kind: "free", Time: at.Add(time.Minute), Outcome: store.OutcomeReserved}
	if err := st.Write(ctx, store.Batch{Probes: []store.Probe{booked}}); err != nil { // a sampler killed mid-probe
		t.Fatal(err)
	}
	_ = st.Close()
	var stdout, stderr bytes.Buffer
	err = run(ctx, []string{"rollup", "-config", cfg, "-check"}, &stdout, &stderr, env)
	if err == nil || !strings.Contains(stdout.String(), "incomplete: the hour holds a reservation not settled") {
		t.Fatalf("rollup -check = %v\n%s; want the hour named incomplete", err, stdout.String())
	}
	stdout.Reset()
	if err := run(ctx, []string{"rollup", "-config", cfg}, &stdout, &stderr, env); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	if err := run(ctx, []string{"rollup", "-config", cfg, "-check"}, &stdout, &stderr, env); err != nil {
		t.Fatalf("rollup -check after rollup = %v\n%s", err, stdout.String())
	}
}
