package app_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/lanewatch/lanewatch/app"
	"github.com/lanewatch/lanewatch/config"
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
			gs := app.Groups(cfg)
			if len(gs) != 2 || gs[0].Name != "acct" || gs[1].Name != "own" {
				t.Fatalf("groups %+v", gs)
			}
			if !slices.Equal(gs[0].Sites, c.acct) || !slices.Equal(gs[1].Sites, c.own) {
				t.Errorf("sites: acct %q, own %q; want %q, %q", gs[0].Sites, gs[1].Sites, c.acct, c.own)
			}
			o, err := app.SamplerOptions(cfg, nil, func(string) (string, bool) { return "k", true }, config.Shard{})
			if err != nil {
				t.Fatal(err)
			}
			if o.Site != cfg.Site || !slices.Equal(o.Groups[0].Sites, c.acct) {
				t.Errorf("sampler options: site %q, groups %+v", o.Site, o.Groups)
			}
		})
	}
}
