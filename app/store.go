package app

// This file opens the store.Store a configuration names: the embedded
// line-protocol file, or InfluxDB behind its spool; as its writer, to
// read, or to write beside its writer.

import (
	"context"
	"fmt"
	"os"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
	"github.com/lanewatch/lanewatch/store/influx"
	"github.com/lanewatch/lanewatch/store/spool"
)

// OpenStore opens the configured store for writing. An InfluxDB store is wrapped
// in its spool, whose replays rebuild the hours they touch (hours keyed in
// the config's zone). Write through store.NewRecorder(st, cfg.Location) to
// keep the hourly invariant. warn receives non-fatal warnings (a torn line
// in the file, a spool past its cap). lookupEnv resolves store.token_env.
func OpenStore(ctx context.Context, cfg *config.Config, warn func(msg string, args ...any), lookupEnv func(string) (string, bool)) (store.Store, error) {
	return openStore(ctx, cfg, writer, warn, lookupEnv)
}

// OpenStoreReadOnly opens the configured store for reading: the embedded file
// without the writer lock, and InfluxDB with its spool merged into reads but
// not locked, so readers (policygen, reports) run beside a sampler, as
// another user too.
func OpenStoreReadOnly(ctx context.Context, cfg *config.Config, warn func(msg string, args ...any), lookupEnv func(string) (string, bool)) (store.Store, error) {
	return openStore(ctx, cfg, reader, warn, lookupEnv)
}

// OpenStoreBeside opens the configured store to write beside the sampler
// that holds it (sampler probe next to the daemon): the embedded file
// without its writer lock (file.Options.Beside), or InfluxDB written
// directly, its spool and dead-letter file merged into reads, and a write
// the server fails left in the spool's inbox for the daemon to replay
// (spool.Options.Beside). Unlike the daemon it needs the server at
// start: without it, it writes nothing.
func OpenStoreBeside(ctx context.Context, cfg *config.Config, warn func(msg string, args ...any), lookupEnv func(string) (string, bool)) (store.Store, error) {
	return openStore(ctx, cfg, beside, warn, lookupEnv)
}

// access is how a process opens the store: as its writer, to read, or to
// write beside its writer.
type access int

const (
	writer access = iota
	reader
	beside
)

func openStore(ctx context.Context, cfg *config.Config, a access, warn func(msg string, args ...any), lookupEnv func(string) (string, bool)) (store.Store, error) {
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	switch cfg.Store.Kind {
	case config.StoreFile:
		st, err := file.Open(cfg.Store.Path, file.Options{ReadOnly: a == reader, Beside: a == beside, Warn: warn})
		if err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		return st, nil
	case config.StoreInflux:
		token, err := cfg.Store.Token(lookupEnv)
		if err != nil {
			return nil, err
		}
		db, err := influx.Open(ctx, influx.Options{
			URL:    cfg.Store.URL,
			Org:    cfg.Store.Org,
			Bucket: cfg.Store.Bucket,
			Token:  token,
			Warn:   warn,
			// A month of hourly records is one read: a slow server needs
			// a longer store.timeout than the default.
			RequestTimeout: cfg.Store.Timeout.D(),
			// The writer starts during an outage and spools; the others need the server.
			StartUnreachable: a == writer,
		})
		if err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		sp, err := spool.Open(db, spool.Options{
			Path:       cfg.Store.Spool,
			DeadLetter: cfg.Store.DeadLetter,
			MaxBytes:   cfg.Store.SpoolMaxBytes,
			ReadOnly:   a == reader,
			Beside:     a == beside,
			Warn:       warn,
			Hours:      cfg.Location,
		})
		if err != nil {
			_ = db.Close()
			return nil, fmt.Errorf("store: %s: %w", db.Status().Where, err)
		}
		return sp, nil
	default:
		return nil, fmt.Errorf("store: unknown kind %q", cfg.Store.Kind)
	}
}
