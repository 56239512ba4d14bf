package backtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/store"
)

// BenchmarkReplayYearBaselines is BenchmarkReplayYear with the baselines
// of issue 23's measurement (-fallback 5,10,20,30,45 -deadlines 30,60,120,
// in BENCHMARKS.md's git history): what
// they add to the replay.
func BenchmarkReplayYearBaselines(b *testing.B) {
	p := policy.Params{Location: time.UTC, LookbackDays: 7, Classes: []policy.ClassSpec{
		{Name: "interactive", DeadlineS: 60, CeilingTokens: 4000, EstTokens: 800, PaidUSDPer1k: 0.002},
		{Name: "batch", DeadlineS: 900, CeilingTokens: 20000, EstTokens: 4000, PaidUSDPer1k: 0.001},
		{Name: "nightly", DeadlineS: 3600, CeilingTokens: 100000, EstTokens: 16000, PaidUSDPer1k: 0.0005},
	}}
	for i := range 50 {
		kind := "free"
		if i%5 == 4 {
			kind = "paid"
		}
		p.Lanes = append(p.Lanes, policy.LaneSpec{Name: fmt.Sprintf("lane-%02d", i), Kind: kind})
	}
	end := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	start := end.AddDate(0, 0, -365)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		bt, err := New(Options{Params: p, From: start.AddDate(0, 0, 7), To: end,
			Fallbacks: []float64{5, 10, 20, 30, 45}, Deadlines: []float64{30, 60, 120}})
		if err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		n = 0
		for h := start; h.Before(end); h = h.Add(time.Hour) {
			diurnal := 10 * (1 + math.Sin(float64(h.Hour())/24*2*math.Pi))
			for _, m := range []time.Duration{7, 27, 47} {
				at := h.Add(m * time.Minute)
				for i, l := range p.Lanes {
					pr := store.Probe{Lane: l.Name, Kind: l.Kind, Time: at.Add(time.Duration(i) * time.Millisecond),
						QueueS: float64(i%7) + diurnal + rng.Float64()*20, GenS: 0.2 + rng.Float64(), Tokens: 16, OK: true, Outcome: "ok"}
					if rng.IntN(100) == 0 {
						pr.OK, pr.Outcome, pr.QueueS, pr.GenS, pr.Tokens = false, "timeout", 120, 0, 0
					}
					if err := bt.Add(pr); err != nil {
						b.Fatal(err)
					}
					n++
				}
			}
		}
		if r := bt.Report(); len(r.Baselines) == 0 {
			b.Fatal("no baselines")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/probe")
}
