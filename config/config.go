// Package config loads a lanewatch configuration file (docs/config.md) into
// a validated Config: defaults, then the file, checked by internal/decode
// and decoded by yaml.v3, then validation. Every error is one line naming
// the file, line and field ("c.yaml:12: lanes[2].base_url: ...").
package config

import (
	"cmp"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"time"

	"github.com/lanewatch/lanewatch/internal/decode"
	"github.com/lanewatch/lanewatch/probe"
	"github.com/lanewatch/lanewatch/store"
	"github.com/robfig/cron/v3"
	"gopkg.in/yaml.v3"
)

// Defaults for the fields a file may leave out (Default has the others).
const (
	DefaultSchedule = "7,27,47 * * * *"
	// DefaultJitter caps the jitter a file leaves out: a tenth of the
	// schedule's shortest interval, at most this.
	DefaultJitter      = 30 * time.Second
	DefaultConcurrency = 64
	// lookbackUnset and jitterUnset stand for a value the file leaves out
	// until validation gives it the rule's or the schedule's default.
	lookbackUnset = math.MinInt
	jitterUnset   = Duration(math.MinInt64)
)

// Store kinds.
const (
	StoreFile   = "file"
	StoreInflux = "influx"
)

// Error is a configuration error tied to one field.
type Error = decode.Error

// Default returns a configuration with every default filled in and no lanes.
func Default() *Config {
	return &Config{
		Timezone:    "UTC",
		Schedule:    DefaultSchedule,
		Jitter:      jitterUnset,
		Concurrency: DefaultConcurrency,
		Shard:       Shard{Index: 0, Count: 1},
		Store: Store{Kind: StoreFile, Bucket: "lanewatch/autogen", // the paths default per kind in validate
			Timeout: Duration(store.DefaultRequestTimeout), QueryLanguage: "auto"},
		Probe: Probe{
			Prompt:    probe.DefaultPrompt,
			MaxTokens: probe.DefaultMaxTokens,
			Timeout:   Duration(probe.DefaultTimeout),
		},
		Policy: Policy{Out: "policies", Write: true, LookbackDays: lookbackUnset, Rule: "calibrated", Coverage: 0.95},
	}
}

// Config is a loaded, validated configuration (docs/config.md has the
// keys). Paths are absolute, relative ones resolved against Dir.
type Config struct {
	Timezone    string         `yaml:"timezone"`
	Location    *time.Location `yaml:"-"`
	Schedule    string         `yaml:"schedule"`
	Jitter      Duration       `yaml:"jitter"`
	Concurrency int            `yaml:"concurrency"`
	Site        string         `yaml:"site"`  // tag on every stored point; "" for none
	Sites       []string       `yaml:"sites"` // the sites that share the account-scope quotas, in any order
	Shard       Shard          `yaml:"shard"` // the part of the lanes this sampler probes
	Store       Store          `yaml:"store"`
	Probe       Probe          `yaml:"probe"`
	Quotas      []Quota        `yaml:"quotas"`
	Lanes       []Lane         `yaml:"lanes"`
	Policy      Policy         `yaml:"policy"`

	Dir string `yaml:"-"` // the config file's folder
}

// Store selects and configures the storage backend.
type Store struct {
	Kind          string   `yaml:"kind"`            // StoreFile | StoreInflux
	Path          string   `yaml:"path"`            // file: the line-protocol file; "" for influx
	URL           string   `yaml:"url"`             // influx
	Org           string   `yaml:"org"`             // influx 2.x; "" for 1.8
	Bucket        string   `yaml:"bucket"`          // influx: bucket, or "db/rp" on 1.8
	TokenEnv      string   `yaml:"token_env"`       // name of the env var holding the token
	Spool         string   `yaml:"spool"`           // influx: spool file for failed writes
	DeadLetter    string   `yaml:"dead_letter"`     // influx: points the server refused for good
	SpoolMaxBytes int64    `yaml:"spool_max_bytes"` // influx: spool size cap
	RetentionDays int      `yaml:"retention_days"`  // file: prune probes and heartbeats older than this many days; 0 keeps all
	Timeout       Duration `yaml:"timeout"`         // one request to InfluxDB
	QueryLanguage string   `yaml:"query_language"`  // auto or influxql, the same
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
	Quota        string   `yaml:"quota"` // the quotas[] entry whose budget the lane spends; "" for none
}

// Quota is a probe budget that the lanes naming it share: at most
// ProbesPerDay probes per day, the day being the provider's, in Timezone.
type Quota struct {
	Name         string         `yaml:"name"`
	ProbesPerDay int            `yaml:"probes_per_day"`
	Timezone     string         `yaml:"timezone"`
	Location     *time.Location `yaml:"-"`     // Timezone, loaded
	Scope        string         `yaml:"scope"` // ScopeAccount (the default) or ScopeSite
}

// Quota scopes.
const (
	ScopeAccount = "account" // the lanes share one key: all sites spend one budget
	ScopeSite    = "site"    // each site has a budget of its own
)

// Shard is the part of the lanes one sampler probes: shard Index of Count.
type Shard struct{ Index, Count int }

var shardSpec = regexp.MustCompile(`^(\d{1,4})/(\d{1,4})$`)

// ParseShard parses "I/N", such as "2/5", with 0 <= I < N <= 1024.
func ParseShard(s string) (Shard, error) {
	var sh Shard
	if m := shardSpec.FindStringSubmatch(s); m != nil {
		sh.Index, _ = strconv.Atoi(m[1])
		sh.Count, _ = strconv.Atoi(m[2])
	}
	if sh.Count < 1 || sh.Count > 1024 || sh.Index >= sh.Count {
		return Shard{}, fmt.Errorf("want I/N such as 2/5 with 0 <= I < N <= 1024, got %q", decode.Clip(s))
	}
	return sh, nil
}

// String returns the shard as "I/N".
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// UnmarshalYAML reads "I/N".
func (s *Shard) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("want I/N such as 2/5, got %s", decode.Describe(n))
	}
	var err error
	*s, err = ParseShard(n.Value) // a zero Shard on error: the config is not used
	return err
}

// Policy configures the policy files: where they go, whether the sampler
// daemon writes them, and how policygen and the daemon compute them.
type Policy struct {
	Out          string  `yaml:"out"`
	Write        bool    `yaml:"write"`
	LookbackDays int     `yaml:"lookback_days"`
	Rule         string  `yaml:"rule"`     // calibrated | max
	Coverage     float64 `yaml:"coverage"` // 0 < c < 1: the calibrated rule's
	Classes      []Class `yaml:"classes"`
}

// Class is a job class: a deadline, a token ceiling and a size estimate.
type Class struct {
	Name          string  `yaml:"name"`
	DeadlineS     float64 `yaml:"deadline_s"`
	CeilingTokens int     `yaml:"ceiling_tokens"`
	EstTokens     int     `yaml:"est_tokens"`
	PaidUSDPer1k  float64 `yaml:"paid_usd_per_1k"`
	Coverage      float64 `yaml:"coverage"`  // 0: policy.coverage
	Objective     string  `yaml:"objective"` // policy.Objectives; "": cost
}

// Duration is a time.Duration written as a Go duration string ("30s").
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Interval returns the shortest gap of Gaps from now in the config's zone.
func (c *Config) Interval() time.Duration {
	shortest, _ := Gaps(c.Schedule, c.Location, time.Now())
	return shortest
}

// Gaps returns the shortest and the longest gap between two consecutive
// runs of the schedule over the eight days from now (for a schedule that
// runs less often, the gap after its next run); 0 when the schedule does
// not parse or never runs.
func Gaps(spec string, loc *time.Location, now time.Time) (shortest, longest time.Duration) {
	s, err := cron.ParseStandard(spec)
	if err != nil {
		return 0, 0
	}
	if every, ok := s.(cron.ConstantDelaySchedule); ok {
		return every.Delay, every.Delay
	}
	run := s.Next(now.In(store.OrUTC(loc)))
	for end := run.Add(8 * 24 * time.Hour); !run.IsZero() && run.Before(end); {
		next := s.Next(run)
		if next.IsZero() {
			break
		}
		gap := next.Sub(run)
		shortest = min(cmp.Or(shortest, gap), gap)
		longest = max(longest, gap)
		run = next
	}
	return shortest, longest
}
