package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"strings"
	"time"

	lwconfig "github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/internal/atomicfile"
	"github.com/lanewatch/lanewatch/internal/cli"
	"github.com/lanewatch/lanewatch/internal/lanesim"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
)

const historyUsage = `usage: lanesim history -days N -out FILE [-lanes free,free2,paid] [-seed N] [-start YYYY-MM-DD[THH]] [-profile NAME] [-paid-faults] [-busy429 RATE] [-truth FILE] [-shift-at YYYY-MM-DDTHH] [-shift F] [-force]
       lanesim history -days N -config F [-seed N] [-start YYYY-MM-DD[THH]] [-profile NAME] [-paid-faults] [-busy429 RATE] [-truth FILE] [-shift-at YYYY-MM-DDTHH] [-shift F] [-force]

Generates a realistic probe history and records it, probes and hourly records,
into a new embedded store file (-out) or the store a lanewatch config names
(-config: its lanes and timezone too; with -out, only those). The same flags
and seed give the same history, byte for byte in a file.

The model (package lanesim, HistoryOptions): three rounds an hour; free
lanes queue lognormally along a time-of-day curve (UTC), time out, go down
for hours (about 1 % of probes) and answer 429 in bursts (about 2 %); paid
lanes are fast and steady (-paid-faults: a small queue, rare failures).
-profile harsh (the default: medians 3-5 s, 12-20 s at the peak) and mild
(published figures of hosted APIs: 0.44-1.6 s) are the worlds lanewatch's
constants are chosen on; the held-out families (lanesim.HeldOutProfiles)
score it on others: known-flat, known-peak, weekly, drop, rise (at
-shift-at), mixture, pareto, sparse and upstream.

-truth FILE writes the lognormal each probe's queue was drawn from, for an
oracle, one JSON line a probe: {"time":RFC 3339,"lane":NAME,"median_s":X,
"sigma":S}, with "outage":true when the lane was down. The mixture and pareto
profiles have none: -truth is refused there.

A file that exists is not replaced without -force (also when -config names
a file store, and for -truth). InfluxDB gets the points added; a point with
the same lane, site and time replaces the stored one.

`

// runHistory is `lanesim history`.
func runHistory(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("lanesim history", flag.ContinueOnError)
	days := fs.Int("days", 28, "days of history")
	out := fs.String("out", "", "write a new embedded store `FILE` (line protocol)")
	configPath := fs.String("config", "", "lanewatch `config` whose store (unless -out), lanes and timezone to use")
	lanesFlag := fs.String("lanes", "free,free2,paid", "lanes as `NAME[:KIND]`, comma-separated; KIND free or paid (default: paid when the name starts with \"paid\"); ignored with -config")
	seed := fs.Uint64("seed", 1, "seed of the history")
	startFlag := fs.String("start", "", "first day `YYYY-MM-DD` (or hour YYYY-MM-DDTHH) in the timezone (default: -days before the current hour)")
	profile := fs.String("profile", lanesim.HarshProfile.Name, "free lanes' model: "+lanesim.ProfileNames())
	truthPath := fs.String("truth", "", "also write each probe's true median and sigma to `FILE` (JSON lines)")
	paidFaults := fs.Bool("paid-faults", false, "give paid lanes a small queue of their own and rare failures")
	busy429 := fs.Float64("busy429", 0, "give free lanes short 429s (Retry-After 1 s to 15 min) with probability `RATE` × the hour's load per probe")
	curve := fs.String("curve", "", "free lanes' load by hour of day (UTC), as for the server's -curve (default: the profile's, harsh "+lanesim.HarshProfile.Curve.String()+", mild "+lanesim.MildProfile.Curve.String()+")")
	timeout := fs.Duration("timeout", lanesim.DefaultHistoryTimeout, "probe timeout: longer waits are stored as timeouts (with -config: the config's probe.timeout)")
	force := fs.Bool("force", false, "replace a store file (or -truth file) that exists")
	shiftAt := fs.String("shift-at", "", "from hour `YYYY-MM-DDTHH` (in the timezone) on, multiply every free lane's median by -shift (drop, rise: the profile's shift moves there)")
	shift := fs.Float64("shift", 0, "the `factor` of -shift-at (default 2: the queue doubles; drop and rise: theirs, 0.25 and 4)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), historyUsage)
		fs.PrintDefaults()
	}
	if err := cli.Parse(fs, args, stderr); err != nil {
		return err
	}
	bad := func(format string, a ...any) error { return cli.Usagef("history: "+format, a...) }
	switch {
	case fs.NArg() > 0:
		return bad("unexpected argument %q", fs.Arg(0))
	case *days < 1 || *days > lanesim.HistoryMaxDays:
		return bad("-days: want 1 to %d, got %d", lanesim.HistoryMaxDays, *days)
	case *out == "" && *configPath == "":
		return bad("-out or -config is required")
	case *timeout <= 0:
		return bad("-timeout: want more than 0, got %s", *timeout)
	}
	prof, err := lanesim.ProfileNamed(*profile)
	if err != nil {
		return bad("-profile: %w", err)
	}
	if *truthPath != "" && !prof.Lognormal() {
		return bad("-truth: the %s profile's waits are not lognormal: it has no truth an oracle can read", prof.Name)
	}
	opts := lanesim.HistoryOptions{Days: *days, Seed: *seed, Timeout: *timeout, Profile: *profile, PaidFaults: *paidFaults, Busy429Rate: *busy429}
	if !(*busy429 >= 0 && *busy429 <= 1) {
		return bad("-busy429: want a rate from 0 to 1, got %g", *busy429)
	}
	if opts.Curve, err = lanesim.ParseCurve(*curve); err != nil {
		return bad("-curve: %w", err)
	}
	loc := time.UTC
	var cfg *lwconfig.Config
	if *configPath != "" {
		if cfg, err = lwconfig.Load(*configPath); err != nil {
			return err
		}
		loc = cfg.Location
		opts.Timeout = cfg.Probe.Timeout.D()
		for _, l := range cfg.Lanes {
			opts.Lanes = append(opts.Lanes, lanesim.HistoryLane{Name: l.Name, Kind: l.Kind})
		}
	} else if opts.Lanes, err = parseHistoryLanes(*lanesFlag); err != nil {
		return bad("-lanes: %w", err)
	}
	if *startFlag == "" {
		opts.Start = store.HourStart(time.Now(), loc).Add(-time.Duration(*days) * 24 * time.Hour)
	} else if opts.Start, err = parseStart(*startFlag, loc); err != nil {
		return bad("-start: %w", err)
	}
	if *shiftAt != "" {
		if opts.ShiftAt, err = store.ParseHour(*shiftAt, loc); err != nil {
			return bad("-shift-at: %w", err)
		}
	}
	switch {
	case *shift != 0 && (!(*shift > 0) || math.IsInf(*shift, 0)):
		return bad("-shift: want a finite number above 0, got %v", *shift)
	case *shift != 0 && *shiftAt == "" && prof.Shift == 0:
		return bad("-shift needs -shift-at (or a profile with a shift: drop, rise)")
	case *shift != 0:
		opts.ShiftFactor = *shift
	case *shiftAt != "" && prof.Shift == 0:
		opts.ShiftFactor = 2
	}

	path := *out
	if path == "" && cfg.Store.Kind == lwconfig.StoreFile {
		path = cfg.Store.Path
	}
	if *truthPath != "" && *truthPath == path {
		return bad("-truth: %s is the store file", path)
	}
	var n historyCount
	generate := func(truth truthSink) (err error) {
		if path != "" {
			n, err = historyToFile(ctx, path, *force, opts, loc, truth)
			return err
		}
		st, err := lwconfig.OpenStore(ctx, cfg, lwconfig.Writer, cli.Warner("lanesim history", stderr), os.LookupEnv)
		if err == nil {
			n, err = record(ctx, st, cfg.Location, opts, 5_000, truth)
		}
		return err
	}
	if *truthPath != "" {
		err = withTruthFile(*truthPath, *force, generate)
	} else {
		err = generate(nil)
	}
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	where := path
	if where == "" {
		where = cfg.Store.URL
	}
	fmt.Fprintf(stdout, "lanesim history: %d probes and %d hourly records of %d lanes, %d days from %s, into %s\n",
		n.probes, n.hourly, len(opts.Lanes), *days, opts.Start.In(loc).Format("2006-01-02T15:04Z07:00"), where)
	return nil
}

// parseHistoryLanes reads -lanes.
func parseHistoryLanes(s string) ([]lanesim.HistoryLane, error) {
	var out []lanesim.HistoryLane
	seen := map[string]bool{}
	for part := range strings.SplitSeq(s, ",") {
		name, kind, hasKind := strings.Cut(strings.TrimSpace(part), ":")
		if !hasKind {
			kind = "free"
			if strings.HasPrefix(name, "paid") {
				kind = "paid"
			}
		}
		switch {
		case !lwconfig.ValidName(name):
			return nil, fmt.Errorf("lane %q: want a name of [a-z0-9_-]", name)
		case kind != "free" && kind != "paid":
			return nil, fmt.Errorf("lane %q: kind %q: want free or paid", name, kind)
		case seen[name]:
			return nil, fmt.Errorf("lane %q given twice", name)
		}
		seen[name] = true
		out = append(out, lanesim.HistoryLane{Name: name, Kind: kind})
	}
	return out, nil
}

// parseStart reads -start: a day or an hour in loc.
func parseStart(s string, loc *time.Location) (time.Time, error) {
	if strings.Contains(s, "T") {
		return store.ParseHour(s, loc)
	}
	d, err := store.ParseDay(s, loc)
	return store.DayStart(d, loc), err
}

type historyCount struct{ probes, hourly int }

// historyBatch is how many probes go to the recorder at once: each Record
// reads the stored probes of the hours it touches, which for the embedded
// file is a pass over the file.
const historyBatch = 50_000

// truthSink takes the truth of each generated day's probes; nil: none.
type truthSink func([]lanesim.ProbeTruth) error

// withTruthFile runs generate with a sink that writes the truth, one JSON
// line a probe, into a new file at path: into a temporary file beside it,
// renamed into place once generate and the writes succeeded.
func withTruthFile(path string, force bool, generate func(truthSink) error) error {
	if _, err := os.Stat(path); err == nil && !force {
		return fmt.Errorf("%s exists; use -force to replace it", path)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return atomicfile.WriteFile(path, func(tmp string) error {
		f, err := os.Create(tmp)
		if err != nil {
			return err
		}
		w := bufio.NewWriterSize(f, 1<<16)
		var line []byte
		err = generate(func(truth []lanesim.ProbeTruth) error {
			for _, t := range truth {
				line = append(t.AppendJSON(line[:0]), '\n')
				if _, err := w.Write(line); err != nil {
					return err
				}
			}
			return nil
		})
		if err == nil {
			err = w.Flush()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}, atomicfile.MakeDir(), atomicfile.RemoveStale(time.Hour))
}

// record generates the history into st, its hours in loc, a batch at a
// time, and its truth into truth (when not nil); it closes st.
func record(ctx context.Context, st store.Store, loc *time.Location, opts lanesim.HistoryOptions, batch int, truth truthSink) (historyCount, error) {
	rec := store.NewRecorder(st, loc)
	var n historyCount
	var pending []store.Probe
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		r, err := rec.Record(ctx, pending)
		if err != nil {
			return err
		}
		n.probes += len(pending)
		n.hourly += len(r.Hourly)
		pending = pending[:0]
		return ctx.Err()
	}
	err := lanesim.History(opts, func(day []store.Probe, tr []lanesim.ProbeTruth) error {
		if truth != nil {
			if err := truth(tr); err != nil {
				return fmt.Errorf("truth: %w", err)
			}
		}
		pending = append(pending, day...)
		if len(pending) >= batch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// historyToFile writes the history into a new file store at path: into a
// temporary file beside it (internal/atomicfile), renamed into place when
// complete, so that an interrupted run leaves nothing behind. Replacing a
// store file (-force) takes its writer lock first, so that it never
// happens under a running sampler.
func historyToFile(ctx context.Context, path string, force bool, opts lanesim.HistoryOptions, loc *time.Location, truth truthSink) (historyCount, error) {
	if _, err := os.Stat(path); err == nil {
		if !force {
			return historyCount{}, fmt.Errorf("%s exists; use -force to replace it", path)
		}
		held, err := file.Open(path, file.Options{})
		if err != nil {
			return historyCount{}, fmt.Errorf("replace %s: %w", path, err)
		}
		defer held.Close()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return historyCount{}, err
	}
	var n historyCount
	err := atomicfile.WriteFile(path, func(tmp string) error {
		defer os.Remove(tmp + ".lock")
		st, err := file.Open(tmp, file.Options{})
		if err != nil {
			return err
		}
		n, err = record(ctx, st, loc, opts, historyBatch, truth)
		return err
	}, atomicfile.MakeDir(), atomicfile.RemoveStale(time.Hour))
	return n, err
}
