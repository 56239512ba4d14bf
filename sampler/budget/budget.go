// Package budget decides which lanes a sampler round may probe, so that
// probing never spends the free quota it measures.
//
// Its rules are probe budgets shared by the lanes of a quota group and
// spread over the provider's day, and the back-off a lane's answer asks for
// (a 429, or a response that says no requests remain). It is pure: no I/O
// and no clock. The time, the configured groups and the probes already
// stored come in as arguments, so a restarted or crash-looping sampler,
// which reads them from the store, never spends twice. The rules are
// documented in docs/budgets.md.
package budget

import (
	"math"
	"slices"
	"time"

	"github.com/lanewatch/lanewatch/internal/num"
	"github.com/lanewatch/lanewatch/store"
)

// MaxBackoff caps how long one answer can keep a lane from being probed.
const MaxBackoff = 26 * time.Hour

// Reasons a lane is skipped in a round.
const (
	SkipBudget = "budget" // its group's budget allows no probe of it now
	SkipQuota  = "quota"  // the lane asked to be left alone until Until
	SkipMeter  = "meter"  // the store could not be read, so the budget spent is unknown
	SkipSites  = "sites"  // the sites sharing its group list different sites (Input.SitesErr)
)

// Group is a quota group: lanes that share one account's requests.
type Group struct {
	Name         string
	ProbesPerDay int
	Location     *time.Location // the provider's day; nil means UTC
	Lanes        []string       // in config order
	// Sites share the group's budget (quota scope account): its slots
	// belong to them in turn, in the sorted order of their names whatever
	// order they are listed in (SlotOwner), and every site counts the
	// requests of all of them. Empty: the budget is the probing site's
	// own (scope site).
	Sites []string
}

// Backoff returns until when a lane must not be probed after its probe p,
// and whether p asks for a back-off at all: after a 429, or an answer that
// said no requests remain, until the later of Retry-After and the quota's
// reset (p.QuotaResetS), at most MaxBackoff after the probe. A 429 (or a
// zero remaining) that said neither backs off until the next hour starts in
// loc: one failed probe already makes the hour ineligible, and more probes
// of it cannot change that.
func Backoff(p store.Probe, loc *time.Location) (time.Time, bool) {
	exhausted := p.Outcome == store.OutcomeRateLimited || (p.QuotaKnown && p.QuotaRemaining <= 0)
	if !exhausted {
		return time.Time{}, false
	}
	if w := p.QuotaResetS; w > 0 && num.Finite(w) {
		d := time.Duration(min(w, MaxBackoff.Seconds()) * float64(time.Second))
		return p.Time.Add(d), true
	}
	return store.HourStart(p.Time, loc).Add(time.Hour), true
}

// Skip is a lane a round leaves out, and why.
type Skip struct {
	Lane   string
	Reason string    // SkipBudget, SkipQuota, SkipMeter or SkipSites
	Until  time.Time // SkipQuota: when the lane may be probed again
}

func (s Skip) String() string {
	if s.Reason == SkipQuota {
		return "quota until " + s.Until.UTC().Format("15:04Z")
	}
	return s.Reason
}

// Plan is what one round may do.
type Plan struct {
	Probe []string // lanes to probe, in config order
	Skip  []Skip   // lanes left out, in config order
	// Sent and Left are, per group with a lane in the round, the probes
	// sent since its day started and the probes its budget still allows
	// today once this round's are sent. A group whose count is unknown
	// (Input.MeterErr) is in neither.
	Sent, Left map[string]int
}

// Input is what Decide needs to know.
type Input struct {
	Now    time.Time
	Lanes  []string // every lane the round covers, in config order
	Groups []Group  // quota groups; a lane in none is unbudgeted
	// Probes holds the requests of the budgeted lanes since (at least)
	// the start of their group's day: their stored probe points, each a
	// reservation (store.OutcomeReserved) or the probe that replaced it,
	// so a request counts once from the moment it was booked, whether or
	// not its probe was ever stored. Released reservations
	// (store.OutcomeUnsent) are no requests and are not counted. Nil with
	// MeterErr set when the store could not be read. With a group of
	// several Sites, the probes of all of them.
	Probes []store.Probe
	// Site is the probing site: a group with Sites probes only in the
	// slots SlotOwner gives this site.
	Site string
	// Latest holds the newest stored probe of each lane (any age up to
	// MaxBackoff): back-offs and turn order come from it.
	Latest   []store.Probe
	MeterErr error
	// SitesErr, when set, says the sites sharing the groups with Sites
	// do not all list the same sites, so that their slots' owners are in
	// doubt: those groups probe nothing (SkipSites); their counts are
	// still reported.
	SitesErr error
	// Location keys hours for the back-off of a 429 without a wait.
	Location *time.Location
	// Force probes every lane: budgets and back-offs are reported in Left
	// but not applied (sampler -once -force). The probes still count.
	Force bool
}

// Decide plans a round. An unbudgeted lane is probed unless it backs off. A
// group may spend one probe per slot of its day: the day (in the group's
// zone) is cut into ProbesPerDay slots of equal length, shifted by a whole
// number of hours that rotates from day to day (Offset), and a round probes
// the group only if none of its lanes was probed since the current slot
// began and the day's count stays within
//
//	min(ProbesPerDay, 1 + floor(ProbesPerDay × elapsed / day length))
//
// so a budget is spread over the day, never spent at midnight, and a slot
// that no round fell in is not made up later. The probe goes to the lane of
// the group probed least recently that is not backing off. A group with
// Sites probes nothing while Input.SitesErr is set.
func Decide(in Input) Plan {
	plan := Plan{Sent: map[string]int{}, Left: map[string]int{}}
	latest := map[string]time.Time{}
	until := map[string]time.Time{}
	for _, p := range in.Latest {
		if p.Time.After(latest[p.Lane]) {
			latest[p.Lane] = p.Time
			until[p.Lane], _ = Backoff(p, in.Location)
		}
	}
	backing := func(lane string) (time.Time, bool) {
		u := until[lane]
		return u, u.After(in.Now)
	}
	groupOf := map[string]*Group{}
	for i := range in.Groups {
		for _, l := range in.Groups[i].Lanes {
			groupOf[l] = &in.Groups[i]
		}
	}
	chosen := map[string]bool{}
	for i := range in.Groups {
		g := &in.Groups[i]
		if !slices.ContainsFunc(g.Lanes, func(l string) bool { return slices.Contains(in.Lanes, l) }) {
			continue
		}
		if in.MeterErr != nil {
			continue // spent unknown: nothing chosen, nothing reported
		}
		st := groupState(*g, in.Now, in.Site, spends(g, in))
		plan.Sent[g.Name] = st.sent
		plan.Left[g.Name] = g.ProbesPerDay - st.sent
		if !st.mayProbe || (in.SitesErr != nil && len(g.Sites) > 0) {
			continue
		}
		// Least recently probed first; never probed before all; ties in config order.
		order := slices.Clone(g.Lanes)
		slices.SortStableFunc(order, func(a, b string) int { return latest[a].Compare(latest[b]) })
		for _, l := range order {
			if _, off := backing(l); !off && slices.Contains(in.Lanes, l) {
				chosen[l] = true
				plan.Left[g.Name]--
				break
			}
		}
	}
	for _, l := range in.Lanes {
		u, off := backing(l)
		g := groupOf[l]
		switch {
		case in.Force:
			plan.Probe = append(plan.Probe, l)
			if g != nil && !chosen[l] && in.MeterErr == nil {
				plan.Left[g.Name]--
			}
		case off:
			plan.Skip = append(plan.Skip, Skip{Lane: l, Reason: SkipQuota, Until: u})
		case g == nil || chosen[l]:
			plan.Probe = append(plan.Probe, l)
		case in.MeterErr != nil:
			plan.Skip = append(plan.Skip, Skip{Lane: l, Reason: SkipMeter})
		case in.SitesErr != nil && len(g.Sites) > 0:
			plan.Skip = append(plan.Skip, Skip{Lane: l, Reason: SkipSites})
		default:
			plan.Skip = append(plan.Skip, Skip{Lane: l, Reason: SkipBudget})
		}
	}
	for name, left := range plan.Left {
		plan.Left[name] = max(left, 0)
	}
	return plan
}

// state is a group's position in its day.
type state struct {
	sent     int  // probes of its lanes since the day started
	mayProbe bool // the current slot is unused and the cap allows one more
}

// spends is the time of every request of the group's lanes the input
// knows of: its probe points, reserved or settled, but released ones.
func spends(g *Group, in Input) []time.Time {
	var out []time.Time
	for _, p := range in.Probes {
		if store.Sent(p) && slices.Contains(g.Lanes, p.Lane) {
			out = append(out, p.Time)
		}
	}
	return out
}

// groupState counts the group's requests since its day started. A request
// stamped after now (a clock stepped back) still counts, and uses the
// current slot: the requests were sent, whatever the clock says now.
func groupState(g Group, now time.Time, site string, spent []time.Time) state {
	day, _ := dayOf(g, now)
	slotStart, ok := SlotStart(g, now)
	var st state
	usedSlot := false
	for _, at := range spent {
		if at.Before(day) {
			continue
		}
		st.sent++
		if ok && !at.Before(slotStart) {
			usedSlot = true
		}
	}
	mine := len(g.Sites) == 0 || SlotOwner(g, now) == site
	st.mayProbe = ok && mine && !usedSlot && st.sent < Cap(g, now)
	return st
}

// SlotOwner returns the site whose turn the slot holding now is, for a
// group shared by Sites ("" without them or before the day's first slot):
// slot k of day n belongs to sorted[(k + n/m) mod len(Sites)], sorted
// being the Sites in the order of their names (so sites that list them in
// another order agree) and m the offset's period (Offset). The owner moves on by one each m days, while
// the offset runs through its m phases, so each site meets every slot at
// every phase, and so every hour of the day, within m × len(Sites) days
// (12 probes a day over 3 sites: 2-hour slots, 6 days). Slots of a site
// that is down are not used by another: a site down under-spends.
func SlotOwner(g Group, now time.Time) string {
	if len(g.Sites) == 0 {
		return ""
	}
	start, ok := SlotStart(g, now)
	if !ok {
		return ""
	}
	day, length := dayOf(g, now)
	slot := length / time.Duration(max(g.ProbesPerDay, 1))
	k := int64(start.Sub(day.Add(Offset(g, now))) / slot)
	n := dayNumber(day)
	m := offsetPeriod(slot)
	sites := slices.Sorted(slices.Values(g.Sites))
	s := int64(len(sites))
	return sites[(((k+floorDiv(n, m))%s)+s)%s]
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// Cap is how many probes the group may have sent since its day started, at
// now: min(ProbesPerDay, 1 + floor(ProbesPerDay × elapsed / day length)).
func Cap(g Group, now time.Time) int {
	day, length := dayOf(g, now)
	elapsed := now.Sub(day)
	n := 1 + int(math.Floor(float64(g.ProbesPerDay)*float64(elapsed)/float64(length)))
	return min(g.ProbesPerDay, n)
}

// SlotStart returns the start of the group's slot that holds now, or false
// before the day's first slot (which the offset delays).
func SlotStart(g Group, now time.Time) (time.Time, bool) {
	day, length := dayOf(g, now)
	slot := length / time.Duration(max(g.ProbesPerDay, 1))
	off := Offset(g, now)
	into := now.Sub(day) - off
	if into < 0 {
		return time.Time{}, false
	}
	k := min(int(into/slot), g.ProbesPerDay-1)
	return day.Add(off + time.Duration(k)*slot), true
}

// Offset is how far the group's first slot of the day holding now starts
// after midnight: a whole number of hours, (day number mod m) hours, where m
// is the number of whole hours a slot spans (rounded up). Day after day the
// slots move through every hour phase, so that over a few days a budgeted
// lane's probes fall in every hour of the day, not the same hours each day.
func Offset(g Group, now time.Time) time.Duration {
	day, length := dayOf(g, now)
	slot := length / time.Duration(max(g.ProbesPerDay, 1))
	m := offsetPeriod(slot)
	if m <= 1 {
		return 0
	}
	n := dayNumber(day)
	return time.Duration(((n%m)+m)%m) * time.Hour
}

// offsetPeriod is the number of whole hours a slot spans, rounded up (at
// least 1): the days the offset takes to come round.
func offsetPeriod(slot time.Duration) int64 {
	return max(int64(math.Ceil(float64(slot)/float64(time.Hour))), 1)
}

// dayNumber is the number of the civil day that starts at day, counted
// from the Unix epoch's.
func dayNumber(day time.Time) int64 {
	y, mo, d := day.Date()
	return time.Date(y, mo, d, 0, 0, 0, 0, time.UTC).Unix() / 86400
}

// dayOf returns the start and length of the group's day holding now.
func dayOf(g Group, now time.Time) (time.Time, time.Duration) {
	day := store.DayStart(now, g.Location)
	next := store.DayStart(day.Add(26*time.Hour), g.Location)
	return day, next.Sub(day)
}

// DayStart returns the start of the group's day holding now (in its zone).
func (g Group) DayStart(now time.Time) time.Time { return store.DayStart(now, g.Location) }

// Interval is how often each lane of the group is probed at most: its share
// of the day's slots.
func Interval(g Group) time.Duration {
	per := max(g.ProbesPerDay, 1)
	return time.Duration(float64(24*time.Hour) * float64(max(len(g.Lanes), 1)) / float64(per))
}

// BasisHours is how many hours back the policy may look for a basis record
// of a lane of the group: its probe interval plus an hour, rounded up.
func BasisHours(g Group) int {
	return int(math.Ceil(float64(Interval(g)+time.Hour) / float64(time.Hour)))
}
