package app

// This file builds what the sampler needs from a configuration.

import (
	"io"
	"os"
	"slices"
	"time"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/probe"
	"github.com/lanewatch/lanewatch/report/swings"
	"github.com/lanewatch/lanewatch/sampler"
	"github.com/lanewatch/lanewatch/sampler/shard"
	"github.com/lanewatch/lanewatch/store"
)

// SamplerOptions returns the options of a sampler of cfg writing to st: the
// lanes its shard owns with their keys, the quota groups, the status page's
// chart. sh overrides the config's shard when sh.Count > 0 (the
// -shard flag). lookupEnv resolves the API keys of the owned lanes (and of
// no other lane); nil means os.LookupEnv. It fails when an owned lane's key
// variable is unset or empty.
func SamplerOptions(cfg *config.Config, st store.Store, lookupEnv func(string) (string, bool), sh config.Shard) (sampler.Options, error) {
	if sh.Count <= 0 {
		sh = cfg.Shard
	}
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	lanes := make([]shard.Lane, len(cfg.Lanes))
	for i, l := range cfg.Lanes {
		lanes[i] = shard.Lane{Name: l.Name, Quota: l.Quota}
	}
	owned := shard.Owned(lanes, sh.Index, sh.Count)
	var targets []probe.Target
	for _, l := range cfg.Lanes {
		if !slices.Contains(owned, l.Name) {
			continue
		}
		key, err := l.APIKey(lookupEnv)
		if err != nil {
			return sampler.Options{}, err
		}
		targets = append(targets, Target(l, key))
	}
	return sampler.Options{
		Store:       st,
		Site:        cfg.Site,
		Schedule:    cfg.Schedule,
		Location:    cfg.Location,
		Concurrency: cfg.Concurrency,
		Targets:     targets,
		Groups:      Groups(cfg),
		Shard:       sampler.Shard{Index: sh.Index, Count: sh.Count},
		Chart:       SwingsChart{Config: cfg},
	}, nil
}

// SwingsChart draws the sampler's status page chart (a sampler.Chart): the
// time-of-day swings of the config's lanes and its classes' deadlines.
type SwingsChart struct{ Config *config.Config }

// WriteChart writes the swings chart of the hourly records of [from, to),
// days days long, as an SVG document.
func (c SwingsChart) WriteChart(w io.Writer, hourly []store.Hourly, from, to time.Time, days int) error {
	return swings.WriteChart(w, Swings(c.Config, hourly, from, to, days, false), swings.ChartOptions{Format: "svg"})
}
