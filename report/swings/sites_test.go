package swings_test

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/report/swings"
	"github.com/lanewatch/lanewatch/store"
)

// Sites, fed the records at once or in parts, gives, in one pass, what
// Compute gives for the records merged by MergeSites followed by the merged lane@site columns (renamed
// copies), for random records: by time (as a store returns them, when it
// must not refuse) or in any order, with copies per kind, kinds missing,
// repeated sites, values that are negative or not finite, records outside
// the window, zones with a shifted or repeated hour, and lanes named like a
// column.
func TestSitesMatchesCompute(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 11))
	t0 := time.Date(2026, 10, 24, 20, 0, 0, 0, time.UTC)
	zones := []*time.Location{time.UTC, time.FixedZone("x", 5*3600+1800)}
	if berlin, err := time.LoadLocation("Europe/Berlin"); err == nil {
		zones = append(zones, berlin) // 25 October 2026: 02:00 twice
	}
	column := func(lane, site string) string {
		if site == "" {
			site = "-"
		}
		return lane + "@" + site
	}
	values := []float64{0, 1.5, 3, 12, 30, -1, math.Inf(1), math.NaN()}
	refused := 0
	for n := range 1500 {
		loc := zones[rng.IntN(len(zones))]
		lanesNames := []string{"a", "b", "c"}
		if n%7 == 0 {
			lanesNames = append(lanesNames, "a@fra1") // a lane named like a column
		}
		var hs []store.Hourly
		for range rng.IntN(250) {
			samples := rng.Int64N(4) - rng.Int64N(2)
			hs = append(hs, store.Hourly{
				Lane: lanesNames[rng.IntN(len(lanesNames))], Kind: []string{"", "free", "paid"}[rng.IntN(3)],
				Site: []string{"", "fra1", "iad1"}[rng.IntN(3)], Hour: t0.Add(time.Duration(rng.IntN(12)) * time.Hour).In(zones[rng.IntN(len(zones))]),
				WorstQueueS: values[rng.IntN(len(values))], WorstCensoredS: values[rng.IntN(len(values))],
				Samples: samples, Failures: rng.Int64N(3),
			})
		}
		sorted := n%3 != 0
		if sorted {
			slices.SortStableFunc(hs, func(a, b store.Hourly) int { return a.Hour.Compare(b.Hour) })
		}
		opt := swings.Options{Location: loc, From: t0.Add(time.Hour), To: t0.Add(10 * time.Hour), Days: 1,
			Classes: []swings.ClassLine{{Name: "i", DeadlineS: 60}}}
		if n%5 == 0 {
			opt.From, opt.To = time.Time{}, time.Time{}
		}
		config := []swings.Lane{{Name: "a", Kind: "free"}, {Name: "z"}, {Name: "a", Kind: "paid"}, {Name: "b"}}
		perSite := n%4 != 0
		// As Build lists them: the configured lanes, each followed by
		// its columns when some lane has two sites.
		lanesOf := func(sitesOf map[string][]string) ([]swings.Lane, bool) {
			multi := false
			for _, ss := range sitesOf {
				multi = multi || len(ss) > 1
			}
			var ls []swings.Lane
			for _, l := range config {
				ls = append(ls, l)
				if perSite && multi {
					ss := slices.Clone(sitesOf[l.Name])
					slices.Sort(ss)
					for _, s := range ss {
						ls = append(ls, swings.Lane{Name: column(l.Name, s), Kind: l.Kind})
					}
				}
			}
			return ls, perSite && multi
		}
		whole := opt
		whole.Lanes = config
		one := swings.NewSites(whole, perSite)
		one.Add(hs)
		got, ok := one.Finish()

		// The same records handed over in random parts (a store's hours,
		// or any other cut) give the same report, or the same refusal.
		cut := rand.New(rand.NewPCG(uint64(n), 3))
		// Once an Add refuses, the later ones (the rest of the records)
		// refuse too and Finish gives no report.
		sb := swings.NewSites(whole, perSite)
		added := true
		for rest := hs; len(rest) > 0; {
			k := min(len(rest), cut.IntN(40))
			if again := sb.Add(rest[:k]); !added && again {
				t.Fatalf("case %d: an Add after a refused one took the records", n)
			} else {
				added = added && again
			}
			rest = rest[k:]
		}
		inParts, partsOK := sb.Finish()
		if partsOK != ok || !reflect.DeepEqual(inParts, got) || (!added && partsOK) {
			t.Fatalf("case %d: Sites in parts gave %v (ok %t, Adds ok %t); at once %v (ok %t)", n, inParts, partsOK, added, got, ok)
		}
		if _, again := sb.Finish(); again {
			t.Fatalf("case %d: a second Finish gave a report; want the builder done", n)
		}
		if sb.Add(hs) {
			t.Fatalf("case %d: an Add after Finish took the records; want the builder done", n)
		}

		sitesOf := map[string][]string{}
		for _, h := range hs {
			if !slices.Contains(sitesOf[h.Lane], h.Site) {
				sitesOf[h.Lane] = append(sitesOf[h.Lane], h.Site)
			}
		}
		lanes, columns := lanesOf(sitesOf)
		clash := false
		merged := swings.MergeSites(hs)
		if columns {
			renamed := slices.Clone(hs)
			for i := range renamed {
				renamed[i].Lane = column(renamed[i].Lane, renamed[i].Site)
				_, c := sitesOf[renamed[i].Lane]
				clash = clash || c
			}
			merged = append(merged, swings.MergeSites(renamed)...)
		}
		if !ok {
			if sorted && !clash {
				t.Fatalf("case %d: Sites refused records by time with no clash", n)
			}
			refused++
			continue
		}
		if clash {
			t.Fatalf("case %d: Sites took a lane named like a column", n)
		}
		ropt := opt
		ropt.Lanes = lanes
		if want := swings.Compute(merged, ropt); !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d: Sites differs from Compute of the merged records\n got %+v\nwant %+v", n, got, want)
		}
	}
	if refused == 0 || refused > 1000 {
		t.Fatalf("%d of 1500 cases refused: the cases do not exercise both paths", refused)
	}
}
