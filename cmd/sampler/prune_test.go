package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
)

// writeRetention writes a file-store config with store.retention_days and
// a store holding a probe, an hourly record and a heartbeat 5 days old and
// a probe and a heartbeat of an hour ago.
func writeRetention(t *testing.T, days int) (cfgPath, storePath string, now time.Time) {
	t.Helper()
	dir := t.TempDir()
	cfgPath = filepath.Join(dir, "lanewatch.yaml")
	src := "schedule: \"@every 1h\"\nstore: {kind: file, path: samples.lp, retention_days: " + strconv.Itoa(days) + "}\n" +
		"lanes:\n  - {name: free, kind: free, api: openai, base_url: \"http://127.0.0.1:1/v1\", model: m}\npolicy: {out: policies, rule: max}\n"
	if err := os.WriteFile(cfgPath, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	storePath = filepath.Join(dir, "samples.lp")
	st, err := file.Open(storePath, file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now = time.Now().UTC().Truncate(time.Second)
	old := now.Add(-5 * 24 * time.Hour)
	probe := func(at time.Time) store.Probe {
		return store.Probe{Lane: "free", Kind: "free", Time: at, QueueS: 1, GenS: 1, Tokens: 8, OK: true, Outcome: "ok", Status: 200}
	}
	err = st.Write(context.Background(), store.Batch{Probes: []store.Probe{probe(old), probe(now.Add(-time.Hour))}, Hourly: []store.Hourly{{Lane: "free", Kind: "free", Hour: old.Truncate(time.Hour), WorstQueueS: 1, WorstGenS: 1, MinTokPerS: 8, Samples: 1, Eligible: true}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Time{old, now.Add(-time.Hour)} {
		b := store.Heartbeat{Instance: "i1", Shard: "0/1", Time: at, Host: "h", StartNS: old.UnixNano(), Version: "devel", IntervalS: 3600}
		if err := st.Write(context.Background(), store.Batch{Heartbeats: []store.Heartbeat{b}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return cfgPath, storePath, now
}

// heartbeatsLeft counts the heartbeats the store at path holds of the 30
// days before now.
func heartbeatsLeft(t *testing.T, path string, now time.Time) int {
	t.Helper()
	st, err := file.Open(path, file.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	bs, err := store.ReadHeartbeats(context.Background(), st, store.Query{Windows: []store.Window{store.Window{From: now.Add(-30 * 24 * time.Hour), To: now.Add(time.Hour)}}, Sites: []string{""}})
	if err != nil {
		t.Fatal(err)
	}
	return len(bs)
}

func readAll(t *testing.T, path string, now time.Time) ([]store.Probe, []store.Hourly) {
	t.Helper()
	st, err := file.Open(path, file.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	q := store.Between(now.Add(-30*24*time.Hour), now.Add(time.Hour))
	ps, err := store.ReadProbes(context.Background(), st, q)
	if err != nil {
		t.Fatal(err)
	}
	hs, err := store.ReadHourly(context.Background(), st, q)
	if err != nil {
		t.Fatal(err)
	}
	return ps, hs
}

// sampler prune drops the probes and heartbeats older than
// store.retention_days and keeps the hourly records; with 0 it prunes
// nothing.
func TestPruneCommand(t *testing.T) {
	cases := []struct {
		days       int
		wantProbes int
		wantBeats  int
		wantOut    string
	}{
		{2, 1, 1, "pruned 1 probe lines and 1 heartbeat lines before "},
		{0, 2, 2, "store.retention_days is 0"},
		{30, 2, 2, "pruned 0 probe lines and 0 heartbeat lines before "},
	}
	for _, c := range cases {
		cfg, storePath, now := writeRetention(t, c.days)
		var out, errb bytes.Buffer
		if err := run(context.Background(), []string{"prune", "-config", cfg}, &out, &errb, env); err != nil {
			t.Fatalf("days %d: %v (%s)", c.days, err, errb.String())
		}
		if !strings.Contains(out.String(), c.wantOut) {
			t.Errorf("days %d: output %q, want %q in it", c.days, out.String(), c.wantOut)
		}
		ps, hs := readAll(t, storePath, now)
		if len(ps) != c.wantProbes || len(hs) != 1 {
			t.Errorf("days %d: %d probes and %d hourly records left, want %d and 1", c.days, len(ps), len(hs), c.wantProbes)
		}
		if got := heartbeatsLeft(t, storePath, now); got != c.wantBeats {
			t.Errorf("days %d: %d heartbeats left, want %d", c.days, got, c.wantBeats)
		}
	}
}

// The daemon prunes before its first round of a day, once a day.
func TestDaemonPrunesOncePerDay(t *testing.T) {
	cfg, storePath, now := writeRetention(t, 2)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d, err := newDaemon(context.Background(), cfg, "", log, env)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	// The daemon's clock runs from noon of today (in the config's zone),
	// so that a minute later is still today whatever the hour the test
	// runs at: from now, a run after 23:59 had its "same day" prune on
	// the next day, which dropped the old probe written below.
	noon := store.DayStart(now, d.cfg.Location).Add(12 * time.Hour)
	d.maybePrune(context.Background(), noon)
	// An old probe written after today's prune stays until tomorrow's.
	old := store.Probe{Lane: "free", Kind: "free", Time: now.Add(-10 * 24 * time.Hour), QueueS: 1, GenS: 1, Tokens: 8, OK: true, Outcome: "ok", Status: 200}
	if err := d.store.Write(context.Background(), store.Batch{Probes: []store.Probe{old}}); err != nil {
		t.Fatal(err)
	}
	d.maybePrune(context.Background(), noon.Add(time.Minute))
	if ps, _ := readAll(t, storePath, now); len(ps) != 2 {
		t.Errorf("after a second prune the same day: %d probes, want 2", len(ps))
	}
	d.maybePrune(context.Background(), noon.Add(25*time.Hour))
	ps, hs := readAll(t, storePath, now)
	if len(ps) != 1 || len(hs) != 1 {
		t.Errorf("the next day: %d probes and %d hourly records, want 1 and 1", len(ps), len(hs))
	}
	if got := heartbeatsLeft(t, storePath, now); got != 1 {
		t.Errorf("the next day: %d heartbeats, want the one of an hour ago", got)
	}
	// The daemon still appends to the (new) file.
	if err := d.store.Write(context.Background(), store.Batch{Probes: []store.Probe{{Lane: "free", Kind: "free", Time: now, QueueS: 1, GenS: 1, Tokens: 8, OK: true, Outcome: "ok", Status: 200}}}); err != nil {
		t.Fatalf("write after the prune: %v", err)
	}
}

// An InfluxDB store is never pruned by lanewatch: the command says where
// retention lives (docs/schema.md).
func TestPruneInflux(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "c.yaml")
	src := "store: {kind: influx, url: \"http://127.0.0.1:1\"}\nlanes:\n  - {name: free, kind: free, api: openai, base_url: \"http://127.0.0.1:1/v1\", model: m}\n"
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"prune", "-config", p}, &out, &errb, env)
	if err == nil || !strings.Contains(err.Error(), "deleted on the server") {
		t.Errorf("prune of an influx store: %v, want the server's retention policy named", err)
	}
}
