package policy

// Tests written against the rules that mutation testing (issue 22) found
// unguarded: each one fails when its rule is broken in the way named in its
// comment. Expected values are worked out by hand from the records given.

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

// mtHour is the policy hour of the tests below that need no timezone.
var mtHour = time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)

// mtRec is a record of three probes at site, queue seconds, tok tok/s.
func mtRec(lane, kind, site string, hour time.Time, queue, tok float64, failures int) store.Hourly {
	return store.Hourly{Lane: lane, Kind: kind, Site: site, Hour: hour, WorstQueueS: queue, WorstGenS: 1,
		MinTokPerS: tok, Samples: 3, Failures: int64(failures)}
}

func mtLane(t *testing.T, f File, name string) Lane {
	t.Helper()
	i := slices.IndexFunc(f.Lanes, func(l Lane) bool { return l.Name == name })
	if i < 0 {
		t.Fatalf("no lane %s in %+v", name, f.Lanes)
	}
	return f.Lanes[i]
}

// The basis is one record per site: the newest one of that site. An older
// hour of the same site is not a second basis record (issue 22 #4:
// `b.Site == r.Site` → `!=` made H-1's failure decide hour H), while
// another site's older hour is that site's basis.
func TestBasisIsTheNewestRecordPerSite(t *testing.T) {
	h := mtHour
	for _, tc := range []struct {
		name     string
		recs     []store.Hourly
		spec     LaneSpec
		days     int
		reason   string
		queue    float64
		samples  int
		failures int
		records  int
		sites    []string
	}{
		{
			name: "H-1 failed, H fine: H alone is the basis",
			recs: []store.Hourly{mtRec("a", KindFree, "", h, 3, 40, 0), mtRec("a", KindFree, "", h.Add(-time.Hour), 9, 40, 1)},
			spec: LaneSpec{Name: "a", Kind: KindFree}, reason: ReasonOK, queue: 3, samples: 3, records: 1,
		},
		{
			name: "H fine at s1, H-1 failed at s2: both sites are the basis",
			recs: []store.Hourly{mtRec("a", KindFree, "s1", h, 3, 40, 0), mtRec("a", KindFree, "s2", h.Add(-time.Hour), 9, 40, 1)},
			spec: LaneSpec{Name: "a", Kind: KindFree}, reason: ReasonProbeFailed, queue: 9, samples: 6, failures: 1, records: 2,
			sites: []string{"s1", "s2"},
		},
		{
			name: "H-1 at two sites, H at one: H-1 is the other site's basis only",
			recs: []store.Hourly{
				mtRec("a", KindFree, "s1", h, 3, 40, 0),
				mtRec("a", KindFree, "s1", h.Add(-time.Hour), 20, 40, 1),
				mtRec("a", KindFree, "s2", h.Add(-time.Hour), 7, 40, 0),
			},
			spec: LaneSpec{Name: "a", Kind: KindFree}, reason: ReasonOK, queue: 7, samples: 6, records: 2,
			sites: []string{"s1", "s2"},
		},
		{
			// BasisHours 30 reaches H-24, which the lookback reads too:
			// the record counts once (samples 3 + 3, not 9).
			name: "a basis record that is also a lookback record counts once",
			recs: []store.Hourly{mtRec("a", KindFree, "", h.Add(-24*time.Hour), 4, 40, 0), mtRec("a", KindFree, "", h.Add(-48*time.Hour), 6, 40, 0)},
			spec: LaneSpec{Name: "a", Kind: KindFree, BasisHours: 30}, days: 2, reason: ReasonOK, queue: 6, samples: 6, records: 2,
		},
		{
			name: "a record with no samples is no basis: H-1 is",
			recs: []store.Hourly{{Lane: "a", Kind: KindFree, Hour: h, WorstQueueS: 50}, mtRec("a", KindFree, "", h.Add(-time.Hour), 2, 40, 0)},
			spec: LaneSpec{Name: "a", Kind: KindFree}, reason: ReasonOK, queue: 2, samples: 3, records: 1,
		},
		{
			name: "H-2 is outside the default basis",
			recs: []store.Hourly{mtRec("a", KindFree, "", h.Add(-2*time.Hour), 2, 40, 0)},
			spec: LaneSpec{Name: "a", Kind: KindFree}, reason: ReasonNoRecentSample, queue: 0, samples: 0, records: 0,
		},
		{
			name: "H-2 is inside a basis of 2 hours",
			recs: []store.Hourly{mtRec("a", KindFree, "", h.Add(-2*time.Hour), 2, 40, 0)},
			spec: LaneSpec{Name: "a", Kind: KindFree, BasisHours: 2}, reason: ReasonOK, queue: 2, samples: 3, records: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Params{LookbackDays: tc.days, Lanes: []LaneSpec{tc.spec}}
			f := ForHour(p, tc.recs, nil, h.Add(5*time.Minute))
			l := mtLane(t, f, "a")
			got := []any{l.Reason, l.Eligible, l.NextQueueS, l.Samples, l.Failures, f.Records, f.Sites}
			want := []any{tc.reason, tc.reason == ReasonOK, tc.queue, tc.samples, tc.failures, tc.records, tc.sites}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("reason, eligible, queue, samples, failures, records, sites:\n got %v\nwant %v", got, want)
			}
			// History.LaneAt (the replay's path, with its lookback memo) agrees.
			x := NewHistory(nil)
			for _, r := range tc.recs {
				x.Add(r)
			}
			for range 2 { // the second call reads the memo
				if got := x.LaneAt(p, tc.spec, LaneState{Lane: "a"}, h); !reflect.DeepEqual(got, l) {
					t.Fatalf("LaneAt\n got %+v\nwant %+v", got, l)
				}
			}
		})
	}
}

// A lane whose quota is spent past the start of the hour is
// quota_exhausted, with Until in whole UTC seconds; at or before the start
// it is not (issue 22 #5: the case, and its After boundary, were only
// guarded by an integration test elsewhere).
func TestLiveQuotaExhausted(t *testing.T) {
	h := mtHour
	kolkata := mustLoc(t, "Asia/Kolkata")
	ok := mtRec("a", KindFree, "", h, 3, 40, 0)
	failed := mtRec("a", KindFree, "", h, 3, 40, 1)
	old := mtRec("a", KindFree, "", h.Add(-24*time.Hour), 5, 40, 0)
	for _, tc := range []struct {
		name   string
		recs   []store.Hourly
		state  LaneState
		reason string
		until  time.Time
		queue  float64
	}{
		{"no quota state", []store.Hourly{ok}, LaneState{}, ReasonOK, time.Time{}, 3},
		{"spent for 30 more minutes", []store.Hourly{ok}, LaneState{QuotaUntil: h.Add(30*time.Minute + 700*time.Millisecond).In(kolkata)},
			ReasonQuotaExhausted, h.Add(30 * time.Minute), 3},
		{"back a nanosecond after the hour starts", []store.Hourly{ok}, LaneState{QuotaUntil: h.Add(time.Nanosecond)}, ReasonQuotaExhausted, h, 3},
		{"back exactly at the hour's start", []store.Hourly{ok}, LaneState{QuotaUntil: h}, ReasonOK, time.Time{}, 3},
		{"back before the hour", []store.Hourly{ok}, LaneState{QuotaUntil: h.Add(-time.Nanosecond)}, ReasonOK, time.Time{}, 3},
		{"quota outranks a failed basis", []store.Hourly{failed}, LaneState{QuotaUntil: h.Add(time.Hour)}, ReasonQuotaExhausted, h.Add(time.Hour), 3},
		{"quota outranks no basis", []store.Hourly{old}, LaneState{QuotaUntil: h.Add(time.Hour)}, ReasonQuotaExhausted, h.Add(time.Hour), 5},
		{"never sampled outranks quota", nil, LaneState{QuotaUntil: h.Add(time.Hour)}, ReasonNeverSampled, time.Time{}, 0},
		{"a probe known but no record: quota", nil, LaneState{LastSample: h.Add(-time.Minute), QuotaUntil: h.Add(time.Hour)},
			ReasonQuotaExhausted, h.Add(time.Hour), 0},
		{"a probe known but no record, no quota", nil, LaneState{LastSample: h.Add(-time.Minute)}, ReasonNoRecentSample, time.Time{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.state.Lane = "a"
			p := Params{LookbackDays: 1, Lanes: []LaneSpec{{Name: "a", Kind: KindFree}},
				Classes: []ClassSpec{{Name: "c", DeadlineS: 600, CeilingTokens: 4000, EstTokens: 400}}}
			f := ForHour(p, tc.recs, []LaneState{{Lane: "other", QuotaUntil: h.Add(time.Hour)}, tc.state}, h)
			l := mtLane(t, f, "a")
			if l.Reason != tc.reason || l.Eligible != (tc.reason == ReasonOK) || !l.Until.Equal(tc.until) || l.NextQueueS != tc.queue {
				t.Fatalf("got %s eligible %v until %v queue %v; want %s until %v queue %v",
					l.Reason, l.Eligible, l.Until, l.NextQueueS, tc.reason, tc.until, tc.queue)
			}
			if !tc.until.IsZero() && l.Until.Location() != time.UTC {
				t.Errorf("until in %s, want UTC", l.Until.Location())
			}
			c := f.Classes[0]
			if listed := len(c.Lanes) == 1; listed != l.Eligible || c.Book.FreeEligible != l.Eligible {
				t.Errorf("class lanes %v, free_eligible %v; lane eligible %v", c.Lanes, c.Book.FreeEligible, l.Eligible)
			}
		})
	}
}

// A forecast hour is quota_exhausted while the quota is spent past that
// hour's start (issue 22 #5: the forecast's case was tested nowhere).
func TestForecastQuotaExhausted(t *testing.T) {
	day := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var recs []store.Hourly
	for hr := range 24 {
		recs = append(recs, mtRec("a", KindFree, "", day.Add(time.Duration(hr-24)*time.Hour), 2, 40, 0))
	}
	p := Params{LookbackDays: 1, Lanes: []LaneSpec{{Name: "a", Kind: KindFree}}}
	for _, tc := range []struct {
		name  string
		until time.Time
		last  int // the last hour that is quota_exhausted; -1: none
		want  time.Time
	}{
		{"until 05:30", day.Add(5*time.Hour + 30*time.Minute + 999*time.Millisecond), 5, day.Add(5*time.Hour + 30*time.Minute)},
		{"until 06:00 exactly", day.Add(6 * time.Hour), 5, day.Add(6 * time.Hour)},
		{"until 06:00 and a nanosecond", day.Add(6*time.Hour + time.Nanosecond), 6, day.Add(6 * time.Hour)},
		{"until midnight", day, -1, time.Time{}},
		{"none", time.Time{}, -1, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			states := []LaneState{{Lane: "a", LastSample: day.Add(-time.Hour), QuotaUntil: tc.until}}
			files := Forecast(p, recs, states, day.Add(13*time.Hour))
			for hr, f := range files {
				l := mtLane(t, f, "a")
				wantReason, wantUntil := ReasonOK, time.Time{}
				if hr <= tc.last {
					wantReason, wantUntil = ReasonQuotaExhausted, tc.want
				}
				if l.Reason != wantReason || l.Eligible != (wantReason == ReasonOK) || !l.Until.Equal(wantUntil) || l.NextQueueS != 2 || l.Samples != 3 {
					t.Fatalf("hour %02d: %+v; want %s until %v, queue 2 from 3 samples", hr, l, wantReason, wantUntil)
				}
			}
		})
	}
	// Never sampled outranks a quota; no history at the hour is
	// no_recent_sample once the quota is back.
	states := []LaneState{{Lane: "b", QuotaUntil: day.Add(time.Hour)}, {Lane: "c", LastSample: day.Add(-time.Hour), QuotaUntil: day.Add(time.Hour)}}
	p.Lanes = []LaneSpec{{Name: "b", Kind: KindFree}, {Name: "c", Kind: KindFree}}
	files := Forecast(p, nil, states, day)
	for _, tc := range []struct {
		hr         int
		lane, want string
	}{{0, "b", ReasonNeverSampled}, {0, "c", ReasonQuotaExhausted}, {1, "c", ReasonNoRecentSample}} {
		if l := mtLane(t, files[tc.hr], tc.lane); l.Reason != tc.want {
			t.Errorf("hour %02d lane %s: %s, want %s", tc.hr, tc.lane, l.Reason, tc.want)
		}
	}
}

// A file names the sites its figures come from, sorted, unless every one
// of them is the untagged site (issue 22 #6: `sites` was never checked).
// Records the figures do not read (another hour of day, an older basis
// hour of the same site) add no site.
func TestFileSites(t *testing.T) {
	h := mtHour
	for _, tc := range []struct {
		name string
		recs []store.Hourly
		live []string
		fc   []string // the forecast of the next day, hour 14
	}{
		{"none", nil, nil, nil},
		{"untagged only", []store.Hourly{mtRec("a", KindFree, "", h, 1, 40, 0)}, nil, nil},
		{"one site", []store.Hourly{mtRec("a", KindFree, "s1", h, 1, 40, 0)}, []string{"s1"}, []string{"s1"}},
		{"untagged and a site", []store.Hourly{mtRec("a", KindFree, "zz", h, 1, 40, 0), mtRec("b", KindPaid, "", h, 1, 40, 0)},
			[]string{"", "zz"}, []string{"", "zz"}},
		{"sorted, from the lookback too", []store.Hourly{
			mtRec("a", KindFree, "s3", h, 1, 40, 0),
			mtRec("a", KindFree, "s1", h.Add(-24*time.Hour), 1, 40, 0),
			mtRec("b", KindPaid, "s2", h.Add(-time.Hour), 1, 40, 0),
		}, []string{"s1", "s2", "s3"}, []string{"s3"}},
		{"records not read add no site", []store.Hourly{
			mtRec("a", KindFree, "s1", h, 1, 40, 0),
			mtRec("a", KindFree, "s1", h.Add(-time.Hour), 1, 40, 0),
			mtRec("a", KindFree, "old", h.Add(-3*time.Hour), 1, 40, 0),
			mtRec("b", KindPaid, "other-hour", h.Add(-25*time.Hour), 1, 40, 0),
			mtRec("b", KindPaid, "b-site", h, 1, 40, 0),
			{Lane: "b", Kind: KindPaid, Site: "no-samples", Hour: h, WorstQueueS: 1},
			mtRec("ghost", KindPaid, "unconfigured", h, 1, 40, 0),
		}, []string{"b-site", "s1"}, []string{"b-site", "s1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Params{LookbackDays: 1, Lanes: []LaneSpec{{Name: "a", Kind: KindFree}, {Name: "b", Kind: KindPaid}}}
			if got := ForHour(p, tc.recs, nil, h).Sites; !slices.Equal(got, tc.live) || (got == nil) != (tc.live == nil) {
				t.Errorf("live sites %q, want %q", got, tc.live)
			}
			if got := Forecast(p, tc.recs, nil, h.Add(24*time.Hour))[14].Sites; !slices.Equal(got, tc.fc) || (got == nil) != (tc.fc == nil) {
				t.Errorf("forecast sites %q, want %q", got, tc.fc)
			}
		})
	}
	// An empty site list is not written; a site list is, as a flow sequence.
	f := ForHour(Params{Lanes: []LaneSpec{{Name: "a", Kind: KindFree}}}, []store.Hourly{mtRec("a", KindFree, "s1", h, 1, 40, 0)}, nil, h)
	data, err := Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "\nsites: [s1]\n") {
		t.Errorf("no sites line in\n%s", data)
	}
	f.Sites = nil
	if data, _ := Marshal(f); strings.Contains(string(data), "sites") {
		t.Errorf("sites written for an untagged file:\n%s", data)
	}
}

// mtFig is a lane's figures as Classes reads them.
func mtFig(name, kind string, queue, tok float64, eligible bool) Lane {
	reason := ReasonOK
	if !eligible {
		reason = ReasonProbeFailed
	}
	return Lane{Name: name, Kind: kind, Eligible: eligible, Reason: reason, NextQueueS: queue, TokPerS: tok, Samples: 3}
}

// A class lists free lanes first, then by name, whatever the config order;
// a lane whose next_queue_s + next_gen_s is exactly the deadline fits; the
// book's lanes are the smallest total, ties by name (issue 22 #7: the name
// tie-break and `<=` → `<` survived). 800 tokens at 80 tok/s is 10 s.
func TestClassOrderTieBreakAndDeadline(t *testing.T) {
	cs := ClassSpec{Name: "c", DeadlineS: 60, CeilingTokens: 4000, EstTokens: 800, PaidUSDPer1k: 0.002}
	for _, tc := range []struct {
		name  string
		lanes []Lane
		list  []string
		book  BookPolicy
	}{
		{
			name: "config order is not the order",
			lanes: []Lane{
				mtFig("p-b", KindPaid, 5, 80, true), mtFig("f-z", KindFree, 5, 80, true),
				mtFig("f-a", KindFree, 5, 80, true), mtFig("p-a", KindPaid, 5, 80, true),
			},
			list: []string{"f-a", "f-z", "p-a", "p-b"},
			book: BookPolicy{FreeLane: "f-a", NextQueueS: 5, FreeEligible: true, PaidLane: "p-a", PaidQueueS: 5, PaidEligible: true, NextGenS: 10},
		},
		{
			name:  "exactly at the deadline fits; a hundredth over does not",
			lanes: []Lane{mtFig("over", KindFree, 50.01, 80, true), mtFig("edge", KindFree, 50, 80, true), mtFig("paid", KindPaid, 50.01, 80, true)},
			list:  []string{"edge"},
			book:  BookPolicy{FreeLane: "edge", NextQueueS: 50, FreeEligible: true, PaidLane: "paid", PaidQueueS: 50.01, PaidEligible: true, NextGenS: 10},
		},
		{
			name:  "the smaller total wins over the smaller name",
			lanes: []Lane{mtFig("f-a", KindFree, 2, 80, true), mtFig("f-b", KindFree, 1, 40, true), mtFig("f-c", KindFree, 1.5, 80, true), mtFig("p-b", KindPaid, 3, 160, true), mtFig("p-a", KindPaid, 3, 80, true)},
			// totals: f-a 12, f-b 21, f-c 11.5, p-b 8, p-a 13
			list: []string{"f-a", "f-b", "f-c", "p-a", "p-b"},
			book: BookPolicy{FreeLane: "f-c", NextQueueS: 1.5, FreeEligible: true, PaidLane: "p-b", PaidQueueS: 3, PaidEligible: true, NextGenS: 10},
		},
		{
			name:  "no eligible free lane: the best free lane with samples, not eligible",
			lanes: []Lane{mtFig("f-b", KindFree, 1, 80, false), mtFig("f-a", KindFree, 4, 80, false), mtFig("p", KindPaid, 2, 40, true)},
			list:  []string{"p"},
			// the paid lane alone is eligible: next_gen_s is its 20 s
			book: BookPolicy{FreeLane: "f-b", NextQueueS: 1, FreeEligible: false, PaidLane: "p", PaidQueueS: 2, PaidEligible: true, NextGenS: 20},
		},
		{
			name:  "an eligible lane is chosen before a faster ineligible one",
			lanes: []Lane{mtFig("fast", KindFree, 0, 800, false), mtFig("slow", KindFree, 30, 40, true)},
			list:  []string{"slow"},
			book:  BookPolicy{FreeLane: "slow", NextQueueS: 30, FreeEligible: true, NextGenS: 20},
		},
		{
			name:  "both eligible: next_gen_s is the larger",
			lanes: []Lane{mtFig("f", KindFree, 1, 80, true), mtFig("p", KindPaid, 1, 40, true)},
			list:  []string{"f", "p"},
			book:  BookPolicy{FreeLane: "f", NextQueueS: 1, FreeEligible: true, PaidLane: "p", PaidQueueS: 1, PaidEligible: true, NextGenS: 20},
		},
		{
			name:  "free eligible, paid not: the free lane's next_gen_s",
			lanes: []Lane{mtFig("f", KindFree, 1, 80, true), mtFig("p", KindPaid, 1, 40, false)},
			list:  []string{"f"},
			book:  BookPolicy{FreeLane: "f", NextQueueS: 1, FreeEligible: true, PaidLane: "p", PaidQueueS: 1, NextGenS: 10},
		},
		{
			name:  "neither eligible: the larger of both",
			lanes: []Lane{mtFig("f", KindFree, 1, 80, false), mtFig("p", KindPaid, 1, 40, false)},
			list:  []string{},
			book:  BookPolicy{FreeLane: "f", NextQueueS: 1, PaidLane: "p", PaidQueueS: 1, NextGenS: 20},
		},
		{
			name:  "neither eligible, free lane only",
			lanes: []Lane{mtFig("f", KindFree, 1, 80, false)},
			list:  []string{},
			book:  BookPolicy{FreeLane: "f", NextQueueS: 1, NextGenS: 10},
		},
		{
			name:  "neither eligible, paid lane only",
			lanes: []Lane{mtFig("p", KindPaid, 1, 40, false)},
			list:  []string{},
			book:  BookPolicy{PaidLane: "p", PaidQueueS: 1, NextGenS: 20},
		},
		{
			name: "no decode data or no samples: never chosen, never listed",
			lanes: []Lane{
				mtFig("mute", KindFree, 1, 0, true),
				{Name: "empty", Kind: KindFree, Eligible: true, Reason: ReasonOK, NextQueueS: 1, TokPerS: 80},
			},
			list: []string{},
			book: BookPolicy{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Classes(Params{Classes: []ClassSpec{cs}}, tc.lanes)
			want := tc.book
			want.DeadlineS, want.CeilingTokens, want.NextEstTokens, want.PaidUSDPer1k = 60, 4000, 800, 0.002
			if len(got) != 1 || !slices.Equal(got[0].Lanes, tc.list) || got[0].Book != want {
				t.Fatalf("got %+v\nwant lanes %v book %+v", got, tc.list, want)
			}
			c := got[0]
			if c.Name != "c" || c.DeadlineS != 60 || c.CeilingTokens != 4000 || c.EstTokens != 800 {
				t.Errorf("class header %+v", c)
			}
		})
	}
}

// Several classes: each lists its own lanes (one class's list does not
// leak into the next one's), with est_tokens 0 needing no decode data.
func TestClassesEachTheirOwn(t *testing.T) {
	lanes := []Lane{mtFig("f", KindFree, 20, 80, true), mtFig("mute", KindFree, 1, 0, true), mtFig("p", KindPaid, 2, 40, true)}
	p := Params{Classes: []ClassSpec{
		{Name: "short", DeadlineS: 25, EstTokens: 400}, // f 20+5, p 2+10
		{Name: "zero", DeadlineS: 5, EstTokens: 0},     // mute 1+0, p 2+0
		{Name: "none", DeadlineS: 1, EstTokens: 400},
	}}
	got := Classes(p, lanes)
	want := [][]string{{"f", "p"}, {"mute", "p"}, {}}
	for i, c := range got {
		if !slices.Equal(c.Lanes, want[i]) {
			t.Errorf("class %s lanes %v, want %v", c.Name, c.Lanes, want[i])
		}
	}
	if b := got[1].Book; b.FreeLane != "mute" || b.NextGenS != 0 || b.PaidLane != "p" {
		t.Errorf("zero book %+v", b)
	}
	// Appending to one class's lanes does not overwrite the next class's.
	_ = append(got[0].Lanes, "x")
	if got[1].Lanes[0] != "mute" {
		t.Errorf("class zero lanes %v after an append to class short's", got[1].Lanes)
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
	fc := Forecast(p, recs, nil, h)[1]
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

// MarshalJSON refuses a decision with any non-finite figure; AppendJSON
// writes it as 0 (issue 22 #9: only spent_s was checked).
func TestDecisionJSONRejectsEveryNonFiniteFigure(t *testing.T) {
	ok := Decision{Action: Stop, Why: WhyNoneFits, SpentS: 1.234, RemainingS: 2.345, SpentTokens: 10, ProjectedTokens: 20, SunkUSD: 0.00015}
	data, err := json.Marshal(ok)
	// In binary 1.234 is 1.23399… → 1.23; 2.345 is 2.345000…02 → 2.35; 0.00015 is 0.000149999… → 0.0001.
	if want := `{"action":"stop","why":"` + WhyNoneFits + `","spent_s":1.23,"remaining_s":2.35,"spent_tokens":10,"projected_tokens":20,"sunk_usd_if_those_tokens_were_paid":0.0001}`; err != nil || string(data) != want {
		t.Fatalf("got %s, %v\nwant %s", data, err, want)
	}
	for _, tc := range []struct {
		name string
		set  func(*Decision)
		want string // AppendJSON's figures
	}{
		{"spent_s NaN", func(d *Decision) { d.SpentS = math.NaN() }, `"spent_s":0,"remaining_s":2.35,`},
		{"remaining_s NaN", func(d *Decision) { d.RemainingS = math.NaN() }, `"spent_s":1.23,"remaining_s":0,`},
		{"remaining_s -Inf", func(d *Decision) { d.RemainingS = math.Inf(-1) }, `"spent_s":1.23,"remaining_s":0,`},
		{"sunk_usd NaN", func(d *Decision) { d.SunkUSD = math.NaN() }, `"sunk_usd_if_those_tokens_were_paid":0}`},
		{"sunk_usd +Inf", func(d *Decision) { d.SunkUSD = math.Inf(1) }, `"sunk_usd_if_those_tokens_were_paid":0}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := ok
			tc.set(&d)
			if data, err := d.MarshalJSON(); err == nil {
				t.Errorf("MarshalJSON: %s, want an error", data)
			}
			if _, err := json.Marshal(d); err == nil {
				t.Errorf("json.Marshal: want an error")
			}
			if got := string(d.AppendJSON(nil)); !strings.Contains(got, tc.want) {
				t.Errorf("AppendJSON %s, want it to hold %s", got, tc.want)
			}
		})
	}
}
