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
		day, length := dayOf(g, now)
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
