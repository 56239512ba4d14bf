package config

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/probe"
	"github.com/lanewatch/lanewatch/sampler/duty"
	"github.com/lanewatch/lanewatch/store"
)

const minimal = `
lanes:
  - name: free
    kind: free
    api: openai
    base_url: http://127.0.0.1:1/v1
    model: m
`

func TestLoadEveryShippedConfig(t *testing.T) {
	files, err := filepath.Glob("../examples/*.yaml")
	more, _ := filepath.Glob("../examples/*/*.yaml")
	systemd, _ := filepath.Glob("../deploy/systemd/*.yaml")
	more = append(more, systemd...)
	files = append(files, more...)
	if err != nil || len(files) < 4 {
		t.Fatalf("want the shipped configs, got %v %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			cfg, err := Load(f)
			if err != nil {
				t.Fatal(err)
			}
			if len(cfg.Lanes) == 0 || cfg.Location == nil {
				t.Fatalf("loaded config is incomplete: %+v", cfg)
			}
			if !filepath.IsAbs(cfg.Policy.Out) {
				t.Errorf("policy.out %q is not absolute", cfg.Policy.Out)
			}
		})
	}
}

// lookback_days defaults to the rule's window: 14 days calibrated, 7 max;
// a value in the file wins under either rule.
func TestLookbackDefaultPerRule(t *testing.T) {
	cases := []struct {
		policy string
		want   int
	}{
		{"policy: {rule: max}\n", 7},
		{"policy: {rule: calibrated}\n", 14},
		{"policy: {rule: max, lookback_days: 0}\n", 0},
		{"policy: {rule: calibrated, lookback_days: 3}\n", 3},
	}
	for _, c := range cases {
		cfg, err := Parse(strings.NewReader(c.policy+minimal), "/etc/lanewatch")
		if err != nil {
			t.Fatalf("%q: %v", c.policy, err)
		}
		if cfg.Policy.LookbackDays != c.want {
			t.Errorf("%q: lookback_days %d, want %d", c.policy, cfg.Policy.LookbackDays, c.want)
		}
	}
}

func TestDefaults(t *testing.T) {
	cfg, err := Parse(strings.NewReader(minimal), "/etc/lanewatch")
	if err != nil {
		t.Fatal(err)
	}
	l := cfg.Lanes[0]
	checks := []struct {
		name      string
		got, want any
	}{
		{"timezone", cfg.Location.String(), "UTC"},
		{"schedule", cfg.Schedule, DefaultSchedule},
		{"jitter", cfg.Jitter.D(), DefaultJitter},
		{"concurrency", cfg.Concurrency, DefaultConcurrency},
		{"store.kind", cfg.Store.Kind, StoreFile},
		{"store.path", cfg.Store.Path, "/etc/lanewatch/data/samples.lp"},
		{"policy.out", cfg.Policy.Out, "/etc/lanewatch/policies"},
		{"policy.rule", cfg.Policy.Rule, "calibrated"},
		{"policy.coverage", cfg.Policy.Coverage, 0.95},
		{"policy.lookback_days", cfg.Policy.LookbackDays, 14}, // the calibrated rule's default
		{"lane prompt", l.Prompt, probe.DefaultPrompt},
		{"lane max_tokens", l.MaxTokens, probe.DefaultMaxTokens},
		{"lane timeout", l.Timeout.D(), probe.DefaultTimeout},
		{"lane include_usage", *l.IncludeUsage, true},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if c.got != c.want {
				t.Errorf("got %v, want %v", c.got, c.want)
			}
		})
	}
}

// Each store kind gets the defaults of its own kind only: an InfluxDB
// store has no samples file (so `sampler import data/samples.lp` into it is
// not refused as importing the store's own file), a file store no spool.
func TestJitterDefaultFitsTheSchedule(t *testing.T) {
	for _, c := range []struct {
		schedule string
		want     time.Duration
	}{
		{DefaultSchedule, 30 * time.Second}, // 20 min apart: the cap
		{"@every 10s", time.Second},
		{"@every 2m", 12 * time.Second},
		{"* * * * *", 6 * time.Second},
		{"@daily", 30 * time.Second},
	} {
		cfg, err := Parse(strings.NewReader("schedule: \""+c.schedule+"\"\n"+minimal), "/")
		if err != nil {
			t.Errorf("%q: %v", c.schedule, err)
			continue
		}
		if got := cfg.Jitter.D(); got != c.want {
			t.Errorf("%q: jitter %s, want %s", c.schedule, got, c.want)
		}
	}
	cfg, err := Parse(strings.NewReader("schedule: \"@every 10s\"\njitter: 0s\n"+minimal), "/")
	if err != nil || cfg.Jitter.D() != 0 {
		t.Errorf("an explicit jitter: 0s gave %v, %v", cfg, err)
	}
}

func TestStoreDefaultsPerKind(t *testing.T) {
	for _, c := range []struct {
		name, store             string
		path, spool, deadLetter string
		spoolMax                int64
	}{
		{"file, nothing set", "{kind: file}", "/etc/lw/data/samples.lp", "", "", 0},
		{"file, empty path", "{kind: file, path: \"\"}", "/etc/lw/data/samples.lp", "", "", 0},
		{"file, a path", "{kind: file, path: s.lp}", "/etc/lw/s.lp", "", "", 0},
		{"no store key", "", "/etc/lw/data/samples.lp", "", "", 0},
		{"influx, nothing set", "{kind: influx, url: \"http://h:8086\"}", "", "/etc/lw/data/spool.lp", "/etc/lw/data/dead-letter.lp", store.DefaultSpoolMaxBytes},
		{"influx, own spool", "{kind: influx, url: \"http://h:8086\", spool: /var/sp.lp, dead_letter: d.lp}", "", "/var/sp.lp", "/etc/lw/d.lp", store.DefaultSpoolMaxBytes},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := minimal
			if c.store != "" {
				src = "store: " + c.store + "\n" + minimal
			}
			cfg, err := Parse(strings.NewReader(src), "/etc/lw")
			if err != nil {
				t.Fatal(err)
			}
			s := cfg.Store
			if s.Path != c.path || s.Spool != c.spool || s.DeadLetter != c.deadLetter || s.SpoolMaxBytes != c.spoolMax {
				t.Errorf("path %q spool %q dead_letter %q spool_max_bytes %d, want %q %q %q %d",
					s.Path, s.Spool, s.DeadLetter, s.SpoolMaxBytes, c.path, c.spool, c.deadLetter, c.spoolMax)
			}
		})
	}
}

func TestLaneOverrides(t *testing.T) {
	src := `
probe: {prompt: "say hi", max_tokens: 8, timeout: 30s, include_usage: false}
lanes:
  - {name: a, kind: free, api: openai, base_url: "http://x/v1", model: m}
  - {name: b, kind: paid, api: anthropic, base_url: "https://x", model: m, prompt: "other", max_tokens: 3, timeout: 5s, include_usage: true}
`
	cfg, err := Parse(strings.NewReader(src), "/")
	if err != nil {
		t.Fatal(err)
	}
	a, b := cfg.Lanes[0], cfg.Lanes[1]
	if a.Prompt != "say hi" || a.MaxTokens != 8 || a.Timeout.D() != 30*time.Second || *a.IncludeUsage {
		t.Errorf("lane a did not inherit the probe defaults: %+v", a)
	}
	if b.Prompt != "other" || b.MaxTokens != 3 || b.Timeout.D() != 5*time.Second || !*b.IncludeUsage {
		t.Errorf("lane b lost its overrides: %+v", b)
	}
}

func TestRelativePathsResolveAgainstConfigFolder(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "etc")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(sub, "lw.yaml")
	src := "store: {kind: file, path: ../var/s.lp}\npolicy: {out: out}\n" + minimal
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "var", "s.lp"); cfg.Store.Path != want {
		t.Errorf("store.path = %q, want %q", cfg.Store.Path, want)
	}
	if want := filepath.Join(sub, "out"); cfg.Policy.Out != want {
		t.Errorf("policy.out = %q, want %q", cfg.Policy.Out, want)
	}
}

// Each bad fixture names the field (or line) at fault in one line.
var update = flag.Bool("update", false, "rewrite testdata/bad.golden")

// Each bad config under testdata/bad is refused with one line that names
// the file, the line and the field at fault, the line of testdata/bad.golden
// that starts with its name (-update rewrites it).
func TestBadConfigs(t *testing.T) {
	files, err := filepath.Glob("testdata/bad/*.yaml")
	if err != nil || len(files) < 100 {
		t.Fatalf("want the bad configs, got %d (%v)", len(files), err)
	}
	data, err := os.ReadFile("testdata/bad.golden")
	if err != nil && !*update {
		t.Fatal(err)
	}
	golden := map[string]string{} // file → message
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		file, _, _ := strings.Cut(line, ":")
		golden[file] = line
	}
	var got strings.Builder
	for _, f := range files {
		_, err := Load(f)
		if err == nil {
			t.Errorf("%s: loaded", f)
			continue
		}
		msg := err.Error()
		fmt.Fprintln(&got, msg)
		var ce *Error
		switch {
		case !*update && msg != golden[f]:
			t.Errorf("%s:\n got %s\nwant %s", f, msg, golden[f])
		case !errors.As(err, &ce) || !strings.HasPrefix(msg, f+":"):
			t.Errorf("%s: error %q is %T, want a *config.Error naming the file", f, msg, err)
		case strings.ContainsAny(msg, "\n\r") || strings.Contains(msg, "hunter2") || strings.Contains(msg, "sk-secret"):
			t.Errorf("%s: error is more than one line or repeats a secret: %q", f, msg)
		}
	}
	if *update {
		if err := os.WriteFile("testdata/bad.golden", []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	} else if len(golden) != len(files) {
		t.Errorf("testdata/bad.golden has %d lines for %d files (go test -run TestBadConfigs -update)", len(golden), len(files))
	}
}

// Anchors, aliases and merge keys decode as yaml.v3 decodes them: a
// mapping's own keys win over what it merges, an earlier merge over a later.
func TestMergeKeys(t *testing.T) {
	src := `
probe: &p {timeout: 30s, max_tokens: 8}
lanes:
  - &base {name: a, kind: free, api: openai, base_url: "http://x/v1", model: m, timeout: 5s}
  - {<<: *base, name: b, model: other}
  - {<<: [{max_tokens: 3, prompt: first}, {max_tokens: 4, prompt: second, model: merged}, *base], name: c}
  - {<<: {<<: *base, timeout: 7s}, name: d}
`
	cfg, err := Parse(strings.NewReader(src), "/")
	if err != nil {
		t.Fatal(err)
	}
	got := func(i int) string {
		l := cfg.Lanes[i]
		return fmt.Sprintf("%s %s %s %d %s", l.Name, l.Kind, l.Model, l.MaxTokens, l.Timeout.D())
	}
	for i, want := range []string{"a free m 8 5s", "b free other 8 5s", "c free merged 3 5s", "d free m 8 7s"} {
		if g := got(i); g != want {
			t.Errorf("lane %d = %q, want %q", i, g, want)
		}
	}
	if cfg.Lanes[2].Prompt != "first" {
		t.Errorf("lane c prompt = %q, want the first merge's", cfg.Lanes[2].Prompt)
	}
}

func TestInterval(t *testing.T) {
	now := time.Date(2026, 11, 30, 14, 3, 0, 0, time.UTC)
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		spec string
		loc  *time.Location
		want time.Duration
	}{
		{DefaultSchedule, time.UTC, 20 * time.Minute},
		{"*/5 * * * *", time.UTC, 5 * time.Minute},
		{"0,50 * * * *", time.UTC, 10 * time.Minute},
		{"0 9 * * 1-5", berlin, 24 * time.Hour},
		{"@hourly", nil, time.Hour},
		{"@every 90s", time.UTC, 90 * time.Second},
		{"@every 100ms", time.UTC, time.Second}, // cron runs at most once a second
		{"0 0 1 1 *", time.UTC, 365 * 24 * time.Hour},
		{"0 0 29 2 *", time.UTC, (4*365 + 1) * 24 * time.Hour},
		{"0 0 30 2 *", time.UTC, 0},
		{"61 * * * *", time.UTC, 0},
	}
	for _, c := range cases {
		if got, _ := Gaps(c.spec, c.loc, now); got != c.want {
			t.Errorf("interval(%q) = %s, want %s", c.spec, got, c.want)
		}
	}
	// In a zone with DST, the day the clocks go back has a 25-hour gap and
	// the day they go forward a 23-hour one: the shortest is the answer.
	spring := time.Date(2027, 3, 24, 0, 0, 0, 0, berlin)
	if got, _ := Gaps("30 3 * * *", berlin, spring); got != 23*time.Hour {
		t.Errorf("across the spring change: %s, want 23h", got)
	}
}

// No config gives a sampler a longer interval (the schedule's longest gap
// plus the jitter) than a heartbeat may name (duty.MaxInterval): the
// longest "@every" that loads, with an hour of jitter, is within it, and
// an hour more does not load. (A cron spec's gap is at most four years
// and a day: "0 0 29 2 *".)
func TestLongestScheduleWithinHeartbeatBound(t *testing.T) {
	longest := time.Duration(0)
	for h := 5 * 365 * 24; h <= 5*367*24; h++ {
		every := time.Duration(h) * time.Hour
		if _, err := Parse(strings.NewReader(fmt.Sprintf("schedule: \"@every %s\"\njitter: 1h\n", every)+minimal), "/"); err != nil {
			break
		}
		longest = every
	}
	if longest == 0 || longest >= 5*367*24*time.Hour {
		t.Fatalf("the longest @every that loads is %s: the bound moved", longest)
	}
	if longest+time.Hour > duty.MaxInterval {
		t.Errorf("@every %s with jitter 1h loads: an interval of %s, beyond duty.MaxInterval %s", longest, longest+time.Hour, duty.MaxInterval)
	}
}

// Bounds are inclusive, and a schedule that runs once in four years loads.
func TestScheduleAndDurationBounds(t *testing.T) {
	for _, src := range []string{
		"schedule: \"0 0 29 2 *\"\njitter: 1h\n" + minimal,
		"schedule: \"@every 43800h\"\njitter: 1h\n" + minimal,
		"schedule: \"@every 1s\"\njitter: 0s\n" + minimal,
		"schedule: \"@every 31s\"\nprobe: {timeout: 1h}\n" + minimal,
	} {
		cfg, err := Parse(strings.NewReader(src), "/")
		if err != nil {
			t.Errorf("%q: %v", src, err)
			continue
		}
		if cfg.Interval() <= cfg.Jitter.D() {
			t.Errorf("%q: interval %s not above jitter %s", src, cfg.Interval(), cfg.Jitter.D())
		}
	}
}

func TestNewKeys(t *testing.T) {
	cfg, err := Parse(strings.NewReader(minimal), "/")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Site != "" || cfg.Shard != (Shard{0, 1}) || cfg.Quotas != nil || cfg.Lanes[0].Quota != "" {
		t.Errorf("defaults: site %q, shard %v, quotas %v, lane quota %q", cfg.Site, cfg.Shard, cfg.Quotas, cfg.Lanes[0].Quota)
	}
	src := `
site: fra1
sites: [fra1]
shard: "2/5"
quotas:
  - {name: openrouter, probes_per_day: 12}
  - {name: groq, probes_per_day: 100000, timezone: America/Los_Angeles}
lanes:
  - {name: a, kind: free, api: openai, base_url: "http://x/v1", model: m, quota: groq}
  - {name: b, kind: free, api: openai, base_url: "http://x/v1", model: m}
`
	cfg, err = Parse(strings.NewReader(src), "/")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Site != "fra1" || cfg.Shard.String() != "2/5" {
		t.Errorf("site %q shard %v", cfg.Site, cfg.Shard)
	}
	if q := cfg.Quotas[0]; q.Timezone != "UTC" || q.Location != time.UTC {
		t.Errorf("quota timezone defaults to %q %v, want UTC", q.Timezone, q.Location)
	}
	if q := cfg.Quotas[1]; cfg.Lanes[0].Quota != q.Name || q.Name != "groq" || q.ProbesPerDay != 100000 || q.Location.String() != "America/Los_Angeles" {
		t.Errorf("lane a's quota %q, quotas[1] %+v", cfg.Lanes[0].Quota, q)
	}
	if cfg.Lanes[1].Quota != "" {
		t.Errorf("lane b has quota %q, want none", cfg.Lanes[1].Quota)
	}
}

func TestParseShard(t *testing.T) {
	for in, want := range map[string]Shard{"0/1": {0, 1}, "2/5": {2, 5}, "1023/1024": {1023, 1024}, "04/10": {4, 10}} {
		got, err := ParseShard(in)
		if err != nil || got != want {
			t.Errorf("ParseShard(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "1", "5/5", "6/5", "0/0", "0/1025", "-1/5", "+1/5", " 1/5", "1/5 ", "1 / 5", "a/b", "1/5/6", "99999999999999999999/1"} {
		if got, err := ParseShard(in); err == nil {
			t.Errorf("ParseShard(%q) = %v, want an error", in, got)
		} else if want := fmt.Sprintf("want I/N such as 2/5 with 0 <= I < N <= 1024, got %q", in); err.Error() != want {
			t.Errorf("ParseShard(%q) error %q, want %q", in, err, want)
		}
	}
	if s := (Shard{3, 7}).String(); s != "3/7" {
		t.Errorf("String = %q", s)
	}
}

func TestSecretsFromEnv(t *testing.T) {
	env := map[string]string{"SET": "sk-live-123", "EMPTY": "", "BLANK": " \t"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cases := []struct {
		name, key, want, err string
	}{
		{"set", "SET", "sk-live-123", ""},
		{"unset", "UNSET", "", "environment variable UNSET is not set"},
		{"empty", "EMPTY", "", "environment variable EMPTY is empty"},
		{"blank", "BLANK", "", "environment variable BLANK is empty"},
		{"none named", "", "", ""},
		{"a key in its place, withheld", "sk_live_4f9a0c2e7b", "", "environment variable (its name withheld: it does not look like one) is not set"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			key, kerr := Lane{Name: "a", APIKeyEnv: c.key}.APIKey(lookup)
			tok, terr := Store{TokenEnv: c.key}.Token(lookup)
			for who, got := range map[string]struct {
				v      string
				err    error
				prefix string
			}{"APIKey": {key, kerr, "lane a: api_key_env: "}, "Token": {tok, terr, "store.token_env: "}} {
				if got.v != c.want {
					t.Errorf("%s = %q, want %q", who, got.v, c.want)
				}
				if msg := fmt.Sprint(got.err); c.err == "" && got.err != nil || c.err != "" && msg != got.prefix+c.err {
					t.Errorf("%s error = %v, want %q", who, got.err, c.err)
				}
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add(minimal)
	f.Add("timezone: UTC\nschedule: \"* * * * *\"\n" + minimal)
	f.Add("lanes: [{name: a}]")
	f.Add("store: {kind: influx, url: \"http://h\"}\n" + minimal)
	f.Add("site: fra1\nsites: [fra1]\nshard: 2/5\nquotas: [{name: q, probes_per_day: 12}]\nlanes:\n  - &l {name: a, kind: free, api: openai, base_url: \"http://x\", model: m, quota: q}\n  - {<<: [*l], name: b}\n")
	bad, _ := filepath.Glob("testdata/bad/*.yaml")
	for _, p := range bad {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
	f.Fuzz(func(t *testing.T, src string) {
		cfg, err := Parse(strings.NewReader(src), "/tmp")
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("multi-line error: %q", err)
			}
			return
		}
		if cfg.Location == nil || len(cfg.Lanes) == 0 {
			t.Errorf("accepted an incomplete config")
		}
	})
}
