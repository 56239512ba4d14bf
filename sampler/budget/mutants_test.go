package budget

import (
	"slices"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

// These tests pin the rules that mutation testing (issue 22) found no test
// deciding: each names the mutant it kills. Expected values are worked by
// hand in the comments.

// sentAt returns one stored probe of lane at each time.
func sentAt(lane string, times ...time.Time) []store.Probe {
	var out []store.Probe
	for _, at := range times {
		out = append(out, store.Probe{Lane: lane, Kind: "free", Time: at, OK: true, Outcome: "ok"})
	}
	return out
}

// everyFiveMinutes returns n times from 00:05 of day, five minutes apart.
func everyFiveMinutes(day time.Time, n int) []time.Time {
	var out []time.Time
	for i := range n {
		out = append(out, day.Add(time.Duration(i+1)*5*time.Minute))
	}
	return out
}

// The day's cap decides when the slot is free: a forced run (-force) that
// already spent it leaves the rest of the day's slots empty. Kills
// budget.go groupState `st.sent < Cap(g, now)` → `<=`, and the cap removed.
func TestCapDecidesAnUnusedSlot(t *testing.T) {
	day := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	g := Group{Name: "g", ProbesPerDay: 24, Location: time.UTC, Lanes: []string{"a"}}
	// 24 a day over 1 lane: slots of 1 h, offset 0 (a slot spans 1 h).
	// Cap(now) = min(24, 1 + floor(24 × elapsed / 24 h)) = min(24, 1 + whole hours elapsed).
	for _, c := range []struct {
		name  string
		now   time.Time
		sent  int // probes from 00:05, every 5 minutes (all before the current slot)
		probe bool
		left  int // 24 - sent - (1 if probed)
	}{
		// 23:30: the slot 23:00-24:00 is unused; cap min(24, 24) = 24.
		{"24 sent by force, 23:30: no 25th", day.Add(23*time.Hour + 30*time.Minute), 24, false, 0},
		{"23 sent, 23:30: the 24th", day.Add(23*time.Hour + 30*time.Minute), 23, true, 0},
		// 05:30: the slot 05:00-06:00 is unused; cap 1 + 5 = 6.
		{"6 sent by force, 05:30: cap 6 reached", day.Add(5*time.Hour + 30*time.Minute), 6, false, 18},
		{"5 sent, 05:30: one more", day.Add(5*time.Hour + 30*time.Minute), 5, true, 18},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := Input{Now: c.now, Lanes: []string{"a"}, Groups: []Group{g}, Location: time.UTC,
				Probes: sentAt("a", everyFiveMinutes(day, c.sent)...)}
			plan := Decide(in)
			if got := slices.Contains(plan.Probe, "a"); got != c.probe {
				t.Fatalf("probe a = %v, want %v (plan %+v)", got, c.probe, plan)
			}
			if plan.Sent["g"] != c.sent || plan.Left["g"] != c.left {
				t.Fatalf("sent %d left %d, want %d and %d", plan.Sent["g"], plan.Left["g"], c.sent, c.left)
			}
		})
	}
}

// A probe stamped exactly at a slot's start used that slot. Kills
// groupState `!p.Time.Before(slotStart)` → `p.Time.After(slotStart)`.
func TestProbeAtSlotStartUsesTheSlot(t *testing.T) {
	day := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	g := Group{Name: "g", ProbesPerDay: 24, Location: time.UTC, Lanes: []string{"a"}}
	now := day.Add(5*time.Hour + 30*time.Minute) // slot 05:00-06:00, cap 6
	for _, c := range []struct {
		name  string
		at    time.Time
		probe bool
	}{
		{"at 05:00:00 exactly: slot used", day.Add(5 * time.Hour), false},
		{"at 04:59:59.999: the slot before", day.Add(5*time.Hour - time.Millisecond), true},
		{"at now exactly: slot used", now, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			plan := Decide(Input{Now: now, Lanes: []string{"a"}, Groups: []Group{g}, Location: time.UTC,
				Probes: sentAt("a", c.at)})
			if got := slices.Contains(plan.Probe, "a"); got != c.probe {
				t.Fatalf("probe a = %v, want %v (plan %+v)", got, c.probe, plan)
			}
		})
	}
}

// The day starts at midnight in the group's zone: a probe at midnight
// exactly counts for the new day, one a moment before for the old one.
func TestProbeAtMidnightCountsForTheNewDay(t *testing.T) {
	day := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	g := Group{Name: "g", ProbesPerDay: 24, Location: time.UTC, Lanes: []string{"a"}}
	now := day.Add(30 * time.Minute) // slot 00:00-01:00, cap 1
	for _, c := range []struct {
		name string
		at   time.Time
		sent int
	}{
		{"at 00:00:00", day, 1},
		{"at 23:59:59.999 the day before", day.Add(-time.Millisecond), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			plan := Decide(Input{Now: now, Lanes: []string{"a"}, Groups: []Group{g}, Location: time.UTC,
				Probes: sentAt("a", c.at)})
			if plan.Sent["g"] != c.sent {
				t.Fatalf("sent %d, want %d", plan.Sent["g"], c.sent)
			}
		})
	}
}

// A lane of a shared group waits its turn: its interval is the group's day
// divided among its lanes' shares, so more lanes mean longer. Kills
// Interval `* lanes` → `/ lanes` (TestBasisHours' 2-lane case reads the
// same either way).
func TestIntervalGrowsWithTheLanes(t *testing.T) {
	for _, c := range []struct {
		per, lanes int
		interval   time.Duration // 24 h × lanes / per
		basis      int           // ceil(interval + 1 h)
	}{
		{12, 3, 6 * time.Hour, 7},
		{24, 4, 4 * time.Hour, 5},
		{48, 3, 90 * time.Minute, 3},
		{24, 0, time.Hour, 2},      // no lanes counts as one
		{0, 1, 24 * time.Hour, 25}, // no budget counts as one a day
	} {
		g := Group{ProbesPerDay: c.per, Lanes: make([]string, c.lanes)}
		if got := Interval(g); got != c.interval {
			t.Errorf("%d/day over %d lanes: Interval = %v, want %v", c.per, c.lanes, got, c.interval)
		}
		if got := BasisHours(g); got != c.basis {
			t.Errorf("%d/day over %d lanes: BasisHours = %d, want %d", c.per, c.lanes, got, c.basis)
		}
	}
}

// A forced round's extra probes count against what is left: 12 a day, 1
// sent, the slot used; forcing a and b sends 2 more, so 12 - 1 - 2 = 9.
// Kills the forced `plan.Left[g.Name]--` → `++`.
func TestForcedProbesCountInLeft(t *testing.T) {
	now := time.Date(2026, 11, 30, 13, 27, 0, 0, time.UTC)
	g := Group{Name: "or", ProbesPerDay: 12, Location: time.UTC, Lanes: []string{"a", "b"}}
	in := Input{Now: now, Lanes: []string{"a", "b"}, Groups: []Group{g}, Location: time.UTC, Force: true,
		Probes: sentAt("a", now.Add(-10*time.Minute))}
	plan := Decide(in)
	if !slices.Equal(plan.Probe, []string{"a", "b"}) || plan.Sent["or"] != 1 || plan.Left["or"] != 9 {
		t.Fatalf("forced plan %+v, want a and b probed, sent 1, left 9", plan)
	}
	// An unused slot: the chosen lane is counted once, the forced one too.
	in.Probes = sentAt("a", now.Add(-3*time.Hour))
	plan = Decide(in)
	if plan.Sent["or"] != 1 || plan.Left["or"] != 9 {
		t.Fatalf("forced plan with a free slot %+v, want sent 1, left 9", plan)
	}
}

// A slot starts at its first instant, the day's first slot after the
// offset, and the last slot runs to the end of the day even when the day
// does not divide evenly into slots. Kills SlotStart `into < 0` → `<= 0`
// and `g.ProbesPerDay-1` → `+1`.
func TestSlotStartBoundaries(t *testing.T) {
	day := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC) // day 20787 since the epoch
	// 12 a day: slots of 2 h, so m = 2 and the offset is 20787 mod 2 = 1 h:
	// slots 01:00, 03:00, ..., 23:00.
	twelve := Group{Name: "g", ProbesPerDay: 12, Location: time.UTC}
	// 28 a day: slots of 24 h / 28 = 3085714285714 ns (truncated), so 28
	// slots end 8 ns before midnight; those 8 ns belong to the 28th slot,
	// which starts at 27 × 3085714285714 ns. Slots under 1 h: no offset.
	const slot28 = 3085714285714 * time.Nanosecond
	twentyEight := Group{Name: "g", ProbesPerDay: 28, Location: time.UTC}
	for _, c := range []struct {
		name string
		g    Group
		now  time.Time
		want time.Time
		ok   bool
	}{
		{"before the offset", twelve, day.Add(59 * time.Minute), time.Time{}, false},
		{"at the offset exactly", twelve, day.Add(time.Hour), day.Add(time.Hour), true},
		{"mid-day", twelve, day.Add(4*time.Hour + 59*time.Minute), day.Add(3 * time.Hour), true},
		{"last slot", twelve, day.Add(24*time.Hour - time.Nanosecond), day.Add(23 * time.Hour), true},
		{"at midnight, no offset", twentyEight, day, day, true},
		{"the last 8 ns of the day", twentyEight, day.Add(24*time.Hour - time.Nanosecond), day.Add(27 * slot28), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := SlotStart(c.g, c.now)
			if ok != c.ok || !got.Equal(c.want) {
				t.Fatalf("SlotStart(%s) = %v, %v; want %v, %v", c.now.Format(time.RFC3339Nano), got, ok, c.want, c.ok)
			}
		})
	}
}
