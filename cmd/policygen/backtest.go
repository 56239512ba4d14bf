package main

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/internal/lanesim"
	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/policy/load"
	"github.com/lanewatch/lanewatch/report/backtest"
	"github.com/lanewatch/lanewatch/store"
)

const backtestUsage = `usage: policygen backtest -config F [-days N] [-end YYYY-MM-DDTHH] [-lookback 1,3,7,14]
                          [-rule calibrated,max] [-coverage 0.9,0.95,0.99] [-warmup D] [-truth FILE]
                          [-format table|csv|json] [-hours]
                          [-fallback 5,10,20,30,45] [-deadlines 30,60,120] [-tune N] [-busy429 S|held]

Replays the stored probes of [end - N days, end) (end: now by default)
against the live policy in force just before each of them (what policygen
-hour would have written from the probes before it), after a warm-up of the
lookback's days before the window, and reports:

  -rule calibrated,max and -coverage 0.9,0.95,0.99 sweep like -lookback
  (default: the config's). Scoring the calibrated rule, a coverage, a
  -warmup or a -truth gives issue 19's shape: per calibration its rule,
  target coverage and warm-up; coverage_all (every probe but 429s, a
  timeout a miss unless next_queue_s reached its wait) beside coverage;
  the free and paid lanes as kinds, never mixed in a headline; with
  -truth FILE (lanesim history -truth), the oracle's median ratio at the
  achieved coverage and the rule's ratio to it (docs/backtest.md).

  calibration  per lane (per hour of day with -hours) and for all lanes:
               probes, ok, covered (ok and queue_s <= next_queue_s),
               coverage, the median and p90 of next_queue_s / queue_s,
               false_eligible (eligible, and the probe failed),
               false_ineligible (ineligible, and the probe was ok),
               no_policy (no earlier probe of the lane) and censored_uncovered
               (the probe failed after a wait longer than next_queue_s);
               once per -lookback value; marked best: the lowest median
               ratio among the values whose coverage reaches 0.95 (else the
               highest coverage)
  decisions    per class: jobs arriving a minute before each probe of the
               first free lane (the first lane if none is free), replayed
               with naive (that free lane, retried at once until the
               deadline), paid (the first paid lane, the same way) and
               lanewatch (the class's lanes, then policy.Book):
               jobs, deadlines met, median time to result, free tokens
               burned on attempts that did not ship, paid USD
  baselines    with -fallback or -deadlines: per class, deadline (the
               class's, then each of -deadlines) and strategy (naive, paid,
               lanewatch following the cut-over rule, fallback@T and
               cancel-retry@T for each T of -fallback): jobs, met_pct,
               paid_usd, median and p90 time to result, free_requests,
               abandoned_free_requests, burned_free_tokens (docs/backtest.md);
               with -tune N too, the tuned baselines: the fallback@T that met
               the most deadlines, then paid the least, on the N days before
               the window (tuned), picked again every 7 days on the N days
               before (tuned-weekly), and per hour of day (tuned-hourly)

The replay's world: an attempt started at t on a lane meets the lane's next
probe within the hour after t (its outcome, queue_s and tokens/gen_s), or
fails fast without one or during a 429's back-off; an ok attempt takes
queue_s + est_tokens/rate and is cut at the deadline with the tokens it
emitted by then; a failed one takes the probe's known wait (at least 1 s).

  table  fits 100 columns; "-" where there is no value
  csv    the calibration: lookback_days,lane,hour,probes,ok,covered,coverage,
         median_ratio,p90_ratio,false_eligible,false_ineligible,no_policy,
         censored_uncovered,best (hour "all" and 00..23; lane "all" too);
         with baselines, an empty line and their table
  json   {timezone, from, to, read_from, probes_read, ignored,
          best_lookback_days, calibration: [{lookback_days, best, lanes:
          [{lane, probes, ok, covered, coverage, median_ratio, p90_ratio,
          false_eligible, false_ineligible, no_policy, censored_uncovered,
          hours (with -hours)}], all: {...}}], naive_lane, paid_lane,
          arrival_lane, arrival_lead_s, decision_lookback_days,
          dropped_replays, decisions: [{class, strategy, jobs, met, met_pct,
          median_time_s, burned_free_tokens, paid_usd, attempts}],
          baselines and dropped_baselines (with baselines only)};
         null where there is no value

`

// maxBacktestDays bounds -days (ten years).
const maxBacktestDays = 3660

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
	err := cmp.Or(errFormat, fs.inRange("days", *days, 1, maxBacktestDays), errLookback, errRule, errCoverage,
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
		return fs.usagef("-tune needs -fallback: it picks among their T")
	}
	busy := 0.0
	switch *busyFlag {
	case "":
	case "held":
		busy = backtest.HeldBusy429
	default:
		if busy, err = strconv.ParseFloat(*busyFlag, 64); err != nil || !(busy > 0 && busy <= 1e9) {
			return fs.usagef("-busy429: want held or seconds above 0, got %q", clip(*busyFlag))
		}
	}
	cfg, err := config.Load(*fs.config)
	if err != nil {
		return err
	}
	to := time.Time{}
	if *endFlag != "" {
		if to, err = store.ParseHour(*endFlag, cfg.Location); err != nil {
			return fs.usagef("-end: %w", err)
		}
	} else {
		to = e.now()
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
	rep, first, err := load.Backtest(ctx, st, opts)
	if err != nil {
		return fmt.Errorf("backtest: %w", err)
	}
	if note := thinNote(&rep, first); note != "" && st != nil { // a fresh install said so already
		fmt.Fprintf(e.stderr, "policygen: backtest: note: %s\n", note)
	}
	var out bytes.Buffer
	if err := write(&out, &rep, *hoursFlag); err != nil {
		return fmt.Errorf("backtest: %w", err)
	}
	if _, err := e.stdout.Write(out.Bytes()); err != nil {
		return fmt.Errorf("backtest: write report: %w", err)
	}
	return nil
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
			return nil, usagef("backtest: -%s: want comma-separated %s, got %q", name, want, clip(s))
		}
		out = append(out, v)
	}
	if most > 0 && len(out) > most {
		return nil, usagef("backtest: -%s: want at most %d values, got %d", name, most, len(out))
	}
	return out, nil
}

// seconds and second are list's want and parse for seconds in [least,
// policy.MaxSeconds].
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
