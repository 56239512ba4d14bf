package policy

import (
	"slices"
	"testing"
	"time"
)

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

// NextGenS is est / rate rounded up to 0.01, known only for a rate above 0
// that finishes (est 0 needs no rate at all).
func TestNextGenS(t *testing.T) {
	for _, tc := range []struct {
		tok  float64
		est  int
		want float64
		ok   bool
	}{
		{80, 800, 10, true},
		{3, 1, 0.34, true},
		{41.49, 4000, 96.41, true}, // 96.4087...
		{0, 800, 0, false},
		{-5, 800, 0, false},
		{1e-307, 800, 0, false}, // 8e309 s: longer than a float holds
		{0, 0, 0, true},
		{-5, 0, 0, true},
		{80, -3, 0, true},
	} {
		if got, ok := NextGenS(tc.tok, tc.est); got != tc.want || ok != tc.ok {
			t.Errorf("NextGenS(%v, %d) = %v, %v; want %v, %v", tc.tok, tc.est, got, ok, tc.want, tc.ok)
		}
	}
}

// The book's lane among equal totals is the one with the smaller name,
// whichever comes first in the config; a later lane with a larger total
// and a smaller name is not chosen.
func TestClassBookTieBreakEitherOrder(t *testing.T) {
	cs := []ClassSpec{{Name: "c", DeadlineS: 60, EstTokens: 800}}
	for _, tc := range []struct {
		name       string
		lanes      []Lane
		free, paid string
	}{
		{"smaller name first", []Lane{mtFig("f-a", KindFree, 5, 80, true), mtFig("f-z", KindFree, 5, 80, true), mtFig("p-a", KindPaid, 5, 80, true), mtFig("p-b", KindPaid, 5, 80, true)}, "f-a", "p-a"},
		{"smaller name last", []Lane{mtFig("f-z", KindFree, 5, 80, true), mtFig("f-a", KindFree, 5, 80, true), mtFig("p-b", KindPaid, 5, 80, true), mtFig("p-a", KindPaid, 5, 80, true)}, "f-a", "p-a"},
		{"smaller total first, smaller name later", []Lane{mtFig("f-z", KindFree, 1, 80, true), mtFig("f-a", KindFree, 2, 80, true), mtFig("p-z", KindPaid, 1, 80, true), mtFig("p-a", KindPaid, 9, 80, true)}, "f-z", "p-z"},
		// 5 + 10 against 10 + 5: equal totals, the smaller name.
		{"equal totals of different parts", []Lane{mtFig("f-z", KindFree, 5, 80, true), mtFig("f-a", KindFree, 10, 160, true)}, "f-a", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := Classes(Params{Classes: cs}, tc.lanes)[0].Book
			if b.FreeLane != tc.free || b.PaidLane != tc.paid {
				t.Fatalf("free %q, paid %q; want %q, %q", b.FreeLane, b.PaidLane, tc.free, tc.paid)
			}
		})
	}
}

// With decisions (the calibrated rule's waits), a class starts on the
// plan its objective scores best, whatever the lanes' figures say of
// speed: the free lane whose waits ship beats one with a smaller
// next_queue_s whose waits never ship; a lane with no token rate (no
// next_gen_s) is never a start; and lanes with a plan come before one
// without.
func TestClassesDecidedStart(t *testing.T) {
	cs := ClassSpec{Name: "c", DeadlineS: 60, CeilingTokens: 4000, EstTokens: 600, PaidUSDPer1k: 0.002}
	fast := make([]float64, 40) // ships in a second or two
	for i := range fast {
		fast[i] = 1 + float64(i%3)/2
	}
	slow := make([]float64, 40) // the free lane's waits: past the deadline
	for i := range slow {
		slow[i] = 70 + float64(i)
	}
	for _, tc := range []struct {
		name  string
		lanes []Lane
		waits map[string][]float64
		start string
		list  []string
	}{
		{"the free lane whose waits ship, not the one with the smaller figure",
			[]Lane{mtFig("ships", KindFree, 20, 80, true), mtFig("stuck", KindFree, 2, 80, true), mtFig("zp", KindPaid, 5, 40, true)},
			map[string][]float64{"ships": fast, "stuck": slow}, "ships", []string{"ships", "zp", "stuck"}}, // by score, not by name
		{"no token rate: never the start",
			[]Lane{mtFig("norate", KindFree, 1, 0, true), mtFig("p", KindPaid, 5, 40, true)},
			map[string][]float64{"norate": fast}, "p", []string{"p"}},
		{"lanes with a plan before one without (its generation fills the deadline)",
			[]Lane{mtFig("ships", KindFree, 5, 80, true), mtFig("af", KindFree, 0, 10, true), mtFig("zp", KindPaid, 2, 40, true)},
			map[string][]float64{"ships": fast, "af": fast}, "ships", []string{"ships", "zp", "af"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			waits := func(i int) (WaitDist, bool) {
				ws, ok := tc.waits[tc.lanes[i].Name]
				return WaitsOf(ws...), ok
			}
			got := classesWith(Params{Classes: []ClassSpec{cs}}, tc.lanes, nil, waits, nil)
			if start, _ := got[0].Start(); start != tc.start || !slices.Equal(got[0].Lanes, tc.list) {
				t.Errorf("start %q, lanes %v; want %q, %v (book %+v, cut-over %+v)", start, got[0].Lanes, tc.start, tc.list, got[0].Book, got[0].Cutover)
			}
		})
	}
}

// Start: free first starts on the book's free lane and cuts over only to
// an eligible paid lane; a decision that is not free first goes straight
// to the paid lane when one is eligible, else to the first lane listed; a
// class without a decision (the worst-of rule) starts on its first lane.
func TestClassStart(t *testing.T) {
	freeFirst, paidFirst := &Cutover{AfterS: 30, FreeFirst: true}, &Cutover{}
	for _, tc := range []struct {
		name     string
		cut      *Cutover
		lanes    []string
		paid     string
		eligible bool
		lane     string
		cuts     bool
	}{
		{"free first, paid eligible", freeFirst, []string{"f", "p"}, "p", true, "f", true},
		{"free first, paid not eligible", freeFirst, []string{"f"}, "p", false, "f", false},
		{"free first, no paid lane", freeFirst, []string{"f"}, "", false, "f", false},
		{"paid first", paidFirst, []string{"f", "p"}, "p", true, "p", false},
		{"paid first, paid not eligible: the first lane", paidFirst, []string{"f"}, "p", false, "f", false},
		{"paid first, another free lane listed first", paidFirst, []string{"g", "f", "p"}, "p", true, "g", false},
		{"no decision", nil, []string{"f", "p"}, "p", true, "f", false},
		{"nothing listed", paidFirst, nil, "p", false, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Class{Cutover: tc.cut, Lanes: tc.lanes, Book: BookPolicy{FreeLane: "f", FreeEligible: true, PaidLane: tc.paid, PaidEligible: tc.eligible}}
			if lane, cuts := c.Start(); lane != tc.lane || cuts != tc.cuts {
				t.Errorf("Start() = %q, %v; want %q, %v", lane, cuts, tc.lane, tc.cuts)
			}
		})
	}
}
