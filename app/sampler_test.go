package app_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/app"
	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/sampler"
	"github.com/lanewatch/lanewatch/sampler/shard"
)

const samplerYAML = `site: fra1
sites: [fra1]
schedule: "*/20 * * * *"
timezone: Europe/Berlin
concurrency: 3
shard: "1/2"
quotas:
  - {name: g, probes_per_day: 24}
lanes:
  - {name: a, kind: free, api: openai, base_url: "http://127.0.0.1:1/v1", model: m, api_key_env: LW_KEY_A, timeout: 7s}
  - {name: b, kind: paid, api: anthropic, base_url: "http://127.0.0.1:1", model: m2, quota: g, include_usage: false}
  - {name: c, kind: free, api: openai, base_url: "http://127.0.0.1:1/v1", model: m, quota: g}
`

// SamplerOptions gives the sampler the config's values as domain values:
// the owned lanes' targets in config order (of the config's shard, or of
// the flag's), the groups, site, schedule, zone and concurrency.
func TestSamplerOptions(t *testing.T) {
	cfg, err := config.Parse(strings.NewReader(samplerYAML), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	keys := func(k string) (string, bool) { return map[string]string{"LW_KEY_A": "key-a"}[k], k == "LW_KEY_A" }
	owners := func(index, n int) []string {
		return shard.Owned([]shard.Lane{{Name: "a"}, {Name: "b", Quota: "g"}, {Name: "c", Quota: "g"}}, index, n)
	}
	cases := []struct {
		name  string
		flag  config.Shard
		shard sampler.Shard
	}{
		{"the config's shard", config.Shard{}, sampler.Shard{Index: 1, Count: 2}},
		{"the flag's shard", config.Shard{Index: 0, Count: 2}, sampler.Shard{Index: 0, Count: 2}},
		{"every lane", config.Shard{Index: 0, Count: 1}, sampler.Shard{Index: 0, Count: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, err := app.SamplerOptions(cfg, nil, keys, c.flag)
			want := owners(c.shard.Index, c.shard.Count)
			if err != nil {
				t.Fatal(err)
			}
			var lanes []string
			for _, tg := range o.Targets {
				lanes = append(lanes, tg.Lane)
			}
			if !slices.Equal(lanes, want) || o.Shard != c.shard {
				t.Errorf("targets %v of shard %v, want %v of %v", lanes, o.Shard, want, c.shard)
			}
			if o.Site != "fra1" || o.Schedule != "*/20 * * * *" || o.Location.String() != "Europe/Berlin" || o.Concurrency != 3 {
				t.Errorf("site %q, schedule %q, zone %s, concurrency %d", o.Site, o.Schedule, o.Location, o.Concurrency)
			}
			if len(o.Groups) != 1 || !slices.Equal(o.Groups[0].Lanes, []string{"b", "c"}) {
				t.Errorf("groups %+v, want g with b and c", o.Groups)
			}
			if o.Chart == nil {
				t.Error("no status page chart")
			}
		})
	}
}

// Target maps a lane with its key; include_usage defaults to true.
func TestTarget(t *testing.T) {
	cfg, err := config.Parse(strings.NewReader(samplerYAML), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a, b := app.Target(cfg.Lanes[0], "key-a"), app.Target(cfg.Lanes[1], "")
	if a.Lane != "a" || a.Kind != "free" || a.APIKey != "key-a" || a.Timeout != 7*time.Second || !a.IncludeUsage || a.Model != "m" {
		t.Errorf("lane a: %+v", a)
	}
	if b.Lane != "b" || b.Kind != "paid" || string(b.API) != "anthropic" || b.IncludeUsage {
		t.Errorf("lane b: %+v", b)
	}
}

// A missing key of an owned lane fails with config's own message; another
// shard's lane needs none.
func TestSamplerOptionsKeys(t *testing.T) {
	cfg, err := config.Parse(strings.NewReader(samplerYAML), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	none := func(string) (string, bool) { return "", false }
	_, want := cfg.Lanes[0].APIKey(none)
	if _, err := app.SamplerOptions(cfg, nil, none, config.Shard{Index: 0, Count: 1}); err == nil || want == nil || err.Error() != want.Error() {
		t.Errorf("every lane without LW_KEY_A: %v, want %v", err, want)
	}
	other := 1 - shard.Of(shard.Key("a", ""), 2)
	if _, err := app.SamplerOptions(cfg, nil, none, config.Shard{Index: other, Count: 2}); err != nil {
		t.Errorf("shard %d/2 without lane a: %v, want no error", other, err)
	}
}
