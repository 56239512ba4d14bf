package sampler

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"io"
	"slices"
	"time"

	"github.com/lanewatch/lanewatch/probe"
	"github.com/lanewatch/lanewatch/sampler/budget"
	"github.com/lanewatch/lanewatch/sampler/page"
	"github.com/lanewatch/lanewatch/store"
)

// Chart draws the status page's chart: that of the hourly records of
// [from, to), days days long, as an SVG document.
type Chart interface {
	WriteChart(w io.Writer, hourly []store.Hourly, from, to time.Time, days int) error
}

const (
	statusProbes    = 6 // last probes shown per lane
	statusChartDays = 7
)

// Status reads from the store what the status page shows but the policy
// file; a part that cannot be read is said in the page.
func (s *Sampler) Status(ctx context.Context) page.Page {
	now := s.opt.Now()
	p := page.Page{Now: now, Location: s.opt.Location, Site: s.opt.Site, Schedule: s.opt.Schedule, ChartDays: statusChartDays, Healthy: true}
	if s.opt.Shard.Count > 1 {
		p.Shard = s.opt.Shard.String()
	}
	m := s.meter(ctx, now, now.Add(-24*time.Hour), now)
	if m.err != nil {
		p.Healthy, p.Problem = false, "store: "+m.err.Error()
	}
	plan := s.decide(now, false, m, s.owned)
	skips := map[string]budget.Skip{}
	for _, sk := range plan.Skip {
		skips[sk.Lane] = sk
	}
	byLane := map[string][]store.Probe{}
	for _, pr := range m.probes {
		byLane[pr.Lane] = append(byLane[pr.Lane], pr)
	}
	for _, name := range s.owned {
		l := page.Lane{Name: name, Kind: s.targets[name].Kind}
		if gi, ok := s.groupOf[name]; ok {
			l.Quota = s.opt.Groups[gi].Name
		}
		ps := byLane[name]
		slices.Reverse(ps)
		for _, pr := range ps[:min(len(ps), statusProbes)] {
			l.Probes = append(l.Probes, page.Probe{Time: pr.Time, Outcome: pr.Outcome, OK: pr.OK, QueueS: pr.QueueS,
				Censored: !pr.OK && pr.Outcome == string(probe.Timeout) && pr.GenS == 0 && pr.QueueS > 0, GenS: pr.GenS})
		}
		for _, pr := range m.latest {
			if pr.Lane != name {
				continue
			}
			l.QuotaKnown, l.QuotaRemaining = pr.QuotaKnown, pr.QuotaRemaining
			if pr.QuotaResetS > 0 {
				l.QuotaReset = pr.Time.Add(time.Duration(pr.QuotaResetS * float64(time.Second)))
			}
			if u, ok := budget.Backoff(pr, s.opt.Location); ok && u.After(now) {
				l.BackoffUntil = u
			}
		}
		if sk, ok := skips[name]; ok {
			l.Skip = sk.Reason
			if sk.Reason == budget.SkipQuota {
				l.Skip = "quota until " + sk.Until.In(store.OrUTC(s.opt.Location)).Format("15:04")
			}
		}
		if len(ps) > 0 && !ps[0].OK {
			l.Why = s.why(ps[0])
		}
		p.Lanes = append(p.Lanes, l)
	}
	for _, g := range s.opt.Groups {
		if sent, ok := plan.Sent[g.Name]; ok {
			p.Groups = append(p.Groups, page.Group{Name: g.Name, PerDay: g.ProbesPerDay, Spent: sent,
				Left: max(g.ProbesPerDay-sent, 0), Timezone: g.Location.String()})
		}
	}
	from := now.AddDate(0, 0, -statusChartDays)
	if s.opt.Chart == nil {
		return p
	}
	if hs, err := store.ReadHourly(ctx, s.opt.Store, store.Between(from, now)); err == nil && len(hs) > 0 {
		var svg bytes.Buffer
		if err := s.opt.Chart.WriteChart(&svg, hs, from, now, statusChartDays); err == nil {
			// Trusted: drawn from numbers and lane names ([a-z0-9_-]).
			p.Chart = template.HTML(svg.String())
		}
	}
	return p
}

// detail is what a probe said (the store does not keep it), at its time.
type detail struct {
	at   time.Time
	text string
}

// why says why the stored probe pr failed.
func (s *Sampler) why(pr store.Probe) string {
	w := pr.Outcome
	if pr.Status != 0 {
		w += fmt.Sprintf(" (HTTP %d)", pr.Status)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.detail[pr.Lane]; d.at.Equal(pr.Time) && d.text != "" {
		w += ": " + d.text
	}
	return w
}
