// Command policygen turns the stored hourly queue records into policy files
// and answers from them: the lane to run on, the retry ledger, the JSON
// API, the time-of-day report and the backtest (policygen -h: usageText).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/internal/cli"
	"github.com/lanewatch/lanewatch/store"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.LookupEnv)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// exitCode prints err as one line and maps it to the exit status.
func exitCode(err error, stderr io.Writer) int { return cli.Exit("policygen", err, stderr) }

// env is what a run gets from the process; tests replace parts of it.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	lookupEnv      func(string) (string, bool)
	now            func() time.Time
	// writeHook, when set, is atomicfile.Hook of a policy file's write:
	// tests inject faults and kills there.
	writeHook func(stage, tmpPath string) error
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) error {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr, lookupEnv: lookupEnv, now: time.Now}
	return e.run(ctx, args)
}

func (e *env) run(ctx context.Context, args []string) error {
	cmds := map[string]func(context.Context, []string) error{
		"swings": e.runSwings, "book": e.runBook, "lane": e.runLane, "backtest": e.runBacktest, "serve": e.runServe}
	if len(args) > 0 && cmds[args[0]] != nil {
		return cmds[args[0]](ctx, args[1:])
	}
	return e.runPolicy(ctx, args)
}

const usageText = `usage: policygen -config F [-hour YYYY-MM-DDTHH] [-out DIR] [-print] [-site NAME]
       policygen -config F -day YYYY-MM-DD|today|tomorrow [-out DIR] [-print] [-site NAME]
       policygen swings -config F [-days N] [-lane NAME] [-format table|csv|json] [-svg FILE [-log]]
       policygen book [-policy FILE -class NAME] < attempts.json
       policygen book -config F -class NAME [-hour YYYY-MM-DDTHH] [-dir DIR] < attempts.json
       policygen lane -config F -class NAME [-hour YYYY-MM-DDTHH | -next] [-format name|json|env|dotenv] [-dir DIR]
       policygen serve -config F [-listen ADDR] [-dir DIR]
       policygen backtest -config F [-days N] [-end YYYY-MM-DDTHH] [-lookback 1,3,7,14] [-format table|csv|json] [-hours]

Writes <out>/<hour>.yaml for the hour (default: the current hour in the
config's timezone) or, with -day, the 24 forecast files of that day, each
atomically, and prints the paths written. -print prints the YAML instead,
each file after a "# wrote PATH" comment. -site NAME writes that site's view
as <out>/<hour>.<NAME>.yaml instead; a site that neither a record read nor
the config names is a usage error, and nothing is written.

swings (the time-of-day report), book (the retry ledger), lane (the lane
to run on), serve (the JSON API) and backtest (how well the policy
predicts): policygen COMMAND -h says more.

Exit status: 0 done, 1 bad config, bad input or store error, 2 bad usage,
3 (lane) no lane fits the class this hour.
`

// openStore opens the configured store to read beside a sampler. A store
// file that does not exist yet is a fresh install: a note on stderr saying
// so, and a nil store (policy/load: empty), so CI fails safe, not red.
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
