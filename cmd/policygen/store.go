package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/internal/cli"
	"github.com/lanewatch/lanewatch/store"
)

// openStore opens the configured store to read beside a sampler. An
// embedded store file that does not exist yet is a fresh install, not an
// error: it says so on stderr, with what that means for the output (so),
// and returns a nil store (policy/load: an empty one), so that policies say
// never_sampled and CI fails safe rather than red.
func (e *env) openStore(ctx context.Context, cfg *config.Config, so string) (store.Store, error) {
	st, err := config.OpenStore(ctx, cfg, config.Reader, cli.Warner("policygen", e.stderr), e.lookupEnv)
	switch {
	case err == nil || cfg.Store.Kind != config.StoreFile:
		return st, err
	case errors.Is(err, fs.ErrNotExist):
		fmt.Fprintf(e.stderr, "policygen: nothing sampled yet: %s does not exist (run the sampler); %s\n", cfg.Store.Path, so)
		return nil, nil
	case !strings.Contains(err.Error(), cfg.Store.Path):
		return nil, fmt.Errorf("%w (store.path %s)", err, cfg.Store.Path)
	}
	return nil, err
}

// closeStore closes st, if any: a reader has nothing to lose.
func closeStore(st store.Store) {
	if st != nil {
		_ = st.Close()
	}
}
