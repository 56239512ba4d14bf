package main

import (
	"bytes"
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/lanewatch/lanewatch/internal/atomicfile"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/report/swings"
	"github.com/lanewatch/lanewatch/store"
)

const swingsUsage = `usage: policygen swings -config F [-days N] [-lane NAME] [-site NAME] [-format table|csv|json] [-svg FILE [-log]]

Time-of-day report: for each lane and hour of day (in the config's
timezone), the median and the max of the hourly worst queue times over the
records of [now - N days, now), the probes and failed probes behind them,
and per lane the peak hour, the quietest hour and the swing between them;
">30.0" is a lower bound (censored). -format table fits 100 columns; csv
has 24 rows per lane, json the same figures (docs/deploy.md#the-time-of-day-report
has their keys). -svg FILE draws the chart instead (PNG when FILE ends in
.png), with each class's deadline; add -format to print the report too.

`

// maxDays bounds the -days of swings and backtest (ten years).
const maxDays = 3660

// runSwings is `policygen swings`.
func (e *env) runSwings(ctx context.Context, args []string) error {
	fset := newFlags("swings", swingsUsage)
	days := fset.Int("days", 7, "report the last `N` days")
	lane := fset.String("lane", "", "report only the lane `NAME`")
	site := fset.String("site", "", "report only the `site` NAME's records (default: every site merged, plus a column per site when there are several)")
	svg := fset.String("svg", "", "draw the chart into `FILE` (PNG when it ends in .png)")
	logY := fset.Bool("log", false, "with -svg: a log scale on the seconds axis")
	format := fset.String("format", "table", "output `format`: table, csv or json (with -svg: print the report too)")
	if err := fset.parse(args, e.stderr, ""); err != nil {
		return err
	}
	formatSet := false
	fset.Visit(func(f *flag.Flag) { formatSet = formatSet || f.Name == "format" })
	type writer = func(io.Writer, *swings.Report) error
	write, errFormat := choose(fset, "format", *format,
		option[writer]{"table", swings.WriteTable}, option[writer]{"csv", swings.WriteCSV}, option[writer]{"json", swings.WriteJSON})
	if err := cmp.Or(errFormat, fset.inRange("days", *days, 1, maxDays)); err != nil {
		return err
	}
	if *logY && *svg == "" {
		return fset.Usagef("-log goes with -svg (it scales the chart)")
	}
	cfg, err := config.Load(*fset.Config)
	if err != nil {
		return err
	}
	to := e.now().In(cfg.Location)
	from := to.AddDate(0, 0, -*days)
	q := store.Between(from, to)
	q.Fields = swings.Fields() // the report reads 4 of the 7 fields
	if *site != "" {
		q.Sites = []string{*site}
	}
	st, err := e.openStore(ctx, cfg, "reporting no data")
	if err != nil {
		return fmt.Errorf("swings: %w", err)
	}
	defer closeStore(st)
	rep, err := swings.Read(ctx, st, q, cfg.SwingsOptions(from, to, *days), *site == "")
	if err != nil {
		return fmt.Errorf("swings: store: read hourly records: %w", err)
	}
	if *lane != "" {
		i := slices.IndexFunc(rep.Lanes, func(l swings.LaneReport) bool { return l.Name == *lane })
		if i < 0 {
			names := make([]string, len(rep.Lanes))
			for i, l := range rep.Lanes {
				names[i] = l.Name
			}
			return fmt.Errorf("swings: unknown lane %q (lanes: %s)", *lane, strings.Join(names, ", "))
		}
		rep.Lanes = rep.Lanes[i : i+1]
	}
	// The chart goes first: a report on stdout means everything was written.
	if *svg != "" {
		var buf bytes.Buffer
		if err := swings.WriteChart(&buf, rep, swings.ChartOptions{Format: swings.ChartFormat(*svg), Log: *logY}); err != nil {
			return fmt.Errorf("swings: %w", err)
		}
		if err := atomicfile.Write(*svg, buf.Bytes(), atomicfile.MakeDir(), atomicfile.RemoveStale(staleTemp)); err != nil {
			return fmt.Errorf("swings: %w", err)
		}
		lanesN := fmt.Sprintf("%d lanes", len(rep.Lanes))
		if len(rep.Lanes) == 1 {
			lanesN = "1 lane"
		}
		msg := fmt.Sprintf("wrote chart %s (%s, %d hours, last %d days)\n", *svg, lanesN, swings.HoursPerDay, *days)
		if !formatSet {
			if _, err := io.WriteString(e.stdout, msg); err != nil {
				return fmt.Errorf("swings: %w", err)
			}
			return nil
		}
		// stdout carries the report: keep it clean for csv and json.
		_, _ = io.WriteString(e.stderr, "policygen: swings: "+msg)
	}
	return e.report("swings", func(w io.Writer) error { return write(w, rep) })
}

// report writes a report whole to stdout, or nothing when write fails.
func (e *env) report(cmd string, write func(io.Writer) error) error {
	var out bytes.Buffer
	if err := write(&out); err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	if _, err := e.stdout.Write(out.Bytes()); err != nil {
		return fmt.Errorf("%s: write report: %w", cmd, err)
	}
	return nil
}
