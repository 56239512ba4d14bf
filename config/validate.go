package config

import (
	"cmp"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/lanewatch/lanewatch/internal/decode"
	"github.com/lanewatch/lanewatch/internal/num"
	"github.com/lanewatch/lanewatch/internal/redact"
	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/probe"
	"github.com/lanewatch/lanewatch/store"
	"github.com/robfig/cron/v3"
)

var (
	laneName  = regexp.MustCompile(`^[a-z0-9_-]+$`)
	envName   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	upperName = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`)
)

// ValidName reports whether s is a valid lane or site name: [a-z0-9_-]+.
func ValidName(s string) bool { return laneName.MatchString(s) }

// notAName is the error of a key variable's name that is none: what is
// there may be the key itself, so it is never echoed.
const notAName = "must be the name of an environment variable (letters, digits, _), not the key: put the key in a variable and name the variable here"

func fieldErr(field, format string, args ...any) error {
	return &Error{Field: field, Err: fmt.Errorf(format, args...)}
}

// failIf is fieldErr when bad holds, else nil: in a cmp.Or of checks, the
// first that fails is the error.
func failIf(bad bool, field, format string, args ...any) error {
	if !bad {
		return nil
	}
	return fieldErr(field, format, args...)
}

// newName checks name, at field, of item i of list: a valid name, not the
// name of an item before it (in seen, where it goes next).
func newName(field, name, list string, i int, seen map[string]int) error {
	if !laneName.MatchString(name) {
		return fieldErr(field, "want [a-z0-9_-]+, got %q", name)
	}
	if j, dup := seen[name]; dup {
		return fieldErr(field, "%q is already the name of %s[%d]", name, list, j)
	}
	seen[name] = i
	return nil
}

func (c *Config) validate() error {
	loc, err := zone("timezone", c.Timezone)
	if err != nil {
		return err
	}
	c.Location = loc
	sched, err := cron.ParseStandard(c.Schedule)
	now := time.Now().In(loc)
	switch spec := strings.TrimSpace(c.Schedule); {
	case err != nil:
		msg, _, _ := strings.Cut(err.Error(), ": [") // cron lists the fields again
		return fieldErr("schedule", "bad cron spec %q: %s", c.Schedule, msg)
	case strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ="):
		return fieldErr("schedule", "set the zone with timezone:, not inside the cron spec")
	// cron gives up after five years: a "0 0 29 2 *" runs, a "0 0 30 2 *"
	// never, and an "@every" longer than five years not within them (so no
	// sampler's heartbeat names an interval beyond duty.MaxInterval).
	case sched.Next(now).IsZero() || sched.Next(now).After(now.AddDate(5, 0, 0)):
		return fieldErr("schedule", "%q never runs (no run within 5 years)", c.Schedule)
	}
	interval := c.Interval()
	if c.Jitter == jitterUnset {
		c.Jitter = Duration(DefaultJitter)
		if interval > 0 {
			c.Jitter = Duration(min(DefaultJitter, interval/10))
		}
	}
	// Every check runs; the first failing one, in this order, is the error.
	return cmp.Or(
		failIf(c.Jitter < 0, "jitter", "must be >= 0, got %s", c.Jitter.D()),
		failIf(c.Jitter.D() > time.Hour, "jitter", "must be at most 1h, got %s", c.Jitter.D()),
		failIf(interval > 0 && c.Jitter.D() >= interval, "jitter", "must be shorter than the schedule's shortest interval (%s), got %s: lower it, or leave it out for the default (a tenth of the interval, at most %s)",
			interval, c.Jitter.D(), DefaultJitter),
		failIf(c.Concurrency < 1 || c.Concurrency > 4096, "concurrency", "must be between 1 and 4096, got %d", c.Concurrency),
		failIf(c.Site != "" && !laneName.MatchString(c.Site), "site", "want [a-z0-9_-]+ or nothing, got %q", c.Site),
		c.validateStore(),
		validateProbe("probe", c.Probe.Prompt, c.Probe.MaxTokens, c.Probe.Timeout),
		c.validateSites(),
		c.validateQuotas(),
		c.validateLanes(),
		c.validatePolicy())
}

func (c *Config) abs(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.Dir, p)
}

func (c *Config) validateStore() error {
	s := &c.Store
	if err := cmp.Or(
		failIf(s.RetentionDays < 0 || s.RetentionDays > 36500, "store.retention_days", "must be between 0 and 36500 (0 keeps every probe), got %d", s.RetentionDays),
		failIf(s.Timeout <= 0 || s.Timeout.D() > time.Hour, "store.timeout", "must be > 0 and at most 1h0m0s, got %s", s.Timeout.D()),
		failIf(s.QueryLanguage == "flux", "store.query_language", "flux is no longer read: lanewatch reads InfluxQL through /query (on InfluxDB 2.x its v1-compatibility API, with the bucket's DBRP mapping); remove the key or set auto"),
		failIf(s.QueryLanguage != "auto" && s.QueryLanguage != "influxql", "store.query_language", "want auto or influxql, got %q", s.QueryLanguage),
	); err != nil {
		return err
	}
	switch s.Kind {
	case StoreFile:
		s.Path = c.abs(cmp.Or(s.Path, store.DefaultFilePath))
		return notDir("store.path", s.Path, "samples.lp")
	case StoreInflux:
		// The file store's default path is no path of an InfluxDB store:
		// `sampler import` of data/samples.lp into InfluxDB must not take
		// it for the store's own file. A path set here is a leftover.
		if s.Path != "" {
			return fieldErr("store.path", "is for kind file only; an InfluxDB store keeps no samples file (remove store.path; import the old file with `sampler import -config F FILE`)")
		}
		if err := httpURL("store.url", s.URL, "such as http://127.0.0.1:8086",
			"put the token in the variable named by store.token_env"); err != nil {
			return err
		}
		s.SpoolMaxBytes = cmp.Or(s.SpoolMaxBytes, store.DefaultSpoolMaxBytes)
		s.Spool = c.abs(cmp.Or(s.Spool, store.DefaultSpoolPath))
		s.DeadLetter = c.abs(cmp.Or(s.DeadLetter, store.DefaultDeadLetterPath))
		return cmp.Or(
			failIf(s.RetentionDays != 0, "store.retention_days", "kind file only: on InfluxDB, old probe and heartbeat points are deleted on the server (docs/schema.md, Retention)"),
			failIf(s.Bucket == "", "store.bucket", "required for kind influx (a bucket, or db/rp on InfluxDB 1.8)"),
			failIf(s.TokenEnv != "" && !envName.MatchString(s.TokenEnv), "store.token_env", notAName),
			failIf(s.SpoolMaxBytes < 0, "store.spool_max_bytes", "must be > 0, got %d", s.SpoolMaxBytes),
			notDir("store.spool", s.Spool, "spool.lp"),
			notDir("store.dead_letter", s.DeadLetter, "dead-letter.lp"))
	}
	return fieldErr("store.kind", "want %s or %s, got %q", StoreFile, StoreInflux, s.Kind)
}

// notDir refuses a file path that names a folder, suggesting a file in it.
func notDir(field, path, name string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fieldErr(field, "%s is a folder; name a file, e.g. %s", path, filepath.Join(path, name))
	}
	return nil
}

// httpURL checks that raw, the value of field, is an http(s) URL with a
// host and no credentials, query or fragment.
func httpURL(field, raw, example, secret string) error {
	if raw != "" && !strings.Contains(raw, "://") {
		if u, err := url.Parse("http://" + raw); err == nil && u.Host != "" {
			fixed := redact.URL("http://" + raw)
			return fieldErr(field, "want an http(s) URL, got %q: missing http:// (try %q)", strings.TrimPrefix(fixed, "http://"), fixed)
		}
	}
	u, err := url.Parse(raw)
	if raw == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fieldErr(field, "want an http(s) URL%s, got %q", strings.TrimRight(" "+example, " "), redact.URL(raw))
	}
	if u.User != nil {
		return fieldErr(field, "must not carry credentials; %s", secret)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return fieldErr(field, "must not carry a query or fragment")
	}
	return nil
}

func validateProbe(prefix, prompt string, maxTokens int, timeout Duration) error {
	return cmp.Or(
		failIf(strings.TrimSpace(prompt) == "", prefix+".prompt", "must not be empty"),
		failIf(len(prompt) > 4096, prefix+".prompt", "is %d bytes; a probe prompt is short (at most 4096)", len(prompt)),
		failIf(maxTokens < 1 || maxTokens > 4096, prefix+".max_tokens", "must be between 1 and 4096, got %d", maxTokens),
		failIf(timeout <= 0 || timeout.D() > time.Hour, prefix+".timeout", "must be > 0 and at most 1h (a probe is short), got %s", timeout.D()))
}

func (c *Config) validateLanes() error {
	if len(c.Lanes) == 0 {
		return fieldErr("lanes", "at least one lane is required")
	}
	var quotas []string
	for _, q := range c.Quotas {
		quotas = append(quotas, q.Name)
	}
	list := "no quotas are defined"
	if len(quotas) > 0 {
		list = "quotas: " + strings.Join(quotas, ", ")
	}
	seen := map[string]int{}
	for i := range c.Lanes {
		l, f := &c.Lanes[i], decode.Index("lanes", i)
		l.Prompt = cmp.Or(l.Prompt, c.Probe.Prompt)
		l.MaxTokens = cmp.Or(l.MaxTokens, c.Probe.MaxTokens)
		l.Timeout = cmp.Or(l.Timeout, c.Probe.Timeout)
		l.IncludeUsage = cmp.Or(l.IncludeUsage, c.Probe.IncludeUsage, new(true))
		api := probe.API(l.API)
		if err := cmp.Or(
			newName(f+".name", l.Name, "lanes", i, seen),
			failIf(l.Kind != policy.KindFree && l.Kind != policy.KindPaid, f+".kind", "want %s or %s, got %q", policy.KindFree, policy.KindPaid, l.Kind),
			failIf(api != probe.OpenAI && api != probe.Anthropic, f+".api", "want %s or %s, got %q", probe.OpenAI, probe.Anthropic, l.API),
			httpURL(f+".base_url", l.BaseURL, "", "name the key's variable in api_key_env"),
			failIf(strings.TrimSpace(l.Model) == "", f+".model", "must not be empty"),
			failIf(l.APIKeyEnv != "" && !envName.MatchString(l.APIKeyEnv), f+".api_key_env", notAName),
			failIf(l.Quota != "" && !slices.Contains(quotas, l.Quota), f+".quota", "%q is not a quotas[] name (%s)", l.Quota, list),
			validateProbe(f, l.Prompt, l.MaxTokens, l.Timeout),
		); err != nil {
			return err
		}
	}
	return nil
}

// zone loads the IANA time zone name; "" and "Local" are not IANA names.
func zone(field, name string) (*time.Location, error) {
	loc, err := time.LoadLocation(name)
	if err != nil || name == "" || name == "Local" {
		return nil, fieldErr(field, "unknown time zone %q (want an IANA name such as UTC or Europe/Berlin)", name)
	}
	return loc, nil
}

func (c *Config) validateQuotas() error {
	seen := map[string]int{}
	for i := range c.Quotas {
		q, f := &c.Quotas[i], decode.Index("quotas", i)
		q.Timezone = cmp.Or(q.Timezone, "UTC")
		q.Scope = cmp.Or(q.Scope, ScopeAccount)
		loc, zoneErr := zone(f+".timezone", q.Timezone)
		q.Location = loc
		shared := q.Scope == ScopeAccount && (c.Site != "" || len(c.Sites) > 0) && !slices.Contains(c.Sites, c.Site)
		if err := cmp.Or(
			newName(f+".name", q.Name, "quotas", i, seen),
			failIf(q.ProbesPerDay < 1 || q.ProbesPerDay > 100000, f+".probes_per_day", "must be between 1 and 100000, got %d", q.ProbesPerDay),
			zoneErr,
			failIf(q.Scope != ScopeAccount && q.Scope != ScopeSite, f+".scope", "want %s or %s, got %q", ScopeAccount, ScopeSite, q.Scope),
			failIf(shared && c.Site == "", f+".scope", "account: the sites %s share this quota's budget, so site must name one of them", strings.Join(c.Sites, ", ")),
			failIf(shared, "sites", "must list site %q: quotas[%d] %q has scope account, shared by the listed sites (or set its scope: site)", c.Site, i, q.Name),
		); err != nil {
			return err
		}
	}
	return nil
}

// validateSites checks the sites list: valid names, each once.
func (c *Config) validateSites() error {
	for i, s := range c.Sites {
		j := slices.Index(c.Sites, s)
		if err := cmp.Or(
			failIf(!laneName.MatchString(s), decode.Index("sites", i), "want [a-z0-9_-]+, got %q", s),
			failIf(j < i, decode.Index("sites", i), "%q is already sites[%d]", s, j),
		); err != nil {
			return err
		}
	}
	return nil
}

func (c *Config) validatePolicy() error {
	p := &c.Policy
	lookback, ok := map[string]int{"calibrated": 14, "max": 7}[p.Rule]
	if p.LookbackDays == lookbackUnset {
		p.LookbackDays = lookback
	}
	r, calibrated := c.Store.RetentionDays, p.Rule == "calibrated"
	if err := cmp.Or(
		failIf(p.Out == "", "policy.out", "must not be empty"),
		failIf(!ok, "policy.rule", "want calibrated or max, got %q", p.Rule),
		failIf(!(p.Coverage > 0 && p.Coverage < 1), "policy.coverage", "must be above 0 and below 1, got %v", p.Coverage),
		failIf(p.LookbackDays < 0 || p.LookbackDays > 366, "policy.lookback_days", "must be between 0 and 366, got %d", p.LookbackDays),
		failIf(calibrated && p.LookbackDays < 1, "policy.lookback_days", "the calibrated rule learns from at least 1 day, got %d", p.LookbackDays),
		failIf(calibrated && r != 0 && r < 2*p.LookbackDays, "store.retention_days", "%d days prunes probes the calibrated rule reads: it learns from twice policy.lookback_days (%d), so keep at least %d", r, p.LookbackDays, 2*p.LookbackDays),
	); err != nil {
		return err
	}
	p.Out = c.abs(p.Out)
	seen := map[string]int{}
	for i, cl := range p.Classes {
		f := decode.Index("policy.classes", i)
		if err := cmp.Or(
			newName(f+".name", cl.Name, "policy.classes", i, seen),
			failIf(!num.Finite(cl.DeadlineS) || cl.DeadlineS <= 0, f+".deadline_s", "must be a finite number > 0, got %v", cl.DeadlineS),
			failIf(cl.CeilingTokens <= 0, f+".ceiling_tokens", "must be > 0, got %d", cl.CeilingTokens),
			failIf(cl.EstTokens <= 0, f+".est_tokens", "must be > 0, got %d", cl.EstTokens),
			failIf(cl.EstTokens > cl.CeilingTokens, f+".est_tokens", "%d is above ceiling_tokens %d: no attempt could fit", cl.EstTokens, cl.CeilingTokens),
			failIf(!num.Finite(cl.PaidUSDPer1k) || cl.PaidUSDPer1k < 0, f+".paid_usd_per_1k", "must be a finite number >= 0, got %v", cl.PaidUSDPer1k),
			failIf(cl.Coverage != 0 && !(cl.Coverage > 0 && cl.Coverage < 1), f+".coverage", "must be above 0 and below 1 (or left out: policy.coverage), got %v", cl.Coverage),
			failIf(cl.Objective != "" && !slices.Contains(policy.Objectives, cl.Objective), f+".objective", "want %s, got %q", strings.Join(policy.Objectives, " or "), cl.Objective),
		); err != nil {
			return err
		}
	}
	return nil
}

// APIKey returns the lane's key from the environment through lookup
// (nil: os.LookupEnv); "" when the lane names no variable. A named
// variable that is unset or empty is an error naming the variable, never a
// value.
func (l Lane) APIKey(lookup func(string) (string, bool)) (string, error) {
	return secret(lookup, l.APIKeyEnv, "lane "+l.Name+": api_key_env")
}

// Token returns the store token from the environment as APIKey does.
func (s Store) Token(lookup func(string) (string, bool)) (string, error) {
	return secret(lookup, s.TokenEnv, "store.token_env")
}

func secret(lookup func(string) (string, bool), name, who string) (string, error) {
	if name == "" {
		return "", nil
	}
	if lookup == nil {
		lookup = os.LookupEnv
	}
	// A name in the usual form (FREE_LANE_KEY) is shown; any other may be a
	// key pasted in its place.
	shown := "(its name withheld: it does not look like one)"
	if upperName.MatchString(name) && len(name) <= 64 {
		shown = name
	}
	v, ok := lookup(name)
	switch {
	case !ok:
		return "", fmt.Errorf("%s: environment variable %s is not set", who, shown)
	case strings.TrimSpace(v) == "":
		return "", fmt.Errorf("%s: environment variable %s is empty", who, shown)
	}
	return v, nil
}
