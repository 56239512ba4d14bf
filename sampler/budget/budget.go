// Package budget decides which lanes a sampler round may probe, so that
// probing never spends the free quota it measures: probe budgets shared by
// a quota group's lanes and spread over the provider's day, and the
// back-off a lane's answer asks for. It is pure: the time, the groups and
// the probes already stored come in as arguments. The rules are
// docs/budgets.md.
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
	Sites        []string       // share the budget's slots in turn (SlotOwner); empty: the site's own
}

// Backoff returns until when a lane must not be probed after its probe p,
// and whether p asks for a back-off at all (docs/budgets.md, "Back-off");
// hours are keyed in loc.
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
	// Sent and Left are, per group with a lane in the round and a known
	// count, the probes sent today and those its budget still allows today
	// once this round's are sent.
	Sent, Left map[string]int
}

// Input is what Decide needs to know.
type Input struct {
	Now    time.Time
	Lanes  []string // every lane the round covers, in config order
	Groups []Group  // quota groups; a lane in none is unbudgeted
	// Probes holds the stored probe points of the budgeted lanes (of
	// every site of a group with Sites) since at least the start of their
	// group's day; those store.Sent counts are requests. Nil with MeterErr
	// set when the store could not be read.
	Probes   []store.Probe
	Site     string        // the probing site, for SlotOwner
	Latest   []store.Probe // the newest probe of each lane: back-offs and turn order
	MeterErr error
	SitesErr error          // the sites sharing a group list other sites: it probes nothing
	Location *time.Location // keys hours for the back-off of a 429 without a wait
	Force    bool           // probe every lane, budgets and back-offs reported but not applied
}

// Decide plans a round (docs/budgets.md, "Slots"). An unbudgeted lane is
// probed unless it backs off; a group probes at most one lane per slot,
// within Cap, the one probed least recently that is not backing off.
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
		st := groupState(*g, in.Now, in.Site, in.Probes)
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

// groupState counts the group's requests in probes since its day started;
// one stamped after now (a clock stepped back) still counts and uses the
// slot.
func groupState(g Group, now time.Time, site string, probes []store.Probe) state {
	day := g.DayStart(now)
	slotStart, ok := SlotStart(g, now)
	var st state
	usedSlot := false
	for _, p := range probes {
		at := p.Time
		if !store.Sent(p) || !slices.Contains(g.Lanes, p.Lane) || at.Before(day) {
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
// slot k of day n belongs to sorted(Sites)[(k + n/m) mod len(Sites)], m
// being the offset's period (docs/budgets.md, "Sites").
func SlotOwner(g Group, now time.Time) string {
	start, ok := SlotStart(g, now)
	if len(g.Sites) == 0 || !ok {
		return ""
	}
	d := dayOf(g, now)
	k := int64(start.Sub(d.start.Add(d.offset())) / d.slot)
	sites := slices.Sorted(slices.Values(g.Sites))
	return sites[mod(k+(d.n-mod(d.n, d.m))/d.m, int64(len(sites)))]
}

func mod(a, b int64) int64 { return (a%b + b) % b }

// Cap is how many probes the group may have sent since its day started, at
// now: min(ProbesPerDay, 1 + floor(ProbesPerDay × elapsed / day length)).
func Cap(g Group, now time.Time) int {
	d := dayOf(g, now)
	n := 1 + int(math.Floor(float64(g.ProbesPerDay)*float64(now.Sub(d.start))/float64(d.length)))
	return min(g.ProbesPerDay, n)
}

// SlotStart returns the start of the group's slot that holds now, or false
// before the day's first slot (which the offset delays).
func SlotStart(g Group, now time.Time) (time.Time, bool) {
	d := dayOf(g, now)
	into := now.Sub(d.start) - d.offset()
	if into < 0 {
		return time.Time{}, false
	}
	k := min(int(into/d.slot), g.ProbesPerDay-1)
	return d.start.Add(d.offset() + time.Duration(k)*d.slot), true
}

// groupDay is the group's day: its start and length, its slots' length,
// its number n counted from the Unix epoch's, and m, the whole hours a slot
// spans rounded up (at least 1), the period of its offset.
type groupDay struct {
	start        time.Time
	length, slot time.Duration
	n, m         int64
}

func dayOf(g Group, now time.Time) groupDay {
	start := store.DayStart(now, g.Location)
	length := store.DayStart(start.Add(26*time.Hour), g.Location).Sub(start)
	slot := length / time.Duration(max(g.ProbesPerDay, 1))
	y, mo, d := start.Date()
	return groupDay{start: start, length: length, slot: slot,
		n: time.Date(y, mo, d, 0, 0, 0, 0, time.UTC).Unix() / 86400,
		m: max(int64(math.Ceil(float64(slot)/float64(time.Hour))), 1)}
}

// offset is how far the day's first slot starts after midnight: (n mod m)
// hours, so that day after day the slots move through every hour phase.
func (d groupDay) offset() time.Duration { return time.Duration(mod(d.n, d.m)) * time.Hour }

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
