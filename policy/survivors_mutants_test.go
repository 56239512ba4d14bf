package policy

// Tests for the mutants gremlins left alive in policy that change what the
// package answers (the equivalent ones are listed in TESTING.md).

import (
	"math"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

// A token sum that reaches math.MaxInt exactly has not overflowed: it is
// over a ceiling below MaxInt only (book.go's `sum > MaxInt-n` → `>=`
// stopped a job whose projection is exactly MaxInt at a MaxInt ceiling).
func TestBookTokenSumAtExactlyMaxInt(t *testing.T) {
	p := BookPolicy{DeadlineS: 60, NextQueueS: 1, NextGenS: 1, FreeEligible: true, PaidEligible: true}
	for _, tc := range []struct {
		name      string
		tokens    []int
		est       int
		ceiling   int
		action    Action
		spent     int
		projected int
	}{
		{"estimate MaxInt, ceiling MaxInt", nil, math.MaxInt, math.MaxInt, RetryFree, 0, math.MaxInt},
		{"estimate MaxInt, ceiling one less", nil, math.MaxInt, math.MaxInt - 1, Stop, 0, math.MaxInt},
		{"attempts sum to MaxInt", []int{math.MaxInt - 5, 5}, 0, math.MaxInt, RetryFree, math.MaxInt, math.MaxInt},
		{"attempts at MaxInt-5, estimate 5", []int{math.MaxInt - 5}, 5, math.MaxInt, RetryFree, math.MaxInt - 5, math.MaxInt},
		{"attempts one past MaxInt", []int{math.MaxInt - 5, 6}, 0, math.MaxInt, Stop, math.MaxInt, math.MaxInt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var as []Attempt
			for _, n := range tc.tokens {
				as = append(as, Attempt{EmittedTokens: n})
			}
			q := p
			q.NextEstTokens, q.CeilingTokens = tc.est, tc.ceiling
			d := Book(as, q)
			if d.Action != tc.action || d.SpentTokens != tc.spent || d.ProjectedTokens != tc.projected {
				t.Fatalf("%+v; want %s, spent %d, projected %d", d, tc.action, tc.spent, tc.projected)
			}
			if tc.action == Stop && d.Why != WhyCeiling {
				t.Fatalf("why %q, want the ceiling", d.Why)
			}
		})
	}
}

// appendRounded with no decimals keeps an integer's zeros.
func TestAppendRoundedNoDecimals(t *testing.T) {
	for _, tc := range []struct {
		x    float64
		want string
	}{{100, "100"}, {2.5, "2"}, {3.5, "4"}, {0, "0"}, {-0.4, "0"}, {1e3, "1000"}} {
		if got := string(appendRounded(nil, tc.x, 0)); got != tc.want {
			t.Errorf("appendRounded(%v, 0) = %s, want %s", tc.x, got, tc.want)
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
	if l := Forecast(p, rs, nil, mtHour)[14].Lanes[0]; !l.Eligible || l.Reason != ReasonOK || l.Failures != 0 {
		t.Errorf("forecast: %+v", l)
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

// Hand-made mutants of what gremlins does not cover (switch cases, and
// lines no test reached) found these rules unguarded.

// NamedClass names the classes a file has, or says it has none.
func TestNamedClassErrors(t *testing.T) {
	f := File{Hour: "2026-11-30T14", Classes: []Class{{Name: "interactive"}, {Name: "batch"}}}
	if c, err := f.NamedClass("batch"); err != nil || c.Name != "batch" {
		t.Errorf("batch: %+v, %v", c, err)
	}
	for _, tc := range []struct {
		f    File
		want string
	}{
		{f, `class "bulk": not in the policy file for 2026-11-30T14 (classes: interactive, batch)`},
		{File{Hour: "2026-11-30T15"}, `class "bulk": not in the policy file for 2026-11-30T15 (it has no classes)`},
	} {
		if _, err := tc.f.NamedClass("bulk"); err == nil || err.Error() != tc.want {
			t.Errorf("err %v, want %q", err, tc.want)
		}
		if _, err := tc.f.Book("bulk"); err == nil || err.Error() != tc.want {
			t.Errorf("Book: err %v, want %q", err, tc.want)
		}
	}
}

// A forecast lane whose history holds a single ok probe (and no failed
// one) is eligible.
func TestForecastOneOKProbeIsEnough(t *testing.T) {
	p := Params{LookbackDays: 3, Lanes: []LaneSpec{{Name: "a", Kind: KindFree}, {Name: "b", Kind: KindFree}}}
	recs := []store.Hourly{
		{Lane: "a", Kind: KindFree, Hour: mtHour.Add(-48 * time.Hour), WorstQueueS: 2, MinTokPerS: 40, Samples: 1},
		{Lane: "b", Kind: KindFree, Hour: mtHour.Add(-48 * time.Hour), WorstQueueS: 2, MinTokPerS: 40, Samples: 1, Failures: 1},
	}
	f := Forecast(p, recs, nil, mtHour)[14]
	if l := f.Lanes[0]; !l.Eligible || l.Reason != ReasonOK || l.Samples != 1 {
		t.Errorf("a: %+v, want eligible from its one ok probe", l)
	}
	if l := f.Lanes[1]; l.Eligible || l.Reason != ReasonProbeFailed || l.Failures != 1 {
		t.Errorf("b: %+v, want probe_failed", l)
	}
}

// Marshal refuses a non-finite figure, naming the first one.
func TestMarshalRejectsNonFinite(t *testing.T) {
	f := File{Hour: "2026-11-30T14", Timezone: "UTC", Basis: BasisLive,
		Lanes:   []Lane{{Name: "a", Kind: KindFree, Reason: ReasonOK, NextQueueS: math.NaN(), TokPerS: math.Inf(1)}},
		Classes: []Class{{Name: "c", DeadlineS: 60, Book: BookPolicy{NextGenS: math.Inf(-1)}}}}
	if data, err := Marshal(f); err == nil || err.Error() != "lanes[0].next_queue_s: NaN is not a finite number" {
		t.Errorf("err %v, want the first non-finite figure named\n%s", err, data)
	}
	f.Lanes[0].NextQueueS, f.Lanes[0].TokPerS = 1, 2
	if _, err := Marshal(f); err == nil || err.Error() != "classes[0].book.next_gen_s: -Inf is not a finite number" {
		t.Errorf("err %v, want classes[0].book.next_gen_s", err)
	}
}
