package main

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/lanewatch/lanewatch/report/backtest"
	"github.com/lanewatch/lanewatch/store"
)

// thinNote says in one line why a backtest's figures stand on thin
// history, or "" when they do not (issue 20, item 10): no probe of the
// config's lanes in the window (every table is zeros), no job replayed (the
// decision table is zeros at 0.0 %), or no probe on the first day of the
// warm-up, so that the window's first policies had less history than
// lookback_days and the figures differ from a longer history's (the
// README's and BENCHMARKS.md's come from 28 days after a 14-day warm-up).
// The report on stdout is the same either way; the note goes to stderr.
func thinNote(ctx context.Context, st store.Store, rep *backtest.Report) (string, error) {
	const day = "2006-01-02T15"
	scored := 0
	if len(rep.Calibration) > 0 {
		scored = rep.Calibration[0].All.Probes
	}
	if scored == 0 {
		return fmt.Sprintf("no probe of the config's lanes from %s to %s: the tables are empty; sample first, or move the window (-end, -days)",
			rep.From.Format(day), rep.To.Format(day)), nil
	}
	jobs := 0
	for _, d := range rep.Decisions {
		jobs += d.Jobs
	}
	if len(rep.Decisions) > 0 && jobs == 0 {
		return fmt.Sprintf("no job was replayed: jobs arrive a minute before each probe of lane %s, which has none in the window; the decision table is empty",
			rep.ArrivalLane), nil
	}
	if !rep.ReadFrom.Before(rep.From) {
		return "", nil
	}
	first, err := store.ReadProbes(ctx, st, store.Between(rep.ReadFrom, rep.ReadFrom.Add(24*time.Hour)))
	if err != nil {
		return "", fmt.Errorf("store: read probes: %w", err)
	}
	if len(first) > 0 {
		return "", nil
	}
	warm := int(math.Round(rep.From.Sub(rep.ReadFrom).Hours() / 24))
	window := int(math.Round(rep.To.Sub(rep.From).Hours() / 24))
	return fmt.Sprintf("thin history: no probe on the first day of the %d-day warm-up (from %s), so the window's first policies had less history than lookback_days; figures from a longer history differ: sample for %d days or more, or shorten -days or -lookback",
		warm, rep.ReadFrom.Format(day), warm+window), nil
}
