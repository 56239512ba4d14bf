package config

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/lanewatch/lanewatch/api"
	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/probe"
	"github.com/lanewatch/lanewatch/report/swings"
	"github.com/lanewatch/lanewatch/sampler"
	"github.com/lanewatch/lanewatch/sampler/budget"
	"github.com/lanewatch/lanewatch/sampler/shard"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
	"github.com/lanewatch/lanewatch/store/influx"
	"github.com/lanewatch/lanewatch/store/spool"
)

// Groups returns the quota groups with their lanes, in config order; the
// sites share an account-scope group.
func (c *Config) Groups() []budget.Group {
	var gs []budget.Group
	for _, q := range c.Quotas {
		g := budget.Group{Name: q.Name, ProbesPerDay: q.ProbesPerDay, Location: q.Location}
		if q.Scope != ScopeSite {
			g.Sites = slices.Clone(c.Sites)
		}
		for _, l := range c.Lanes {
			if l.Quota == q.Name {
				g.Lanes = append(g.Lanes, l.Name)
			}
		}
		gs = append(gs, g)
	}
	return gs
}

// PolicyParams returns the policy's parameters.
func (c *Config) PolicyParams() policy.Params {
	p := policy.Params{Location: c.Location, LookbackDays: max(c.Policy.LookbackDays, 0), Rule: c.Policy.Rule, Coverage: c.Policy.Coverage}
	basis := map[string]int{}
	for _, g := range c.Groups() {
		for _, l := range g.Lanes {
			basis[l] = budget.BasisHours(g)
		}
	}
	for _, l := range c.Lanes {
		p.Lanes = append(p.Lanes, policy.LaneSpec{Name: l.Name, Kind: l.Kind, BasisHours: basis[l.Name]})
	}
	for _, k := range c.Policy.Classes {
		p.Classes = append(p.Classes, policy.ClassSpec(k)) // the same fields, in the same order
	}
	return p
}

// APIOptions returns the options of the JSON API over policy.out (no keys).
func (c *Config) APIOptions() api.Options {
	lanes := make([]api.Lane, len(c.Lanes))
	for i, l := range c.Lanes {
		lanes[i] = api.Lane{Lane: l.Name, Kind: l.Kind, API: l.API, BaseURL: l.BaseURL, Model: l.Model, APIKeyEnv: l.APIKeyEnv}
	}
	return api.Options{Folder: api.Folder{Dir: c.Policy.Out, Location: c.Location}, Lanes: lanes}
}

// SwingsOptions returns the options of a time-of-day report of [from, to).
func (c *Config) SwingsOptions(from, to time.Time, days int) swings.Options {
	opt := swings.Options{Location: c.Location, From: from, To: to, Days: days}
	for _, l := range c.Lanes {
		opt.Lanes = append(opt.Lanes, swings.Lane{Name: l.Name, Kind: l.Kind})
	}
	for _, k := range c.Policy.Classes {
		opt.Classes = append(opt.Classes, swings.ClassLine{Name: k.Name, DeadlineS: k.DeadlineS})
	}
	return opt
}

// Target returns the probe target of the lane, with its key.
func (l Lane) Target(key string) probe.Target {
	return probe.Target{Lane: l.Name, Kind: l.Kind, API: probe.API(l.API), BaseURL: l.BaseURL, Model: l.Model, APIKey: key,
		Prompt: l.Prompt, MaxTokens: l.MaxTokens, Timeout: l.Timeout.D(), IncludeUsage: l.IncludeUsage == nil || *l.IncludeUsage}
}

// Access is how a process opens the store: as its Writer (the sampler,
// starting during an outage), as a Reader beside it, or to write Beside it
// (sampler probe: the file without its lock, a failed InfluxDB write left
// for the writer to replay).
type Access int

const (
	Writer Access = iota
	Reader
	Beside
)

// OpenStore opens the configured store; lookupEnv (nil: os.LookupEnv)
// resolves store.token_env.
func OpenStore(ctx context.Context, cfg *Config, a Access, warn func(msg string, args ...any), lookupEnv func(string) (string, bool)) (store.Store, error) {
	s := cfg.Store
	if s.Kind == StoreFile {
		st, err := file.Open(s.Path, file.Options{ReadOnly: a == Reader, Beside: a == Beside, Warn: warn})
		if err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		return st, nil
	}
	token, err := s.Token(lookupEnv)
	if err != nil {
		return nil, err
	}
	db, err := influx.Open(ctx, influx.Options{URL: s.URL, Org: s.Org, Bucket: s.Bucket, Token: token, Warn: warn,
		RequestTimeout: s.Timeout.D(), StartUnreachable: a == Writer})
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	sp, err := spool.Open(db, spool.Options{Path: s.Spool, DeadLetter: s.DeadLetter, MaxBytes: s.SpoolMaxBytes,
		ReadOnly: a == Reader, Beside: a == Beside, Warn: warn, Hours: cfg.Location})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store: %s: %w", db.Status().Where, err)
	}
	return sp, nil
}

// SamplerOptions returns the options of a sampler writing to st: the lanes
// its shard owns (sh, or the config's when sh.Count is 0) with their keys
// (another shard's are never read).
func (c *Config) SamplerOptions(st store.Store, lookupEnv func(string) (string, bool), sh Shard) (sampler.Options, error) {
	if sh.Count <= 0 {
		sh = c.Shard
	}
	lanes := make([]shard.Lane, len(c.Lanes))
	for i, l := range c.Lanes {
		lanes[i] = shard.Lane{Name: l.Name, Quota: l.Quota}
	}
	owned := shard.Owned(lanes, sh.Index, sh.Count)
	var targets []probe.Target
	for _, l := range c.Lanes {
		if slices.Contains(owned, l.Name) {
			key, err := l.APIKey(lookupEnv)
			if err != nil {
				return sampler.Options{}, err
			}
			targets = append(targets, l.Target(key))
		}
	}
	return sampler.Options{Store: st, Site: c.Site, Schedule: c.Schedule, Location: c.Location, Concurrency: c.Concurrency,
		Targets: targets, Groups: c.Groups(), Shard: sampler.Shard{Index: sh.Index, Count: sh.Count}, Chart: chart{c}}, nil
}

// chart draws the status page's swings chart (a sampler.Chart).
type chart struct{ c *Config }

func (ch chart) WriteChart(w io.Writer, hourly []store.Hourly, from, to time.Time, days int) error {
	return swings.WriteChart(w, swings.Build(hourly, ch.c.SwingsOptions(from, to, days), false), swings.ChartOptions{Format: "svg"})
}
