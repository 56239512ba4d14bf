package budget

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/lanewatch/lanewatch/store"
)

// sim runs rounds on a cron schedule from start for d, applying Decide to
// what it stored so far, and calls check after each round.
type sim struct {
	lanes   []string
	groups  []Group
	loc     *time.Location
	probes  []store.Probe
	answer  func(lane string, at time.Time) store.Probe // the lane's answer to a probe
	checked int
	last    map[string]store.Probe
}

func (s *sim) run(t *testing.T, spec string, start time.Time, d time.Duration, check func(now time.Time, plan Plan)) {
	t.Helper()
	sched, err := cron.ParseStandard(spec)
	if err != nil {
		t.Fatal(err)
	}
	for now := sched.Next(start.Add(-time.Nanosecond)); now.Before(start.Add(d)); now = sched.Next(now) {
		plan := Decide(Input{Now: now, Lanes: s.lanes, Groups: s.groups, Probes: s.today(now),
			Latest: s.newest(), Location: s.loc})
		for _, l := range plan.Probe {
			p := store.Probe{Lane: l, Kind: "free", Time: now, OK: true, Outcome: "ok"}
			if s.answer != nil {
				p = s.answer(l, now)
			}
			s.probes = append(s.probes, p)
			if s.last == nil {
				s.last = map[string]store.Probe{}
			}
			s.last[l] = p
		}
		check(now, plan)
		s.checked++
	}
}

// newest is the newest probe of each lane, as the store's Latest gives it.
func (s *sim) newest() []store.Probe {
	var out []store.Probe
	for _, p := range s.last {
		out = append(out, p)
	}
	return out
}

// today is the probes of the last two days, as the sampler reads them.
func (s *sim) today(now time.Time) []store.Probe {
	i, _ := slices.BinarySearchFunc(s.probes, now.Add(-48*time.Hour), func(p store.Probe, t time.Time) int { return p.Time.Compare(t) })
	return s.probes[i:]
}

// checkCap asserts the budget invariant for every group at now.
func checkCap(t *testing.T, groups []Group, probes []store.Probe, now time.Time) {
	t.Helper()
	for _, g := range groups {
		d := dayOf(g, now)
		day, length := d.start, d.length
		sent := 0
		for i := len(probes) - 1; i >= 0 && !probes[i].Time.Before(day); i-- { // probes are in time order
			if p := probes[i]; slices.Contains(g.Lanes, p.Lane) && !p.Time.After(now) {
				sent++
			}
		}
		elapsed := now.Sub(day)
		limit := min(g.ProbesPerDay, 1+int(float64(g.ProbesPerDay)*float64(elapsed)/float64(length)))
		if sent > limit {
			t.Fatalf("%s: group %s sent %d probes since %s, cap %d", now.Format(time.RFC3339), g.Name, sent, day.Format(time.RFC3339), limit)
		}
	}
}

func TestSpreadOverTheHoursOfAWeek(t *testing.T) {
	g := Group{Name: "openrouter", ProbesPerDay: 12, Location: time.UTC, Lanes: []string{"or-llama"}}
	s := &sim{lanes: []string{"or-llama"}, groups: []Group{g}, loc: time.UTC}
	start := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	s.run(t, "7,27,47 * * * *", start, 7*24*time.Hour, func(now time.Time, _ Plan) {
		checkCap(t, s.groups, s.probes, now)
	})
	var perHour [24]int
	for _, p := range s.probes {
		perHour[p.Time.Hour()]++
	}
	if len(s.probes) != 7*12 {
		t.Errorf("%d probes in 7 days, want %d (12 a day)", len(s.probes), 7*12)
	}
	for h, n := range perHour {
		if n < 3 {
			t.Errorf("hour %02d has %d probes over 7 days, want at least 3 (all: %v)", h, n, perHour)
		}
	}
}

func TestSharedBudgetOneProbePerSlot(t *testing.T) {
	g := Group{Name: "or", ProbesPerDay: 48, Location: time.UTC, Lanes: []string{"a", "b"}}
	s := &sim{lanes: []string{"a", "b", "paid"}, groups: []Group{g}, loc: time.UTC}
	start := time.Date(2026, 11, 30, 5, 40, 0, 0, time.UTC) // inside a slot
	rounds := 0
	s.run(t, "@every 1s", start, 20*time.Second, func(now time.Time, plan Plan) {
		rounds++
		if !slices.Contains(plan.Probe, "paid") {
			t.Errorf("round %d: the unbudgeted lane was not probed (%v)", rounds, plan)
		}
	})
	n := 0
	for _, p := range s.probes {
		if p.Lane != "paid" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("two lanes sharing 48 a day got %d probes in 20 rounds of one slot, want 1", n)
	}
}

func TestTurnsLeastRecentlyProbedFirst(t *testing.T) {
	g := Group{Name: "g", ProbesPerDay: 24, Location: time.UTC, Lanes: []string{"a", "b", "c"}}
	s := &sim{lanes: g.Lanes, groups: []Group{g}, loc: time.UTC}
	start := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	s.run(t, "7 * * * *", start, 9*time.Hour, func(time.Time, Plan) {})
	var got []string
	for _, p := range s.probes {
		got = append(got, p.Lane)
	}
	want := []string{"a", "b", "c", "a", "b", "c", "a", "b", "c"}
	if !slices.Equal(got, want) {
		t.Fatalf("turns %v, want %v", got, want)
	}
}

// A random week of random groups, schedules and answers never breaks the cap.
func TestBudgetInvariantRandomWeeks(t *testing.T) {
	zones := []string{"UTC", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe"}
	specs := []string{"7,27,47 * * * *", "@every 1m", "@every 7m", "*/5 * * * *", "0 * * * *", "@every 23m"}
	for seed := range uint64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 99))
			loc, err := time.LoadLocation(zones[r.IntN(len(zones))])
			if err != nil {
				t.Fatal(err)
			}
			var groups []Group
			var lanes []string
			for gi := range 1 + r.IntN(3) {
				g := Group{Name: fmt.Sprintf("g%d", gi), ProbesPerDay: 1 + r.IntN(100), Location: loc}
				for li := range 1 + r.IntN(4) {
					g.Lanes = append(g.Lanes, fmt.Sprintf("g%dl%d", gi, li))
				}
				lanes = append(lanes, g.Lanes...)
				groups = append(groups, g)
			}
			lanes = append(lanes, "free")
			s := &sim{lanes: lanes, groups: groups, loc: loc}
			s.answer = func(lane string, at time.Time) store.Probe {
				p := store.Probe{Lane: lane, Kind: "free", Time: at, OK: true, Outcome: "ok"}
				switch r.IntN(10) {
				case 0:
					p.OK, p.Outcome, p.QuotaResetS = false, "rate_limited", float64(r.IntN(7200))
				case 1:
					p.QuotaKnown, p.QuotaRemaining, p.QuotaResetS = true, 0, float64(r.IntN(3600))
				}
				return p
			}
			start := time.Date(2026, 3, 1+r.IntN(28), r.IntN(24), r.IntN(60), 0, 0, loc) // DST changes in March
			spec := specs[r.IntN(len(specs))]
			prev := map[string]store.Probe{} // newest probe of each lane before this round
			s.run(t, spec, start, 7*24*time.Hour, func(now time.Time, plan Plan) {
				checkCap(t, groups, s.probes, now)
				// Sent and Left are the group's day so far, before and after the round.
				for _, g := range groups {
					before, after := 0, 0
					for _, p := range s.probes {
						if slices.Contains(g.Lanes, p.Lane) && !p.Time.Before(g.DayStart(now)) && !p.Time.After(now) {
							after++
							if p.Time.Before(now) {
								before++
							}
						}
					}
					if plan.Sent[g.Name] != before || plan.Left[g.Name] != max(g.ProbesPerDay-after, 0) {
						t.Fatalf("%s: group %s sent %d left %d; the store says %d before the round, %d after, of %d",
							now, g.Name, plan.Sent[g.Name], plan.Left[g.Name], before, after, g.ProbesPerDay)
					}
				}
				// A lane that backs off is not probed before its time.
				for _, l := range plan.Probe {
					if p, ok := prev[l]; ok {
						if u, ok := Backoff(p, loc); ok && u.After(now) {
							t.Fatalf("%s: lane %s probed during its back-off until %s", now, l, u)
						}
					}
				}
				for i := len(s.probes) - 1; i >= 0 && s.probes[i].Time.Equal(now); i-- {
					prev[s.probes[i].Lane] = s.probes[i]
				}
			})
			if s.checked == 0 {
				t.Fatal("no round ran")
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 13, 20, 0, 0, time.UTC)
	cases := []struct {
		name string
		p    store.Probe
		want time.Time
		ok   bool
	}{
		{"ok with quota left", store.Probe{Time: t0, OK: true, Outcome: "ok", QuotaKnown: true, QuotaRemaining: 3, QuotaResetS: 60}, time.Time{}, false},
		{"429 with Retry-After", store.Probe{Time: t0, Outcome: "rate_limited", QuotaResetS: 3600}, t0.Add(time.Hour), true},
		{"200 saying none remain", store.Probe{Time: t0, OK: true, Outcome: "ok", QuotaKnown: true, QuotaRemaining: 0, QuotaResetS: 1.5}, t0.Add(1500 * time.Millisecond), true},
		{"429 without a wait: to the next hour", store.Probe{Time: t0, Outcome: "rate_limited"}, time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC), true},
		{"capped at 26 h", store.Probe{Time: t0, Outcome: "rate_limited", QuotaResetS: 7 * 86400}, t0.Add(26 * time.Hour), true},
		{"timeout is not a quota", store.Probe{Time: t0, Outcome: "timeout", QueueS: 30}, time.Time{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := Backoff(c.p, time.UTC)
			if ok != c.ok || !got.Equal(c.want) {
				t.Fatalf("Backoff = %v, %v; want %v, %v", got, ok, c.want, c.ok)
			}
		})
	}
}

func TestDecideSkipsAndForce(t *testing.T) {
	now := time.Date(2026, 11, 30, 13, 27, 0, 0, time.UTC)
	g := Group{Name: "or", ProbesPerDay: 12, Location: time.UTC, Lanes: []string{"a", "b"}}
	latest := []store.Probe{{Lane: "c", Time: now.Add(-time.Minute), Outcome: "rate_limited", QuotaResetS: 3600}}
	in := Input{Now: now, Lanes: []string{"a", "b", "c"}, Groups: []Group{g}, Latest: latest, Location: time.UTC,
		Probes: []store.Probe{{Lane: "a", Time: now.Add(-10 * time.Minute), OK: true, Outcome: "ok"}}}
	plan := Decide(in)
	if len(plan.Probe) != 0 {
		t.Fatalf("probe %v, want none (slot used, c backs off)", plan.Probe)
	}
	want := []string{"a budget", "b budget", "c quota until 14:26Z"}
	var got []string
	for _, s := range plan.Skip {
		got = append(got, s.Lane+" "+s.String())
	}
	if !slices.Equal(got, want) {
		t.Fatalf("skips %q, want %q", got, want)
	}
	in.Force = true
	plan = Decide(in)
	if !slices.Equal(plan.Probe, []string{"a", "b", "c"}) || len(plan.Skip) != 0 {
		t.Fatalf("forced plan %+v", plan)
	}
	in.Force, in.MeterErr, in.Probes = false, fmt.Errorf("influx down"), nil
	plan = Decide(in)
	if len(plan.Probe) != 0 || plan.Skip[0].Reason != SkipMeter {
		t.Fatalf("plan without a meter %+v, want every budgeted lane skipped", plan)
	}
	if len(plan.Left) != 0 || len(plan.Sent) != 0 {
		t.Fatalf("plan without a meter reports budgets: sent %v, left %v; want none (unknown)", plan.Sent, plan.Left)
	}
	in.Force = true // forced without a meter: probes, and still no budget figures
	if plan = Decide(in); len(plan.Probe) != 3 || len(plan.Left) != 0 {
		t.Fatalf("forced plan without a meter %+v", plan)
	}
}

func TestBasisHours(t *testing.T) {
	for _, c := range []struct {
		per, lanes, want int
	}{{12, 1, 3}, {48, 2, 2}, {24, 1, 2}, {1, 1, 25}, {1000, 1, 2}} {
		g := Group{ProbesPerDay: c.per, Lanes: make([]string, c.lanes)}
		if got := BasisHours(g); got != c.want {
			t.Errorf("%d/day over %d lanes: BasisHours = %d, want %d", c.per, c.lanes, got, c.want)
		}
	}
}

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
// (A truncating division in place of the floored n/m fails it.)
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
