package policy

import (
	"reflect"
	"testing"
	"time"

	"math"
	"strconv"

	"github.com/lanewatch/lanewatch/probe"
	"github.com/lanewatch/lanewatch/store"
)

func TestStates(t *testing.T) {
	h := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return h.Add(time.Duration(m) * time.Minute) }
	ok := func(lane, site string, m int) store.Probe {
		return store.Probe{Lane: lane, Site: site, Time: at(m), OK: true, Outcome: "ok"}
	}
	limited := func(lane, site string, m int, resetS float64) store.Probe {
		return store.Probe{Lane: lane, Site: site, Time: at(m), Outcome: string(probe.RateLimited), Status: 429, QuotaResetS: resetS}
	}
	cases := []struct {
		name   string
		latest []store.Probe
		want   []LaneState
	}{
		{"none", nil, []LaneState{}},
		{"the newest probe of any site", []store.Probe{ok("a", "fra1", 27), ok("a", "iad1", 7)},
			[]LaneState{{Lane: "a", LastSample: at(27)}}},
		{"a 429 backs off until its reset", []store.Probe{limited("a", "", 7, 600)},
			[]LaneState{{Lane: "a", LastSample: at(7), QuotaUntil: at(17)}}},
		{"the latest back-off of the sites wins", []store.Probe{limited("a", "fra1", 7, 600), limited("a", "iad1", 27, 0), ok("a", "sfo1", 47)},
			[]LaneState{{Lane: "a", LastSample: at(47), QuotaUntil: h.Add(time.Hour)}}}, // no reset: the next hour
		{"an exhausted quota that said so backs off too", []store.Probe{{Lane: "a", Time: at(7), OK: true, Outcome: "ok", QuotaKnown: true, QuotaRemaining: 0, QuotaResetS: 120}},
			[]LaneState{{Lane: "a", LastSample: at(7), QuotaUntil: at(9)}}},
		{"lanes by name", []store.Probe{ok("c", "", 7), ok("a", "", 8), ok("b", "", 9)},
			[]LaneState{{Lane: "a", LastSample: at(8)}, {Lane: "b", LastSample: at(9)}, {Lane: "c", LastSample: at(7)}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := States(c.latest, time.UTC); !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// A lane's state holds the latest back-off any site's newest probe asks
// for, whatever the order the sites come in (docs/policy.md, "A short
// 429"): fra1's 429 at 10:27 with no wait backs off to the next hour
// (11:00), iad1's at 10:07 with a 600 s reset to 10:17; the lane is out
// until 11:00, not 10:17, with fra1 first or second.
// (figures.go States: `ok && u.After(s.QuotaUntil)` → `ok || ...`, which
// takes the later site's back-off even when it ends sooner.)
func TestStatesLatestBackoffEitherOrder(t *testing.T) {
	h := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return h.Add(time.Duration(m) * time.Minute) }
	limited := func(site string, m int, resetS float64) store.Probe {
		return store.Probe{Lane: "a", Site: site, Time: at(m), Outcome: string(probe.RateLimited), Status: 429, QuotaResetS: resetS}
	}
	want := []LaneState{{Lane: "a", LastSample: at(27), QuotaUntil: h.Add(time.Hour)}}
	for _, tc := range []struct {
		name   string
		latest []store.Probe
	}{
		{"longer first", []store.Probe{limited("fra1", 27, 0), limited("iad1", 7, 600)}},
		{"longer second", []store.Probe{limited("iad1", 7, 600), limited("fra1", 27, 0)}},
	} {
		if got := States(tc.latest, time.UTC); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, want)
		}
	}
}

// ceil2 and floor2: non-finite or non-positive values give +0 (never -0,
// which strconv writes as "-0"); hundredths round up (waits) and down
// (rates), clock noise under 1e-8 aside.
func TestCeil2Floor2(t *testing.T) {
	for _, tc := range []struct {
		x           float64
		ceil, floor float64
	}{
		{math.NaN(), 0, 0},
		{math.Inf(1), 0, 0},
		{math.Inf(-1), 0, 0},
		{-3, 0, 0},
		{math.Copysign(0, -1), 0, 0},
		{1e-9, 0, 0}, // below the noise: no wait at all
		{1e-300, 0, 0},
		{0.001, 0.01, 0},
		{0.01, 0.01, 0.01},
		{12.341, 12.35, 12.34},
		{12.3400000001, 12.34, 12.34}, // noise
		{41.4999, 41.5, 41.49},
		{1e15, 1e15, 1e15},
		{1e15 + 0.5, 1e15 + 1, 1e15},
		{1e300, 1e300, 1e300},
	} {
		t.Run(strconv.FormatFloat(tc.x, 'g', -1, 64), func(t *testing.T) {
			c, f := ceil2(tc.x), floor2(tc.x)
			if c != tc.ceil || f != tc.floor || math.Signbit(c) || math.Signbit(f) {
				t.Fatalf("ceil2 %s, floor2 %s; want %v, %v", strconv.FormatFloat(c, 'g', -1, 64), strconv.FormatFloat(f, 'g', -1, 64), tc.ceil, tc.floor)
			}
		})
	}
	// Through a policy: a record whose worst queue is 1 ns reads 0, not -0.
	f := ForHour(Params{Lanes: []LaneSpec{{Name: "a", Kind: KindFree}}},
		[]store.Hourly{{Lane: "a", Kind: KindFree, Hour: mtHour, WorstQueueS: 1e-9, MinTokPerS: 40, Samples: 1}}, nil, mtHour)
	if q := f.Lanes[0].NextQueueS; q != 0 || math.Signbit(q) {
		t.Errorf("next_queue_s %s, want 0", strconv.FormatFloat(q, 'g', -1, 64))
	}
}

// A negative failure count counts as none, as in the sums: the lane is
// fine and reads 0 failures.
func TestNegativeFailuresCountAsNone(t *testing.T) {
	rs := []store.Hourly{{Lane: "a", Kind: KindFree, Hour: mtHour, WorstQueueS: 2, MinTokPerS: 40, Samples: 3, Failures: -3}}
	p := Params{Lanes: []LaneSpec{{Name: "a", Kind: KindFree}}}
	if l := ForHour(p, rs, nil, mtHour).Lanes[0]; !l.Eligible || l.Reason != ReasonOK || l.Failures != 0 || l.Samples != 3 {
		t.Errorf("live: %+v", l)
	}
	rs[0].Hour = mtHour.Add(-24 * time.Hour)
	p.LookbackDays = 1
	if l := ForecastProbes(p, rs, nil, nil, mtHour)[14].Lanes[0]; !l.Eligible || l.Reason != ReasonOK || l.Failures != 0 {
		t.Errorf("forecast: %+v", l)
	}
}
