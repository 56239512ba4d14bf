package sampler

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lanewatch/lanewatch/sampler/duty"
	"github.com/lanewatch/lanewatch/store"
)

// Identity is who a sampler daemon is, for its heartbeats.
type Identity struct {
	Instance string // unique per process
	Host     string
	Version  string
	Start    time.Time
	Interval time.Duration // the schedule's
}

// heartbeatReach is the least span of heartbeats a round reads on either
// side of now.
const heartbeatReach = 15 * time.Minute

// heartbeatTimeout bounds a round's heartbeat write and read.
const heartbeatTimeout = 10 * time.Second

// dutyState is what the rounds of a sampler with an Identity keep.
type dutyState struct {
	id           *Identity
	last         *duty.Decision // the last decision made from a read
	overlapUntil time.Time      // when the last instance of the shard seen beside this one goes stale
	sitesErr     error          // budget.Input.SitesErr from the last read
}

// SetIdentity makes the rounds write id's heartbeat and apply package duty.
func (s *Sampler) SetIdentity(id Identity) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.duty.id = &id
}

func (s *Sampler) heartbeat(id *Identity, now time.Time) store.Heartbeat {
	return store.Heartbeat{Instance: id.Instance, Shard: s.opt.Shard.String(), Site: s.opt.Site, Time: now.Round(0).UTC(),
		Host: id.Host, StartNS: id.Start.UnixNano(), Version: id.Version, IntervalS: id.Interval.Seconds(),
		Sites: strings.Join(s.accountSites(), ",")}
}

// accountSites returns the sites this sampler shares its account quotas
// with, sorted.
func (s *Sampler) accountSites() []string {
	var sites []string
	for _, g := range s.opt.Groups {
		sites = append(sites, g.Sites...)
	}
	slices.Sort(sites)
	return slices.Compact(sites)
}

// checkDuty writes this round's heartbeat, reads those of its site and of
// the sites it shares account quotas with, and decides whether the round
// at now probes (nil without an Identity); a failed read keeps the last
// decision.
func (s *Sampler) checkDuty(ctx context.Context, now time.Time) (*duty.Decision, error) {
	s.mu.Lock()
	id := s.duty.id
	s.mu.Unlock()
	if id == nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), heartbeatTimeout)
	defer cancel()
	self := s.heartbeat(id, now)
	werr := s.opt.Store.Write(ctx, store.Batch{Heartbeats: []store.Heartbeat{self}})
	var beats []store.Heartbeat
	var rerr error
	if !s.opt.Store.Status().Exclusive {
		reach := 2 * max(id.Interval, heartbeatReach)
		sites := append(s.accountSites(), s.opt.Site)
		beats, rerr = store.ReadHeartbeats(ctx, s.opt.Store, store.Query{Windows: []store.Window{{From: now.Add(-reach), To: now.Add(reach)}}, Sites: sites})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if rerr != nil {
		d := s.duty.last
		if d == nil {
			d = &duty.Decision{Active: true, Holder: self, Live: 1, Reason: "active: the heartbeats cannot be read"}
		}
		return d, fmt.Errorf("read heartbeats: %w", rerr)
	}
	d := duty.Decide(beats, self, now, id.Interval)
	s.duty.last = &d
	s.duty.sitesErr = nil
	if len(d.Disagree) > 0 {
		b := d.Disagree[0]
		s.duty.sitesErr = fmt.Errorf("site %s (instance %s) shares the account quotas with the sites %s, this one with %s", b.Site, b.Instance, b.Sites, self.Sites)
	}
	if d.Live > 1 {
		s.duty.overlapUntil = now.Add(duty.Lifetime(self, id.Interval))
	}
	if werr != nil {
		return &d, fmt.Errorf("write heartbeat: %w", werr)
	}
	return &d, nil
}

// healing returns the lane-hours of the probes stored lately, which an
// active round rebuilds while another instance of the shard is or was
// lately live: the other writer may have clobbered them.
func (s *Sampler) healing(stored []store.Probe, now time.Time) []store.LaneHour {
	s.mu.Lock()
	id, until := s.duty.id, s.duty.overlapUntil
	s.mu.Unlock()
	if id == nil || !now.Before(until) {
		return nil
	}
	from := now.Add(-2*id.Interval - s.settleWithin())
	var out []store.LaneHour
	for _, p := range stored {
		if !p.Time.Before(from) {
			out = append(out, store.LaneHour{Lane: p.Lane, Site: p.Site, Hour: p.Time})
		}
	}
	return out
}
