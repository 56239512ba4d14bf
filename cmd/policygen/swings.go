package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lanewatch/lanewatch/internal/atomicfile"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/policy/load"
	"github.com/lanewatch/lanewatch/report/swings"
	"github.com/lanewatch/lanewatch/store"
)

const swingsUsage = `usage: policygen swings -config F [-days N] [-lane NAME] [-site NAME] [-format table|csv|json] [-svg FILE [-log]]

Time-of-day report: for each lane and hour of day (in the config's timezone),
the median and the max of the hourly worst queue times over the hourly
records of [now - N days, now), the probes and failed probes behind them, and
per lane the peak hour, the quietest hour and the swing between them. An
hour's worst is a lower bound (">30.0", censored) when a failed probe is
known to have waited at least as long as every ok probe (a timeout before the first
token, say).

  table  fits 100 columns; "-" where there is no value, ">x" for at least x
  csv    lane,kind,hour,median_s,worst_s,measured,days,samples,failures,
         censored,median_censored (24 rows per lane; median_s and worst_s
         empty without a value; censored: worst_s is a lower bound)
  json   {timezone, from, to, days, first_record, last_record, records,
          lanes: [{name, kind, records, samples, failures, peak_hour,
          peak_median_s, quiet_hour, quiet_median_s, swing_s, swing_ratio,
          peak_censored, quiet_censored, swing_censored,
          hours: [{hour, median_s, worst_s, measured, days, samples,
          failures, censored, median_censored}]}]}; null where there is no value

-svg FILE draws the chart instead (a PNG when FILE ends in .png), written
atomically, with each class's deadline as a line, and prints where it went;
add -format to print the report too (the "wrote chart" line then goes to
stderr). -log puts the seconds axis of the chart on a log scale.

`

// reportWriter writes the swings report in one -format.
type reportWriter = func(io.Writer, *swings.Report) error

// maxSwingsDays bounds -days (ten years of hourly records).
const maxSwingsDays = 3660

// runSwings is the `policygen swings` subcommand.
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
	write, err := choose(fset, "format", *format,
		option[reportWriter]{"table", swings.WriteTable}, option[reportWriter]{"csv", swings.WriteCSV}, option[reportWriter]{"json", swings.WriteJSON})
	if err != nil {
		return err
	}
	if err := fset.inRange("days", *days, 1, maxSwingsDays); err != nil {
		return err
	}
	if *logY && *svg == "" {
		return fset.usagef("-log goes with -svg (it scales the chart)")
	}

	cfg, err := config.Load(*fset.config)
	if err != nil {
		return err
	}
	to := e.now().In(cfg.Location)
	from := to.AddDate(0, 0, -*days)
	var sites []string
	if *site != "" {
		sites = []string{*site}
	}
	rep, err := e.swings(ctx, cfg, from, to, *days, sites)
	if err != nil {
		return err
	}
	if *lane != "" {
		l, ok := rep.Lane(*lane)
		if !ok {
			names := make([]string, len(rep.Lanes))
			for i, l := range rep.Lanes {
				names[i] = l.Name
			}
			return fmt.Errorf("swings: unknown lane %q (lanes: %s)", *lane, strings.Join(names, ", "))
		}
		rep.Lanes = []swings.LaneReport{l}
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
	var out bytes.Buffer
	if err := write(&out, rep); err != nil {
		return fmt.Errorf("swings: %w", err)
	}
	if _, err := e.stdout.Write(out.Bytes()); err != nil {
		return fmt.Errorf("swings: write report: %w", err)
	}
	return nil
}

// swings builds the report of the hourly records of [from, to) while the
// store reads them. A samples file that does not exist yet is an empty
// store (no sampler round has run): a warning, no error.
func (e *env) swings(ctx context.Context, cfg *config.Config, from, to time.Time, days int, sites []string) (*swings.Report, error) {
	st, err := e.openStore(ctx, cfg, "reporting no data")
	if err != nil {
		return nil, fmt.Errorf("swings: %w", err)
	}
	defer closeStore(st)
	q := store.Between(from, to)
	q.Sites = sites
	q.Fields = swings.Fields() // the report reads 4 of the 7 fields
	rep, err := load.Swings(ctx, st, q, cfg.SwingsOptions(from, to, days), len(sites) == 0)
	if err != nil {
		return nil, fmt.Errorf("swings: store: read hourly records: %w", err)
	}
	return rep, nil
}
