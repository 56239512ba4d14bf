package store

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

// runSorter ranks the series of a read a few times, not once per series
// that a run brings: an InfluxQL probe read has a time of its own per probe
// (runs of one point), so 3,000 series seen one after the other ranked all
// the series known so far 3,000 times (12,000 probes: 1.6 s, not 4 ms, and
// two slices allocated per ranking). The allocations of sortUnique over
// runs of one and of two points, each bringing new series, stay a small
// number, not a multiple of the store.
func TestRunSorterRanksSeldom(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for _, perRun := range []int{1, 2} {
		var ps []Probe
		for i := range 3000 {
			ps = append(ps, Probe{Lane: fmt.Sprintf("lane-%04d", (i*7919)%3000), Kind: "free", Site: "fra1",
				Time: t0.Add(time.Duration(i/perRun) * time.Second)})
		}
		allocs := testing.AllocsPerRun(3, func() { sortUnique(slices.Clone(ps), probeKey) })
		if allocs > 400 {
			t.Errorf("sortUnique of 3,000 series in runs of %d new ones: %.0f allocations; want a few hundred at most (the series ranked a few times)", perRun, allocs)
		}
	}
}

// runSorter gives latest's answer for runs whose series keep coming: a
// pool of series that grows as the runs go, so that runs meet series
// ranked and not yet ranked, with copies of a key in a run.
func TestRunSorterGrowingSeries(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 13))
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for n := range 300 {
		var hs []Hourly
		pool := 1 + rng.IntN(4)
		for hour := range 1 + rng.IntN(60) {
			pool += rng.IntN(3) * rng.IntN(2) // now and then a series or two more
			if hour == 0 && n%3 == 0 {
				pool += 40
			}
			for i := range rng.IntN(2 * pool) {
				s := rng.IntN(pool)
				hs = append(hs, Hourly{Lane: fmt.Sprintf("l%03d", s/3), Kind: []string{"free", "paid"}[s%2], Site: []string{"", "fra1", "iad1"}[s%3],
					Hour: t0.Add(time.Duration(hour) * time.Hour), WorstQueueS: float64(i)})
			}
		}
		l := newLatest(hourlyKey)
		for _, h := range hs {
			l.put(h)
		}
		want := l.sorted()
		got := sortUnique(slices.Clone(hs), hourlyKey)
		if (len(got) > 0 || len(want) > 0) && !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d (%d points): sortUnique differs from latest", n, len(hs))
		}
	}
}
