package main

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lanewatch/lanewatch/app"
	"github.com/lanewatch/lanewatch/internal/atomicfile"
	"github.com/lanewatch/lanewatch/store"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/policy"
)

// staleTemp is how old a temp file left by a killed run must be before a
// later run removes it (younger ones may belong to a run still in
// progress). Files are written with internal/atomicfile.
const staleTemp = time.Hour

// hourArg is the hour an -hour flag names in loc (its start), or now when
// it is empty: the live file of the current hour, as of now.
func (e *env) hourArg(flag string, loc *time.Location) (time.Time, error) {
	if flag == "" {
		return e.now(), nil // the live answer as of now (a back-off that ended no longer counts)
	}
	return store.ParseHour(flag, loc)
}

// runPolicy is `policygen -config F [-hour H | -day D] [-out DIR] [-print]`;
// D is YYYY-MM-DD, today or tomorrow.
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
		if !config.ValidName(*siteFlag) {
			return usagef("-site: want [a-z0-9_-]+, got %q", clip(*siteFlag))
		}
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
	// A site the figures came from is known; else the store is asked.
	if *siteFlag != "" && !slices.ContainsFunc(files, func(f policy.File) bool { return slices.Contains(f.Sites, *siteFlag) }) {
		if err := checkSite(ctx, st, cfg, *siteFlag); err != nil {
			return err
		}
	}

	// Temp files that killed runs left in the folder go, whatever hour
	// they were for.
	atomicfile.RemoveStaleTemps(out, staleTemp)
	for i, f := range files {
		data, err := policy.Marshal(f)
		if err != nil {
			return fmt.Errorf("policy %s: %w", f.Hour, err)
		}
		path := filepath.Join(out, policyFileName(f.Hour, *siteFlag))
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

// policyFileName is the file of the policy for hour: <hour>.yaml for every
// site merged, <hour>.<site>.yaml for one site's view, so that a view never
// replaces the merged file that policygen lane reads.
func policyFileName(hour, site string) string {
	if site == "" {
		return hour + ".yaml"
	}
	return hour + "." + site + ".yaml"
}

// endOfRecords bounds the store reads of checkSite: any record there is.
var endOfRecords = time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC) // int64 nanoseconds end in 2262

// checkSite refuses a -site that neither the config's site nor a stored
// hourly record names: a usage error (exit 2) that lists the sites known, so
// that a typo writes nothing rather than a policy of never_sampled lanes.
func checkSite(ctx context.Context, st store.Store, cfg *config.Config, site string) error {
	if site == cfg.Site {
		return nil
	}
	all := store.Between(time.Unix(0, 0), endOfRecords)
	recs, err := store.ReadHourly(ctx, st, all.Site(site))
	if err != nil {
		return fmt.Errorf("store: read hourly records: %w", err)
	}
	if len(recs) > 0 {
		return nil
	}
	if recs, err = store.ReadHourly(ctx, st, all); err != nil {
		return fmt.Errorf("store: read hourly records: %w", err)
	}
	known := map[string]bool{}
	if cfg.Site != "" {
		known[cfg.Site] = true
	}
	for _, r := range recs {
		if r.Site != "" {
			known[r.Site] = true
		}
	}
	if len(known) == 0 {
		return usagef("-site: unknown site %q (no stored record carries a site, and the config sets none)", site)
	}
	return usagef("-site: unknown site %q (sites: %s)", site, strings.Join(slices.Sorted(maps.Keys(known)), ", "))
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
		day, err := store.ParseDay(s, loc)
		if err != nil {
			return time.Time{}, fmt.Errorf("%w, today or tomorrow", err)
		}
		return day, nil
	}
	t := now().In(loc)
	return time.Date(t.Year(), t.Month(), t.Day()+next, 12, 0, 0, 0, loc), nil
}
