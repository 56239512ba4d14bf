package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/internal/cli"
	"github.com/lanewatch/lanewatch/probe"
	"github.com/lanewatch/lanewatch/sampler"
	"github.com/lanewatch/lanewatch/sampler/budget"
	"github.com/lanewatch/lanewatch/store"
)

// exitSkipped is sampler probe's exit status when the lane's budget is
// spent or the lane backs off: nothing was sent.
const exitSkipped = 4

// runProbe is `sampler probe -config F -lane NAME [-force]`: one probe of
// one lane now, beside the daemon, printed as `sampler -once` prints it.
func runProbe(ctx context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) error {
	fs := newSubcommand("probe", "sampler probe -config F -lane NAME [-force]", "path to the lanewatch YAML config (required)")
	laneName := fs.String("lane", "", "the lane to probe (required)")
	force := fs.Bool("force", false, "probe even when the lane's budget is spent or it backs off (the probe counts)")
	if err := parse(fs, args, stderr, false); err != nil {
		return err
	}
	if *laneName == "" {
		return fs.Usagef("-lane is required")
	}
	cfg, err := config.Load(*fs.Config)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(cfg.Lanes, func(l config.Lane) bool { return l.Name == *laneName })
	if i < 0 {
		names := make([]string, len(cfg.Lanes))
		for i, l := range cfg.Lanes {
			names[i] = l.Name
		}
		return fs.Usagef("-lane: no lane %q in %s; its lanes: %s", *laneName, *fs.Config, strings.Join(names, ", "))
	}
	lane := cfg.Lanes[i]
	key, err := lane.APIKey(lookupEnv)
	if err != nil {
		return err
	}
	st, err := config.OpenStore(ctx, cfg, config.Beside, cli.Warner("sampler", stderr), lookupEnv)
	if err != nil {
		return err
	}
	defer func() { _ = st.Close() }()
	s := sampler.New(probeOptions(cfg, st, lane, key))
	r, err := s.ProbeLane(ctx, lane.Name, *force)
	if r == nil {
		return err
	}
	if err == nil && len(r.Samples) == 0 && len(r.NotStarted) == 0 {
		return refusal(lane.Name, r)
	}
	printRound(stdout, cfg, r)
	if n := st.Status().Spooled; n > 0 {
		fmt.Fprintf(stdout, "store unreachable: %d points wait in %s%s for the sampler daemon, whose next round stores them\n",
			n, cfg.Store.Spool, store.InboxSuffix)
	}
	return err
}

// probeOptions are the options of a sampler that owns lane and, counted
// but without a key, the other lanes of its quota group.
func probeOptions(cfg *config.Config, st store.Store, lane config.Lane, key string) sampler.Options {
	var targets []probe.Target
	for _, l := range cfg.Lanes {
		switch {
		case l.Name == lane.Name:
			targets = append(targets, l.Target(key))
		case lane.Quota != "" && l.Quota == lane.Quota:
			targets = append(targets, l.Target("")) // counted, never probed
		}
	}
	return sampler.Options{Store: st, Site: cfg.Site, Schedule: cfg.Schedule, Location: cfg.Location, Concurrency: 1,
		Targets: targets, Groups: cfg.Groups(), Shard: sampler.Shard{Index: 0, Count: 1}}
}

// refusal is the one-line error of a probe the plan left out.
func refusal(lane string, r *sampler.Round) error {
	if r.MeterErr != nil {
		return fmt.Errorf("probe %s: not probed: the budget spent is unknown (store unreadable): %w", lane, r.MeterErr)
	}
	why := "skipped"
	for _, sk := range r.Plan.Skip {
		if sk.Lane != lane {
			continue
		}
		switch sk.Reason {
		case budget.SkipBudget:
			why = "its quota group's budget is spent for now (the slot is used or the day's cap reached)"
		case budget.SkipQuota:
			why = "it backs off (its quota is spent or it answered 429) until " + sk.Until.UTC().Format("15:04Z")
		}
	}
	return cli.ExitError{Code: exitSkipped, Err: fmt.Errorf("probe %s: not probed: %s; -force probes anyway (the probe counts)", lane, why)}
}
