package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	"github.com/lanewatch/lanewatch/app"
	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/internal/cli"
	"github.com/lanewatch/lanewatch/store"
)

// openStore opens the configured store for reading. The embedded file is
// opened read-only (no writer lock), so policygen runs while a sampler
// appends to it.
func openStore(ctx context.Context, cfg *config.Config, stderr io.Writer, lookupEnv func(string) (string, bool)) (store.Store, error) {
	st, err := app.OpenStoreReadOnly(ctx, cfg, cli.Warner("policygen", stderr), lookupEnv)
	if err != nil && cfg.Store.Kind == config.StoreFile && !strings.Contains(err.Error(), cfg.Store.Path) {
		// "store: open samples file: not a directory" said neither which
		// file nor where it comes from (issue 20).
		return nil, fmt.Errorf("%w (store.path %s)", err, cfg.Store.Path)
	}
	return st, err
}

// openStoreOrFresh opens the store for reading. An embedded store file that
// does not exist yet is a fresh install, not an error: it says so on
// stderr, with what that means for the output (so), and returns an empty
// store, so that policies say never_sampled and CI fails safe rather than
// red.
func openStoreOrFresh(ctx context.Context, cfg *config.Config, stderr io.Writer, lookupEnv func(string) (string, bool), so string) (store.Store, error) {
	st, err := openStore(ctx, cfg, stderr, lookupEnv)
	if err != nil && cfg.Store.Kind == config.StoreFile && errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(stderr, "policygen: nothing sampled yet: %s does not exist (run the sampler); %s\n", cfg.Store.Path, so)
		return emptyStore{}, nil
	}
	return st, err
}

// emptyStore is the store of a fresh install: nothing in it.
type emptyStore struct{}

func (emptyStore) Write(context.Context, store.Batch) error {
	return errors.New("empty store is read-only")
}
func (emptyStore) Read(context.Context, store.Query, store.Reader) error { return nil }
func (emptyStore) Prune(context.Context, time.Time) (store.Pruned, error) {
	return store.Pruned{}, errors.New("empty store is read-only")
}
func (emptyStore) Status() store.Status { return store.Status{Where: "nothing sampled yet"} }
func (emptyStore) Close() error         { return nil }
