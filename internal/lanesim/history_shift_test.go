package lanesim

import (
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

// ShiftAt multiplies the free lanes' true medians from its instant on and
// changes nothing before it, nor the paid lanes.
func TestHistoryShift(t *testing.T) {
	base := HistoryOptions{Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Days: 3, Seed: 4,
		Lanes: []HistoryLane{{Name: "free", Kind: "free"}, {Name: "paid", Kind: "paid"}}}
	gen := func(o HistoryOptions) ([]store.Probe, []ProbeTruth) {
		var ps []store.Probe
		var ts []ProbeTruth
		if err := History(o, func(day []store.Probe, truth []ProbeTruth) error {
			ps, ts = append(ps, day...), append(ts, truth...)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return ps, ts
	}
	shifted := base
	shifted.ShiftAt, shifted.ShiftFactor = base.Start.AddDate(0, 0, 2), 2
	p0, t0 := gen(base)
	p1, t1 := gen(shifted)
	if len(p0) != len(p1) || len(t0) != len(t1) {
		t.Fatalf("%d/%d probes, %d/%d truths", len(p0), len(p1), len(t0), len(t1))
	}
	for i := range t0 {
		want := t0[i].MedianS
		if t0[i].Lane == "free" && !t0[i].Time.Before(shifted.ShiftAt) {
			want *= 2
		}
		if t1[i].MedianS != want || t1[i].Sigma != t0[i].Sigma {
			t.Fatalf("%s %s: median %v, want %v", t1[i].Lane, t1[i].Time, t1[i].MedianS, want)
		}
		if t0[i].Time.Before(shifted.ShiftAt) && p0[i] != p1[i] {
			t.Fatalf("probe %d before the shift changed: %+v vs %+v", i, p1[i], p0[i])
		}
	}
}
