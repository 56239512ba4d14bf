package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/store"
)

// runPrune is `sampler prune -config F`: store.retention_days applied now.
func runPrune(ctx context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) error {
	fs := newSubcommand("prune", "sampler prune -config F", "config naming the store and store.retention_days (required)")
	if err := parse(fs, args, stderr, false); err != nil {
		return err
	}
	cfg, err := config.Load(*fs.Config)
	if err != nil {
		return err
	}
	if cfg.Store.Kind != config.StoreFile {
		return fmt.Errorf("prune: store.kind is %s: old probe and heartbeat points are deleted on the server (docs/schema.md, Retention)", cfg.Store.Kind)
	}
	if cfg.Store.RetentionDays == 0 {
		fmt.Fprintf(stdout, "store.retention_days is 0 in %s: every probe is kept, nothing pruned\n", *fs.Config)
		return nil
	}
	st, err := config.OpenStore(ctx, cfg, config.Writer, slog.New(slog.NewTextHandler(stderr, nil)).Warn, lookupEnv)
	if err != nil {
		return err
	}
	defer st.Close()
	cut := store.RetentionCut(time.Now(), cfg.Store.RetentionDays, cfg.Location)
	ps, err := st.Prune(ctx, cut)
	if err != nil {
		return fmt.Errorf("prune: %w", err)
	}
	fmt.Fprintf(stdout, "pruned %d probe lines and %d heartbeat lines before %s (store.retention_days %d); kept %d lines, every hourly record among them\n",
		ps.Probes, ps.Heartbeats, store.HourLabel(cut, cfg.Location), cfg.Store.RetentionDays, ps.Kept)
	return nil
}

// maybePrune prunes the store before the first round of each day, when
// store.retention_days is set; a failed prune is retried at the next round.
func (d *daemon) maybePrune(ctx context.Context, now time.Time) {
	days := d.cfg.Store.RetentionDays
	if days == 0 || d.cfg.Store.Kind != config.StoreFile {
		return
	}
	day := store.DayStart(now, d.cfg.Location).Format("2006-01-02")
	if day == d.pruned {
		return
	}
	cut := store.RetentionCut(now, days, d.cfg.Location)
	start := time.Now()
	ps, err := d.store.Prune(ctx, cut)
	if err != nil {
		d.log.Error("prune failed: the store is as it was; retrying at the next round", "err", err)
		return
	}
	d.pruned = day
	d.log.Info("pruned old probes and heartbeats", "before", store.HourLabel(cut, d.cfg.Location), "retention_days", days,
		"dropped", ps.Probes, "dropped_heartbeats", ps.Heartbeats, "kept_lines", ps.Kept,
		"took", time.Since(start).Round(time.Millisecond))
}
