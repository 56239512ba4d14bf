package config

import (
	"errors"
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
func TestBadConfigs(t *testing.T) {
	lane := func(extra string) string {
		return "lanes:\n  - {name: a, kind: free, api: openai, base_url: \"http://x/v1\", model: m" + extra + "}\n"
	}
	cases := []struct {
		name, src, want string
	}{
		{"unknown top key", "timezon: UTC\n" + lane(""), `:1: timezon: unknown key`},
		{"unknown lane key", lane(", modle: x"), `:2: lanes[0].modle: unknown key (did you mean "model"?)`},
		{"unknown key in second lane", lane("") + "  - name: b\n    apikey: K\n", `:4: lanes[1].apikey: unknown key`},
		{"unknown store key", "store:\n  kind: influx\n  urll: http://h\n" + lane(""), `:3: store.urll: unknown key`},
		{"unknown probe key", "probe: {timeout: 5s, retries: 3}\n" + lane(""), `:1: probe.retries: unknown key`},
		{"unknown class key", "policy:\n  classes:\n    - {name: c, deadline_s: 5, ceiling_tokens: 10, est_tokens: 5}\n    - {name: d, deadline: 5}\n" + lane(""), `:4: policy.classes[1].deadline: unknown key`},
		{"unknown odd key", "\"a\\nb\": 1\n" + lane(""), `:1: "a\nb": unknown key`},
		{"repeated key", "concurrency: 2\nconcurrency: 3\n" + lane(""), `:2: concurrency: key repeated (first set on line 1)`},
		{"unknown key in merge", "x-lane: &l {kind: free, api: openai}\n" + lane(""), `:1: x-lane: unknown key`},
		{"bad merged value", "lanes:\n  - &l {name: a, kind: free, api: openai, base_url: \"http://x/v1\", model: m}\n  - {<<: *l, name: b, max_tokens: lots}\n", `:3: lanes[1].max_tokens: want an integer, got "lots"`},
		{"unknown key merged in", "probe: &p {timeout: 5s}\nlanes:\n  - {<<: [{modle: x}], name: a, kind: free, api: openai, base_url: \"http://x/v1\", model: m}\n", `:3: lanes[0].modle: unknown key`},
		{"bad timezone", "timezone: Mars/Olympus\n" + lane(""), `timezone: unknown time zone "Mars/Olympus"`},
		{"bad schedule", "schedule: \"61 * * * *\"\n" + lane(""), `schedule: bad cron spec "61 * * * *"`},
		{"tz in schedule", "schedule: \"TZ=UTC 7 * * * *\"\n" + lane(""), `schedule: set the zone with timezone:`},
		{"bad duration", "jitter: soon\n" + lane(""), `:1: jitter: want a duration such as "30s", got "soon"`},
		{"duration without unit", "jitter: 30\n" + lane(""), `:1: jitter: want a duration such as "30s", got "30"`},
		{"duration as list", "probe:\n  timeout: [1s]\n" + lane(""), `:2: probe.timeout: want a duration such as "30s", got a list`},
		{"bad lane duration", lane(", timeout: soon"), `:2: lanes[0].timeout: want a duration such as "30s", got "soon"`},
		{"bad aliased duration", "probe: {timeout: &t soon}\n" + lane(", timeout: *t"), `:1: probe.timeout: want a duration such as "30s", got "soon"`},
		{"schedule never runs", "schedule: \"0 0 30 2 *\"\n" + lane(""), `:1: schedule: "0 0 30 2 *" never runs (no run within 5 years)`},
		{"every beyond five years", "schedule: \"@every 43849h\"\n" + lane(""), `:1: schedule: "@every 43849h" never runs (no run within 5 years)`},
		{"jitter above interval", "schedule: \"@every 20s\"\njitter: 30s\n" + lane(""), `:2: jitter: must be shorter than the schedule's shortest interval (20s), got 30s: lower it, or leave it out for the default (a tenth of the interval, at most 30s)`},
		{"jitter equal to interval", "schedule: \"* * * * *\"\njitter: 1m\n" + lane(""), `:2: jitter: must be shorter than the schedule's shortest interval (1m0s), got 1m0s`},
		{"jitter above an hour", "schedule: \"@daily\"\njitter: 61m\n" + lane(""), `:2: jitter: must be at most 1h, got 1h1m0s`},
		{"overflowing timeout", "probe: {timeout: 2562047h47m}\n" + lane(""), `:1: probe.timeout: must be > 0 and at most 1h (a probe is short), got 2562047h47m0s`},
		{"lane timeout above an hour", lane(", timeout: 61m"), `:2: lanes[0].timeout: must be > 0 and at most 1h (a probe is short), got 1h1m0s`},
		{"duration out of range", "probe: {timeout: 9999999h}\n" + lane(""), `:1: probe.timeout: want a duration such as "30s", got "9999999h"`},
		{"bad site", "site: Fra 1\n" + lane(""), `:1: site: want [a-z0-9_-]+ or nothing, got "Fra 1"`},
		{"shard index too big", "shard: 5/5\n" + lane(""), `:1: shard: want I/N such as 2/5 with 0 <= I < N <= 1024, got "5/5"`},
		{"shard count zero", "shard: 0/0\n" + lane(""), `:1: shard: want I/N such as 2/5 with 0 <= I < N <= 1024, got "0/0"`},
		{"shard count too big", "shard: 0/1025\n" + lane(""), `:1: shard: want I/N such as 2/5 with 0 <= I < N <= 1024, got "0/1025"`},
		{"shard not a fraction", "shard: 2\n" + lane(""), `:1: shard: want I/N such as 2/5 with 0 <= I < N <= 1024, got "2"`},
		{"shard negative", "shard: \"-1/5\"\n" + lane(""), `:1: shard: want I/N such as 2/5 with 0 <= I < N <= 1024, got "-1/5"`},
		{"shard as list", "shard: [2, 5]\n" + lane(""), `:1: shard: want I/N such as 2/5, got a list`},
		{"quota name", "quotas: [{name: Open Router, probes_per_day: 12}]\n" + lane(""), `:1: quotas[0].name: want [a-z0-9_-]+, got "Open Router"`},
		{"quota duplicate", "quotas:\n  - {name: q, probes_per_day: 12}\n  - {name: q, probes_per_day: 12}\n" + lane(""), `:3: quotas[1].name: "q" is already the name of quotas[0]`},
		{"quota zero probes", "quotas:\n  - {name: q, probes_per_day: 12}\n  - {name: r}\n" + lane(""), `:3: quotas[1].probes_per_day: must be between 1 and 100000, got 0`},
		{"quota too many probes", "quotas: [{name: q, probes_per_day: 100001}]\n" + lane(""), `:1: quotas[0].probes_per_day: must be between 1 and 100000, got 100001`},
		{"quota fractional probes", "quotas: [{name: q, probes_per_day: 12.5}]\n" + lane(""), `:1: quotas[0].probes_per_day: want an integer, got "12.5"`},
		{"quota timezone", "quotas: [{name: q, probes_per_day: 12, timezone: Mars/Base}]\n" + lane(""), `:1: quotas[0].timezone: unknown time zone "Mars/Base"`},
		{"quota unknown key", "quotas: [{name: q, probes_per_day: 12, probe_per_day: 1}]\n" + lane(""), `:1: quotas[0].probe_per_day: unknown key (did you mean "probes_per_day"?)`},
		{"lane quota unknown", "quotas: [{name: openrouter, probes_per_day: 12}, {name: groq, probes_per_day: 9}]\n" + lane(", quota: openrouterr"), `:3: lanes[0].quota: "openrouterr" is not a quotas[] name (quotas: openrouter, groq)`},
		{"lane quota without quotas", lane(", quota: groq"), `:2: lanes[0].quota: "groq" is not a quotas[] name (no quotas are defined)`},
		{"negative jitter", "jitter: -1s\n" + lane(""), `jitter: must be >= 0`},
		{"zero concurrency", "concurrency: 0\n" + lane(""), `concurrency: must be between 1 and 4096`},
		{"bad store kind", "store: {kind: s3}\n" + lane(""), `store.kind: want file or influx, got "s3"`},
		{"influx without url", "store: {kind: influx}\n" + lane(""), `store.url: want an http(s) URL`},
		{"influx url with password", "store: {kind: influx, url: \"http://u:hunter2@h:8086\"}\n" + lane(""), `store.url: must not carry credentials`},
		{"influx url with query", "store: {kind: influx, url: \"http://h:8086/?token=hunter2\"}\n" + lane(""), `store.url: must not carry a query or fragment`},
		{"influx with a file path", "store:\n  kind: influx\n  url: http://h:8086\n  path: data/samples.lp\n" + lane(""), `:4: store.path: is for kind file only; an InfluxDB store keeps no samples file (remove store.path;`},
		{"influx bad token_env", "store: {kind: influx, url: \"http://h:8086\", token_env: \"my token\"}\n" + lane(""), `store.token_env: must name an environment variable`},
		{"no lanes", "timezone: UTC\n", `lanes: at least one lane is required`},
		{"bad lane name", "lanes:\n  - {name: A!, kind: free, api: openai, base_url: \"http://x\", model: m}\n", `lanes[0].name: want [a-z0-9_-]+, got "A!"`},
		{"duplicate lane", lane("") + "  - {name: a, kind: free, api: openai, base_url: \"http://x\", model: m}\n", `lanes[1].name: "a" is already the name of lanes[0]`},
		{"bad kind", "lanes:\n  - {name: a, kind: cheap, api: openai, base_url: \"http://x\", model: m}\n", `lanes[0].kind: want free or paid`},
		{"bad api", "lanes:\n  - {name: a, kind: free, api: gemini, base_url: \"http://x\", model: m}\n", `lanes[0].api: want openai or anthropic`},
		{"bad base_url", "lanes:\n  - {name: a, kind: free, api: openai, base_url: \"ftp://x\", model: m}\n", `lanes[0].base_url: want an http(s) URL`},
		// It said got "(unparsable URL)" (issue 20).
		{"base_url without scheme", "lanes:\n  - {name: a, kind: free, api: openai, base_url: \"127.0.0.1:18081/v1\", model: m}\n",
			`:2: lanes[0].base_url: want an http(s) URL, got "127.0.0.1:18081/v1": missing http:// (try "http://127.0.0.1:18081/v1")`},
		{"base_url without scheme, with a key", "lanes:\n  - {name: a, kind: free, api: openai, base_url: \"u:hunter2@h.example/v1\", model: m}\n",
			`:2: lanes[0].base_url: want an http(s) URL, got "h.example/v1": missing http:// (try "http://h.example/v1")`},
		{"store url without scheme", "store: {kind: influx, url: \"localhost:8086\"}\n" + lane(""), `store.url: want an http(s) URL, got "localhost:8086": missing http:// (try "http://localhost:8086")`},
		{"base_url with key", "lanes:\n  - {name: a, kind: free, api: openai, base_url: \"http://k:sk-secret@x\", model: m}\n", `lanes[0].base_url: must not carry credentials`},
		{"no model", "lanes:\n  - {name: a, kind: free, api: openai, base_url: \"http://x\"}\n", `lanes[0].model: must not be empty`},
		{"bad api_key_env", lane(", api_key_env: \"sk-abc-123\""), `lanes[0].api_key_env: must name an environment variable`},
		{"lane max_tokens", lane(", max_tokens: 100000"), `lanes[0].max_tokens: must be between 1 and 4096`},
		{"lane timeout", lane(", timeout: -5s"), `lanes[0].timeout: must be > 0`},
		{"empty prompt", "probe: {prompt: \" \"}\n" + lane(""), `probe.prompt: must not be empty`},
		{"lookback", "policy: {lookback_days: -1}\n" + lane(""), `policy.lookback_days: must be between 0 and 366`},
		{"lookback calibrated 0", "policy: {lookback_days: 0}\n" + lane(""), `policy.lookback_days: the calibrated rule learns from at least 1 day, got 0`},
		{"rule", "policy: {rule: p99}\n" + lane(""), `policy.rule: want calibrated or max, got "p99"`},
		{"coverage 1", "policy: {coverage: 1}\n" + lane(""), `policy.coverage: must be above 0 and below 1, got 1`},
		{"coverage 0", "policy: {coverage: 0}\n" + lane(""), `policy.coverage: must be above 0 and below 1, got 0`},
		{"class coverage", "policy: {classes: [{name: c, deadline_s: 1, ceiling_tokens: 10, est_tokens: 5, coverage: 1.5}]}\n" + lane(""), `policy.classes[0].coverage: must be above 0 and below 1 (or left out: policy.coverage), got 1.5`},
		{"class deadline", "policy: {classes: [{name: c, deadline_s: 0, ceiling_tokens: 10, est_tokens: 5}]}\n" + lane(""), `policy.classes[0].deadline_s: must be a finite number > 0, got 0`},
		{"class objective", "policy: {classes: [{name: c, deadline_s: 1, ceiling_tokens: 10, est_tokens: 5, objective: money}]}\n" + lane(""), `policy.classes[0].objective: want cost or time, got "money"`},
		{"class deadline NaN", "policy: {classes: [{name: c, deadline_s: .nan, ceiling_tokens: 10, est_tokens: 5}]}\n" + lane(""), `policy.classes[0].deadline_s: must be a finite number > 0, got NaN`},
		{"class deadline Inf", "policy: {classes: [{name: c, deadline_s: .inf, ceiling_tokens: 10, est_tokens: 5}]}\n" + lane(""), `policy.classes[0].deadline_s: must be a finite number > 0, got +Inf`},
		{"class deadline -Inf", "policy: {classes: [{name: c, deadline_s: -.Inf, ceiling_tokens: 10, est_tokens: 5}]}\n" + lane(""), `policy.classes[0].deadline_s: must be a finite number > 0, got -Inf`},
		{"class price NaN", "policy: {classes: [{name: c, deadline_s: 5, ceiling_tokens: 10, est_tokens: 5, paid_usd_per_1k: .NaN}]}\n" + lane(""), `policy.classes[0].paid_usd_per_1k: must be a finite number >= 0, got NaN`},
		{"class price Inf", "policy: {classes: [{name: c, deadline_s: 5, ceiling_tokens: 10, est_tokens: 5, paid_usd_per_1k: .inf}]}\n" + lane(""), `policy.classes[0].paid_usd_per_1k: must be a finite number >= 0, got +Inf`},
		{"class price -Inf", "policy: {classes: [{name: c, deadline_s: 5, ceiling_tokens: 10, est_tokens: 5, paid_usd_per_1k: -.inf}]}\n" + lane(""), `policy.classes[0].paid_usd_per_1k: must be a finite number >= 0, got -Inf`},
		{"class price negative", "policy: {classes: [{name: c, deadline_s: 5, ceiling_tokens: 10, est_tokens: 5, paid_usd_per_1k: -1}]}\n" + lane(""), `policy.classes[0].paid_usd_per_1k: must be a finite number >= 0, got -1`},
		{"class deadline not a number", "policy:\n  classes:\n    - name: c\n      deadline_s: soon\n" + lane(""), `:4: policy.classes[0].deadline_s: want a number, got "soon"`},
		{"class est above ceiling", "policy: {classes: [{name: c, deadline_s: 5, ceiling_tokens: 10, est_tokens: 50}]}\n" + lane(""), `policy.classes[0].est_tokens: 50 is above ceiling_tokens 10`},
		{"wrong type", "concurrency: many\n" + lane(""), `:1: concurrency: want an integer, got "many"`},
		{"lane max_tokens not a number", lane(", max_tokens: abc"), `:2: lanes[0].max_tokens: want an integer, got "abc"`},
		{"lane include_usage", lane(", include_usage: maybe"), `:2: lanes[0].include_usage: want true or false, got "maybe"`},
		{"probe include_usage", "probe: {include_usage: [yes]}\n" + lane(""), `:1: probe.include_usage: want true or false, got a list`},
		{"string wanted", lane(", api_key_env: [a, b]"), `:2: lanes[0].api_key_env: want a string, got a list`},
		{"list for mapping", "store: [file]\n" + lane(""), `:1: store: want a mapping, got a list`},
		{"scalar for mapping", "policy: out\n" + lane(""), `:1: policy: want a mapping, got "out"`},
		{"mapping for list", "lanes: {name: a}\n", `:1: lanes: want a list, got a mapping`},
		{"scalar lane", "lanes:\n  - a\n", `:2: lanes[0]: want a mapping, got "a"`},
		{"long value clipped", "concurrency: " + strings.Repeat("x", 100) + "\n" + lane(""), `concurrency: want an integer, got "` + strings.Repeat("x", 37) + `..."`},
		{"multi-line value", "concurrency: \"a\\nb\"\n" + lane(""), `:1: concurrency: want an integer, got "a\nb"`},
		{"not a mapping", "hello\n", `:1: want a mapping, got "hello"`},
		{"not yaml", "lanes: [\n", `:1: not valid YAML: did not find expected node content`},
		{"tab indent", "lanes:\n\t- name: a\n", `:2: not valid YAML: found character that cannot start any token`},
		{"fractional integer", "concurrency: 1.5\n" + lane(""), `:1: concurrency: want an integer, got "1.5"`},
		{"fractional lane integer", lane(", max_tokens: 8.0"), `:2: lanes[0].max_tokens: want an integer, got "8.0"`},
		{"integer overflow", "store: {spool_max_bytes: 99999999999999999999}\n" + lane(""), `:1: store.spool_max_bytes: want an integer, got "99999999999999999999"`},
		{"quoted integer", "concurrency: \"12\"\n" + lane(""), `:1: concurrency: want an integer, got "12"`},
		{"repeated merge key", "probe:\n  <<: {timeout: 5s}\n  <<: {timeout: 6s}\n" + lane(""), `:3: probe."<<": key repeated (first set on line 2)`},
		{"merge of a scalar", "probe:\n  <<: [{timeout: 5s}, 3]\n" + lane(""), `:2: probe."<<": want a mapping or a list of mappings, got "3"`},
		{"merge cycle", "lanes:\n  - &l {name: a, kind: free, api: openai, base_url: \"http://x/v1\", model: m, <<: *l}\n", `:2: lanes[0]: merges a mapping into itself`},
		{"alias bomb", aliasBomb(), `aliases expand to more than 100000 mappings`},
		{"unquoted cron spec", "schedule: */10 * * * *\n" + lane(""), `:1: schedule: a cron spec that starts with * must be quoted (YAML reads * as an alias): schedule: "*/10 * * * *"`},
		{"store path is a folder", "store: {path: " + os.TempDir() + "}\n" + lane(""), `:1: store.path: ` + os.TempDir() + ` is a folder; name a file, e.g. ` + filepath.Join(os.TempDir(), "samples.lp")},
		{"validation error has a line", "lanes:\n  - name: a\n    kind: cheap\n", `:3: lanes[0].kind: want free or paid, got "cheap"`},
		// yaml.v3 says line 1, where the list began (issue 20).
		{"bad indent at its own line", "lanes:\n  - name: a\n    kind: free\n    api: openai\n   model: m\n", `:5: not valid YAML: did not find expected '-' indicator`},
		{"bad indent in a nested mapping", "store:\n  kind: file\n  path: x\n    spool: y\n" + lane(""), `:4: not valid YAML: mapping values are not allowed in this context`},
		{"missing field has its mapping's line", "lanes:\n  - name: a\n    kind: free\n    api: openai\n    base_url: http://x\n", `:2: lanes[0].model: must not be empty`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "bad.yaml")
			if err := os.WriteFile(p, []byte(c.src), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Load(p)
			if err == nil {
				t.Fatalf("loaded a bad config; want error containing %q", c.want)
			}
			msg := err.Error()
			if !strings.Contains(msg, c.want) {
				t.Errorf("error %q does not contain %q", msg, c.want)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error is more than one line: %q", msg)
			}
			if strings.Contains(msg, "hunter2") || strings.Contains(msg, "sk-secret") {
				t.Errorf("error repeats a secret: %q", msg)
			}
			if !strings.HasPrefix(msg, p) {
				t.Errorf("error %q does not start with the file name", msg)
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Errorf("error is %T, want *config.Error", err)
			}
		})
	}
}

// aliasBomb is a config whose merges expand tenfold per level.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString("lanes:\n  - &l0 {name: a, kind: free, api: openai, base_url: \"http://x/v1\", model: m}\n")
	for i := 1; i <= 7; i++ {
		refs := strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", i-1), 10), ", ")
		fmt.Fprintf(&b, "  - &l%d {<<: [%s], name: l%d}\n", i, refs, i)
	}
	return b.String()
}

func TestUnknownKeySuggestion(t *testing.T) {
	lane := "lanes:\n  - {name: a, kind: free, api: openai, base_url: \"http://x/v1\", model: m}\n"
	cases := []struct{ src, want string }{
		{"timezon: UTC\n" + lane, `line 1: timezon: unknown key (did you mean "timezone"?)`},
		{"shedule: \"* * * * *\"\n" + lane, `line 1: shedule: unknown key (did you mean "schedule"?)`},
		{"probe: {max: 3}\n" + lane, `line 1: probe.max: unknown key (did you mean "max_tokens"?)`},
		{"store: {tokenenv: X}\n" + lane, `line 1: store.tokenenv: unknown key (did you mean "token_env"?)`},
		{"policy: {classes: [{deadline: 3}]}\n" + lane, `line 1: policy.classes[0].deadline: unknown key (did you mean "deadline_s"?)`},
		// Only keys of that level are offered: "name" is a lane key, not a top key.
		{"nme: x\n" + lane, `line 1: nme: unknown key`},
		{"colour: blue\n" + lane, `line 1: colour: unknown key`},
		{"ab: 1\n" + lane, `line 1: ab: unknown key`},
	}
	for _, c := range cases {
		_, err := Parse(strings.NewReader(c.src), "/")
		if err == nil || err.Error() != c.want {
			t.Errorf("%q:\n got %v\nwant %s", c.src, err, c.want)
		}
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
		if got := interval(c.spec, c.loc, now); got != c.want {
			t.Errorf("interval(%q) = %s, want %s", c.spec, got, c.want)
		}
	}
	// In a zone with DST, the day the clocks go back has a 25-hour gap and
	// the day they go forward a 23-hour one: the shortest is the answer.
	spring := time.Date(2027, 3, 24, 0, 0, 0, 0, berlin)
	if got := interval("30 3 * * *", berlin, spring); got != 23*time.Hour {
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
	q, ok := cfg.QuotaOf("a")
	if !ok || q.Name != "groq" || q.ProbesPerDay != 100000 || q.Location.String() != "America/Los_Angeles" {
		t.Errorf("QuotaOf(a) = %+v, %v", q, ok)
	}
	for _, lane := range []string{"b", "nope"} {
		if q, ok := cfg.QuotaOf(lane); ok {
			t.Errorf("QuotaOf(%s) = %+v, want none", lane, q)
		}
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
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			key, kerr := Lane{Name: "a", APIKeyEnv: c.key}.APIKey(lookup)
			tok, terr := Store{TokenEnv: c.key}.Token(lookup)
			for who, got := range map[string]struct {
				v      string
				err    error
				prefix string
			}{"APIKey": {key, kerr, "lane a: "}, "Token": {tok, terr, "store.token_env: "}} {
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
