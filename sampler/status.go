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

// Chart draws the status page's chart, so that the sampler does not depend
// on the report that draws it.
type Chart interface {
	// WriteChart writes the chart of the hourly records of [from, to),
	// days days long, as an SVG document.
	WriteChart(w io.Writer, hourly []store.Hourly, from, to time.Time, days int) error
}

// Status page figures.
const (
	statusProbes    = 6 // last probes shown per lane
	statusChartDays = 7
)

// Status reads from the store what the status page shows: per owned lane
// its last probes, quota and back-off, whether the next round skips it; the
// budget of each quota group today; the swings chart of the last 7 days
// (the caller adds the hour's policy file). A part that cannot
// be read is left out and said in the page (a status page must render when
// the store is down, too).
func (s *Sampler) Status(ctx context.Context) page.Page {
	now := s.now()
	p := page.Page{Now: now, Location: s.loc, Site: s.site, Schedule: s.schedule, ChartDays: statusChartDays, Healthy: true}
	if s.shard.Count > 1 {
		p.Shard = s.shard.String()
	}
	// One read serves the plan and the page: the last day of probes of
	// every owned lane, and each one's newest.
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
	quotaOf := map[string]string{}
	for _, g := range s.groups {
		for _, l := range g.Lanes {
			quotaOf[l] = g.Name
		}
	}
	for _, name := range s.owned {
		l := page.Lane{Name: name, Kind: s.targets[name].Kind, Quota: quotaOf[name]}
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
			if u, ok := budget.Backoff(pr, s.loc); ok && u.After(now) {
				l.BackoffUntil = u
			}
		}
		if sk, ok := skips[name]; ok {
			l.Skip = sk.Reason
			if sk.Reason == budget.SkipQuota {
				l.Skip = "quota until " + sk.Until.In(store.OrUTC(s.loc)).Format("15:04")
			}
		}
		if len(ps) > 0 && !ps[0].OK {
			l.Why = s.why(ps[0])
		}
		p.Lanes = append(p.Lanes, l)
	}
	// The groups of the lanes this shard owns, as the plan counts them
	// (none when the store could not be read).
	for _, g := range s.groups {
		if sent, ok := plan.Sent[g.Name]; ok {
			p.Groups = append(p.Groups, page.Group{Name: g.Name, PerDay: g.ProbesPerDay, Spent: sent,
				Left: max(g.ProbesPerDay-sent, 0), Timezone: g.Location.String()})
		}
	}
	from := now.AddDate(0, 0, -statusChartDays)
	if s.chart == nil {
		return p
	}
	if hs, err := store.ReadHourly(ctx, s.store, store.Between(from, now)); err == nil && len(hs) > 0 {
		var svg bytes.Buffer
		if err := s.chart.WriteChart(&svg, hs, from, now, statusChartDays); err == nil {
			// Trusted: the Chart (package swings, through config) drew it from
			// numbers and lane names, which the config limits to [a-z0-9_-].
			p.Chart = template.HTML(svg.String())
		}
	}
	return p
}

// detail is what a probe said (probe.Sample.Detail, which the store does
// not keep), at its point's time.
type detail struct {
	at   time.Time
	text string
}

// why says why the stored probe pr failed: its outcome, its HTTP status,
// and what the probe said when this process made it.
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
