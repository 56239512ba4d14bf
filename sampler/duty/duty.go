// Package duty reads the samplers' heartbeats: of the live samplers of one
// shard and site it picks the one that probes, and it finds the sites that
// share account quotas but list other sites. The rule is docs/deploy.md's
// "A shard runs once"; the sites, docs/budgets.md's "Sites".
package duty

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

// Decision is what the rule says of one instance.
type Decision struct {
	Active bool
	Holder store.Heartbeat // the live instance the rule picks: self when Active
	Live   int             // live instances of the shard and site, self included
	Reason string          // why, in one line for the log and /healthz
	// Ignored holds, once per instance, the beats no sampler could have
	// written (Plausible), in the order read.
	Ignored []Ignored
	// Disagree holds the newest live beat of each instance at another site
	// that lists other sites than self does (disagree).
	Disagree []store.Heartbeat
}

// Ignored is a heartbeat the rule left out, and why.
type Ignored struct {
	Beat store.Heartbeat
	Err  error
}

// MaxInterval is the longest interval a sampler's heartbeat can name: the
// longest schedule gap config allows plus an hour of jitter.
const MaxInterval = 5*366*24*time.Hour + time.Hour

// MaxUptime is how long before its heartbeat a sampler may have started.
const MaxUptime = 10 * 366 * 24 * time.Hour

// Lifetime is how long b is live after its time: two of its writer's
// intervals (of fallback when b names none), less a quarter interval, which
// keeps a standby's decision off the tick two intervals on.
func Lifetime(b store.Heartbeat, fallback time.Duration) time.Duration {
	iv := time.Duration(b.IntervalS * float64(time.Second))
	if iv <= 0 {
		iv = fallback
	}
	return 2*iv - iv/4
}

// Plausible returns why no sampler could have written b, read at now, or
// nil: an interval_s out of [0, MaxInterval], a start its Lifetime or more
// after its time or MaxUptime before it, or a time its Lifetime or more
// ahead of now. Such a beat would otherwise hold a shard as long as it says.
func Plausible(b store.Heartbeat, now time.Time, fallback time.Duration) error {
	if !(b.IntervalS >= 0 && b.IntervalS <= MaxInterval.Seconds()) {
		return fmt.Errorf("interval_s %g is not between 0 and %g (%s, the longest a config gives)", b.IntervalS, MaxInterval.Seconds(), MaxInterval)
	}
	life := Lifetime(b, fallback)
	start := b.Start()
	switch {
	case !start.Before(b.Time.Add(life)):
		return fmt.Errorf("start_ns %s is %s after its time %s (its lifetime %s or more)",
			start.Format(time.RFC3339Nano), start.Sub(b.Time), b.Time.Format(time.RFC3339Nano), life)
	case start.Before(b.Time.Add(-MaxUptime)):
		return fmt.Errorf("start_ns %s is more than %s before its time %s",
			start.Format(time.RFC3339Nano), MaxUptime, b.Time.Format(time.RFC3339Nano))
	case !b.Time.Before(now.Add(life)):
		return fmt.Errorf("its time %s is %s ahead of this host's clock (its lifetime %s or more): keep the hosts' clocks in sync",
			b.Time.Format(time.RFC3339Nano), b.Time.Sub(now), life)
	}
	return nil
}

// Live reports whether b is live at now: Plausible and younger than its
// Lifetime.
func Live(b store.Heartbeat, now time.Time, fallback time.Duration) bool {
	return Plausible(b, now, fallback) == nil && b.Time.After(now.Add(-Lifetime(b, fallback)))
}

// Decide applies the rule for self at now: of self and the live beats of
// self's shard and site, the earliest start wins, the instance id breaking
// ties. interval is self's, for beats that name none. Every implausible
// beat, of any shard or site, is reported in Ignored.
func Decide(beats []store.Heartbeat, self store.Heartbeat, now time.Time, interval time.Duration) Decision {
	var ignored []Ignored
	reported := map[string]bool{}
	for _, b := range beats {
		if err := Plausible(b, now, interval); err != nil && !reported[b.Instance] {
			reported[b.Instance] = true
			ignored = append(ignored, Ignored{Beat: b, Err: err})
		}
	}
	holder, live := self, 1
	seen := map[string]bool{self.Instance: true}
	for _, b := range beats {
		if b.Shard != self.Shard || b.Site != self.Site || seen[b.Instance] || !Live(b, now, interval) {
			continue
		}
		seen[b.Instance] = true
		live++
		if before(b, holder) {
			holder = b
		}
	}
	// The newest live beat of the holder, for its age in the reason.
	for _, b := range beats {
		if b.Instance == holder.Instance && b.Shard == self.Shard && b.Site == self.Site &&
			Live(b, now, interval) && b.Time.After(holder.Time) {
			holder = b
		}
	}
	d := Decision{Active: holder.Instance == self.Instance, Holder: holder, Live: live, Ignored: ignored,
		Disagree: disagree(beats, self, now, interval)}
	where := "shard " + self.Shard
	if self.Site != "" {
		where += " at site " + self.Site
	}
	switch {
	case d.Active && live == 1:
		d.Reason = fmt.Sprintf("active: no other live instance of %s", where)
	case d.Active:
		d.Reason = fmt.Sprintf("active: the earliest started of %d live instances of %s", live, where)
	default:
		d.Reason = fmt.Sprintf("standby: instance %s on host %s (started %s, heartbeat %s ago) probes %s; this one resumes once that heartbeat is %s old",
			holder.Instance, holder.Host, holder.Start().Format(time.RFC3339), now.Sub(holder.Time).Round(time.Millisecond), where,
			Lifetime(holder, interval))
	}
	return d
}

// disagree returns, when self lists sites, the newest live beat of each
// instance at another site that lists other sites, sorted by site and
// instance (a beat that lists none says nothing).
func disagree(beats []store.Heartbeat, self store.Heartbeat, now time.Time, interval time.Duration) []store.Heartbeat {
	if self.Sites == "" {
		return nil
	}
	newest := map[string]store.Heartbeat{}
	for _, b := range beats {
		if b.Site == self.Site || !Live(b, now, interval) {
			continue
		}
		if n, ok := newest[b.Instance]; !ok || b.Time.After(n.Time) {
			newest[b.Instance] = b
		}
	}
	var out []store.Heartbeat
	for _, b := range newest {
		if b.Sites != "" && b.Sites != self.Sites {
			out = append(out, b)
		}
	}
	slices.SortFunc(out, func(a, b store.Heartbeat) int {
		return cmp.Or(cmp.Compare(a.Site, b.Site), cmp.Compare(a.Instance, b.Instance))
	})
	return out
}

// before reports whether a wins over b: the earlier start, then the
// smaller instance id.
func before(a, b store.Heartbeat) bool {
	return cmp.Or(cmp.Compare(a.StartNS, b.StartNS), cmp.Compare(a.Instance, b.Instance)) < 0
}
