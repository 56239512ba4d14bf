package policy

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/probe"
	"github.com/lanewatch/lanewatch/store"
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

// Counts in the ledger's input are whole numbers in [0, MaxTokens]
// (docs/ledger.md, "Input is read strictly"): `800.0` and `1e3` are whole
// and read as 800 and 1000, MaxTokens itself is read as MaxTokens; a
// fractional count (2.5) is an error naming it even though it is finite
// and in bounds, and MaxTokens + 1 is out of bounds.
// (bookinput.go count: `!num.Finite(x) || x != math.Trunc(x)` → `&&`,
// which reads 2.5 as 2; the clamp's `MaxTokens+1` → `MaxTokens-1`, which
// reads MaxTokens as MaxTokens - 1 and MaxTokens + 1 as MaxTokens - 1.)
func TestDecodeBookInputCounts(t *testing.T) {
	in := func(tokens string) []byte {
		return []byte(`{"attempts": [{"queue_s": 1, "gen_s": 1, "emitted_tokens": ` + tokens + `, "shipped": false}]}`)
	}
	for _, tc := range []struct {
		tokens string
		want   int
		err    string
	}{
		{"800", 800, ""},
		{"800.0", 800, ""},
		{"1e3", 1000, ""},
		{"1000000000000", MaxTokens, ""},
		{"2.5", 0, "attempts[0].emitted_tokens: must be a whole number"},
		{"1000000000001", 0, "attempts[0].emitted_tokens: must be at most 1000000000000"},
		{"1e300", 0, "attempts[0].emitted_tokens: must be at most 1000000000000"},
	} {
		got, err := DecodeBookInput(in(tc.tokens), false)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.tokens, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.tokens, err)
		case len(got.Attempts) != 1 || got.Attempts[0].EmittedTokens != tc.want:
			t.Errorf("%s: attempts %+v, want emitted_tokens %d", tc.tokens, got.Attempts, tc.want)
		}
	}
}

// A policy file's sites read back as written (docs/policy.md: `sites`,
// the sites whose records the figures come from): a file of two sites
// parses to those two, and ParseFile(Marshal(f)) is f. A file with no
// sites (the key absent, or an empty list) has none: nil, as ForHour
// gives for untagged records.
// (yaml.go parseFile: `len(doc.Sites) > 0` → `<= 0`, which drops the
// sites, and → `>= 0`, which reads `sites: []` as an empty non-nil list.)
func TestParseFileSites(t *testing.T) {
	h := mtHour
	p := Params{LookbackDays: 1, Lanes: []LaneSpec{{Name: "a", Kind: KindFree}}}
	f := ForHour(p, []store.Hourly{mtRec("a", KindFree, "iad1", h, 1, 40, 0), mtRec("a", KindFree, "fra1", h.Add(-24*time.Hour), 2, 40, 0)}, nil, h)
	data, err := Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "\nsites: [fra1, iad1]\n") {
		t.Fatalf("no sites line in\n%s", data)
	}
	got, err := ParseFile(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Sites, []string{"fra1", "iad1"}) || !reflect.DeepEqual(got, f) {
		t.Errorf("sites %q; ParseFile(Marshal(f)) = %+v, want %+v", got.Sites, got, f)
	}
	empty := strings.Replace(string(data), "\nsites: [fra1, iad1]\n", "\nsites: []\n", 1)
	if got, err := ParseFile([]byte(empty)); err != nil || got.Sites != nil {
		t.Errorf("sites: []: %q (nil: %v), %v; want nil", got.Sites, got.Sites == nil, err)
	}
}

// The ledger reads at most MaxAttempts attempts (docs/ledger.md, the
// bounds table: "at most 1,000"): exactly 1,000 are read, 1,001 are an
// error (TestDecodeBookInputErrorLines).
// (bookinput.go: `case len(doc.Attempts) > MaxAttempts` → `>=`.)
func TestDecodeBookInputAtMostMaxAttempts(t *testing.T) {
	good := `{"queue_s": 1, "gen_s": 1, "emitted_tokens": 1, "shipped": false}`
	in := `{"attempts": [` + strings.Repeat(good+",", MaxAttempts-1) + good + `]}`
	got, err := DecodeBookInput([]byte(in), false)
	if err != nil || len(got.Attempts) != MaxAttempts {
		t.Fatalf("%d attempts, %v; want %d", len(got.Attempts), err, MaxAttempts)
	}
}

// cutover_after_s and free_first go together (docs/ledger.md); when one is
// given without the other, the error names the one that is missing.
// (bookinput.go: `if p.CutoverAfterS == nil` → `!=`, which names the one
// given.)
func TestDecodeBookInputCutoverNamesTheMissingKey(t *testing.T) {
	pol := strings.TrimSuffix(goodBookPolicy, "}")
	for _, tc := range []struct{ extra, want string }{
		{`, "free_first": true}`, "policy.cutover_after_s: missing: cutover_after_s and free_first go together"},
		{`, "cutover_after_s": 20}`, "policy.free_first: missing: cutover_after_s and free_first go together"},
	} {
		_, err := DecodeBookInput([]byte(`{"attempts": [], `+pol+tc.extra+`}`), true)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.extra, err, tc.want)
		}
	}
}

// A day-ahead calibrated figure learns from the probes before the day
// alone (docs/policy.md, next_queue_s; ForecastProbes), and once its margin
// is warm it may be under the worst-of figure. A lane waits 10 s on every
// probe (3 an hour, 20 days) but once, 50 s at 14:07 on 2026-11-25; the
// day itself (2026-12-01) waits 99 s. Hour 14's profile over the 14 days
// before the day is 42 waits, one of 50: at 0.95 the rank ceil(0.95·42) − 1
// = 39 of the sorted 42 is 10, the margin of a lane that keeps to its
// profile is 1, so next_queue_s is 10 where the worst-of rule says 50.
// (forecast.go: the day's probes let in, `civilOf(...) >= d` → `>`, or
// `!ok || ...` → `&&`; queue's `c == nil` → `c != nil`, which always takes the
// worst-of figure.)
func TestForecastProbesCalibratedBelowTheWorst(t *testing.T) {
	day := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ps, hs := obsHistory(time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), 20, func(at time.Time) (float64, bool) {
		switch {
		case at.Day() == 1 && at.Month() == 12:
			return 99, true // the day itself: never read
		case at.Day() == 25 && at.Hour() == 14 && at.Minute() == 7:
			return 50, true
		}
		return 10, true
	})
	cal := ForecastProbes(obsParams(RuleCalibrated), hs, ps, nil, day)
	worst := Forecast(obsParams(RuleMax), hs, nil, day)
	for hr, want := range map[int][2]float64{13: {10, 10}, 14: {10, 50}, 15: {10, 10}} {
		if got := [2]float64{cal[hr].Lanes[0].NextQueueS, worst[hr].Lanes[0].NextQueueS}; got != want {
			t.Errorf("hour %d: next_queue_s calibrated, max = %v, want %v", hr, got, want)
		}
	}
}

// A probe is an observation of the calibrated rule (ProbeObs, docs/policy.md
// next_queue_s): an ok probe's queue_s as it is (0 included), a failed
// one's as a lower bound (censored, a timeout's wait); a 429 (by outcome
// or by status, whatever its wait), a failure with no wait, and a wait that
// is not a finite number >= 0 are no observation.
// (observe.go ProbeObs: line 17's `||` → `&&` and `< 0` → `<= 0`; line
// 20's `&&` and `||` swapped, `==` → `!=`, `<= 0` → `< 0`.)
func TestProbeObsRules(t *testing.T) {
	at := time.Date(2026, 11, 30, 14, 7, 0, 0, time.UTC)
	ok := func(q float64) store.Probe {
		return store.Probe{Time: at, OK: true, Outcome: "ok", Status: 200, QueueS: q}
	}
	failed := func(outcome string, status int64, q float64) store.Probe {
		return store.Probe{Time: at, Outcome: outcome, Status: status, QueueS: q}
	}
	for _, tc := range []struct {
		name string
		p    store.Probe
		want QueueObs
		ok   bool
	}{
		{"ok", ok(3), QueueObs{Time: at, Value: 3}, true},
		{"ok, no wait", ok(0), QueueObs{Time: at, Value: 0}, true},
		{"timeout", failed("timeout", 0, 30), QueueObs{Time: at, Value: 30, Censored: true}, true},
		{"5xx after a wait", failed("http_error", 503, 4), QueueObs{Time: at, Value: 4, Censored: true}, true},
		{"429 by outcome", failed(store.OutcomeRateLimited, 0, 5), QueueObs{}, false},
		{"429 by status", failed("http_error", 429, 5), QueueObs{}, false},
		{"failure, no wait", failed("http_error", 503, 0), QueueObs{}, false},
		{"negative", ok(-1), QueueObs{}, false},
		{"NaN", ok(math.NaN()), QueueObs{}, false},
		{"+Inf", ok(math.Inf(1)), QueueObs{}, false},
		{"-Inf", ok(math.Inf(-1)), QueueObs{}, false},
	} {
		if got, ok := ProbeObs(tc.p); ok != tc.ok || got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// A class's decision when one of its book's lanes is not eligible
// (docs/policy.md, "The decision"), the book still naming it (the best of
// its kind with samples, *_eligible false): cutoverWorld (free 10 s, paid
// 2 s, 1 s of generation; deadlines 60, 12, 2) in hour 14 with one lane
// quota_exhausted until 15:00.
//   - free not eligible: free_first false, cutover_after_s 0, every class;
//   - paid not eligible: nothing to cut over to; the free lane is held
//     while a first token can ship, deadline - 1 (59, 11), free first;
//     at 2 s its 10 s wait never ships: nothing (free_first false, 0).
//
// (A paid lane taken as eligible would cut d60 over at 57 and send d12
// straight to it.)
func TestCutoverOfALaneNotEligible(t *testing.T) {
	h := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	p, ps, hs := cutoverWorld(RuleCalibrated)
	for _, tc := range []struct {
		lane string
		want []Cutover
	}{
		{"free", []Cutover{{}, {}, {}}},
		{"paid", []Cutover{{AfterS: 59, FreeFirst: true}, {AfterS: 11, FreeFirst: true}, {}}},
	} {
		states := []LaneState{{Lane: tc.lane, LastSample: h.Add(7 * time.Minute), QuotaUntil: h.Add(time.Hour)}}
		f := ForHourProbes(p, hs, ps, states, h)
		for i, c := range f.Classes {
			b := c.Book
			if b.FreeLane != "free" || b.PaidLane != "paid" || b.FreeEligible != (tc.lane != "free") || b.PaidEligible != (tc.lane != "paid") ||
				c.Cutover == nil || *c.Cutover != tc.want[i] {
				t.Errorf("%s out, %s: book %+v, cut-over %+v; want %+v", tc.lane, c.Name, b, c.Cutover, tc.want[i])
			}
		}
	}
}

// Drop keeps the calibrated rule's figures as if the dropped probes had
// never been added, for as long as they are older than every lookback a
// later policy reads (History.Drop): a replay Drops the days no policy can
// read and goes on adding probes. A lane waits 10 s for 30 days (3 probes
// an hour) and then 40 s on the next day; one History drops the first 10
// days after the lane's figure was asked for (its calibrator fed), the
// other keeps them. Every later figure, under the 14-day lookback, is the
// same in both, and the 40 s day is in both (next_queue_s 40 by its end:
// the calibrated rule takes the shift).
// (observe.go calibrated: the count a calibrator resumes from,
// `c.fed-lh.obsBase` → `+` and `lh.obsBase + len(lh.obs)` → `-`.)
func TestDropKeepsTheCalibratedFigures(t *testing.T) {
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	ps, _ := obsHistory(start.AddDate(0, 0, 30), 30, func(time.Time) (float64, bool) { return 10, true })
	later, _ := obsHistory(start.AddDate(0, 0, 31), 1, func(time.Time) (float64, bool) { return 40, true })
	p := obsParams(RuleCalibrated)
	spec := p.Lanes[0]
	kept, dropped := NewHistory(time.UTC), NewHistory(time.UTC)
	for _, x := range []*History{kept, dropped} {
		for _, pr := range ps {
			x.AddProbe(pr)
		}
		x.LaneAt(p, spec, LaneState{}, start.AddDate(0, 0, 30))
	}
	dropped.Drop(start.AddDate(0, 0, 10))
	var last float64
	for i, pr := range later {
		kept.AddProbe(pr)
		dropped.AddProbe(pr)
		at := pr.Time.Add(time.Minute)
		k, d := kept.LaneAt(p, spec, LaneState{}, at), dropped.LaneAt(p, spec, LaneState{}, at)
		if k.NextQueueS != d.NextQueueS {
			t.Fatalf("probe %d (%s): next_queue_s %v after Drop, %v without", i, pr.Time, d.NextQueueS, k.NextQueueS)
		}
		last = d.NextQueueS
	}
	if last != 40 {
		t.Errorf("next_queue_s %v at the end of the 40 s day, want 40", last)
	}
}

// A History answers each lookback with its own calibrator (a replay sweeps
// several on one History): asked under 7 days and then 14, it gives what a
// History asked under one of them alone gives. The lane waits 40 s for its
// first 10 days and 10 s for the last 10 (3 probes an hour), so that the
// two lookbacks' figures differ (the test checks that they do; it does not
// work them out: 26.4 s under 7 days, 10 s under 14 at the time of writing).
// (observe.go calibrated: `lh.cals[i].days == days` → `!=`, which answers
// one lookback with another's calibrator.)
func TestCalibratedLookbacksOnOneHistory(t *testing.T) {
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	ps, _ := obsHistory(start.AddDate(0, 0, 20), 20, func(at time.Time) (float64, bool) {
		if at.Before(start.AddDate(0, 0, 10)) {
			return 40, true
		}
		return 10, true
	})
	at := start.AddDate(0, 0, 20)
	fig := func(x *History, days int) float64 {
		p := obsParams(RuleCalibrated)
		p.LookbackDays = days
		return x.LaneAt(p, p.Lanes[0], LaneState{}, at).NextQueueS
	}
	fresh := func() *History {
		x := NewHistory(time.UTC)
		for _, pr := range ps {
			x.AddProbe(pr)
		}
		return x
	}
	alone := map[int]float64{7: fig(fresh(), 7), 14: fig(fresh(), 14)}
	if alone[7] == alone[14] {
		t.Fatalf("the lookbacks give the same figure %v: the test tells nothing", alone[7])
	}
	x := fresh()
	for _, days := range []int{7, 14, 7, 14} {
		if got := fig(x, days); got != alone[days] {
			t.Errorf("lookback %d on a shared History: %v, alone %v", days, got, alone[days])
		}
	}
}
