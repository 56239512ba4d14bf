package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
)

// seedSite writes one round of both lanes at site, in the hour of at.
func (f *fixture) seedSite(t *testing.T, site string, at time.Time) {
	t.Helper()
	st, err := file.Open(f.store, file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	hour := store.HourStart(at, f.loc)
	var probes []store.Probe
	var hourly []store.Hourly
	for i, lane := range []string{"free", "paid"} {
		p := store.Probe{Lane: lane, Kind: lane, Site: site, Time: at.Add(time.Duration(i) * time.Second), QueueS: 2, GenS: 0.4, HeadersS: 0.1, Tokens: 16, OK: true, Outcome: "ok", Status: 200}
		probes = append(probes, p)
		hourly = append(hourly, store.Aggregate(lane, lane, site, hour, []store.Probe{p}))
	}
	if err := st.Write(context.Background(), store.Batch{Probes: probes, Hourly: hourly}); err != nil {
		t.Fatal(err)
	}
}

// listFiles returns the names in dir ("" for none or no dir).
func listFiles(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return strings.Join(names, " ")
}

// A -site that no stored record (nor the config) names is a usage error
// listing the known sites, and nothing is written; a known site's view gets
// its own file, beside the merged one, which it never replaces (issue 18).
func TestSiteFlag(t *testing.T) {
	const hour = "2026-11-30T14"
	h, _ := store.ParseHour(hour, time.UTC)
	for _, tc := range []struct {
		name  string
		sites []string // seeded
		args  []string
		code  int
		out   string // stdout, with OUT for the folder
		err   string // stderr
		files string // in OUT after the run
	}{
		{"unknown site", []string{"ams1", "fra2"}, []string{"-site", "fra1"}, 2, "",
			`policygen: -site: unknown site "fra1" (sites: ams1, fra2)` + "\n", ""},
		{"unknown site, no sites at all", []string{""}, []string{"-site", "fra1"}, 2, "",
			`policygen: -site: unknown site "fra1" (no stored record carries a site, and the config sets none)` + "\n", ""},
		{"unknown site, fresh install", nil, []string{"-site", "fra1"}, 2, "", "", ""},
		{"unknown site for a day", []string{"ams1"}, []string{"-site", "fra1", "-day", "2026-12-01"}, 2, "",
			`policygen: -site: unknown site "fra1" (sites: ams1)` + "\n", ""},
		{"bad site name", nil, []string{"-site", "Fra 1"}, 2, "", `policygen: -site: want [a-z0-9_-]+, got "Fra 1"` + "\n", ""},
		{"known site", []string{"ams1", "fra2"}, []string{"-site", "fra2"}, 0, "OUT/" + hour + ".fra2.yaml\n", "", hour + ".fra2.yaml"},
		{"merged", []string{"ams1", "fra2"}, nil, 0, "OUT/" + hour + ".yaml\n", "", hour + ".yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, "UTC")
			for _, s := range tc.sites {
				fx.seedSite(t, s, h.Add(-2*time.Hour))
			}
			r := (&env{}).exec(t, "", append([]string{"-config", fx.config, "-hour", hour}, tc.args...)...)
			if strings.Contains(strings.Join(tc.args, " "), "-day") {
				r = (&env{}).exec(t, "", append([]string{"-config", fx.config}, tc.args...)...)
			}
			if r.code != tc.code || r.stdout != strings.ReplaceAll(tc.out, "OUT", fx.out) || tc.err != "" && r.stderr != tc.err {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d, %q, %q", r.code, r.stdout, r.stderr, tc.code, tc.out, tc.err)
			}
			if got := listFiles(t, fx.out); got != tc.files {
				t.Fatalf("files %q, want %q", got, tc.files)
			}
		})
	}
	t.Run("view beside the merged file", func(t *testing.T) {
		fx := newFixture(t, "UTC")
		fx.seedSite(t, "ams1", h.Add(10*time.Minute))
		fx.seedSite(t, "fra2", h.Add(10*time.Minute))
		runOK(t, &env{}, "", "-config", fx.config, "-hour", hour)
		merged, err := os.ReadFile(filepath.Join(fx.out, hour+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		runOK(t, &env{}, "", "-config", fx.config, "-hour", hour, "-site", "ams1")
		after, err := os.ReadFile(filepath.Join(fx.out, hour+".yaml"))
		if err != nil || string(after) != string(merged) {
			t.Fatalf("the site's view changed the merged file (%v)", err)
		}
		view, err := os.ReadFile(filepath.Join(fx.out, hour+".ams1.yaml"))
		if err != nil || !strings.Contains(string(view), "sites: [ams1]") || !strings.Contains(string(merged), "sites: [ams1, fra2]") {
			t.Fatalf("view %s\nmerged %s (%v)", view, merged, err)
		}
	})
	t.Run("the config's own site is known before it has records", func(t *testing.T) {
		fx := newFixture(t, "UTC")
		data, err := os.ReadFile(fx.config)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(fx.config, append([]byte("site: iad1\n"), data...), 0o644); err != nil {
			t.Fatal(err)
		}
		runOK(t, &env{}, "", "-config", fx.config, "-hour", hour, "-site", "iad1")
		if got := listFiles(t, fx.out); got != hour+".iad1.yaml" {
			t.Fatalf("files %q", got)
		}
	})
}
