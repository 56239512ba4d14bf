// Command sampler probes the configured lanes on a cron schedule and stores
// the probes with their hourly records; its subcommands import, rollup,
// prune and probe one lane (sampler -h lists them).
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/lanewatch/lanewatch/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.LookupEnv)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// newSubcommand starts the flags of `sampler NAME` (or of the daemon, NAME
// ""), with its usage line and -config, which parse requires.
func newSubcommand(name, usage, configHelp string) *cli.Command {
	return cli.NewCommand("sampler", name, "usage: "+usage+"\n", configHelp)
}

// parse parses args: -config is required, and arguments after the flags
// only where takesArgs.
func parse(c *cli.Command, args []string, stderr io.Writer, takesArgs bool) error {
	if err := cli.Parse(c.FlagSet, args, stderr); err != nil {
		return err
	}
	return c.Check(takesArgs, "")
}

// exitCode prints err as one line and maps it to the exit status.
func exitCode(err error, stderr io.Writer) int { return cli.Exit("sampler", err, stderr) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) error {
	subs := map[string]func(context.Context, []string, io.Writer, io.Writer, func(string) (string, bool)) error{
		"import": runImport, "rollup": runRollup, "prune": runPrune, "probe": runProbe}
	if len(args) > 0 && subs[args[0]] != nil {
		return subs[args[0]](ctx, args[1:], stdout, stderr, lookupEnv)
	}
	fs := newSubcommand("", "sampler -config F [-shard I/N] [-once [-force]] [-listen ADDR] [-log-format text|json] [-log-level L]\n       sampler import -config F FILE...\n       sampler rollup -config F [-days N] [-check]\n       sampler prune -config F\n       sampler probe -config F -lane NAME [-force]",
		"path to the lanewatch YAML config (required)")
	once := fs.Bool("once", false, "run one round now, print the samples and exit")
	force := fs.Bool("force", false, "with -once: probe every lane, budgets and back-offs notwithstanding (the probes count)")
	shardFlag := fs.String("shard", "", "probe only shard `I/N` of the lanes (overrides the config's shard), e.g. 2/5")
	listen := fs.String("listen", "", "serve the status page /, /metrics, /healthz and the JSON API /api/v1/ (docs/api.md) on this address, e.g. 127.0.0.1:9464")
	logFormat := fs.String("log-format", "text", "log format: text or json")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	if err := parse(fs, args, stderr, false); err != nil {
		return err
	}
	if *force && !*once {
		return cli.Usagef("-force goes with -once")
	}
	log, err := newLogger(stderr, *logFormat, *logLevel)
	if err != nil {
		return cli.UsageError{Err: err}
	}
	d, err := newDaemon(ctx, *fs.Config, *shardFlag, log, lookupEnv)
	if err != nil {
		return err
	}
	defer d.close()
	if *listen != "" {
		_, stopServe, err := d.serve(*listen)
		if err != nil {
			return err
		}
		defer stopServe()
	}
	if *once {
		return d.once(ctx, stdout, *force)
	}
	return d.run(ctx)
}
