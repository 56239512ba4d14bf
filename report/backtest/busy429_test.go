package backtest

import (
	"reflect"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

// One 429 at 10:27 among probes that queue 10 s. A busy one (a wait of 7 s)
// no longer marks the lane ineligible for 10:47 and 11:07; under
// HeldBusy429, the rule before, it does, as a failed probe does
// (TestOneFailedProbe); a long wait (10 minutes) is a failure under both.
// A 429 without a wait is a failure under any S; one at S is busy; a held
// one is a failure whatever its wait (1 s). A held 429 that is its site's
// only probe (site b) is a failure too: its site's record of 10:00 fails
// 10:47 and the whole of 11:00, which reads it.
// Busy429S at store.BusyMaxS replays the default rule, report for report.
func TestOneBusy429(t *testing.T) {
	at := day0.AddDate(0, 0, 9).Add(10*time.Hour + 27*time.Minute)
	history := func(opts Options, site string, waitS float64) []store.Probe {
		ps := rounds(opts.ReadFrom(), opts.To, func(time.Time) (float64, bool) { return 10, true })
		for i := range ps {
			if ps[i].Lane == "free" && ps[i].Time.Equal(at) {
				ps[i] = store.Probe{Lane: "free", Kind: "free", Time: at, Site: site, Outcome: store.OutcomeRateLimited, Status: 429, QuotaResetS: waitS}
			}
		}
		return ps
	}
	for _, tc := range []struct {
		name            string
		site            string
		waitS, busy429S float64
		falseIneligible int
		at11            int // of them at 11:00
	}{
		{"busy", "", 7, 0, 0, 0},
		{"busy, held", "", 7, HeldBusy429, 2, 1},
		{"busy, held, its site's only probe", "b", 7, HeldBusy429, 4, 3},
		{"a 1 s wait, held", "", 1, HeldBusy429, 2, 1},
		{"busy, S below its wait", "", 7, 5, 2, 1},
		{"busy, S at its wait", "", 7, 7, 0, 0},
		{"no wait, S above it", "", 0, 900, 2, 1},
		{"10 minutes", "", 600, 0, 2, 1},
		{"10 minutes, S above its wait", "", 600, 900, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{Params: params(7), From: day0.AddDate(0, 0, 8), To: day0.AddDate(0, 0, 11), Busy429S: tc.busy429S}
			r := run(t, opts, history(opts, tc.site, tc.waitS))
			c := laneCal(t, r, 7, "free")
			if c.FalseIneligible != tc.falseIneligible || c.Hours[11].FalseIneligible != tc.at11 {
				t.Errorf("false_ineligible %d (11:00: %d), want %d (%d)", c.FalseIneligible, c.Hours[11].FalseIneligible, tc.falseIneligible, tc.at11)
			}
		})
	}
	opts := Options{Params: params(7), From: day0.AddDate(0, 0, 8), To: day0.AddDate(0, 0, 11)}
	def := run(t, opts, history(opts, "", 7))
	opts.Busy429S = store.BusyMaxS
	if same := run(t, opts, history(opts, "", 7)); !reflect.DeepEqual(def, same) {
		t.Errorf("Busy429S %v: %+v\nwant the default's %+v", store.BusyMaxS, same, def)
	}
}
