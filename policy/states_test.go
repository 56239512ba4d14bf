package policy

import (
	"reflect"
	"testing"
	"time"

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
