package swings_test

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/report/swings"
	"github.com/lanewatch/lanewatch/store"
)

// buildRef is Build as it was before the per-site records were merged
// apart from the others: every record, then every record under its
// lane@site name, merged in one slice.
func buildRef(recs []store.Hourly, opt swings.Options, perSite bool) *swings.Report {
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
	for _, l := range opt.Lanes {
		lanes = append(lanes, l)
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
	opt.Lanes = lanes
	return swings.Compute(swings.MergeSites(recs), opt)
}

// Build gives the report it gave, for random records of several sites,
// including records of a lane whose name is another lane's lane@site
// column (the case where the two cannot be merged apart).
func TestBuildMatchesReference(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
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
		opt := swings.Options{Location: berlin, From: from, To: to, Days: 3, Lanes: []swings.Lane{{Name: "a", Kind: "free"}, {Name: "b", Kind: "paid"}},
			Classes: []swings.ClassLine{{Name: "c", DeadlineS: 60}}}
		for _, perSite := range []bool{true, false} {
			if got, want := swings.Build(recs, opt, perSite), buildRef(recs, opt, perSite); !reflect.DeepEqual(got, want) {
				t.Fatalf("case %d (perSite %v): Build differs from the reference", n, perSite)
			}
		}
	}
}
