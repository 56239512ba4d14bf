package config

import (
	"slices"
	"strings"
	"testing"
)

// The keys of issue 21: quotas[].scope (account by default) and the sites
// that share the account quotas, and what a config of them may not say.
func TestQuotaScopeAndSites(t *testing.T) {
	const lanes = "lanes:\n  - {name: a, kind: free, api: openai, base_url: \"http://x/v1\", model: m, quota: q}\n"
	cases := []struct {
		name, src string
		scope     string   // want quotas[0].scope after loading
		sites     []string // want sites
		err       string   // want an error containing it; "" loads
	}{
		{"default scope, one site", "quotas: [{name: q, probes_per_day: 12}]\n" + lanes, ScopeAccount, nil, ""},
		{"account with its sites", "site: iad1\nsites: [fra1, iad1, sgp1]\nquotas: [{name: q, probes_per_day: 12, scope: account}]\n" + lanes,
			ScopeAccount, []string{"fra1", "iad1", "sgp1"}, ""},
		{"site scope without sites", "site: iad1\nquotas: [{name: q, probes_per_day: 12, scope: site}]\n" + lanes, ScopeSite, nil, ""},
		{"site scope, site not listed", "site: iad1\nsites: [fra1]\nquotas: [{name: q, probes_per_day: 12, scope: site}]\n" + lanes, ScopeSite, []string{"fra1"}, ""},
		{"sites without quotas", "site: iad1\nsites: [fra1]\n" + strings.ReplaceAll(lanes, ", quota: q", ""), "", []string{"fra1"}, ""},
		{"bad scope", "quotas: [{name: q, probes_per_day: 12, scope: global}]\n" + lanes, "", nil,
			`line 1: quotas[0].scope: want account or site, got "global"`},
		{"site set, no sites", "site: iad1\nquotas: [{name: q, probes_per_day: 12}]\n" + lanes, "", nil,
			`sites: must list site "iad1": quotas[0] "q" has scope account`},
		{"site not in sites", "site: iad1\nsites: [fra1, sgp1]\nquotas: [{name: q, probes_per_day: 12}]\n" + lanes, "", nil,
			`line 2: sites: must list site "iad1"`},
		{"sites but no site", "sites: [fra1, sgp1]\nquotas: [{name: q, probes_per_day: 12}]\n" + lanes, "", nil,
			`line 2: quotas[0].scope: account: the sites fra1, sgp1 share this quota's budget, so site must name one of them`},
		{"bad site name", "site: fra1\nsites: [fra1, Sgp 1]\n" + lanes, "", nil, `sites[1]: want [a-z0-9_-]+, got "Sgp 1"`},
		{"site twice", "site: fra1\nsites: [fra1, sgp1, fra1]\n" + lanes, "", nil, `sites[2]: "fra1" is already sites[0]`},
		{"sites not a list", "site: fra1\nsites: fra1\n" + lanes, "", nil, `line 2: sites: want a list`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse(strings.NewReader(c.src), "/")
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q\n%s", err, c.err, c.src)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v\n%s", err, c.src)
			}
			if !slices.Equal(cfg.Sites, c.sites) {
				t.Errorf("sites %q, want %q", cfg.Sites, c.sites)
			}
			if c.scope != "" && cfg.Quotas[0].Scope != c.scope {
				t.Errorf("scope %q, want %q", cfg.Quotas[0].Scope, c.scope)
			}
		})
	}
}
