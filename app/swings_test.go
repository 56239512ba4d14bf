package app_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/app"
	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/internal/influxtest"
	"github.com/lanewatch/lanewatch/report/swings"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
	"github.com/lanewatch/lanewatch/store/influx"
	"github.com/lanewatch/lanewatch/store/spool"
)

// swingsConfig is a config in zone with the lanes given as name and kind
// (each an openai lane at a base URL nothing answers).
func swingsConfig(t *testing.T, zone string, lanes [][2]string) *config.Config {
	t.Helper()
	text := "timezone: " + zone + "\nlanes:\n"
	for _, l := range lanes {
		text += fmt.Sprintf("  - {name: %s, kind: %s, api: openai, base_url: \"http://x/v1\", model: m}\n", l[0], l[1])
	}
	cfg, err := config.Parse(strings.NewReader(text), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// swingsRef is app.Swings as it was before the per-site records were merged
// apart from the others: every record, then every record under its
// lane@site name, merged in one slice.
func swingsRef(cfg *config.Config, recs []store.Hourly, from, to time.Time, days int, perSite bool) *swings.Report {
	siteLane := func(lane, site string) string {
		if site == "" {
			site = "-"
		}
		return lane + "@" + site
	}
	sitesOf := map[string][]string{}
	for _, h := range recs {
		if !slices.Contains(sitesOf[h.Lane], h.Site) {
			sitesOf[h.Lane] = append(sitesOf[h.Lane], h.Site)
		}
	}
	multi := false
	for _, ss := range sitesOf {
		multi = multi || len(ss) > 1
	}
	var lanes []swings.Lane
	for _, l := range cfg.Lanes {
		lanes = append(lanes, swings.Lane{Name: l.Name, Kind: l.Kind})
		if perSite && multi {
			ss := slices.Clone(sitesOf[l.Name])
			slices.Sort(ss)
			for _, site := range ss {
				lanes = append(lanes, swings.Lane{Name: siteLane(l.Name, site), Kind: l.Kind})
			}
		}
	}
	if perSite && multi {
		var split []store.Hourly
		for _, h := range recs {
			h.Lane = siteLane(h.Lane, h.Site)
			split = append(split, h)
		}
		recs = append(slices.Clone(recs), split...)
	}
	classes := make([]swings.ClassLine, len(cfg.Policy.Classes))
	for i, c := range cfg.Policy.Classes {
		classes[i] = swings.ClassLine{Name: c.Name, DeadlineS: c.DeadlineS}
	}
	return swings.Compute(swings.MergeSites(recs), swings.Options{Location: cfg.Location, From: from, To: to, Days: days, Lanes: lanes, Classes: classes})
}

// app.Swings gives the report it gave, for random records of several sites,
// including records of a lane whose name is another lane's lane@site
// column (the case where the two cannot be merged apart).
func TestSwingsMatchesReference(t *testing.T) {
	cfg := swingsConfig(t, "Europe/Berlin", [][2]string{{"a", "free"}, {"b", "paid"}})
	rng := rand.New(rand.NewPCG(21, 8))
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	from, to := t0, t0.Add(3*24*time.Hour)
	for n := range 400 {
		names := []string{"a", "b", "c"}
		if n%4 == 0 {
			names = append(names, "a@fra1", "c@-")
		}
		var recs []store.Hourly
		for range rng.IntN(150) {
			samples := rng.Int64N(4)
			recs = append(recs, store.Hourly{
				Lane: names[rng.IntN(len(names))], Kind: []string{"free", "paid"}[rng.IntN(2)],
				Site: []string{"", "fra1", "iad1"}[rng.IntN(3)], Hour: t0.Add(time.Duration(rng.IntN(72)) * time.Hour),
				WorstQueueS: float64(rng.IntN(600)) / 10, WorstCensoredS: float64(rng.IntN(3)) * 15,
				Samples: samples, Failures: rng.Int64N(samples + 1),
			})
		}
		slices.SortStableFunc(recs, func(a, b store.Hourly) int { return a.Hour.Compare(b.Hour) })
		for _, perSite := range []bool{true, false} {
			got, want := app.Swings(cfg, recs, from, to, 3, perSite), swingsRef(cfg, recs, from, to, 3, perSite)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("case %d (perSite %v): app.Swings differs from the reference", n, perSite)
			}
		}
	}
}

// app.SwingsOf, which builds the report while a store hands its records
// over an hour at a time, gives what app.Swings gives for the records the
// store returns whole: for random records of several sites, of more sites
// than one pass takes (64), and of lanes named like a lane@site column
// (both read whole again), on the embedded file store and on InfluxDB
// (through the spool, a span read in pieces, each streamed).
func TestSwingsOfMatchesSwings(t *testing.T) {
	cfg := swingsConfig(t, "Asia/Kathmandu", [][2]string{{"a", "free"}, {"b", "paid"}})
	ctx := context.Background()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	from, to := t0.Add(5*time.Hour), t0.Add(3*24*time.Hour)
	for _, c := range []struct {
		name  string
		cases int
		// start returns how to open a fresh store of the kind
		start func(t *testing.T) func() store.Store
	}{
		{"file", 60, func(t *testing.T) func() store.Store {
			return func() store.Store {
				st, err := file.Open(filepath.Join(t.TempDir(), "samples.lp"), file.Options{})
				if err != nil {
					t.Fatal(err)
				}
				return st
			}
		}},
		{"influx", 10, func(t *testing.T) func() store.Store {
			srv := influxtest.Start(t)
			n := 0
			return func() store.Store {
				n++
				db, err := influx.Open(ctx, influx.Options{URL: srv.URL, Bucket: srv.CreateDB(t, fmt.Sprintf("swingsof%d", n)) + "/autogen"})
				if err != nil {
					t.Fatal(err)
				}
				sp, err := spool.Open(db, spool.Options{Path: filepath.Join(t.TempDir(), "spool.lp")})
				if err != nil {
					t.Fatal(err)
				}
				return sp
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			open := c.start(t)
			rng := rand.New(rand.NewPCG(5, 19))
			for n := range c.cases {
				names := []string{"a", "b", "c"}
				if n%4 == 0 {
					names = append(names, "a@fra1")
				}
				sites := []string{"", "fra1", "iad1"}
				if n%5 == 0 {
					for i := range 70 {
						sites = append(sites, fmt.Sprintf("s%02d", i))
					}
				}
				var recs []store.Hourly
				for range rng.IntN(300) {
					samples := rng.Int64N(4)
					recs = append(recs, store.Hourly{
						Lane: names[rng.IntN(len(names))], Kind: []string{"free", "paid"}[rng.IntN(2)],
						Site: sites[rng.IntN(len(sites))], Hour: t0.Add(time.Duration(rng.IntN(80)) * time.Hour),
						WorstQueueS: float64(rng.IntN(600)) / 10, WorstCensoredS: float64(rng.IntN(3)) * 15,
						Samples: samples, Failures: rng.Int64N(samples + 1),
					})
				}
				st := open()
				if err := st.Write(ctx, store.Batch{Hourly: recs}); err != nil {
					t.Fatal(err)
				}
				q := store.Between(from, to)
				q.Fields = swings.Fields()
				whole, err := store.ReadHourly(ctx, st, q)
				if err != nil {
					t.Fatal(err)
				}
				for _, perSite := range []bool{true, false} {
					got, err := app.SwingsOf(ctx, cfg, st, q, from, to, 3, perSite)
					if err != nil {
						t.Fatalf("case %d: SwingsOf: %v", n, err)
					}
					if want := app.Swings(cfg, whole, from, to, 3, perSite); !reflect.DeepEqual(got, want) {
						t.Fatalf("case %d (perSite %v, %d sites): SwingsOf differs from Swings of the records read whole", n, perSite, len(sites))
					}
				}
				if err := st.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
