package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/store"
)

// runPrune is `sampler prune -config F`: store.retention_days applied now
// (to probes and heartbeats), for a store no daemon holds (the daemon
// prunes by itself at its first round of each day). It takes the store's
// writer lock, so it fails while a sampler runs on the same file.
func runPrune(ctx context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) error {
	fs := newSubcommand("prune", "sampler prune -config F", "config naming the store and store.retention_days (required)")
	if err := fs.parse(args, stderr, false); err != nil {
		return err
	}
	cfg, err := config.Load(*fs.config)
	if err != nil {
		return err
	}
	if cfg.Store.Kind != config.StoreFile {
		return fmt.Errorf("prune: store.kind is %s: old probe and heartbeat points are deleted on the server (docs/schema.md, Retention)", cfg.Store.Kind)
	}
	if cfg.Store.RetentionDays == 0 {
		fmt.Fprintf(stdout, "store.retention_days is 0 in %s: every probe is kept, nothing pruned\n", *fs.config)
		return nil
	}
	log, _ := newLogger(stderr, "text", "info")
	warn := func(msg string, args ...any) { log.Warn(msg, args...) }
	st, err := config.OpenStore(ctx, cfg, config.Writer, warn, lookupEnv)
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

// retention is the daemon's pruning state: the day (in the config's
// timezone) it last pruned.
type retention struct {
	lastDay string
}

// maybePrune prunes the store (old probes and heartbeats) before the first
// round of each day, when store.retention_days is set. A failed prune is
// logged and retried at the next round; the old file is intact then.
func (d *daemon) maybePrune(ctx context.Context, now time.Time) {
	days := d.cfg.Store.RetentionDays
	if days == 0 || d.cfg.Store.Kind != config.StoreFile {
		return
	}
	day := store.DayStart(now, d.cfg.Location).Format("2006-01-02")
	if day == d.retention.lastDay {
		return
	}
	cut := store.RetentionCut(now, days, d.cfg.Location)
	start := time.Now()
	ps, err := d.store.Prune(ctx, cut)
	if err != nil {
		d.log.Error("prune failed: the store is as it was; retrying at the next round", "err", err)
		return
	}
	d.retention.lastDay = day
	d.log.Info("pruned old probes and heartbeats", "before", store.HourLabel(cut, d.cfg.Location), "retention_days", days,
		"dropped", ps.Probes, "dropped_heartbeats", ps.Heartbeats, "kept_lines", ps.Kept,
		"took", time.Since(start).Round(time.Millisecond))
}
