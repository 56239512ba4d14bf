package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/sampler"
	"github.com/lanewatch/lanewatch/sampler/duty"
	"github.com/lanewatch/lanewatch/store"
)

// newIdentity is this daemon's identity for its heartbeats; its interval
// is the schedule's longest gap plus the jitter.
func newIdentity(cfg *config.Config, start time.Time) sampler.Identity {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	var suffix [4]byte
	_, _ = rand.Read(suffix[:]) // never fails (crypto/rand)
	_, longest := config.Gaps(cfg.Schedule, cfg.Location, start)
	return sampler.Identity{
		Instance: fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(suffix[:])),
		Host:     host,
		Version:  buildVersion(),
		Start:    start,
		Interval: longest + cfg.Jitter.D(),
	}
}

// buildVersion is the module version, with the VCS revision when recorded.
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " " + s.Value[:12]
		}
	}
	return v
}

// logDuty logs what a round's heartbeat said and reports whether the round
// stood by.
func (d *daemon) logDuty(r *sampler.Round, wasStandby bool) bool {
	if r.DutyErr != nil {
		d.log.Warn("heartbeat: "+r.DutyErr.Error()+" (the last decision stands)", "err", r.DutyErr)
	}
	if r.Duty == nil {
		return false
	}
	for _, ig := range r.Duty.Ignored {
		if b := ig.Beat; d.firstTime("ignored " + b.Instance) {
			d.log.Warn("heartbeat ignored: no sampler could have written it: "+ig.Err.Error(),
				"instance", b.Instance, "host", b.Host, "shard", b.Shard, "site", b.Site)
		}
	}
	d.logSites(r.Duty.Disagree)
	h := r.Duty.Holder
	if !r.Duty.Active {
		d.log.Error(r.Duty.Reason, "active_instance", h.Instance, "active_host", h.Host,
			"active_started", h.Start().Format(time.RFC3339), "shard", h.Shard, "site", h.Site)
		return true
	}
	if wasStandby {
		d.log.Info("resuming: no earlier-started instance of the shard is live; "+r.Duty.Reason, "live", r.Duty.Live)
	}
	return false
}

func (d *daemon) startHeartbeat(start time.Time) {
	id := newIdentity(d.cfg, start)
	d.s.SetIdentity(id)
	d.metrics.interval.Set(id.Interval.Seconds())
	d.log.Info("heartbeat", "instance", id.Instance, "host", id.Host, "version", id.Version,
		"live_for", duty.Lifetime(store.Heartbeat{}, id.Interval).String(), "measurement", store.MeasurementHeartbeat)
}

// logSites logs, once while it lasts, each site that lists other sites.
func (d *daemon) logSites(disagree []store.Heartbeat) {
	d.mu.Lock()
	defer d.mu.Unlock()
	mine := strings.Join(slices.Sorted(slices.Values(d.cfg.Sites)), ",")
	now := map[string]bool{}
	for _, b := range disagree {
		key := b.Site + " " + b.Sites
		now[key] = true
		if d.disagree[key] {
			continue
		}
		d.log.Error(fmt.Sprintf("sites disagree: site %s shares the account quotas with the sites %s, this one with %s; "+
			"their lanes are not probed until every site lists the same sites", b.Site, b.Sites, mine),
			"other_site", b.Site, "other_sites", b.Sites, "sites", mine, "instance", b.Instance, "host", b.Host)
	}
	if len(d.disagree) > 0 && len(now) == 0 {
		d.log.Info("sites agree: every site sharing the account quotas lists the same sites; their lanes are probed again", "sites", mine)
	}
	d.disagree = now
}

// maxTold bounds what firstTime remembers: past it, it forgets all.
const maxTold = 1024

// firstTime reports whether key was not logged yet, and remembers it.
func (d *daemon) firstTime(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.told[key] {
		return false
	}
	if len(d.told) >= maxTold {
		clear(d.told)
	}
	d.told[key] = true
	return true
}
