package policy

import (
	"math/rand/v2"
	"testing"
	"time"
)

// An hourIndex answers as a map of hour start to records would, under
// random sets (forward, backward, off the hour grid), gets and drops.
func TestHourIndexIsAMap(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	for run := range 200 {
		var x hourIndex
		ref := map[int64][]rec{}
		origin := int64(1_700_000_000) - 1_700_000_000%3600 + int64(r.IntN(2))*1800
		key := func() int64 {
			k := origin + int64(r.IntN(400)-200)*3600
			if r.IntN(20) == 0 {
				k += 1800 // a half-hour zone's hour after an offset change
			}
			return k
		}
		for step := range 300 {
			switch r.IntN(10) {
			case 0:
				cut := key()
				var want int
				for k, rs := range ref {
					if k < cut {
						want += len(rs)
						delete(ref, k)
					}
				}
				got := 0
				dropped := x.dropBefore(cut, func(rs []rec) { got += len(rs) })
				if got != want || dropped != (want > 0) {
					t.Fatalf("seed %d run %d step %d: dropBefore(%d) removed %d records (dropped %v), want %d", seed, run, step, cut, got, dropped, want)
				}
			default:
				k := key()
				rs := append(x.get(k), rec{At: k, Samples: step})
				x.set(k, rs)
				ref[k] = append(ref[k], rec{At: k, Samples: step})
			}
			for k, want := range ref {
				if got := x.get(k); len(got) != len(want) || got[len(got)-1] != want[len(want)-1] {
					t.Fatalf("seed %d run %d step %d: get(%d) = %v, want %v", seed, run, step, k, got, want)
				}
			}
			if k := key(); len(ref[k]) == 0 && len(x.get(k)) != 0 {
				t.Fatalf("seed %d run %d step %d: get(%d) = %v of an hour never set or dropped", seed, run, step, k, x.get(k))
			}
		}
	}
}
