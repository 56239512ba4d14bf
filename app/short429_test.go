package app_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/app"
	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/probe"
	"github.com/lanewatch/lanewatch/sampler/page"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
)

// The status page's policy table (the sampler's Policy: app.ForHour at
// now) after one 429 of a lane on 12 probes a day at 07:17: while the
// back-off runs the lane is quota_exhausted with its until; once it ended
// the page never shows that until beside eligible "no". A Retry-After of
// 7 s is a busy lane (eligible again); Retry-After 7 with a request window
// that resets in 7 minutes (until 07:24) is a spent quota: probe_failed,
// with no until, at 07:28.
func TestStatusPolicyAfterOne429(t *testing.T) {
	day := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	at := func(h, m int) time.Time { return day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute) }
	for _, tc := range []struct {
		name          string
		waitS         float64
		during        time.Time
		until         string
		after         string // reason at 07:28
		afterEligible bool
	}{
		{"Retry-After 7", 7, at(7, 17).Add(3 * time.Second), "2026-12-01T07:17:07Z", policy.ReasonOK, true},
		{"until 07:24", 420, at(7, 20), "2026-12-01T07:24:00Z", policy.ReasonProbeFailed, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg, err := config.Parse(strings.NewReader(`quotas: [{name: q, probes_per_day: 12}]
store: {kind: file, path: samples.lp}
lanes:
  - {name: free, kind: free, api: openai, base_url: "http://127.0.0.1:1/v1", model: m, quota: q}
policy:
  rule: max
  classes: [{name: c, deadline_s: 60, ceiling_tokens: 100, est_tokens: 10}]
`), dir)
			if err != nil {
				t.Fatal(err)
			}
			st, err := file.Open(filepath.Join(dir, "samples.lp"), file.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			rec := store.NewRecorder(st, time.UTC)
			for _, p := range []store.Probe{
				{Lane: "free", Kind: "free", Time: at(5, 17), OK: true, Outcome: string(probe.OK), Status: 200, QueueS: 2, GenS: 0.4, Tokens: 16},
				{Lane: "free", Kind: "free", Time: at(7, 17), Outcome: string(probe.RateLimited), Status: 429, QuotaResetS: tc.waitS},
			} {
				if _, err := rec.Record(context.Background(), []store.Probe{p}); err != nil {
					t.Fatal(err)
				}
			}
			live := func(now time.Time) (policy.Lane, string) {
				f, err := app.ForHour(context.Background(), st, cfg, now, nil)
				if err != nil {
					t.Fatal(err)
				}
				var html bytes.Buffer
				if err := page.Render(&html, page.Page{Now: now, Healthy: true, Policy: &f}); err != nil {
					t.Fatal(err)
				}
				return f.Lanes[0], html.String()
			}
			l, html := live(tc.during)
			if l.Reason != policy.ReasonQuotaExhausted || l.Until.Format(time.RFC3339) != tc.until || !strings.Contains(html, tc.until) {
				t.Errorf("during the back-off: %+v; want quota_exhausted until %s on the page", l, tc.until)
			}
			l, html = live(at(7, 28))
			if l.Reason != tc.after || l.Eligible != tc.afterEligible || !l.Until.IsZero() || strings.Contains(html, tc.until) {
				t.Errorf("at 07:28: %+v (until on the page: %v); want %s, eligible %v, no until", l, strings.Contains(html, tc.until), tc.after, tc.afterEligible)
			}
		})
	}
}
