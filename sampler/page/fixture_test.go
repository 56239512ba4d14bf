package page

import (
	"bytes"
	"flag"
	"html/template"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/report/swings"
	"github.com/lanewatch/lanewatch/store"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden and docs/status.png")

// fixedNow is the time of every test page: mid-round on a Monday in UTC.
var fixedNow = time.Date(2026, 11, 30, 14, 7, 12, 0, time.UTC)

// at is fixedNow's day at hh:mm UTC.
func at(hh, mm int) time.Time { return time.Date(2026, 11, 30, hh, mm, 0, 0, time.UTC) }

// every10 is n probes of a lane every 10 minutes back from 14:00, newest
// first, with the queue and gen seconds given by f.
func every10(n int, f func(i int) Probe) []Probe {
	ps := make([]Probe, n)
	for i := range ps {
		p := f(i)
		p.Time = at(14, 0).Add(-time.Duration(i) * 10 * time.Minute)
		ps[i] = p
	}
	return ps
}

// testPage is a realistic page: an ok free lane in a budget group, a free
// lane backing off after a 429 with its quota spent (and a censored
// timeout before that), a paid lane that announces no quota; two quota
// groups; the hour's policy file with two classes; the given chart.
func testPage(chart template.HTML) Page {
	return Page{
		Now:       fixedNow,
		Location:  time.UTC,
		Site:      "eu-1",
		Shard:     "1/2",
		Schedule:  "*/10 * * * *",
		NextRound: at(14, 10),
		Store:     "file /var/lib/lanewatch/samples.lp",
		Healthy:   true,
		Lanes: []Lane{
			{
				Name: "groq-llama", Kind: "free", Quota: "groq",
				Probes: every10(6, func(i int) Probe {
					return Probe{Outcome: "ok", OK: true, QueueS: 0.8 + 0.15*float64(i), GenS: 2.41 + 0.1*float64(i%3)}
				}),
				QuotaKnown: true, QuotaRemaining: 842, QuotaReset: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
			},
			{
				Name: "gemini-flash", Kind: "free", Quota: "google",
				Probes: []Probe{
					{Time: at(14, 0), Outcome: "rate_limited"},
					{Time: at(13, 50), Outcome: "timeout", QueueS: 30, Censored: true},
					{Time: at(13, 40), Outcome: "ok", OK: true, QueueS: 12.37, GenS: 4.02},
					{Time: at(13, 30), Outcome: "ok", OK: true, QueueS: 9.8, GenS: 3.9},
					{Time: time.Date(2026, 11, 29, 23, 50, 0, 0, time.UTC), Outcome: "ok", OK: true, QueueS: 3.1, GenS: 3.7},
				},
				QuotaKnown: true, QuotaRemaining: 0, QuotaReset: at(14, 30),
				BackoffUntil: at(14, 30),
				Skip:         "quota until 14:30",
				Why:          "rate_limited (HTTP 429): Retry-After 1800",
			},
			{
				Name: "openai-mini", Kind: "paid",
				Probes: every10(6, func(i int) Probe {
					return Probe{Outcome: "ok", OK: true, QueueS: 0.42 + 0.03*float64(i%4), GenS: 1.18}
				}),
			},
		},
		Groups: []Group{
			{Name: "groq", PerDay: 144, Spent: 85, Left: 59, Timezone: "UTC"},
			{Name: "google", PerDay: 48, Spent: 48, Left: 0, Timezone: "America/Los_Angeles"},
		},
		PolicyPath:    "/srv/lanewatch/policies/2026-11-30T14.yaml",
		PolicyWritten: at(14, 3),
		Policy: &policy.File{
			Hour: "2026-11-30T14", Timezone: "UTC", Basis: policy.BasisLive, Sites: []string{"eu-1", "us-1"}, Records: 312,
			Lanes: []policy.Lane{
				{Name: "groq-llama", Kind: "free", Eligible: true, Reason: policy.ReasonOK, NextQueueS: 2.31, TokPerS: 41.5, Samples: 42, Failures: 0, LastSample: at(14, 0)},
				{Name: "gemini-flash", Kind: "free", Reason: policy.ReasonQuotaExhausted, NextQueueS: 30, TokPerS: 61.25, Samples: 40, Failures: 2, LastSample: at(14, 0), Until: at(14, 30)},
				{Name: "openai-mini", Kind: "paid", Eligible: true, Reason: policy.ReasonOK, NextQueueS: 0.84, TokPerS: 88.2, Samples: 42, LastSample: at(14, 0)},
			},
			Classes: []policy.Class{
				{Name: "interactive", DeadlineS: 3, Lanes: []string{"openai-mini"}},
				{Name: "batch", DeadlineS: 600, Lanes: []string{"groq-llama", "openai-mini"}},
			},
		},
		Chart:     chart,
		ChartDays: 7,
	}
}

// tinyChart is a stand-in chart for golden files: small and independent of
// package swings' drawing.
const tinyChart = template.HTML(`<svg width="200pt" height="100pt" viewBox="0 0 200 100" xmlns="http://www.w3.org/2000/svg"><path d="M0,90L100,20L200,60" style="fill:none;stroke:#1f77b4"/></svg>`)

// swingsChart draws a real chart with package swings over a week of hourly
// records of the lanes (a daily curve per lane, some censored hours of
// gemini-flash), as the sampler does.
func swingsChart(t testing.TB, lanes ...string) template.HTML {
	t.Helper()
	to := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	from := to.AddDate(0, 0, -7)
	var recs []store.Hourly
	var sl []swings.Lane
	for li, name := range lanes {
		kind := "free"
		if li == len(lanes)-1 {
			kind = "paid"
		}
		sl = append(sl, swings.Lane{Name: name, Kind: kind})
		for h := from; h.Before(to); h = h.Add(time.Hour) {
			q := 0.6 + float64(li)*0.9 + 0.05*float64(h.Day()%3)
			if hh := h.Hour(); hh >= 8 && hh <= 17 {
				q *= 4 - float64(li)
			}
			r := store.Hourly{Lane: name, Kind: kind, Hour: h, WorstQueueS: q, Samples: 6}
			if li == 1 && h.Hour() == 13 && h.Day()%2 == 0 {
				r.Failures, r.WorstCensoredS = 1, 30
			}
			recs = append(recs, r)
		}
	}
	rep := swings.Compute(recs, swings.Options{
		Location: time.UTC, From: from, To: to, Days: 7, Lanes: sl,
		Classes: []swings.ClassLine{{Name: "interactive", DeadlineS: 3}, {Name: "batch", DeadlineS: 600}},
	})
	var b bytes.Buffer
	if err := swings.WriteChart(&b, rep, swings.ChartOptions{Format: "svg"}); err != nil {
		t.Fatal(err)
	}
	return template.HTML(b.String()) // with its <?xml declaration, as the sampler hands it over
}
