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

// At the October fall-back in Europe/London, Go resolves 01:00 to the
// second occurrence (GMT); both 01:00 hours are the same hour of day and
// both count in a lookback (issue 22 #8: t.Add(-time.Hour) → t.Add(time.Hour)
// dropped the first, BST one).
func TestLookbackLondonFallBack(t *testing.T) {
	lon := mustLoc(t, "Europe/London")
	bst := time.Date(2026, 10, 25, 0, 0, 0, 0, time.UTC) // 01:00 BST
	gmt := time.Date(2026, 10, 25, 1, 0, 0, 0, time.UTC) // 01:00 GMT
	if got := time.Date(2026, 10, 25, 1, 0, 0, 0, lon); !got.Equal(gmt) {
		t.Fatalf("Go resolves 01:00 to %v; the test assumes the second 01:00", got.UTC())
	}
	h := time.Date(2026, 10, 26, 1, 0, 0, 0, time.UTC) // 01:00 GMT the day after
	recs := []store.Hourly{
		mtRec("a", KindFree, "", bst, 30, 40, 0),
		mtRec("a", KindFree, "", gmt, 10, 20, 0),
		mtRec("a", KindFree, "", h, 5, 50, 0),
		mtRec("a", KindFree, "", time.Date(2026, 10, 25, 2, 0, 0, 0, time.UTC), 99, 1, 0),  // 02:00 GMT: another hour
		mtRec("a", KindFree, "", time.Date(2026, 10, 24, 23, 0, 0, 0, time.UTC), 98, 1, 0), // 00:00 BST
	}
	p := Params{Location: lon, LookbackDays: 1, Lanes: []LaneSpec{{Name: "a", Kind: KindFree}}}
	f := ForHour(p, recs, nil, h)
	if l := mtLane(t, f, "a"); l.NextQueueS != 30 || l.TokPerS != 20 || l.Samples != 9 || f.Records != 3 || f.Hour != "2026-10-26T01" {
		t.Errorf("live: %+v, %d records, hour %s; want queue 30, 20 tok/s, 9 samples, 3 records", l, f.Records, f.Hour)
	}
	x := NewHistory(lon)
	for _, r := range recs {
		x.Add(r)
	}
	if l := x.LaneAt(p, p.Lanes[0], LaneState{Lane: "a"}, h); l.NextQueueS != 30 || l.Samples != 9 {
		t.Errorf("LaneAt: %+v", l)
	}
	fc := ForecastProbes(p, recs, nil, nil, h)[1]
	if l := mtLane(t, fc, "a"); l.NextQueueS != 30 || l.Samples != 6 || fc.Records != 2 {
		t.Errorf("forecast 01: %+v, %d records; want queue 30 from 6 samples", l, fc.Records)
	}
	_, look := p.ReadHours(h)
	if len(look) != 2 || !look[0].Equal(bst) || !look[1].Equal(gmt) {
		t.Errorf("lookback hours %v, want %v and %v", look, bst, gmt)
	}
	// The day of the change itself: 01:00 GMT's basis is 01:00 BST, the
	// hour before it.
	f = ForHour(Params{Location: lon, Lanes: p.Lanes}, recs[:1], nil, gmt)
	if l := mtLane(t, f, "a"); l.Reason != ReasonOK || l.NextQueueS != 30 || f.Hour != "2026-10-25T01" {
		t.Errorf("the second 01:00: %+v, hour %s", l, f.Hour)
	}
}

// The History keeps the records of the newest hour added at hand; after a
// Drop that hand is empty, and an hour that starts at Unix second 0 (the
// key the emptied hand holds) is read from the index like any other.
func TestHistoryHourZeroAfterDrop(t *testing.T) {
	epoch := time.Unix(0, 0).UTC()
	x := NewHistory(time.UTC)
	x.Add(store.Hourly{Lane: "a", Kind: KindFree, Hour: epoch.Add(-time.Hour), WorstQueueS: 9, MinTokPerS: 40, Samples: 1})
	x.Add(store.Hourly{Lane: "a", Kind: KindFree, Hour: epoch, WorstQueueS: 3, MinTokPerS: 40, Samples: 2})
	x.Drop(epoch)
	p := Params{Lanes: []LaneSpec{{Name: "a", Kind: KindFree}}}
	if l := x.LaneAt(p, p.Lanes[0], LaneState{Lane: "a"}, epoch); l.Reason != ReasonOK || l.NextQueueS != 3 || l.Samples != 2 {
		t.Errorf("after the drop: %+v; want the 00:00 record alone (queue 3, 2 samples)", l)
	}
	// Adding to the hour after the drop replaces its record in place.
	x.Add(store.Hourly{Lane: "a", Kind: KindFree, Hour: epoch, WorstQueueS: 4, MinTokPerS: 40, Samples: 5})
	if l := x.LaneAt(p, p.Lanes[0], LaneState{Lane: "a"}, epoch); l.NextQueueS != 4 || l.Samples != 5 {
		t.Errorf("after the replace: %+v", l)
	}
	if f := x.ForHour(p, nil, epoch); !slices.Equal([]int{f.Lanes[0].Samples, f.Records}, []int{5, 1}) {
		t.Errorf("ForHour: %+v", f)
	}
}
