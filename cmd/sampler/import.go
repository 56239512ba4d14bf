package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
)

// runImport moves line-protocol files (an embedded store, or a spool) into the
// configured store; points keep their timestamps, so a second run rewrites.
func runImport(ctx context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) error {
	fs := newSubcommand("import", "sampler import -config F FILE...", "config naming the destination store (required)")
	if err := parse(fs, args, stderr, true); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fs.Usagef("name at least one line-protocol file")
	}
	cfg, err := config.Load(*fs.Config)
	if err != nil {
		return err
	}
	// A file the store appends to would be read without end.
	for _, name := range fs.Args() {
		for _, own := range []string{cfg.Store.Path, cfg.Store.Spool, cfg.Store.DeadLetter} {
			if sameFile(name, own) {
				return fmt.Errorf("import %s: the configured store appends to that file; move it aside first (a spool needs no import: the next write replays it)", name)
			}
		}
	}
	warn := slog.New(slog.NewTextHandler(stderr, nil)).Warn
	dst, err := config.OpenStore(ctx, cfg, config.Writer, warn, lookupEnv)
	if err != nil {
		return err
	}
	defer dst.Close()
	rec := store.NewRecorder(dst, cfg.Location)
	for _, name := range fs.Args() {
		f, err := file.OpenImport(name) // refuses /dev/zero, pipes, devices
		if err != nil {
			return fmt.Errorf("import: %w", err)
		}
		skipped := 0
		countWarn := func(msg string, args ...any) { skipped++; warn(msg, args...) }
		res, err := store.Import(ctx, rec, f, countWarn)
		f.Close()
		if err != nil {
			return fmt.Errorf("import %s: %w", name, err)
		}
		if res.Probes+res.Skipped == 0 && skipped > 0 {
			return fmt.Errorf("import %s: no lanewatch points in it, %d lines skipped (is it a line-protocol store or spool?)", name, skipped)
		}
		fmt.Fprintf(stdout, "%s: imported %d probe points into the %s store and rebuilt %d queue_hourly points from them", name, res.Probes, cfg.Store.Kind, res.Hourly)
		if res.Skipped > 0 {
			fmt.Fprintf(stdout, " (%d queue_hourly lines of the file not copied: hourly records are rebuilt from probes)", res.Skipped)
		}
		fmt.Fprintln(stdout)
		if res.Deferred > 0 {
			fmt.Fprintf(stdout, "%s: the store could not be read: %d probe points wait in the spool; their hours are rebuilt when it is replayed\n", name, res.Deferred)
		}
	}
	if n := dst.Status().Spooled; n > 0 {
		fmt.Fprintf(stdout, "store unreachable: %d points wait in the spool %s and are replayed at the next write\n", n, cfg.Store.Spool)
	}
	return nil
}

// sameFile reports whether a and b name one existing file.
func sameFile(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}
