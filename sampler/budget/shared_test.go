package budget

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/lanewatch/lanewatch/store"
)

// A reservation counts from the moment it is booked, whether or not a
// probe ever settled it: requests sent by rounds that were interrupted,
// killed or whose writes were refused still spend the day.
func TestUnsettledReservationsSpendTheDay(t *testing.T) {
	g := Group{Name: "or", ProbesPerDay: 1, Location: time.UTC, Lanes: []string{"a"}}
	day := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	now := day.Add(20 * time.Hour)
	cases := []struct {
		name   string
		spent  []store.Probe // reservations
		probes []store.Probe
		probe  bool
		sent   int
	}{
		{"nothing booked", nil, nil, true, 0},
		{"a reservation never settled", []store.Probe{{Lane: "a", Time: day.Add(time.Hour), Outcome: store.OutcomeReserved}}, nil, false, 1},
		{"a stored probe without a reservation", nil, []store.Probe{{Lane: "a", Time: day.Add(time.Hour)}}, false, 1},
		{"yesterday's reservation", []store.Probe{{Lane: "a", Time: day.Add(-time.Minute), Outcome: store.OutcomeReserved}}, nil, true, 0},
		{"a released reservation (its probe never started)", nil, []store.Probe{{Lane: "a", Time: day.Add(time.Hour), Outcome: store.OutcomeUnsent}}, true, 0},
		{"a reservation and the probe that replaced it", nil, []store.Probe{{Lane: "a", Time: day.Add(time.Hour), Outcome: "ok", OK: true}}, false, 1},
		{"another group's lane", []store.Probe{{Lane: "b", Time: day.Add(time.Hour), Outcome: store.OutcomeReserved}}, nil, true, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plan := Decide(Input{Now: now, Lanes: []string{"a"}, Groups: []Group{g}, Probes: append(slices.Clone(c.spent), c.probes...), Location: time.UTC})
			if got := slices.Contains(plan.Probe, "a"); got != c.probe {
				t.Errorf("probe a = %v, want %v (plan %+v)", got, c.probe, plan)
			}
			if plan.Sent["or"] != c.sent {
				t.Errorf("sent %d, want %d", plan.Sent["or"], c.sent)
			}
		})
	}
}

// A request stamped after now (the clock was stepped back) was sent all
// the same: it counts and it uses the current slot.
func TestFutureStampedRequestsCount(t *testing.T) {
	g := Group{Name: "or", ProbesPerDay: 24, Location: time.UTC, Lanes: []string{"a"}}
	now := time.Date(2026, 12, 1, 10, 7, 0, 0, time.UTC)
	for _, ahead := range []time.Duration{time.Second, 10 * time.Minute, 5 * time.Hour} {
		for _, kind := range []string{"reservation", "probe"} {
			t.Run(fmt.Sprint(kind, ahead), func(t *testing.T) {
				in := Input{Now: now, Lanes: []string{"a"}, Groups: []Group{g}, Location: time.UTC}
				if kind == "probe" {
					in.Probes = []store.Probe{{Lane: "a", Time: now.Add(ahead)}}
				} else {
					in.Probes = []store.Probe{{Lane: "a", Time: now.Add(ahead), Outcome: store.OutcomeReserved}}
				}
				plan := Decide(in)
				if slices.Contains(plan.Probe, "a") || plan.Sent["or"] != 1 {
					t.Fatalf("a request stamped %s ahead: plan %+v, want a skipped with 1 sent", ahead, plan)
				}
			})
		}
	}
}

// SlotOwner hands the slots to the sites in turn, moving on each offset
// period; hand-worked for 12 a day (2-hour slots, period 2 days) over 3
// sites.
func TestSlotOwnerHandWorked(t *testing.T) {
	g := Group{Name: "or", ProbesPerDay: 12, Location: time.UTC, Lanes: []string{"a"}, Sites: []string{"fra1", "iad1", "sgp1"}}
	// 2026-12-01 is day 20788 since the epoch: offset 20788 mod 2 = 0, and
	// slot k (2 h from midnight) belongs to (k + 20788/2) mod 3 = (k + 2) mod 3.
	// 2026-12-02, day 20789: offset 1 h, the same owners (20789/2 = 10394).
	// 2026-12-03, day 20790: offset 0, owners (k + 10395) mod 3 = k mod 3.
	day := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		at   time.Duration
		want string
	}{
		{0, "sgp1"},                             // slot 0
		{2*time.Hour - time.Second, "sgp1"},     // still slot 0
		{2 * time.Hour, "fra1"},                 // slot 1
		{5 * time.Hour, "iad1"},                 // slot 2
		{7 * time.Hour, "sgp1"},                 // slot 3
		{23*time.Hour + 30*time.Minute, "iad1"}, // slot 11
		{24*time.Hour + 30*time.Minute, ""},     // next day, before its first slot (offset 1 h)
		{25 * time.Hour, "sgp1"},                // its slot 0
		{27 * time.Hour, "fra1"},                // its slot 1
		{48 * time.Hour, "fra1"},                // the day after: owners moved on by one
		{50 * time.Hour, "iad1"},
	}
	for _, c := range cases {
		if got := SlotOwner(g, day.Add(c.at)); got != c.want {
			t.Errorf("SlotOwner at %s = %q, want %q", day.Add(c.at).Format(time.RFC3339), got, c.want)
		}
	}
	if got := SlotOwner(Group{Name: "x", ProbesPerDay: 12, Lanes: []string{"a"}}, day.Add(time.Hour)); got != "" {
		t.Errorf("a group without sites has owner %q", got)
	}
}

// Sites that list the same sites in another order agree on every slot's
// owner: the slots go round in the sorted order of the names, whatever
// order a config lists them in (issue 28: [fra1, iad1] at one site and
// [iad1, fra1] at the other both owned every other slot).
func TestSlotOwnerIgnoresSitesOrder(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 28))
		var sites []string
		for i := range 2 + r.IntN(4) {
			sites = append(sites, fmt.Sprintf("s%d", i))
		}
		shuffled := slices.Clone(sites)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		g := Group{Name: "g", ProbesPerDay: 1 + r.IntN(48), Location: time.UTC, Lanes: []string{"a"}, Sites: sites}
		h := g
		h.Sites = shuffled
		order := slices.Clone(shuffled)
		start := time.Date(2026, 11, 1+r.IntN(28), 0, 0, 0, 0, time.UTC)
		for at := start; at.Before(start.Add(10 * 24 * time.Hour)); at = at.Add(17 * time.Minute) {
			if a, b := SlotOwner(g, at), SlotOwner(h, at); a != b {
				t.Fatalf("seed %d, %d a day: at %s the owner is %q by %v and %q by %v", seed, g.ProbesPerDay, at.Format(time.RFC3339), a, sites, b, shuffled)
			}
		}
		if !slices.Equal(h.Sites, order) {
			t.Fatalf("SlotOwner reordered the group's sites: %v", h.Sites)
		}
	}
}

// While the sites sharing a group are known to list different sites
// (Input.SitesErr), the slots' owners are in doubt: the group's lanes are
// skipped (SkipSites), its counts still reported, and a group the sites do
// not share, an unbudgeted lane and -force are unaffected; a back-off
// still says so.
func TestSitesErrSkipsSharedGroups(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 7, 0, 0, time.UTC)
	shared := Group{Name: "acct", ProbesPerDay: 24, Location: time.UTC, Lanes: []string{"a", "b"}, Sites: []string{"fra1", "iad1"}}
	own := Group{Name: "own", ProbesPerDay: 24, Location: time.UTC, Lanes: []string{"c"}}
	site := SlotOwner(shared, now)
	in := Input{Now: now, Lanes: []string{"a", "b", "c", "d"}, Groups: []Group{shared, own}, Site: site, Location: time.UTC,
		Probes:   []store.Probe{{Lane: "a", Time: now.Add(-3 * time.Hour), Outcome: "ok", OK: true}},
		Latest:   []store.Probe{{Lane: "b", Time: now.Add(-time.Minute), Outcome: store.OutcomeRateLimited, QuotaResetS: 3600}},
		SitesErr: errors.New("site iad1 lists fra1,iad1,sgp1")}
	plan := Decide(in)
	if want := []string{"c", "d"}; !slices.Equal(plan.Probe, want) {
		t.Errorf("probe %v, want %v", plan.Probe, want)
	}
	want := []Skip{{Lane: "a", Reason: SkipSites}, {Lane: "b", Reason: SkipQuota, Until: now.Add(59 * time.Minute)}}
	if !slices.Equal(plan.Skip, want) {
		t.Errorf("skip %v, want %v", plan.Skip, want)
	}
	if plan.Sent["acct"] != 1 || plan.Left["acct"] != 23 {
		t.Errorf("acct sent %d left %d, want 1 and 23", plan.Sent["acct"], plan.Left["acct"])
	}
	in.SitesErr = nil
	if plan := Decide(in); !slices.Equal(plan.Probe, []string{"a", "c", "d"}) {
		t.Fatalf("without SitesErr: probe %v, want a, c and d (the test no longer shows the skip)", plan.Probe)
	}
	in.SitesErr, in.Force = errors.New("x"), true
	if plan := Decide(in); len(plan.Probe) != 4 {
		t.Errorf("-force with SitesErr: probe %v, want every lane", plan.Probe)
	}
}

// multiSite runs several sites' samplers on one schedule against one
// shared record of requests, each site deciding from all of them.
type multiSite struct {
	sites   []string
	groups  []Group
	lanes   []string
	spent   []store.Probe // every site's requests, in time order
	down    func(site string, now time.Time) bool
	perSite map[string][]store.Probe
}

func (m *multiSite) run(t *testing.T, spec string, start time.Time, d time.Duration, check func(now time.Time)) {
	t.Helper()
	sched, err := cron.ParseStandard(spec)
	if err != nil {
		t.Fatal(err)
	}
	if m.perSite == nil {
		m.perSite = map[string][]store.Probe{}
	}
	for now := sched.Next(start.Add(-time.Nanosecond)); now.Before(start.Add(d)); now = sched.Next(now) {
		for _, site := range m.sites {
			if m.down != nil && m.down(site, now) {
				continue
			}
			var latest []store.Probe
			last := map[string]time.Time{}
			for _, s := range m.spent {
				last[s.Lane] = s.Time
			}
			for l, at := range last {
				latest = append(latest, store.Probe{Lane: l, Time: at, OK: true, Outcome: "ok"})
			}
			i, _ := slices.BinarySearchFunc(m.spent, now.Add(-48*time.Hour), func(s store.Probe, t time.Time) int { return s.Time.Compare(t) })
			plan := Decide(Input{Now: now, Lanes: m.lanes, Groups: m.groups, Probes: slices.Clone(m.spent[i:]), Latest: latest, Site: site, Location: time.UTC})
			for _, l := range plan.Probe {
				if g := groupOfLane(m.groups, l); g != nil {
					if owner := SlotOwner(*g, now); owner != site {
						t.Fatalf("%s: site %s probed %s in a slot of %s", now.Format(time.RFC3339), site, l, owner)
					}
				}
				s := store.Probe{Lane: l, Time: now, Outcome: store.OutcomeReserved}
				m.spent = append(m.spent, s)
				m.perSite[site] = append(m.perSite[site], s)
			}
		}
		check(now)
	}
}

func groupOfLane(gs []Group, lane string) *Group {
	for i := range gs {
		if slices.Contains(gs[i].Lanes, lane) {
			return &gs[i]
		}
	}
	return nil
}

// One account's budget over three sites: the sites together never send
// more than probes_per_day in a day (nor more than the cap so far), each
// site covers every hour of the day within a week, and a site that is
// down leaves its slots unused rather than spending another's.
func TestAccountScopeSitesShareOneBudget(t *testing.T) {
	sites := []string{"fra1", "iad1", "sgp1"}
	start := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	g := Group{Name: "or", ProbesPerDay: 12, Location: time.UTC, Lanes: []string{"a", "b"}, Sites: sites}
	m := &multiSite{sites: sites, groups: []Group{g}, lanes: []string{"a", "b"}}
	m.run(t, "7,27,47 * * * *", start, 7*24*time.Hour, func(now time.Time) { checkSpendCap(t, m.groups, m.spent, now) })
	for _, site := range sites {
		var hours [24]int
		for _, s := range m.perSite[site] {
			hours[s.Time.Hour()]++
		}
		for h, n := range hours {
			if n == 0 {
				t.Errorf("site %s never probed in hour %02d over a week (%v)", site, h, hours)
			}
		}
	}
	if n := len(m.spent); n != 7*12 {
		t.Errorf("three sites sent %d requests in 7 days, want 84 (12 a day, every slot used once)", n)
	}

	// fra1 is down for two days: nobody uses its slots.
	down := &multiSite{sites: sites, groups: []Group{g}, lanes: []string{"a", "b"},
		down: func(site string, now time.Time) bool { return site == "fra1" && now.Before(start.Add(48*time.Hour)) }}
	down.run(t, "7,27,47 * * * *", start, 48*time.Hour, func(now time.Time) { checkSpendCap(t, down.groups, down.spent, now) })
	if n := len(down.spent); n != 2*12-8 {
		t.Errorf("with fra1 down two days, %d requests, want 16 (fra1's 8 slots left unused)", n)
	}
}

// Random sites, budgets, schedules and outages: the group's daily total
// across all sites never exceeds its cap.
func TestAccountScopeRandom(t *testing.T) {
	specs := []string{"7,27,47 * * * *", "@every 7m", "*/5 * * * *", "0 * * * *"}
	for seed := range uint64(10) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 7))
			var sites []string
			for i := range 1 + r.IntN(4) {
				sites = append(sites, fmt.Sprintf("s%d", i))
			}
			g := Group{Name: "g", ProbesPerDay: 1 + r.IntN(60), Location: time.UTC, Sites: sites}
			for i := range 1 + r.IntN(3) {
				g.Lanes = append(g.Lanes, fmt.Sprintf("l%d", i))
			}
			outage := map[string][2]time.Time{}
			start := time.Date(2026, 12, 1+r.IntN(20), r.IntN(24), 0, 0, 0, time.UTC)
			for _, s := range sites {
				from := start.Add(time.Duration(r.IntN(72)) * time.Hour)
				outage[s] = [2]time.Time{from, from.Add(time.Duration(r.IntN(30)) * time.Hour)}
			}
			m := &multiSite{sites: sites, groups: []Group{g}, lanes: g.Lanes,
				down: func(site string, now time.Time) bool {
					o := outage[site]
					return !now.Before(o[0]) && now.Before(o[1])
				}}
			m.run(t, specs[r.IntN(len(specs))], start, 4*24*time.Hour, func(now time.Time) { checkSpendCap(t, m.groups, m.spent, now) })
		})
	}
}

// checkSpendCap asserts the budget invariant over every site's requests.
func checkSpendCap(t *testing.T, groups []Group, spent []store.Probe, now time.Time) {
	t.Helper()
	for _, g := range groups {
		d := dayOf(g, now)
		day, length := d.start, d.length
		n := 0
		for _, s := range spent {
			if slices.Contains(g.Lanes, s.Lane) && !s.Time.Before(day) && !s.Time.After(now) {
				n++
			}
		}
		limit := min(g.ProbesPerDay, 1+int(float64(g.ProbesPerDay)*float64(now.Sub(day))/float64(length)))
		if n > limit {
			t.Fatalf("%s: group %s: %d requests across sites since %s, cap %d", now.Format(time.RFC3339), g.Name, n, day.Format(time.RFC3339), limit)
		}
	}
}
