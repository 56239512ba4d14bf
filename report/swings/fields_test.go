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

// The report reads only the hourly fields Fields names: random records,
// with the other fields zeroed (what a store that reads only those returns),
// give the same report, sites merged and not.
func TestReportReadsOnlyFields(t *testing.T) {
	if want := []string{"worst_queue_s", "worst_censored_s", "samples", "failures"}; !slices.Equal(swings.Fields(), want) {
		t.Fatalf("Fields() = %v, want %v", swings.Fields(), want)
	}
	rng := rand.New(rand.NewPCG(21, 4))
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	opt := swings.Options{From: t0, To: t0.AddDate(0, 0, 7), Days: 7, Lanes: []swings.Lane{{Name: "a", Kind: "free"}}}
	for n := range 200 {
		var full, thin []store.Hourly
		for range rng.IntN(300) {
			samples := rng.Int64N(4)
			h := store.Hourly{
				Lane: []string{"a", "b", "c"}[rng.IntN(3)], Kind: []string{"free", "paid"}[rng.IntN(2)],
				Site: []string{"", "fra1", "iad1"}[rng.IntN(3)], Hour: t0.Add(time.Duration(rng.IntN(7*24)) * time.Hour),
				WorstQueueS: float64(rng.IntN(600)) / 10, WorstGenS: rng.Float64() * 3, MinTokPerS: rng.Float64() * 90,
				Samples: samples, Failures: rng.Int64N(samples + 1), Eligible: rng.IntN(2) == 0,
			}
			if rng.IntN(4) == 0 {
				h.WorstCensoredS = float64(rng.IntN(900)) / 10
			}
			full = append(full, h)
			thin = append(thin, store.Hourly{Lane: h.Lane, Kind: h.Kind, Site: h.Site, Hour: h.Hour,
				WorstQueueS: h.WorstQueueS, WorstCensoredS: h.WorstCensoredS, Samples: h.Samples, Failures: h.Failures})
		}
		a, b := swings.Compute(swings.MergeSites(full), opt), swings.Compute(swings.MergeSites(thin), opt)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("case %d: the report differs when the fields Fields leaves out are zero", n)
		}
	}
}

// mergeSitesRef is MergeSites as it was before it looked lane-hours up per
// hour: one map of every lane-hour, one of every lane-site-hour.
func mergeSitesRef(hs []store.Hourly) []store.Hourly {
	type laneHour struct {
		lane string
		hour int64
	}
	type laneSiteHour struct {
		laneHour
		site string
	}
	idx := map[laneHour]int{}
	seen := map[laneSiteHour]bool{}
	var recs []store.Hourly
	for _, h := range hs {
		k := laneHour{h.Lane, h.Hour.UnixNano()}
		if ks := (laneSiteHour{k, h.Site}); seen[ks] {
			continue
		} else {
			seen[ks] = true
		}
		i, ok := idx[k]
		if !ok {
			idx[k] = len(recs)
			recs = append(recs, store.Hourly{Lane: h.Lane, Kind: h.Kind, Hour: h.Hour})
			i = len(recs) - 1
		}
		r := &recs[i]
		r.WorstQueueS = max(r.WorstQueueS, h.WorstQueueS)
		r.WorstCensoredS = max(r.WorstCensoredS, h.WorstCensoredS)
		r.Samples += h.Samples
		r.Failures += h.Failures
	}
	return recs
}

// MergeSites gives what the one-map merge gave, records and order, for
// random records in any order (by time, as a store returns them, or not),
// with copies per kind, repeated sites and the same instant in two zones.
func TestMergeSitesMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 6))
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	zones := []*time.Location{time.UTC, time.FixedZone("x", 5*3600+1800)}
	for n := range 500 {
		var hs []store.Hourly
		for range rng.IntN(200) {
			hs = append(hs, store.Hourly{
				Lane: []string{"a", "b", "c", "a@fra1"}[rng.IntN(4)], Kind: []string{"free", "paid"}[rng.IntN(2)],
				Site: []string{"", "fra1", "iad1"}[rng.IntN(3)], Hour: t0.Add(time.Duration(rng.IntN(6)) * time.Hour).In(zones[rng.IntN(2)]),
				WorstQueueS: float64(rng.IntN(600)) / 10, WorstCensoredS: float64(rng.IntN(3)) * 15,
				Samples: rng.Int64N(4), Failures: rng.Int64N(2),
			})
		}
		if n%2 == 0 {
			slices.SortStableFunc(hs, func(a, b store.Hourly) int { return a.Hour.Compare(b.Hour) })
		}
		if got, want := swings.MergeSites(hs), mergeSitesRef(hs); !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d: MergeSites differs from the reference\n got %v\nwant %v", n, got, want)
		}
	}
}
