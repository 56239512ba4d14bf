package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lanewatch/lanewatch/api"
	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/internal/atomicfile"
	"github.com/lanewatch/lanewatch/internal/cli"
	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/policy/load"
	"github.com/lanewatch/lanewatch/store"
)

// staleTemp is how old a temp file a killed run left must be before a run
// removes it (a younger one may be a running run's).
const staleTemp = time.Hour

// hourArg is the start of the hour an -hour flag names in loc, or now.
func (e *env) hourArg(flag string, loc *time.Location) (time.Time, error) {
	if flag == "" {
		return e.now(), nil
	}
	return store.ParseHour(flag, loc)
}

// runPolicy is `policygen -config F [-hour H | -day D] [-out DIR] [-print] [-site S]`.
func (e *env) runPolicy(ctx context.Context, args []string) error {
	fs := newFlags("", usageText)
	hourFlag := fs.String("hour", "", "hour `YYYY-MM-DDTHH` in the config's timezone (default: the current hour)")
	dayFlag := fs.String("day", "", "write the 24 forecast files of day `YYYY-MM-DD` (or today, tomorrow: in the config's timezone) instead")
	outFlag := fs.String("out", "", "folder for <hour>.yaml (default: policy.out of the config)")
	printFlag := fs.Bool("print", false, "print the YAML written instead of the paths")
	siteFlag := fs.String("site", "", "write the view of one `site` only, as <hour>.<site>.yaml (default: every site, conservatively merged, as <hour>.yaml)")
	if err := fs.parse(args, e.stderr, " (subcommands: backtest, book, lane, serve, swings)"); err != nil {
		return err
	}
	if *hourFlag != "" && *dayFlag != "" {
		return cli.Usagef("-hour and -day exclude each other")
	}
	cfg, err := config.Load(*fs.Config)
	if err != nil {
		return err
	}
	loc, out := cfg.Location, cfg.Policy.Out
	if *outFlag != "" {
		if out, err = filepath.Abs(*outFlag); err != nil {
			return cli.Usagef("-out: %w", err)
		}
	}
	var sites []string
	if *siteFlag != "" {
		if !config.ValidName(*siteFlag) {
			return cli.Usagef("-site: want [a-z0-9_-]+, got %q", clip(*siteFlag))
		}
		sites = []string{*siteFlag}
	}
	var day, h time.Time
	if *dayFlag != "" {
		if day, err = parseDay(*dayFlag, e.now, loc); err != nil {
			return cli.Usagef("-day: %w", err)
		}
	} else if h, err = e.hourArg(*hourFlag, loc); err != nil {
		return cli.Usagef("-hour: %w", err)
	}
	st, err := e.openStore(ctx, cfg, "every lane is never_sampled")
	if err != nil {
		return err
	}
	defer closeStore(st)
	var files []policy.File
	var seen []string // the sites of the records read
	if *dayFlag != "" {
		files, seen, err = load.Forecast(ctx, st, cfg.PolicyParams(), day, sites)
	} else {
		var f policy.File
		f, seen, err = load.ForHour(ctx, st, cfg.PolicyParams(), h, sites)
		files = []policy.File{f}
	}
	if err != nil {
		return err
	}
	if *siteFlag != "" && *siteFlag != cfg.Site && !slices.Contains(seen, *siteFlag) {
		return unknownSite(*siteFlag, cfg.Site, seen)
	}

	// Temp files that killed runs left in the folder go, whatever hour
	// they were for.
	atomicfile.RemoveStaleTemps(out, staleTemp)
	folder := api.Folder{Dir: out, Location: loc}
	for i, f := range files {
		path, data, err := folder.Write(f, *siteFlag, atomicfile.Hook(e.writeHook))
		if err != nil {
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

// unknownSite is the usage error of a -site that neither the config nor a
// record read names: a typo writes nothing.
func unknownSite(site, own string, seen []string) error {
	known := slices.DeleteFunc(append(slices.Clone(seen), own), func(s string) bool { return s == "" })
	if len(known) == 0 {
		return cli.Usagef("-site: unknown site %q (no stored record carries a site, and the config sets none)", site)
	}
	slices.Sort(known)
	return cli.Usagef("-site: unknown site %q (sites: %s)", site, strings.Join(slices.Compact(known), ", "))
}

// parseDay reads -day: YYYY-MM-DD, today or tomorrow (in loc), as noon of
// the day, as store.ParseDay: a time every day has.
func parseDay(s string, now func() time.Time, loc *time.Location) (time.Time, error) {
	next := 0
	switch s {
	case "today":
	case "tomorrow":
		next = 1
	default:
		day, err := store.ParseDay(s, loc)
		if err != nil {
			return time.Time{}, fmt.Errorf("%w, today or tomorrow", err)
		}
		return day, nil
	}
	t := now().In(loc)
	return time.Date(t.Year(), t.Month(), t.Day()+next, 12, 0, 0, 0, loc), nil
}
