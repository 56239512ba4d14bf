package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/hours"
	"github.com/lanewatch/lanewatch/internal/backtest"
	"github.com/lanewatch/lanewatch/internal/cli"
	"github.com/lanewatch/lanewatch/internal/wire"
	"github.com/lanewatch/lanewatch/series"
)

const backtestUsage = `usage: policygen backtest -config F [-days N] [-end YYYY-MM-DDTHH] [-lookback 1,3,7,14]
                          [-format table|csv|json] [-hours]

Replays the stored probes of [end - N days, end) (end: now by default)
against the live policy in force just before each of them (what policygen
-hour would have written from the probes before it), after a warm-up of the
lookback's days before the window, and reports:

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

The replay's world: an attempt started at t on a lane meets the lane's next
probe within the hour after t (its outcome, queue_s and tokens/gen_s), or
fails fast without one or during a 429's back-off; an ok attempt takes
queue_s + est_tokens/rate and is cut at the deadline with the tokens it
emitted by then; a failed one takes the probe's known wait (at least 1 s).

  table  fits 100 columns; "-" where there is no value
  csv    the calibration: lookback_days,lane,hour,probes,ok,covered,coverage,
         median_ratio,p90_ratio,false_eligible,false_ineligible,no_policy,
         censored_uncovered,best (hour "all" and 00..23; lane "all" too)
  json   {timezone, from, to, read_from, probes_read, ignored,
          best_lookback_days, calibration: [{lookback_days, best, lanes:
          [{lane, probes, ok, covered, coverage, median_ratio, p90_ratio,
          false_eligible, false_ineligible, no_policy, censored_uncovered,
          hours (with -hours)}], all: {...}}], naive_lane, paid_lane,
          arrival_lane, arrival_lead_s, decision_lookback_days,
          dropped_replays, decisions: [{class, strategy, jobs, met, met_pct,
          median_time_s, burned_free_tokens, paid_usd, attempts}]};
         null where there is no value

`

// maxBacktestDays bounds -days (ten years).
const maxBacktestDays = 3660

// backtestTarget is how many probes one store read aims at: the window is
// read in spans of about this many probes, so memory stays bounded however
// long the window.
const backtestTarget = 75_000

// runBacktest is `policygen backtest`.
func (e *env) runBacktest(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("policygen backtest", flag.ContinueOnError)
	configPath := fs.String("config", "", "path to the lanewatch YAML config (required)")
	days := fs.Int("days", 14, "score the last `N` days")
	lookbackFlag := fs.String("lookback", "", "comma-separated lookback_days `values` to score, e.g. 1,3,7,14 (default: the config's)")
	format := fs.String("format", "table", "output `format`: table, csv or json")
	endFlag := fs.String("end", "", "end the window at the start of hour `YYYY-MM-DDTHH` in the config's timezone (default: now)")
	hoursFlag := fs.Bool("hours", false, "break the calibration down by hour of day (table and json; csv always does)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), backtestUsage)
		fs.PrintDefaults()
	}
	if err := cli.Parse(fs, args, e.stderr); err != nil {
		return err
	}
	var write func(io.Writer, *backtest.Report, bool) error
	switch *format {
	case "table":
		write = writeBacktestTable
	case "csv":
		write = writeBacktestCSV
	case "json":
		write = writeBacktestJSON
	default:
		return usagef("backtest: -format: want table, csv or json, got %q", *format)
	}
	switch {
	case fs.NArg() > 0:
		return usagef("backtest: unexpected argument %q", fs.Arg(0))
	case *configPath == "":
		return usagef("backtest: -config is required")
	case *days < 1 || *days > maxBacktestDays:
		return usagef("backtest: -days: want 1 to %d, got %d", maxBacktestDays, *days)
	}
	lookbacks, err := parseLookbacks(*lookbackFlag)
	if err != nil {
		return err
	}
	cfg, err := config.Load(*configPath)
	if err != nil {
		return err
	}
	to := time.Time{}
	if *endFlag != "" {
		if to, err = hours.Parse(*endFlag, cfg.Location); err != nil {
			return usagef("backtest: -end: %w", err)
		}
	} else {
		to = e.now()
	}
	to = to.In(cfg.Location)
	opts := backtest.Options{Params: wire.Params(cfg), Lookbacks: lookbacks, From: to.AddDate(0, 0, -*days), To: to}
	bt, err := backtest.New(opts)
	if err != nil {
		return err
	}
	st, err := openStoreOrFresh(ctx, cfg, e.stderr, e.lookupEnv, "backtest of zero probes")
	if err != nil {
		return fmt.Errorf("backtest: %w", err)
	}
	defer st.Close()
	restart := func() error { // the scan found the file out of order
		bt, err = backtest.New(opts)
		return err
	}
	add := func(p series.Probe) error { return bt.Add(p) }
	if err := feed(ctx, st, opts.ReadFrom(), opts.To, add, restart); err != nil {
		return fmt.Errorf("backtest: %w", err)
	}
	rep := bt.Report()
	var out bytes.Buffer
	if err := write(&out, &rep, *hoursFlag); err != nil {
		return fmt.Errorf("backtest: %w", err)
	}
	if _, err := e.stdout.Write(out.Bytes()); err != nil {
		return fmt.Errorf("backtest: write report: %w", err)
	}
	return nil
}

// parseLookbacks reads -lookback: comma-separated days 0..366 (nil when
// empty: the config's).
func parseLookbacks(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []int
	for part := range strings.SplitSeq(s, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || k < 0 || k > backtest.MaxLookbackDays {
			return nil, usagef("backtest: -lookback: want comma-separated days 0..%d, got %q", backtest.MaxLookbackDays, clip(s))
		}
		out = append(out, k)
	}
	if len(out) > backtest.MaxLookbacks {
		return nil, usagef("backtest: -lookback: want at most %d values, got %d", backtest.MaxLookbacks, len(out))
	}
	return out, nil
}

// clip shortens a flag value quoted in an error.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// feed reads the probes of [from, to) from st in time order and hands them
// to add, in spans of about backtestTarget probes (a week first, then as
// long as the probe rate seen so far allows), so that no read holds the
// whole window. The next span is read while add works through the current
// one: the store's decoding and the replay share the two cores.
//
// A store that streams in time order (the embedded file, as a sampler
// writes it) is read in one pass instead, without holding any span; when
// the pass finds it out of order, restart wipes what add was given and the
// window is read in spans.
func feed(ctx context.Context, st series.Store, from, to time.Time, add func(series.Probe) error, restart func() error) error {
	if sc, ok := st.(series.ProbeScanner); ok {
		ordered, err := scanFeed(ctx, sc, from, to, add)
		if err != nil {
			return err
		}
		if ordered {
			return nil
		}
		if err := restart(); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	type span struct {
		probes []series.Probe
		err    error
	}
	spans := make(chan span) // unbuffered: at most one span waits
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(spans)
		const day = 24 * time.Hour
		length := 7 * day
		for t := from; t.Before(to); {
			end := t.Add(length)
			if end.After(to) {
				end = to
			}
			ps, err := st.Probes(ctx, series.Between(t, end))
			if err != nil {
				err = fmt.Errorf("store: read probes: %w", err)
			}
			select {
			case spans <- span{ps, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
			if perDay := float64(len(ps)) / end.Sub(t).Hours() * 24; perDay > 0 {
				length = time.Duration(backtestTarget/perDay) * day
			} else {
				length *= 4
			}
			length = min(max(length, day), 92*day)
			t = end
		}
	})
	defer func() {
		cancel() // a reader waiting to hand over a span gives up
		wg.Wait()
	}()
	for sp := range spans {
		if sp.err != nil {
			return sp.err
		}
		for _, p := range sp.probes {
			if err := add(p); err != nil {
				return err
			}
		}
	}
	return ctx.Err()
}

// scanFeed streams the probes of [from, to) from sc to add: the store
// decodes in one goroutine while add replays in this one, batches between
// them. It reports false, having added nothing, when sc cannot stream them
// in time order.
func scanFeed(ctx context.Context, sc series.ProbeScanner, from, to time.Time, add func(series.Probe) error) (bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	const size = 4096
	batches := make(chan []series.Probe, 2)
	free := make(chan []series.Probe, 4) // batches added, for reuse
	var ordered bool
	var scanErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(batches)
		b := make([]series.Probe, 0, size)
		ordered, scanErr = sc.ScanProbes(ctx, series.Between(from, to), func(p series.Probe) error {
			if b = append(b, p); len(b) == size {
				select {
				case batches <- b:
				case <-ctx.Done():
					return ctx.Err()
				}
				select {
				case b = <-free:
				default:
					b = make([]series.Probe, 0, size)
				}
			}
			return nil
		})
		if scanErr == nil && len(b) > 0 {
			select {
			case batches <- b:
			case <-ctx.Done():
			}
		}
	}()
	var addErr error
	for b := range batches {
		for _, p := range b {
			if addErr == nil {
				addErr = add(p)
			}
		}
		if addErr != nil {
			cancel()
		}
		select {
		case free <- b[:0]:
		default:
		}
	}
	<-done
	switch {
	case addErr != nil:
		return true, addErr
	case scanErr != nil:
		return true, fmt.Errorf("store: read probes: %w", scanErr)
	}
	return ordered, nil
}

// --- table ---

func writeBacktestTable(w io.Writer, r *backtest.Report, byHour bool) error {
	bw := bufio.NewWriter(w)
	scored := 0
	if len(r.Calibration) > 0 {
		scored = r.Calibration[0].All.Probes
	}
	fmt.Fprintf(bw, "backtest of %s .. %s (%s): %d probes scored\n", stamp(r.From), stamp(r.To), r.Timezone, scored)
	fmt.Fprintf(bw, "warm-up from %s: its probes feed the history, unscored\n", stamp(r.ReadFrom))
	if r.Ignored > 0 {
		fmt.Fprintf(bw, "(%d probes of lanes not in the config left out)\n", r.Ignored)
	}
	if len(r.Calibration) > 1 {
		fmt.Fprintf(bw, "\nlookback sweep, all lanes (* the lowest median ratio at coverage >= %g, else the best coverage)\n", backtest.TargetCoverage)
		fmt.Fprintf(bw, "%-10s %8s %8s %8s %8s %7s %7s %8s %6s\n", "lookback", "probes", "ok", "coverage", "median×", "p90×", "f_elig", "f_inelig", "cens")
		for _, c := range r.Calibration {
			mark := ""
			if c.Best {
				mark = " *"
			}
			a := c.All.Counts
			fmt.Fprintf(bw, "%-10s %8d %8d %8s %8s %7s %7d %8d %6d\n", fmt.Sprintf("%d d%s", c.LookbackDays, mark),
				a.Probes, a.OK, fmtNum(a.Coverage, 3), fmtNum(a.MedianRatio, 2), fmtNum(a.P90Ratio, 2), a.FalseEligible, a.FalseIneligible, a.CensoredUncovered)
		}
	}
	for _, c := range r.Calibration {
		mark := ""
		if c.Best && len(r.Calibration) > 1 {
			mark = " (best)"
		}
		fmt.Fprintf(bw, "\ncalibration, lookback %s%s: does the next attempt wait at most next_queue_s?\n", days(c.LookbackDays), mark)
		fmt.Fprintf(bw, "%-16s %7s %7s %7s %8s %7s %7s %6s %8s %5s %6s\n",
			"lane", "probes", "ok", "covered", "coverage", "median×", "p90×", "f_elig", "f_inelig", "cens", "no_pol")
		row := func(name string, n backtest.Counts) {
			fmt.Fprintf(bw, "%-16s %7d %7d %7d %8s %7s %7s %6d %8d %5d %6d\n", clipName(name, 16),
				n.Probes, n.OK, n.Covered, fmtNum(n.Coverage, 3), fmtNum(n.MedianRatio, 2), fmtNum(n.P90Ratio, 2),
				n.FalseEligible, n.FalseIneligible, n.CensoredUncovered, n.NoPolicy)
		}
		hourRows := func(hs []backtest.HourCounts) {
			for _, h := range hs {
				if h.Probes > 0 {
					row(fmt.Sprintf("  %02d", h.Hour), h.Counts)
				}
			}
		}
		for _, l := range c.Lanes {
			row(l.Lane, l.Counts)
			if byHour {
				hourRows(l.Hours)
			}
		}
		row("all", c.All.Counts)
		if byHour {
			hourRows(c.All.Hours)
		}
	}
	fmt.Fprintf(bw, "\ndecisions: a job arrives %s before each probe of %s; naive retries %s,\n",
		time.Duration(r.ArrivalLeadS*float64(time.Second)), orDash(r.ArrivalLane), orDash(r.NaiveLane))
	fmt.Fprintf(bw, "paid retries %s; lanewatch follows the policy with lookback %s\n", orDash(r.PaidLane), days(r.DecisionLookback))
	if r.DroppedReplays > 0 {
		fmt.Fprintf(bw, "(%d replays left out: their deadline + 1 h passes the newest probe)\n", r.DroppedReplays)
	}
	fmt.Fprintf(bw, "%-16s %-10s %7s %7s %7s %9s %12s %10s %9s\n", "class", "strategy", "jobs", "met", "met %", "median s", "burned free", "paid USD", "attempts")
	for _, d := range r.Decisions {
		fmt.Fprintf(bw, "%-16s %-10s %7d %7d %7s %9s %12d %10s %9d\n", clipName(d.Class, 16), d.Strategy, d.Jobs, d.Met,
			strconv.FormatFloat(d.MetPct, 'f', 1, 64), fmtNum(d.MedianTimeS, 1), d.BurnedFreeTokens,
			strconv.FormatFloat(d.PaidUSD, 'f', 4, 64), d.Attempts)
	}
	if len(r.Decisions) == 0 {
		fmt.Fprintln(bw, "(no classes configured)")
	}
	return bw.Flush()
}

func days(n int) string {
	if n == 1 {
		return "1 day"
	}
	return strconv.Itoa(n) + " days"
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04Z") }

func fmtNum(x *float64, prec int) string {
	if x == nil {
		return "-"
	}
	return strconv.FormatFloat(*x, 'f', prec, 64)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func clipName(s string, n int) string {
	if len(s) > n {
		return s[:n-1] + "~"
	}
	return s
}

// --- csv ---

func writeBacktestCSV(w io.Writer, r *backtest.Report, _ bool) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"lookback_days", "lane", "hour", "probes", "ok", "covered", "coverage", "median_ratio", "p90_ratio",
		"false_eligible", "false_ineligible", "no_policy", "censored_uncovered", "best"})
	opt := func(x *float64) string {
		if x == nil {
			return ""
		}
		return strconv.FormatFloat(*x, 'f', -1, 64)
	}
	for _, c := range r.Calibration {
		row := func(lane, hour string, n backtest.Counts) {
			_ = cw.Write([]string{strconv.Itoa(c.LookbackDays), lane, hour, strconv.Itoa(n.Probes), strconv.Itoa(n.OK),
				strconv.Itoa(n.Covered), opt(n.Coverage), opt(n.MedianRatio), opt(n.P90Ratio),
				strconv.Itoa(n.FalseEligible), strconv.Itoa(n.FalseIneligible), strconv.Itoa(n.NoPolicy),
				strconv.Itoa(n.CensoredUncovered), strconv.FormatBool(c.Best)})
		}
		lane := func(name string, all backtest.Counts, hs []backtest.HourCounts) {
			row(name, "all", all)
			for _, h := range hs {
				row(name, fmt.Sprintf("%02d", h.Hour), h.Counts)
			}
		}
		for _, l := range c.Lanes {
			lane(l.Lane, l.Counts, l.Hours)
		}
		lane("all", c.All.Counts, c.All.Hours)
	}
	cw.Flush()
	return cw.Error()
}

// --- json ---

func writeBacktestJSON(w io.Writer, r *backtest.Report, byHour bool) error {
	out := *r
	if !byHour {
		out.Calibration = make([]backtest.Calibration, len(r.Calibration))
		for i, c := range r.Calibration {
			c.Lanes = append([]backtest.LaneCalibration(nil), c.Lanes...)
			for j := range c.Lanes {
				c.Lanes[j].Hours = nil
			}
			c.All.Hours = nil
			out.Calibration[i] = c
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
