package store

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
		switch n % 3 {
		case 0: // in time order
			slices.SortStableFunc(hs, func(a, b Hourly) int { return a.Hour.Compare(b.Hour) })
		case 1: // as InfluxDB answers: one point per key, by time, kind, lane and site
			l := newLatest(hourlyKey)
			for _, h := range hs {
				l.put(h)
			}
			hs = l.sorted()
			slices.SortFunc(hs, func(a, b Hourly) int { return compareKindFirst(hourlyKey(&a), hourlyKey(&b)) })
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

// splitSpans covers each span exactly, in order, with pieces of at least
// the minimum on whole hours from the span's start (the last takes the
// rest), at most the number asked for.
func TestSplitSpans(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 7))
	const h = int64(time.Hour)
	for range 2000 {
		var spans [][2]int64
		from := rng.Int64N(1e18)
		for range 1 + rng.IntN(3) {
			from += rng.Int64N(100 * h)
			to := from + 1 + rng.Int64N(40*24*h)
			spans = append(spans, [2]int64{from, to})
			from = to
		}
		pieces := 1 + rng.IntN(5)
		got := splitSpans(spans, pieces, 24*time.Hour)
		j := 0
		for _, sp := range spans {
			at, n := sp[0], 0
			for ; j < len(got) && got[j][0] < sp[1]; j++ {
				p := got[j]
				if p[0] != at || p[1] <= p[0] || p[1] > sp[1] {
					t.Fatalf("spans %v in %d: piece %v does not follow %d within %v (all %v)", spans, pieces, p, at, sp, got)
				}
				if p[1] != sp[1] && ((p[1]-p[0])%h != 0 || p[1]-p[0] < 24*h) {
					t.Fatalf("spans %v: piece %v is not whole hours of at least a day", spans, p)
				}
				at = p[1]
				n++
			}
			if at != sp[1] || n > pieces {
				t.Fatalf("spans %v in %d: %v covers up to %d of %v in %d pieces", spans, pieces, got, at, sp, n)
			}
		}
		if j != len(got) {
			t.Fatalf("spans %v: pieces left over: %v", spans, got[j:])
		}
	}
}
