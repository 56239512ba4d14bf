package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"time"

	"github.com/lanewatch/lanewatch/hours"
	"github.com/lanewatch/lanewatch/internal/cli"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/policy"
)

// runPolicy is `policygen -config F [-hour H | -day D] [-out DIR] [-print]`.
func (e *env) runPolicy(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("policygen", flag.ContinueOnError)
	configPath := fs.String("config", "", "path to the lanewatch YAML config (required)")
	hourFlag := fs.String("hour", "", "hour `YYYY-MM-DDTHH` in the config's timezone (default: the current hour)")
	dayFlag := fs.String("day", "", "write the 24 forecast files of day `YYYY-MM-DD` instead")
	outFlag := fs.String("out", "", "folder for <hour>.yaml (default: policy.out of the config)")
	printFlag := fs.Bool("print", false, "print the YAML written instead of the paths")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText)
		fs.PrintDefaults()
	}
	if err := cli.Parse(fs, args, e.stderr); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usagef("unexpected argument %q (subcommands: book, swings)", fs.Arg(0))
	case *configPath == "":
		return usagef("-config is required")
	case *hourFlag != "" && *dayFlag != "":
		return usagef("-hour and -day exclude each other")
	}
	cfg, err := config.Load(*configPath)
	if err != nil {
		return err
	}
	loc := cfg.Location
	out := cfg.Policy.Out
	if *outFlag != "" {
		if out, err = filepath.Abs(*outFlag); err != nil {
			return usagef("-out: %w", err)
		}
	}
	params := paramsOf(cfg)
	lookback := max(cfg.Policy.LookbackDays, 0)

	var files []policy.File
	if *dayFlag != "" {
		day, err := hours.ParseDay(*dayFlag, loc)
		if err != nil {
			return usagef("-day: %w", err)
		}
		// The forecast reads the lookback days before the day (an hour of
		// margin for odd DST rules at midnight; policy ignores the rest).
		y, m, d := day.Date()
		from := time.Date(y, m, d-lookback, 0, 0, 0, 0, loc).Add(-time.Hour)
		to := time.Date(y, m, d, 0, 0, 0, 0, loc).Add(time.Hour)
		recs, err := e.records(ctx, cfg, from, to)
		if err != nil {
			return err
		}
		files = policy.Forecast(params, recs, day)
	} else {
		var h time.Time
		if *hourFlag != "" {
			if h, err = hours.Parse(*hourFlag, loc); err != nil {
				return usagef("-hour: %w", err)
			}
		} else {
			h = hours.Start(e.now(), loc)
		}
		// The window: from an hour before the first lookback day (so H-1
		// is in even with no lookback) to the end of H.
		lt := h.In(loc)
		from := time.Date(lt.Year(), lt.Month(), lt.Day()-lookback, 0, 0, 0, 0, loc).Add(-time.Hour)
		recs, err := e.records(ctx, cfg, from, h.Add(time.Hour))
		if err != nil {
			return err
		}
		files = []policy.File{policy.ForHour(params, recs, h)}
	}

	for i, f := range files {
		data, err := policy.Marshal(f)
		if err != nil {
			return fmt.Errorf("policy %s: %w", f.Hour, err)
		}
		path := filepath.Join(out, f.Hour+".yaml")
		if err := writeAtomic(path, data, e.writeHook); err != nil {
			return err
		}
		if *printFlag {
			if i > 0 {
				fmt.Fprintln(e.stdout, "---")
			}
			fmt.Fprintf(e.stdout, "# wrote %s\n%s", path, data)
		} else {
			fmt.Fprintln(e.stdout, path)
		}
	}
	return nil
}

// paramsOf maps the config to the policy's parameters.
func paramsOf(cfg *config.Config) policy.Params {
	p := policy.Params{Location: cfg.Location, LookbackDays: cfg.Policy.LookbackDays}
	for _, l := range cfg.Lanes {
		p.Lanes = append(p.Lanes, policy.LaneSpec{Name: l.Name, Kind: l.Kind})
	}
	for _, c := range cfg.Policy.Classes {
		p.Classes = append(p.Classes, policy.ClassSpec{
			Name:          c.Name,
			DeadlineS:     c.DeadlineS,
			CeilingTokens: c.CeilingTokens,
			EstTokens:     c.EstTokens,
			PaidUSDPer1k:  c.PaidUSDPer1k,
		})
	}
	return p
}

// records reads the hourly records with from <= hour < to and, from the
// probes of the same window, the time of each lane-hour's last probe.
func (e *env) records(ctx context.Context, cfg *config.Config, from, to time.Time) ([]policy.Record, error) {
	st, err := openStore(ctx, cfg, e.stderr, e.lookupEnv)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	hourly, err := st.Hourly(ctx, from, to)
	if err != nil {
		return nil, fmt.Errorf("store: read hourly records: %w", err)
	}
	probes, err := st.Probes(ctx, from, to)
	if err != nil {
		return nil, fmt.Errorf("store: read probes: %w", err)
	}
	type key struct {
		lane string
		hour int64
	}
	last := make(map[key]time.Time, len(hourly))
	for _, p := range probes {
		k := key{p.Lane, hours.Start(p.Time, cfg.Location).Unix()}
		if p.Time.After(last[k]) {
			last[k] = p.Time
		}
	}
	recs := make([]policy.Record, len(hourly))
	for i, h := range hourly {
		recs[i] = policy.Record{
			Lane:        h.Lane,
			Kind:        h.Kind,
			Hour:        h.Hour,
			WorstQueueS: h.WorstQueueS,
			WorstGenS:   h.WorstGenS,
			MinTokPerS:  h.MinTokPerS,
			Samples:     int(h.Samples),
			Failures:    int(h.Failures),
			LastSample:  last[key{h.Lane, h.Hour.Unix()}],
		}
	}
	return recs, nil
}
