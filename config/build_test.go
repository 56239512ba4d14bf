package config_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/sampler"
	"github.com/lanewatch/lanewatch/sampler/shard"
)

// An account-scope quota's group is shared by the config's sites (its
// slots go to them in turn); a site-scope one is the probing site's own.
func TestGroupsSites(t *testing.T) {
	const lanes = "lanes:\n" +
		"  - {name: a, kind: free, api: openai, base_url: \"http://127.0.0.1:1/v1\", model: m, quota: acct}\n" +
		"  - {name: b, kind: free, api: openai, base_url: \"http://127.0.0.1:1/v1\", model: m, quota: own}\n"
	cases := []struct {
		name, src string
		acct, own []string // want the groups' Sites
	}{
		{"three sites", "site: iad1\nsites: [fra1, iad1, sgp1]\nquotas: [{name: acct, probes_per_day: 12}, {name: own, probes_per_day: 12, scope: site}]\n",
			[]string{"fra1", "iad1", "sgp1"}, nil},
		{"no sites", "quotas: [{name: acct, probes_per_day: 12, scope: account}, {name: own, probes_per_day: 12, scope: site}]\n", nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := config.Parse(strings.NewReader(c.src+lanes), t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			gs := cfg.Groups()
			if len(gs) != 2 || gs[0].Name != "acct" || gs[1].Name != "own" {
				t.Fatalf("groups %+v", gs)
			}
			if !slices.Equal(gs[0].Sites, c.acct) || !slices.Equal(gs[1].Sites, c.own) {
				t.Errorf("sites: acct %q, own %q; want %q, %q", gs[0].Sites, gs[1].Sites, c.acct, c.own)
			}
			o, err := cfg.SamplerOptions(nil, func(string) (string, bool) { return "k", true }, config.Shard{})
			if err != nil {
				t.Fatal(err)
			}
			if o.Site != cfg.Site || !slices.Equal(o.Groups[0].Sites, c.acct) {
				t.Errorf("sampler options: site %q, groups %+v", o.Site, o.Groups)
			}
		})
	}
}

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
			o, err := cfg.SamplerOptions(nil, keys, c.flag)
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
	a, b := cfg.Lanes[0].Target("key-a"), cfg.Lanes[1].Target("")
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
	if _, err := cfg.SamplerOptions(nil, none, config.Shard{Index: 0, Count: 1}); err == nil || want == nil || err.Error() != want.Error() {
		t.Errorf("every lane without LW_KEY_A: %v, want %v", err, want)
	}
	other := 1 - shard.Of(shard.Key("a", ""), 2)
	if _, err := cfg.SamplerOptions(nil, none, config.Shard{Index: other, Count: 2}); err != nil {
		t.Errorf("shard %d/2 without lane a: %v, want no error", other, err)
	}
}

// InfluxDB is read through InfluxQL's /query, with an org or without, and
// store.timeout bounds each request: a server slower than it fails the
// open's read check with a timeout.
func TestOpenStoreInfluxKnobs(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		switch r.URL.Path {
		case "/query":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"results":[{"statement_id":0}]}` + "\n"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	for _, c := range []struct {
		name, store string
		want        string
	}{
		{"auto without org", "", "/query"},
		{"auto with org", "org: o\n  ", "/query"},
		{"influxql", "query_language: influxql\n  ", "/query"},
		{"influxql with org", "org: o\n  query_language: influxql\n  ", "/query"},
	} {
		t.Run(c.name, func(t *testing.T) {
			mu.Lock()
			paths = nil
			mu.Unlock()
			dir := t.TempDir()
			cfg, err := config.Parse(strings.NewReader("store:\n  kind: influx\n  "+c.store+"url: "+srv.URL+"\n"+
				"lanes:\n  - {name: a, kind: free, api: openai, base_url: \"http://x/v1\", model: m}\n"), dir)
			if err != nil {
				t.Fatal(err)
			}
			st, err := config.OpenStore(context.Background(), cfg, config.Reader, nil, func(string) (string, bool) { return "", false })
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			mu.Lock()
			defer mu.Unlock()
			if len(paths) != 1 || paths[0] != c.want {
				t.Errorf("read check went to %q, want [%s]", paths, c.want)
			}
		})
	}

	t.Run("timeout", func(t *testing.T) {
		release := make(chan struct{})
		slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-time.After(10 * time.Second):
			}
		}))
		defer slow.Close()
		defer close(release) // before Close, which waits for the handler
		cfg, err := config.Parse(strings.NewReader("store:\n  kind: influx\n  url: "+slow.URL+"\n  timeout: 200ms\n"+
			"lanes:\n  - {name: a, kind: free, api: openai, base_url: \"http://x/v1\", model: m}\n"), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		st, err := config.OpenStore(context.Background(), cfg, config.Reader, nil, func(string) (string, bool) { return "", false })
		if err == nil {
			st.Close()
			t.Fatal("OpenStore succeeded against a server that never answers")
		}
		if el := time.Since(t0); el > 10*time.Second || !strings.Contains(err.Error(), "Timeout") {
			t.Errorf("open failed after %s with %v; want a timeout after about 200ms", el, err)
		}
	})
}
