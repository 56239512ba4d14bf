package series

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

// sortUnique, which InfluxQL reads use instead of the latest map, must
// always give what the map gives: the points sorted by time, lane, kind and
// site, the last of each key kept. Random sequences, in time order (as an
// InfluxQL answer comes) and not, with repeated keys.
func TestSortUniqueMatchesLatest(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 5))
	for n := range 3000 {
		var hs []Hourly
		size := rng.IntN(40)
		if n%100 == 0 {
			size = 2000
		}
		t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
		for i := range size {
			h := Hourly{
				Lane:        []string{"a", "b", "c", "lane-10", "lane-9"}[rng.IntN(5)],
				Kind:        []string{"free", "paid"}[rng.IntN(2)],
				Site:        []string{"", "fra1", "iad1"}[rng.IntN(3)],
				Hour:        t0.Add(time.Duration(rng.IntN(4)) * time.Hour),
				WorstQueueS: float64(i), // tells the copies of a key apart
			}
			hs = append(hs, h)
		}
		if n%2 == 0 { // in time order, as an InfluxQL answer
			slices.SortStableFunc(hs, func(a, b Hourly) int { return a.Hour.Compare(b.Hour) })
		}
		l := newLatest(hourlyKey)
		for _, h := range hs {
			l.put(h)
		}
		want := l.sorted()
		got := sortUnique(slices.Clone(hs), hourlyKey)
		if (len(got) > 0 || len(want) > 0) && !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d (%d points): sortUnique differs from latest\ngot  %v\nwant %v", n, len(hs), got, want)
		}
	}
}
