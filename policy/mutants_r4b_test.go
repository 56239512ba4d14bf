package policy

import (
	"reflect"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/probe"
	"github.com/lanewatch/lanewatch/series"
)

// Tests written for gremlins' survivors in the older files of policy
// (policy.go, figures.go, history.go, ...) re-measured on today's code
// (issue 22, fourth round, second part): each fails on the mutant named in
// its comment and passes on the code.

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
	limited := func(site string, m int, resetS float64) series.Probe {
		return series.Probe{Lane: "a", Site: site, Time: at(m), Outcome: string(probe.RateLimited), Status: 429, QuotaResetS: resetS}
	}
	want := []LaneState{{Lane: "a", LastSample: at(27), QuotaUntil: h.Add(time.Hour)}}
	for _, tc := range []struct {
		name   string
		latest []series.Probe
	}{
		{"longer first", []series.Probe{limited("fra1", 27, 0), limited("iad1", 7, 600)}},
		{"longer second", []series.Probe{limited("iad1", 7, 600), limited("fra1", 27, 0)}},
	} {
		if got := States(tc.latest, time.UTC); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, want)
		}
	}
}
