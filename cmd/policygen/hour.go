package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/lanewatch/lanewatch/app"
	"github.com/lanewatch/lanewatch/hours"
	"github.com/lanewatch/lanewatch/internal/atomicfile"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/policy"
)

// staleTemp is how old a temp file left by a killed run must be before a
// later run removes it (younger ones may belong to a run still in
// progress). Files are written with internal/atomicfile.
const staleTemp = time.Hour

// hourArg is the hour an -hour flag names in loc, or the current hour when
// it is empty.
func (e *env) hourArg(flag string, loc *time.Location) (time.Time, error) {
	if flag == "" {
		return hours.Start(e.now(), loc), nil
	}
	return hours.Parse(flag, loc)
}

// runPolicy is `policygen -config F [-hour H | -day D] [-out DIR] [-print]`;
// D is YYYY-MM-DD, today or tomorrow.
func (e *env) runPolicy(ctx context.Context, args []string) error {
	fs := newFlags("", usageText)
	hourFlag := fs.String("hour", "", "hour `YYYY-MM-DDTHH` in the config's timezone (default: the current hour)")
	dayFlag := fs.String("day", "", "write the 24 forecast files of day `YYYY-MM-DD` (or today, tomorrow: in the config's timezone) instead")
	outFlag := fs.String("out", "", "folder for <hour>.yaml (default: policy.out of the config)")
	printFlag := fs.Bool("print", false, "print the YAML written instead of the paths")
	siteFlag := fs.String("site", "", "write the view of one `site` only (default: every site, conservatively merged)")
	if err := fs.parse(args, e.stderr, " (subcommands: backtest, book, lane, swings)"); err != nil {
		return err
	}
	if *hourFlag != "" && *dayFlag != "" {
		return usagef("-hour and -day exclude each other")
	}
	cfg, err := config.Load(*fs.config)
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
	var sites []string
	if *siteFlag != "" {
		sites = []string{*siteFlag}
	}
	var day, h time.Time
	if *dayFlag != "" {
		if day, err = parseDay(*dayFlag, e.now, loc); err != nil {
			return usagef("-day: %w", err)
		}
	} else if h, err = e.hourArg(*hourFlag, loc); err != nil {
		return usagef("-hour: %w", err)
	}
	st, err := openStoreOrFresh(ctx, cfg, e.stderr, e.lookupEnv, "every lane is never_sampled")
	if err != nil {
		return err
	}
	defer st.Close()

	var files []policy.File
	if *dayFlag != "" {
		if files, err = app.Forecast(ctx, st, cfg, day, sites); err != nil {
			return err
		}
	} else {
		f, err := app.ForHour(ctx, st, cfg, h, sites)
		if err != nil {
			return err
		}
		files = []policy.File{f}
	}

	// Temp files that killed runs left in the folder go, whatever hour
	// they were for.
	atomicfile.RemoveStaleTemps(out, staleTemp)
	for i, f := range files {
		data, err := policy.Marshal(f)
		if err != nil {
			return fmt.Errorf("policy %s: %w", f.Hour, err)
		}
		path := filepath.Join(out, f.Hour+".yaml")
		if err := atomicfile.Write(path, data, atomicfile.MakeDir(), atomicfile.Hook(e.writeHook)); err != nil {
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

// parseDay reads -day: YYYY-MM-DD, or today or tomorrow, the day in loc that
// holds now() or the one after it (now is read only for those two). Like
// hours.ParseDay it returns noon of the day, a time every day has.
func parseDay(s string, now func() time.Time, loc *time.Location) (time.Time, error) {
	next := 0
	switch s {
	case "today":
	case "tomorrow":
		next = 1
	default:
		day, err := hours.ParseDay(s, loc)
		if err != nil {
			return time.Time{}, fmt.Errorf("%w, today or tomorrow", err)
		}
		return day, nil
	}
	t := now().In(loc)
	return time.Date(t.Year(), t.Month(), t.Day()+next, 12, 0, 0, 0, loc), nil
}
