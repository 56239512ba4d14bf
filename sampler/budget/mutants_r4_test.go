package budget

import (
	"testing"
	"time"
)

// Tests written for gremlins' survivors in budget.go (issue 22, fourth
// round); each names the mutant it kills.

// Slot k of day n belongs to Sites[(k + floor(n/m)) mod len(Sites)]
// (docs/budgets.md, SlotOwner), for every slot of the day, over 3 sites.
// 12 a day (2-hour slots, m = 2): 2026-12-01 is day 20788 (offset 0,
// owners (k + 10394) mod 3 = (k + 2) mod 3), 2026-12-03 day 20790 (offset
// 0, owners (k + 10395) mod 3 = k mod 3). 8 a day (3-hour slots, m = 3):
// day 20788 has offset 20788 mod 3 = 1 h and owners (k + 6929) mod 3 =
// (k + 2) mod 3.
// (budget.go SlotOwner: `… / slot` → `* slot`.)
func TestSlotOwnerEverySlot(t *testing.T) {
	sites := []string{"fra1", "iad1", "sgp1"}
	for _, d := range []struct {
		perDay int
		day    time.Time
		offset time.Duration
		shift  int
	}{
		{12, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), 0, 2},
		{12, time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC), 0, 0},
		{8, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), time.Hour, 2},
	} {
		g := Group{Name: "or", ProbesPerDay: d.perDay, Location: time.UTC, Lanes: []string{"a"}, Sites: sites}
		slot := 24 * time.Hour / time.Duration(d.perDay)
		for k := range d.perDay {
			at := d.day.Add(d.offset + time.Duration(k)*slot + time.Minute)
			if got, want := SlotOwner(g, at), sites[(k+d.shift)%3]; got != want {
				t.Errorf("%d a day: SlotOwner at %s (slot %d) = %q, want %q", d.perDay, at.Format(time.RFC3339), k, got, want)
			}
		}
	}
}

// The owner moves on by one each m days also across the Unix epoch: n/m is
// floored, so days -2 and -1 (1969-12-30, -31) share floor(n/2) = -1 and
// days 0 and 1 share 0. 12 a day over 3 sites (m = 2): slot 0 of day -2
// (offset 0) and of day -1 (offset (-1 mod 2) = 1 h) belong to
// Sites[(0 - 1) mod 3] = sgp1; slot 0 of days 0 and 1 to Sites[0] = fra1.
// (budget.go floorDiv: `a%b != 0` → `==`, `a%b` → `a*b`; a truncating
// division.)
func TestSlotOwnerAcrossTheEpoch(t *testing.T) {
	g := Group{Name: "or", ProbesPerDay: 12, Location: time.UTC, Lanes: []string{"a"}, Sites: []string{"fra1", "iad1", "sgp1"}}
	for _, c := range []struct {
		at   time.Time
		want string
	}{
		{time.Date(1969, 12, 30, 0, 30, 0, 0, time.UTC), "sgp1"},
		{time.Date(1969, 12, 31, 1, 30, 0, 0, time.UTC), "sgp1"},
		{time.Date(1970, 1, 1, 0, 30, 0, 0, time.UTC), "fra1"},
		{time.Date(1970, 1, 2, 1, 30, 0, 0, time.UTC), "fra1"},
	} {
		if got := SlotOwner(g, c.at); got != c.want {
			t.Errorf("SlotOwner at %s = %q, want %q", c.at.Format(time.RFC3339), got, c.want)
		}
	}
}
