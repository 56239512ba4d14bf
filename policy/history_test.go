package policy

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

// HourHistory, the probes added one by one in time order, then ForHour,
// is ForHourProbes: random lanes of hourly records and probes (timeouts,
// reservations, probes and records after the hour, which both ignore),
// under both rules and in a zone with a DST change.
func TestHourHistoryIsForHourProbes(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip(err)
	}
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 4))
		rule := []string{RuleCalibrated, RuleMax}[seed%2]
		loc := []*time.Location{time.UTC, ny}[r.IntN(2)]
		p := Params{Location: loc, LookbackDays: []int{0, 3, 14}[r.IntN(3)], Rule: rule, Coverage: []float64{0, 0.9}[r.IntN(2)],
			Lanes:   []LaneSpec{{Name: "f", Kind: KindFree}, {Name: "p", Kind: KindPaid}},
			Classes: []ClassSpec{{Name: "a", DeadlineS: 60, CeilingTokens: 100, EstTokens: 40, PaidUSDPer1k: 1}, {Name: "b", DeadlineS: 20, CeilingTokens: 100, EstTokens: 40, Coverage: 0.5}}}
		h := time.Date(2026, 11, 1, 1, 0, 0, 0, loc).Add(time.Duration(r.IntN(48)) * time.Hour)
		start := h.Add(-30 * 24 * time.Hour)
		var ps []store.Probe
		var hs []store.Hourly
		for at := start; at.Before(h.Add(3 * time.Hour)); at = at.Add(time.Duration(5+r.IntN(40)) * time.Minute) {
			for _, l := range p.Lanes {
				pr := store.Probe{Lane: l.Name, Kind: l.Kind, Site: []string{"", "x"}[r.IntN(2)], Time: at.Add(time.Duration(r.IntN(60)) * time.Second),
					QueueS: r.ExpFloat64() * 5, GenS: 1, Tokens: 40, OK: true, Outcome: "ok", Status: 200}
				switch r.IntN(12) {
				case 0:
					pr.OK, pr.Outcome, pr.QueueS, pr.Status = false, "timeout", 30, 0
				case 1:
					pr.OK, pr.Outcome, pr.QueueS, pr.Status = false, "reserved", 0, 0
				}
				ps = append(ps, pr)
				hs = append(hs, store.Aggregate(pr.Lane, pr.Kind, pr.Site, at.Truncate(time.Hour), []store.Probe{pr}))
			}
		}
		slices.SortStableFunc(ps, cmpProbeTime)
		states := []LaneState{{Lane: "f", LastSample: h.Add(-time.Hour)}}
		want := ForHourProbes(p, hs, ps, states, h)
		x := HourHistory(p, hs, h)
		end := h.Add(time.Hour)
		for _, pr := range ps {
			if pr.Time.Before(end) {
				x.AddProbe(pr)
			}
		}
		if got := x.ForHour(p, states, h); !reflect.DeepEqual(got, want) {
			t.Errorf("seed %d (%s, %s, lookback %d): streamed\n%s\nForHourProbes\n%s", seed, rule, loc, p.LookbackDays, fmt.Sprint(got), fmt.Sprint(want))
		}
	}
}
