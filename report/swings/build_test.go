package swings_test

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/report/swings"
	"github.com/lanewatch/lanewatch/store"
)

// The builder (build.go) itself: Compute and Sites share it, so
// TestSitesMatchesCompute cannot see its mistakes; these check
// Compute's report.

// A report keeps the classes with a finite deadline > 0, in order, and
// leaves out the others (a zero, negative, NaN or infinite deadline is no
// line the chart can draw).
func TestComputeKeepsClassesWithADeadline(t *testing.T) {
	opt := swings.Options{Location: time.UTC, Classes: []swings.ClassLine{
		{Name: "interactive", DeadlineS: 60}, {Name: "zero", DeadlineS: 0}, {Name: "negative", DeadlineS: -5},
		{Name: "nan", DeadlineS: math.NaN()}, {Name: "inf", DeadlineS: math.Inf(1)}, {Name: "ninf", DeadlineS: math.Inf(-1)},
		{Name: "tiny", DeadlineS: 0.5},
	}}
	want := []swings.ClassLine{{Name: "interactive", DeadlineS: 60}, {Name: "tiny", DeadlineS: 0.5}}
	if got := swings.Compute(nil, opt).Classes; !reflect.DeepEqual(got, want) {
		t.Errorf("Classes = %+v; want %+v", got, want)
	}
}

// An hour of day's Days counts calendar days: records at one hour of day
// on two dates count two days however far apart the dates are (the same
// day of another month, the same date of another year), one when they are
// the same date.
func TestDaysCountsCalendarDays(t *testing.T) {
	at := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 10, 0, 0, 0, time.UTC) }
	for _, c := range []struct {
		name  string
		dates []time.Time
		want  int
	}{
		{"one date", []time.Time{at(2026, 11, 5)}, 1},
		{"next day", []time.Time{at(2026, 11, 5), at(2026, 11, 6)}, 2},
		{"same day of the next month", []time.Time{at(2026, 10, 5), at(2026, 11, 5)}, 2},
		{"same date of the next year", []time.Time{at(2025, 11, 5), at(2026, 11, 5)}, 2},
		{"a month and a year apart", []time.Time{at(2025, 11, 5), at(2026, 10, 5), at(2026, 11, 5), at(2026, 11, 6)}, 4},
		{"across a new year", []time.Time{at(2025, 12, 31), at(2026, 1, 1), at(2026, 12, 31)}, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			var recs []store.Hourly
			for _, d := range c.dates {
				recs = append(recs, store.Hourly{Lane: "a", Kind: "free", Hour: d, WorstQueueS: 1, Samples: 1})
			}
			r := swings.Compute(recs, swings.Options{Location: time.UTC})
			l, ok := laneOf(r, "a")
			if !ok {
				t.Fatal("lane a missing")
			}
			if got := l.Hours[10].Days; got != c.want {
				t.Errorf("Hours[10].Days = %d; want %d", got, c.want)
			}
			if l.Hours[10].Measured != len(c.dates) {
				t.Errorf("Hours[10].Measured = %d; want %d (every record)", l.Hours[10].Measured, len(c.dates))
			}
		})
	}
}

// A lane's kind is the first configured kind of its name when one is set,
// otherwise its first record's: a configured lane without a kind takes
// the records', a later configured kind does not replace the first.
func TestLaneKind(t *testing.T) {
	t0 := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	rec := func(kind string, h int) store.Hourly {
		return store.Hourly{Lane: "a", Kind: kind, Hour: t0.Add(time.Duration(h) * time.Hour), WorstQueueS: 1, Samples: 1}
	}
	for _, c := range []struct {
		name  string
		lanes []swings.Lane
		recs  []store.Hourly
		want  string
	}{
		{"records only", nil, []store.Hourly{rec("paid", 0)}, "paid"},
		{"records only, the kind changes", nil, []store.Hourly{rec("free", 0), rec("paid", 1)}, "free"},
		{"configured without a kind", []swings.Lane{{Name: "a"}}, []store.Hourly{rec("paid", 0)}, "paid"},
		{"configured without a kind, then with one", []swings.Lane{{Name: "a"}, {Name: "a", Kind: "free"}}, []store.Hourly{rec("paid", 0)}, "free"},
		{"configured twice", []swings.Lane{{Name: "a", Kind: "free"}, {Name: "a", Kind: "paid"}}, []store.Hourly{rec("paid", 0)}, "free"},
		{"configured over the records", []swings.Lane{{Name: "a", Kind: "free"}}, []store.Hourly{rec("paid", 0)}, "free"},
		{"configured, no record", []swings.Lane{{Name: "a", Kind: "paid"}}, nil, "paid"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := swings.Compute(c.recs, swings.Options{Location: time.UTC, Lanes: c.lanes})
			l, ok := laneOf(r, "a")
			if !ok {
				t.Fatal("lane a missing")
			}
			if l.Kind != c.want {
				t.Errorf("Kind = %q; want %q", l.Kind, c.want)
			}
			if len(r.Lanes) != 1 {
				t.Errorf("%d lanes; want lane a once", len(r.Lanes))
			}
		})
	}
}
