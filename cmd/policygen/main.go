// Command policygen turns the stored hourly queue records into policy files
// and answers the retry ledger.
//
//	policygen -config F [-hour YYYY-MM-DDTHH] [-out DIR] [-print] [-site NAME]  # policy for an hour (default: now)
//	policygen -config F -day YYYY-MM-DD [-out DIR] [-print]        # 24 forecast files
//	policygen swings -config F [-days N] [-lane NAME] [-format table|csv|json] [-svg FILE [-log]]  # time-of-day report
//	policygen book [-policy FILE -class NAME] < attempts.json      # the retry ledger
//	policygen lane -config F -class NAME [-hour H | -next] [-format name|json|env|dotenv] [-dir DIR]  # the lane to run on
//	policygen serve -config F [-listen ADDR] [-dir DIR]            # the read-only JSON API
//	policygen backtest -config F [-days N] [-end H] [-lookback 1,3,7,14] [-format table|csv|json]  # how well it predicts
//
// Exit status: 0 done; 1 bad config, bad input or a store error, with one line
// on stderr; 2 bad usage; 3 (lane only) no lane fits the class this hour.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/lanewatch/lanewatch/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.LookupEnv)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

func usagef(format string, args ...any) error { return cli.Usagef(format, args...) }

// exitCode prints err as one line and maps it to the exit status.
func exitCode(err error, stderr io.Writer) int { return cli.Exit("policygen", err, stderr) }

// env is what a run gets from the process; tests replace parts of it.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	lookupEnv      func(string) (string, bool)
	now            func() time.Time
	// writeHook, when set, is called while a policy file is being written:
	// with stage "partial" after half of the bytes are in the temp file and
	// "synced" after all of them are written and synced, before the rename.
	// An error aborts the write. Tests inject faults and kills here.
	writeHook func(stage, tmpPath string) error
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) error {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr, lookupEnv: lookupEnv, now: time.Now}
	return e.run(ctx, args)
}

func (e *env) run(ctx context.Context, args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "swings":
			return e.runSwings(ctx, args[1:])
		case "book":
			return e.runBook(ctx, args[1:])
		case "lane":
			return e.runLane(ctx, args[1:])
		case "backtest":
			return e.runBacktest(ctx, args[1:])
		case "serve":
			return e.runServe(ctx, args[1:])
		}
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
as <out>/<hour>.<NAME>.yaml instead; a site that no stored record or the
config names is a usage error, and nothing is written.

book reads {"attempts": [...], "policy": {...}} on stdin (with -policy and
-class: {"attempts": [...]} and the class's book from the policy file; with
-config and -class: the class's book from the hour's file in policy.out) and
prints the ledger's answer as JSON (with -config: and the lane to use).

lane prints the first lane of the class in the policy file of the hour
(default: the current hour in the config's timezone); policygen lane -h
has the formats.

serve serves the read-only JSON API over the policy files (docs/api.md).

Exit status: 0 done, 1 bad config, bad input or store error, 2 bad usage,
3 (lane) no lane fits the class this hour.
`
