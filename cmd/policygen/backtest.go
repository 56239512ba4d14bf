package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/internal/cli"
	"github.com/lanewatch/lanewatch/internal/lanesim"
	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/report/backtest"
	"github.com/lanewatch/lanewatch/store"
)

const backtestUsage = `usage: policygen backtest -config F [-days N] [-end YYYY-MM-DDTHH] [-lookback 1,3,7,14]
                          [-rule calibrated,max] [-coverage 0.9,0.95,0.99] [-warmup D] [-truth FILE]
                          [-format table|csv|json] [-hours]
                          [-fallback 5,10,20,30,45] [-deadlines 30,60,120] [-tune N] [-busy429 S|held]

Replays the stored probes of [end - N days, end) (end: now by default)
against the live policy in force just before each of them (what policygen
-hour would have written from the probes before it), after a warm-up of
the lookback's days, and reports the calibration of next_queue_s per lane
(once per -lookback, -rule and -coverage value; -truth compares with the
oracle of lanesim history -truth), the decisions of naive, paid and
lanewatch retries per class, and with -fallback or -deadlines the
baselines (-tune: the tuned ones). docs/backtest.md defines every figure,
the replay's world, and the table, csv and json layouts.

`

// runBacktest is `policygen backtest`.
func (e *env) runBacktest(ctx context.Context, args []string) error {
	fs := newFlags("backtest", backtestUsage)
	days := fs.Int("days", 14, "score the last `N` days")
	lookbackFlag := fs.String("lookback", "", "comma-separated lookback_days `values` to score, e.g. 1,3,7,14 (default: the config's)")
	format := fs.String("format", "table", "output `format`: table, csv or json")
	endFlag := fs.String("end", "", "end the window at the start of hour `YYYY-MM-DDTHH` in the config's timezone (default: now)")
	hoursFlag := fs.Bool("hours", false, "break the calibration down by hour of day (table and json; csv always does)")
	ruleFlag := fs.String("rule", "", "comma-separated `rules` to score: calibrated, max (default: the config's policy.rule)")
	coverageFlag := fs.String("coverage", "", "comma-separated `coverages` the calibrated rule is scored at, e.g. 0.9,0.95,0.99 (default: the config's policy.coverage)")
	warmupFlag := fs.Int("warmup", 0, "warm-up `D` days: a lane's probes are scored once it has D days of history (default: each calibration's lookback)")
	truthFlag := fs.String("truth", "", "compare with the oracle that knows each probe's true queue distribution, from `FILE` (lanesim history -truth)")
	fallbackFlag := fs.String("fallback", "", "comma-separated first-token timeouts `T` (seconds) of the fallback@T and cancel-retry@T baselines")
	deadlinesFlag := fs.String("deadlines", "", "comma-separated `deadlines` (seconds) to replay each class at too, in the baselines")
	tuneFlag := fs.Int("tune", 0, "with -fallback, add the tuned baselines: the best fallback@T on the `N` days before the window (0: none)")
	busyFlag := fs.String("busy429", "", "replay the rule for a short 429 with `S` seconds as the longest busy wait, or held: the rule before issue 18 (default: the policy's, docs/policy.md#a-short-429)")
	if err := fs.parse(args, e.stderr, ""); err != nil {
		return err
	}
	type writer = func(io.Writer, *backtest.Report, bool) error
	write, errFormat := choose(fs, "format", *format,
		option[writer]{"table", backtest.WriteTable}, option[writer]{"csv", backtest.WriteCSV}, option[writer]{"json", backtest.WriteJSON})
	lookbacks, errLookback := list("lookback", *lookbackFlag, fmt.Sprintf("days 0..%d", backtest.MaxLookbackDays), backtest.MaxLookbacks,
		func(s string) (int, bool) {
			k, err := strconv.Atoi(s)
			return k, err == nil && k >= 0 && k <= backtest.MaxLookbackDays
		})
	rules, errRule := list("rule", *ruleFlag, "calibrated or max", 0,
		func(s string) (string, bool) { return s, s == policy.RuleCalibrated || s == policy.RuleMax })
	coverages, errCoverage := list("coverage", *coverageFlag, "numbers above 0 and below 1", backtest.MaxCoverages,
		func(s string) (float64, bool) {
			c, err := strconv.ParseFloat(s, 64)
			return c, err == nil && policy.CheckCoverage(c) == nil
		})
	err := cmp.Or(errFormat, fs.inRange("days", *days, 1, maxDays), errLookback, errRule, errCoverage,
		fs.inRange("warmup", *warmupFlag, 0, backtest.MaxLookbackDays))
	if err != nil {
		return err
	}
	var truth func(*store.Probe) (float64, float64, bool)
	if *truthFlag != "" {
		if truth, err = lanesim.ReadTruth(*truthFlag); err != nil {
			return fmt.Errorf("backtest: -truth: %w", err)
		}
	}
	fallbacks, errFallback := list("fallback", *fallbackFlag, seconds(backtest.MinFallbackS), backtest.MaxFallbacks, second(backtest.MinFallbackS))
	deadlines, errDeadlines := list("deadlines", *deadlinesFlag, seconds(backtest.MinAttemptS), backtest.MaxDeadlines, second(backtest.MinAttemptS))
	if err := cmp.Or(errFallback, errDeadlines, fs.inRange("tune", *tuneFlag, 0, backtest.MaxLookbackDays)); err != nil {
		return err
	}
	if *tuneFlag > 0 && len(fallbacks) == 0 {
		return fs.Usagef("-tune needs -fallback: it picks among their T")
	}
	busy := 0.0
	switch *busyFlag {
	case "":
	case "held":
		busy = backtest.HeldBusy429
	default:
		if busy, err = strconv.ParseFloat(*busyFlag, 64); err != nil || !(busy > 0 && busy <= 1e9) {
			return fs.Usagef("-busy429: want held or seconds above 0, got %q", clip(*busyFlag))
		}
	}
	cfg, err := config.Load(*fs.Config)
	if err != nil {
		return err
	}
	to, err := e.hourArg(*endFlag, cfg.Location)
	if err != nil {
		return fs.Usagef("-end: %w", err)
	}
	to = to.In(cfg.Location)
	opts := backtest.Options{Params: cfg.PolicyParams(), Lookbacks: lookbacks, From: to.AddDate(0, 0, -*days), To: to,
		Rules: rules, Coverages: coverages, WarmupDays: *warmupFlag, Truth: truth,
		Fallbacks: fallbacks, Deadlines: deadlines, TuneDays: *tuneFlag, Busy429S: busy}
	st, err := e.openStore(ctx, cfg, "backtest of zero probes")
	if err != nil {
		return fmt.Errorf("backtest: %w", err)
	}
	defer closeStore(st)
	rep, first, err := backtest.Read(ctx, st, opts)
	if err != nil {
		return fmt.Errorf("backtest: %w", err)
	}
	if note := thinNote(&rep, first); note != "" && st != nil { // a fresh install said so already
		fmt.Fprintf(e.stderr, "policygen: backtest: note: %s\n", note)
	}
	return e.report("backtest", func(w io.Writer) error { return write(w, &rep, *hoursFlag) })
}

// list reads the comma-separated values of the backtest's -name (nil when
// empty), each one that parse accepts, at most most of them (0: any).
func list[T any](name, s, want string, most int, parse func(string) (T, bool)) ([]T, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []T
	for part := range strings.SplitSeq(s, ",") {
		v, ok := parse(strings.TrimSpace(part))
		if !ok {
			return nil, cli.Usagef("backtest: -%s: want comma-separated %s, got %q", name, want, clip(s))
		}
		out = append(out, v)
	}
	if most > 0 && len(out) > most {
		return nil, cli.Usagef("backtest: -%s: want at most %d values, got %d", name, most, len(out))
	}
	return out, nil
}

// seconds and second are list's want and parse of seconds in [least, policy.MaxSeconds].
func seconds(least float64) string { return fmt.Sprintf("seconds %g..%g", least, policy.MaxSeconds) }
func second(least float64) func(string) (float64, bool) {
	return func(s string) (float64, bool) {
		x, err := strconv.ParseFloat(s, 64)
		return x, err == nil && x >= least && x <= policy.MaxSeconds
	}
}

// clip shortens a flag value quoted in an error.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// thinNote says in one line why a backtest's figures stand on thin
// history (each case's message says which), or "" when they do not; first
// is the first probe read, zero if none.
func thinNote(rep *backtest.Report, first time.Time) string {
	const day = "2006-01-02T15"
	scored := 0
	if len(rep.Calibration) > 0 {
		scored = rep.Calibration[0].All.Probes
	}
	switch {
	case scored == 0 && !first.IsZero() && !first.Before(rep.From) && first.Before(rep.To):
		return fmt.Sprintf("no probe was scored from %s to %s: the first one read is at %s, and a lane's probes are scored once it has its warm-up of history; sample longer, or shorten -lookback",
			rep.From.Format(day), rep.To.Format(day), first.UTC().Format(time.RFC3339))
	case scored == 0:
		return fmt.Sprintf("no probe of the config's lanes from %s to %s: the tables are empty; sample first, or move the window (-end, -days)",
			rep.From.Format(day), rep.To.Format(day))
	}
	jobs := 0
	for _, d := range rep.Decisions {
		jobs += d.Jobs
	}
	if len(rep.Decisions) > 0 && jobs == 0 {
		return fmt.Sprintf("no job was replayed: jobs arrive a minute before each probe of lane %s, which has none in the window; the decision table is empty",
			rep.ArrivalLane)
	}
	if !rep.ReadFrom.Before(rep.From) || !first.IsZero() && first.Before(rep.ReadFrom.Add(24*time.Hour)) {
		return ""
	}
	warm := int(math.Round(rep.From.Sub(rep.ReadFrom).Hours() / 24))
	window := int(math.Round(rep.To.Sub(rep.From).Hours() / 24))
	return fmt.Sprintf("thin history: no probe on the first day of the %d-day warm-up (from %s), so the window's first policies had less history than lookback_days; figures from a longer history differ: sample for %d days or more, or shorten -days or -lookback",
		warm, rep.ReadFrom.Format(day), warm+window)
}
