package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lanewatch/lanewatch/internal/lanesim"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
)

// paidOnlyFixture is backtestFixture with the paid lane's history only: the
// jobs' arrival lane (free) has no probe.
func paidOnlyFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "lanewatch.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, backtestConfig, "  kind: file\n  path: data/samples.lp"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := file.Open(filepath.Join(dir, "data", "samples.lp"), file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opts := backtestHistory
	opts.Lanes = opts.Lanes[2:]
	rec := store.NewRecorder(st, opts.Start.Location())
	if err := lanesim.History(opts, func(day []store.Probe, _ []lanesim.ProbeTruth) error {
		_, err := rec.Record(context.Background(), day)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// A backtest on thin history says so on stderr, in one line; stdout keeps
// the report alone (issue 20, item 10).
func TestBacktestThinHistoryNote(t *testing.T) {
	full := backtestFixture(t, false)
	for _, c := range []struct {
		name string
		cfg  string
		args []string
		note string // "" for none
	}{
		{"warm-up and window sampled", full, []string{"-days", "2", "-lookback", "1,3"}, ""},
		{"history shorter than the warm-up", full, []string{"-days", "2", "-lookback", "7"},
			"policygen: backtest: note: thin history: no probe on the first day of the 7-day warm-up (from 2026-10-25T22), so the window's first policies had less history than lookback_days; figures from a longer history differ: sample for 9 days or more, or shorten -days or -lookback\n"},
		{"no probe in the window", full, []string{"-days", "2", "-end", "2026-12-01T00"},
			"policygen: backtest: note: no probe of the config's lanes from 2026-11-29T00 to 2026-12-01T00: the tables are empty; sample first, or move the window (-end, -days)\n"},
		{"probes in the window, none with its warm-up", full, []string{"-days", "2", "-end", "2026-11-01T00", "-lookback", "7", "-rule", "calibrated"},
			"policygen: backtest: note: no probe was scored from 2026-10-30T00 to 2026-11-01T00: the first one read is at 2026-10-30T00:07:00Z, and a lane's probes are scored once it has its warm-up of history; sample longer, or shorten -lookback\n"},
		{"no job replayed", paidOnlyFixture(t), []string{"-days", "2", "-lookback", "1,3"},
			"policygen: backtest: note: no job was replayed: jobs arrive a minute before each probe of lane free, which has none in the window; the decision table is empty\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, format := range []string{"table", "json"} {
				r := backtestRun(t, append([]string{"-config", c.cfg, "-format", format}, c.args...)...)
				if r.code != 0 || r.stderr != c.note {
					t.Errorf("-format %s: exit %d, stderr %q\nwant %q", format, r.code, r.stderr, c.note)
				}
				if r.stdout == "" || strings.Contains(r.stdout, "note:") {
					t.Errorf("-format %s: stdout holds the note, or nothing:\n%s", format, r.stdout)
				}
			}
		})
	}
}
