package store_test

import (
	"math"
	"testing"
	"time"
	_ "time/tzdata" // zones for HourStart on machines without zoneinfo

	"github.com/lanewatch/lanewatch/store"
)

func TestAggregate(t *testing.T) {
	ok := func(queue, gen float64, tokens int64) store.Probe {
		return store.Probe{Lane: "free", Kind: "free", QueueS: queue, GenS: gen, Tokens: tokens, OK: true, Outcome: "ok"}
	}
	fail := func(outcome string, queue float64) store.Probe {
		return store.Probe{Lane: "free", Kind: "free", QueueS: queue, Outcome: outcome}
	}
	for _, c := range []struct {
		name   string
		probes []store.Probe
		want   store.Hourly
	}{
		{"no probes", nil, store.Hourly{}},
		{"one ok", []store.Probe{ok(3, 2, 40)},
			store.Hourly{WorstQueueS: 3, WorstGenS: 2, MinTokPerS: 20, Samples: 1, Eligible: true}},
		{"worst queue and gen, lowest rate", []store.Probe{ok(3, 2, 40), ok(35.2, 1, 50), ok(1, 4, 40)},
			store.Hourly{WorstQueueS: 35.2, WorstGenS: 4, MinTokPerS: 10, Samples: 3, Eligible: true}},
		{"a failure makes the hour ineligible; its wait is a censored bound",
			[]store.Probe{ok(3, 2, 40), fail("timeout", 120)},
			store.Hourly{WorstQueueS: 3, WorstGenS: 2, MinTokPerS: 20, Samples: 2, Failures: 1, WorstCensoredS: 120}},
		{"only failures", []store.Probe{fail("rate_limited", 0), fail("empty", 9)},
			store.Hourly{Samples: 2, Failures: 2, WorstCensoredS: 9}},
		{"a 429's announced wait is not a queue (the back-off covers it)", []store.Probe{ok(1, 1, 10), {Outcome: "rate_limited", QuotaResetS: 600}},
			store.Hourly{WorstQueueS: 1, WorstGenS: 1, MinTokPerS: 10, Samples: 2, Failures: 1}},
		{"a lone busy 429 (a wait of at most BusyMaxS) is no failure and no queue", []store.Probe{ok(1, 1, 10), {Outcome: "rate_limited", QuotaResetS: 60}},
			store.Hourly{WorstQueueS: 1, WorstGenS: 1, MinTokPerS: 10, Samples: 2, Eligible: true}},
		{"a 429 at BusyMaxS is busy", []store.Probe{{Outcome: "rate_limited", QuotaResetS: store.BusyMaxS}},
			store.Hourly{Samples: 1}},
		{"a 429 past BusyMaxS is a failure", []store.Probe{{Outcome: "rate_limited", QuotaResetS: store.BusyMaxS + 0.001}},
			store.Hourly{Samples: 1, Failures: 1}},
		{"a 429 that announced no wait is a failure", []store.Probe{ok(1, 1, 10), {Outcome: "rate_limited"}},
			store.Hourly{WorstQueueS: 1, WorstGenS: 1, MinTokPerS: 10, Samples: 2, Failures: 1}},
		{"two busy 429s in an hour are both failures", []store.Probe{{Outcome: "rate_limited", QuotaResetS: 7}, ok(1, 1, 10), {Outcome: "rate_limited", QuotaResetS: 7}},
			store.Hourly{WorstQueueS: 1, WorstGenS: 1, MinTokPerS: 10, Samples: 3, Failures: 2}},
		{"an ok probe's reset is not a wait", []store.Probe{{Lane: "free", QueueS: 2, GenS: 1, Tokens: 4, OK: true, Outcome: "ok", QuotaResetS: 600}},
			store.Hourly{WorstQueueS: 2, WorstGenS: 1, MinTokPerS: 4, Samples: 1, Eligible: true}},
		{"a reservation never settled is a failure whose wait is unknown", []store.Probe{ok(1, 1, 10), fail(store.OutcomeReserved, 7)},
			store.Hourly{WorstQueueS: 1, WorstGenS: 1, MinTokPerS: 10, Samples: 2, Failures: 1}},
		{"a cancelled probe is no failure; its wait so far is censored", []store.Probe{ok(1, 1, 10), fail(store.OutcomeCancelled, 4)},
			store.Hourly{WorstQueueS: 1, WorstGenS: 1, MinTokPerS: 10, Samples: 2, WorstCensoredS: 4, Eligible: true}},
		{"only a cancelled probe: not eligible", []store.Probe{fail(store.OutcomeCancelled, 4)},
			store.Hourly{Samples: 1, WorstCensoredS: 4}},
		{"a released reservation is no probe", []store.Probe{ok(1, 1, 10), fail(store.OutcomeUnsent, 0)},
			store.Hourly{WorstQueueS: 1, WorstGenS: 1, MinTokPerS: 10, Samples: 1, Eligible: true}},
		{"gen_s 0 gives no rate", []store.Probe{ok(3, 0, 16)},
			store.Hourly{WorstQueueS: 3, Samples: 1, Eligible: true}},
		{"zero tokens is a real rate of 0", []store.Probe{ok(3, 2, 40), ok(1, 1, 0)},
			store.Hourly{WorstQueueS: 3, WorstGenS: 2, MinTokPerS: 0, Samples: 2, Eligible: true}},
		{"non-finite values are left out", []store.Probe{ok(math.NaN(), math.Inf(1), 5), ok(2, 1, 7)},
			store.Hourly{WorstQueueS: 2, WorstGenS: 1, MinTokPerS: 7, Samples: 2, Eligible: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			hour := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
			got := store.Aggregate("free", "free", "", hour, c.probes)
			want := c.want
			want.Lane, want.Kind, want.Hour = "free", "free", hour
			if got != want {
				t.Errorf("Aggregate =\n %+v\nwant\n %+v", got, want)
			}
		})
	}
}

func TestHourStart(t *testing.T) {
	zone := func(name string) *time.Location {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Fatal(err)
		}
		return loc
	}
	utc := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		name string
		t    string
		loc  *time.Location
		want string // UTC instant of the hour start
	}{
		{"utc", "2026-11-30T14:47:03.5Z", time.UTC, "2026-11-30T14:00:00Z"},
		{"nil means utc", "2026-11-30T14:00:00Z", nil, "2026-11-30T14:00:00Z"},
		{"exactly on the hour", "2026-11-30T14:00:00Z", time.UTC, "2026-11-30T14:00:00Z"},
		{"last nanosecond of the hour", "2026-11-30T14:59:59.999999999Z", time.UTC, "2026-11-30T14:00:00Z"},
		// India is UTC+5:30: local 20:17 starts at local 20:00 = 14:30 UTC.
		{"half-hour zone", "2026-11-30T14:47:00Z", zone("Asia/Kolkata"), "2026-11-30T14:30:00Z"},
		{"half-hour zone before the half", "2026-11-30T14:10:00Z", zone("Asia/Kolkata"), "2026-11-30T13:30:00Z"},
		{"quarter-hour zone", "2026-11-30T14:47:00Z", zone("Asia/Kathmandu"), "2026-11-30T14:15:00Z"},
		{"newfoundland", "2026-11-30T14:10:00Z", zone("America/St_Johns"), "2026-11-30T13:30:00Z"},
		// New York falls back on 2026-11-01: 01:00-01:59 local runs twice.
		{"first 01:xx of a fall-back", "2026-11-01T05:30:00Z", zone("America/New_York"), "2026-11-01T05:00:00Z"},
		{"second 01:xx of a fall-back", "2026-11-01T06:30:00Z", zone("America/New_York"), "2026-11-01T06:00:00Z"},
		// Spring forward on 2026-03-08: 02:xx does not exist; 03:30 EDT starts at 03:00 EDT.
		{"after a spring-forward", "2026-03-08T07:30:00Z", zone("America/New_York"), "2026-03-08T07:00:00Z"},
		// Lord Howe shifts by 30 minutes: on 2026-10-04 02:00 +10:30 becomes
		// 02:30 +11, so wall hour 02 starts at 02:30 +11 (15:30 UTC).
		{"half-hour DST shift", "2026-10-03T15:45:00Z", zone("Australia/Lord_Howe"), "2026-10-03T15:30:00Z"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := store.HourStart(utc(c.t), c.loc)
			if !got.Equal(utc(c.want)) {
				t.Errorf("store.HourStart(%s) = %s (%s UTC), want %s", c.t, got, got.UTC().Format(time.RFC3339), c.want)
			}
			if got.After(utc(c.t)) {
				t.Errorf("hour start %s is after %s", got, c.t)
			}
			wantLoc := c.loc
			if wantLoc == nil {
				wantLoc = time.UTC
			}
			if got.Location() != wantLoc {
				t.Errorf("location %v, want %v", got.Location(), wantLoc)
			}
			if got.In(wantLoc).Hour() != utc(c.t).In(wantLoc).Hour() {
				t.Errorf("%s is not in the wall-clock hour of %s", got, utc(c.t).In(wantLoc))
			}
		})
	}
}

// worst_censored_s is the longest wait a failed probe sat through, whatever
// the order of the failures. Kills aggregate.go `num.Finite(bound) && bound
// > h.WorstCensoredS` → `||` (the last failed wait would win).
func TestAggregateWorstCensoredIsTheLongest(t *testing.T) {
	fail := func(outcome string, queue float64) store.Probe {
		return store.Probe{Lane: "l", Kind: "free", QueueS: queue, Outcome: outcome}
	}
	for _, c := range []struct {
		name   string
		probes []store.Probe
		want   float64
	}{
		{"longest first", []store.Probe{fail("timeout", 120), fail("timeout", 9)}, 120},
		{"longest last", []store.Probe{fail("timeout", 9), fail("timeout", 120)}, 120},
		{"longest in the middle", []store.Probe{fail("empty", 3), fail("timeout", 30), fail("stream_error", 0)}, 30},
		{"an ok probe's queue is not censored", []store.Probe{okProbe("l", hour0, 50), fail("timeout", 4)}, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := store.Aggregate("l", "free", "", hour0, c.probes)
			if h.WorstCensoredS != c.want {
				t.Fatalf("worst_censored_s = %v, want %v", h.WorstCensoredS, c.want)
			}
		})
	}
}

// A probe with gen_s 0 gives no rate, whatever its token count (an
// imported point may hold a negative one): -5 / 0 would be -Inf.
func TestAggregateNoRateWithoutGen(t *testing.T) {
	p := store.Probe{Lane: "l", Kind: "free", QueueS: 3, GenS: 0, Tokens: -5, OK: true, Outcome: "ok"}
	h := store.Aggregate("l", "free", "", hour0, []store.Probe{p, okProbe("l", hour0, 1)})
	if h.MinTokPerS != 8 {
		t.Fatalf("min_tok_per_s = %v, want 8 (the one probe with a gen_s)", h.MinTokPerS)
	}
}

var hour0 = time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)

func okProbe(lane string, at time.Time, queue float64) store.Probe {
	return store.Probe{Lane: lane, Kind: "free", Time: at, QueueS: queue, GenS: 1, Tokens: 8, OK: true, Outcome: "ok"}
}
