// Package config loads and validates a lanewatch configuration file: defaults
// first, the YAML file on top (unknown keys rejected), then validation whose
// errors name the offending field, e.g. "lanes[2].base_url: ...".
package config

import (
	"time"

	"github.com/robfig/cron/v3"
)

// Config is a loaded, validated configuration. Paths are absolute (relative
// paths in the file resolve against the file's folder).
type Config struct {
	Timezone    string         `yaml:"timezone"`
	Location    *time.Location `yaml:"-"`
	Schedule    string         `yaml:"schedule"`
	Jitter      Duration       `yaml:"jitter"`
	Concurrency int            `yaml:"concurrency"`
	Store       Store          `yaml:"store"`
	Probe       Probe          `yaml:"probe"`
	Lanes       []Lane         `yaml:"lanes"`
	Policy      Policy         `yaml:"policy"`

	// Dir is the folder of the config file; relative paths resolve against it.
	Dir string `yaml:"-"`
}

// Store selects and configures the storage backend.
type Store struct {
	Kind          string `yaml:"kind"`            // StoreFile | StoreInflux
	Path          string `yaml:"path"`            // file: the line-protocol file
	URL           string `yaml:"url"`             // influx
	Org           string `yaml:"org"`             // influx 2.x; "" for 1.8
	Bucket        string `yaml:"bucket"`          // influx: bucket, or "db/rp" on 1.8
	TokenEnv      string `yaml:"token_env"`       // name of the env var holding the token
	Spool         string `yaml:"spool"`           // influx: spool file for failed writes
	DeadLetter    string `yaml:"dead_letter"`     // influx: points the server refused for good
	SpoolMaxBytes int64  `yaml:"spool_max_bytes"` // influx: spool size cap
}

// Probe holds the probe defaults; a lane may override each of them.
type Probe struct {
	Prompt       string   `yaml:"prompt"`
	MaxTokens    int      `yaml:"max_tokens"`
	Timeout      Duration `yaml:"timeout"`
	IncludeUsage *bool    `yaml:"include_usage"`
}

// Lane is one endpoint to probe. After Load, Prompt, MaxTokens, Timeout and
// IncludeUsage hold the effective values (lane override or probe default).
type Lane struct {
	Name         string   `yaml:"name"`
	Kind         string   `yaml:"kind"` // policy.KindFree | policy.KindPaid
	API          string   `yaml:"api"`  // probe.OpenAI | probe.Anthropic
	BaseURL      string   `yaml:"base_url"`
	Model        string   `yaml:"model"`
	APIKeyEnv    string   `yaml:"api_key_env"`
	Prompt       string   `yaml:"prompt"`
	MaxTokens    int      `yaml:"max_tokens"`
	Timeout      Duration `yaml:"timeout"`
	IncludeUsage *bool    `yaml:"include_usage"`
}

// Policy configures policygen.
type Policy struct {
	Out          string  `yaml:"out"`
	LookbackDays int     `yaml:"lookback_days"`
	Classes      []Class `yaml:"classes"`
}

// Class is a job class: a deadline, a token ceiling and a size estimate.
type Class struct {
	Name          string  `yaml:"name"`
	DeadlineS     float64 `yaml:"deadline_s"`
	CeilingTokens int     `yaml:"ceiling_tokens"`
	EstTokens     int     `yaml:"est_tokens"`
	PaidUSDPer1k  float64 `yaml:"paid_usd_per_1k"`
}

// Duration is a time.Duration written as a Go duration string ("30s").
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Interval returns the shortest gap between two consecutive runs of the
// schedule over the next eight days, in the config's zone (for a schedule
// that runs less often, the gap after its next run). It is 0 when the
// schedule does not parse or never runs. The sampler warns when a round
// could outlast it.
func (c *Config) Interval() time.Duration {
	return interval(c.Schedule, c.Location, time.Now())
}

func interval(spec string, loc *time.Location, now time.Time) time.Duration {
	s, err := cron.ParseStandard(spec)
	if err != nil {
		return 0
	}
	if every, ok := s.(cron.ConstantDelaySchedule); ok {
		return every.Delay
	}
	if loc == nil {
		loc = time.UTC
	}
	var shortest time.Duration
	run := s.Next(now.In(loc))
	end := run.Add(8 * 24 * time.Hour)
	for !run.IsZero() && run.Before(end) && shortest != time.Minute {
		next := s.Next(run)
		if gap := next.Sub(run); !next.IsZero() && (shortest == 0 || gap < shortest) {
			shortest = gap
		}
		run = next
	}
	return shortest
}
