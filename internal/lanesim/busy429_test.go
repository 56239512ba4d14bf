package lanesim

import (
	"reflect"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/probe"
	"github.com/lanewatch/lanewatch/store"
)

func historyProbes(t *testing.T, opts HistoryOptions) []store.Probe {
	t.Helper()
	var all []store.Probe
	if err := History(opts, func(day []store.Probe, _ []ProbeTruth) error {
		all = append(all, day...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return all
}

// Busy429Rate gives free lanes short 429s: a Retry-After of 1 s to 15
// minutes, busier hours more often, never a paid lane; and off, the
// history is the one without it, probe for probe.
func TestHistoryBusy429(t *testing.T) {
	opts := HistoryOptions{Start: time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC), Days: 60, Seed: 4,
		Lanes: []HistoryLane{{Name: "free", Kind: "free"}, {Name: "paid", Kind: "paid"}}}
	plain := historyProbes(t, opts)
	off := opts
	off.Busy429Rate = 0
	if !reflect.DeepEqual(historyProbes(t, off), plain) {
		t.Fatal("Busy429Rate 0 changed the history")
	}
	busy := opts
	busy.Busy429Rate = 0.02
	short, peak, night := 0, 0, 0
	for _, p := range historyProbes(t, busy) {
		if p.Outcome != string(probe.RateLimited) || p.QuotaResetS >= 600 {
			continue // not one, or a 429 burst's (10 to 60 minutes)
		}
		if p.Kind != "free" {
			t.Fatalf("a paid lane's short 429: %+v", p)
		}
		if p.QuotaResetS < 1 || p.QuotaResetS > busy429MaxS || p.Status != 429 {
			t.Fatalf("short 429 %+v: want status 429 and a wait of 1 to %d s", p, busy429MaxS)
		}
		short++
		switch h := p.Time.Hour(); {
		case h >= 12 && h < 15: // DefaultHistoryCurve at 3.4 to 4
			peak++
		case h < 3: // at 0.5 to 0.55
			night++
		}
	}
	t.Logf("%d short 429s, %d at 12-15h, %d at 0-3h", short, peak, night)
	// 60 days × 72 probes of the free lane × 0.02 × the curve's mean (about
	// 1.9): about 160 whose wait is under 10 minutes (most of them).
	if short < 80 || peak < 3*night {
		t.Errorf("%d short 429s, %d at 12-15h, %d at 0-3h: want about 160, most at the peak", short, peak, night)
	}
}
