package load_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/internal/lanesim"
	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/policy/load"
	"github.com/lanewatch/lanewatch/probe"
	"github.com/lanewatch/lanewatch/sampler/page"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
)

// parse parses a config whose store and files are in dir.
func parse(t *testing.T, dir, text string) *config.Config {
	t.Helper()
	cfg, err := config.Parse(strings.NewReader(text), dir)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// openReader opens cfg's store to read, as policygen does.
func openReader(t *testing.T, cfg *config.Config) store.Store {
	t.Helper()
	st, err := config.OpenStore(context.Background(), cfg, config.Reader, nil, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func forHour(t *testing.T, st store.Store, cfg *config.Config, at time.Time) policy.File {
	t.Helper()
	f, _, err := load.ForHour(context.Background(), st, cfg.PolicyParams(), at, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// sameFiles fails t unless got holds want's files, byte for byte.
func sameFiles(t *testing.T, what string, got, want []policy.File) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d files; want %d", what, len(got), len(want))
	}
	for i := range want {
		if g, w := marshal(t, got[i]), marshal(t, want[i]); !bytes.Equal(g, w) {
			t.Errorf("%s, file %s:\n%s\nwant\n%s", what, want[i].Hour, g, w)
		}
	}
}

func marshal(t *testing.T, f policy.File) []byte {
	t.Helper()
	b, err := policy.Marshal(f)
	if err != nil {
		t.Fatal(fmt.Errorf("%s: %w", f.Hour, err))
	}
	return b
}

// The calibrated rule's live file from a store: the same whether the
// embedded file streams its probes in time order or must be read whole (an
// import appended older history late), and what policy.ForHourProbes makes
// of the store's probes of twice the window, lookback_days 0 (the default)
// included.
func TestForHourCalibratedReadsTheProbes(t *testing.T) {
	hist := lanesim.HistoryOptions{Start: time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC), Days: 40, Seed: 3,
		Lanes: []lanesim.HistoryLane{{Name: "free", Kind: "free"}, {Name: "paid", Kind: "paid"}}}
	var days [][]store.Probe
	if err := lanesim.History(hist, func(day []store.Probe, _ []lanesim.ProbeTruth) error {
		days = append(days, append([]store.Probe(nil), day...))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	write := func(path string, order []int) {
		st, err := file.Open(path, file.Options{})
		if err != nil {
			t.Fatal(err)
		}
		rec := store.NewRecorder(st, time.UTC)
		for _, i := range order {
			if _, err := rec.Record(context.Background(), days[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	inOrder := make([]int, len(days))
	late := make([]int, 0, len(days)) // days 10.. first, then 0..9
	for i := range days {
		inOrder[i] = i
		if i >= 10 {
			late = append(late, i)
		}
	}
	for i := range 10 {
		late = append(late, i)
	}
	write(filepath.Join(dir, "a.lp"), inOrder)
	write(filepath.Join(dir, "b.lp"), late)
	h := time.Date(2026, 11, 8, 14, 0, 0, 0, time.UTC)
	var files [][]byte
	for _, name := range []string{"a.lp", "b.lp"} {
		cfg := parse(t, dir, `store: {kind: file, path: `+name+`}
lanes:
  - {name: free, kind: free, api: openai, base_url: "http://127.0.0.1:1/v1", model: m}
  - {name: paid, kind: paid, api: openai, base_url: "http://127.0.0.1:1/v1", model: m}
policy:
  classes: [{name: c, deadline_s: 60, ceiling_tokens: 100, est_tokens: 10, coverage: 0.9}]
`)
		st := openReader(t, cfg)
		f := forHour(t, st, cfg, h)
		data := marshal(t, f)
		files = append(files, data)
		if name != "a.lp" {
			continue
		}
		if f.Rule != policy.RuleCalibrated || !bytes.Contains(data, []byte("coverage: 0.9\n")) {
			t.Errorf("not a calibrated file with the class's coverage:\n%s", data)
		}
		// lookback_days 14 (the config's default), 3, and 0, which only
		// Params can say and policy reads as the default 14: twice that
		// window of probes, 28 days.
		for _, tc := range []struct{ lookback, window int }{{14, 14}, {3, 3}, {0, 14}} {
			p := cfg.PolicyParams()
			p.LookbackDays = tc.lookback
			got, _, err := load.ForHour(context.Background(), st, p, h, nil)
			if err != nil {
				t.Fatal(err)
			}
			end := h.Add(time.Hour)
			basis, lookback := p.ReadHours(h)
			windows := []store.Window{{From: basis[0], To: end}}
			for _, c := range lookback {
				windows = append(windows, store.Window{From: c, To: c.Add(time.Hour)})
			}
			ps, _ := store.ReadProbes(context.Background(), st, store.Query{Windows: []store.Window{{From: end.AddDate(0, 0, -2*tc.window), To: end}}})
			hs, _ := store.ReadHourly(context.Background(), st, store.Query{Windows: windows})
			latest, _ := store.ReadProbes(context.Background(), st, store.Query{Windows: []store.Window{{From: end.Add(-3 * time.Hour), To: end}}})
			if g, w := marshal(t, got), marshal(t, policy.ForHourProbes(p, hs, ps, policy.States(latest, cfg.Location), h)); !bytes.Equal(g, w) {
				t.Errorf("lookback %d: load.ForHour:\n%s\npolicy.ForHourProbes of the store's probes:\n%s", tc.lookback, g, w)
			}
		}
	}
	if !bytes.Equal(files[0], files[1]) {
		t.Errorf("streamed:\n%s\nread whole:\n%s", files[0], files[1])
	}
}

// plainStore hides a store's ProbeScanner: its probes are then read whole
// with Probes, as from InfluxDB.
type plainStore struct{ store.Store }

// projected hands over a probe's fields only where the read names them
// (store.Query.Fields), the rest zero, as InfluxDB does: a policy that
// reads a field its read left out differs from one read in full.
type projected struct{ store.Store }

func (s projected) Read(ctx context.Context, q store.Query, r store.Reader) error {
	if q.Fields == nil || r.Probe == nil {
		return s.Store.Read(ctx, q, r)
	}
	next, has := r.Probe, func(k string) bool { return slices.Contains(q.Fields, k) }
	r.Probe = func(p store.Probe) error {
		if p.Outcome == store.OutcomeReserved { // the marker field alone: always read
			return next(store.Probe{Lane: p.Lane, Kind: p.Kind, Site: p.Site, Time: p.Time, Outcome: p.Outcome})
		}
		for k, v := range map[string]any{"queue_s": &p.QueueS, "gen_s": &p.GenS, "headers_s": &p.HeadersS, "connect_s": &p.ConnectS,
			"tokens": &p.Tokens, "ok": &p.OK, "outcome": &p.Outcome, "status": &p.Status, "quota_reset_s": &p.QuotaResetS} {
			if !has(k) {
				reflect.ValueOf(v).Elem().SetZero()
			}
		}
		if !has("quota_remaining") {
			p.QuotaRemaining, p.QuotaKnown = 0, false
		}
		return next(p)
	}
	return s.Store.Read(ctx, q, r)
}

// A live file is the same whether the store streams its probes in time
// order (the file store's index) or hands them over from a whole read, and
// whether or not it leaves out the fields the read does not name: random
// stores of 40 days, mostly in time order, with days imported late (in the
// window or before it), probes written twice, reservations, timeouts,
// HTTP errors and 429s (busy, or a quota spent), quota headers, under both
// rules.
func TestForHourStreamedIsForHourRead(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 40))
			dir := t.TempDir()
			w, err := file.Open(filepath.Join(dir, "s.lp"), file.Options{})
			if err != nil {
				t.Fatal(err)
			}
			rec := store.NewRecorder(w, time.UTC)
			start := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
			var days [][]store.Probe
			for d := range 40 {
				var day []store.Probe
				for m := 0; m < 24*60; m += 20 {
					for _, lane := range []string{"free", "paid"} {
						if r.IntN(10) == 0 {
							continue // a round without this lane
						}
						p := store.Probe{Lane: lane, Kind: lane,
							Time:   start.Add(time.Duration(d*24*60+m)*time.Minute + time.Duration(r.IntN(30))*time.Second),
							QueueS: r.ExpFloat64() * 4, GenS: 1, Tokens: 40, OK: true, Outcome: "ok", Status: 200}
						switch r.IntN(15) {
						case 0:
							p.OK, p.Outcome, p.QueueS, p.GenS, p.Tokens, p.Status = false, "timeout", 20, 0, 0, 0
						case 1:
							p.OK, p.Outcome, p.QueueS, p.GenS, p.Tokens, p.Status = false, store.OutcomeReserved, 0, 0, 0, 0
						case 2: // a 429: busy (a short Retry-After) or a spent quota, reset or not announced
							p.OK, p.Outcome, p.QueueS, p.GenS, p.Tokens, p.Status = false, store.OutcomeRateLimited, 0.2, 0, 0, 429
							p.QuotaResetS = []float64{0, 7, 3600}[r.IntN(3)]
							p.QuotaKnown, p.QuotaRemaining = r.IntN(2) == 0, 0
						case 3: // served, with the quota's headers: spent or not
							p.QuotaKnown, p.QuotaRemaining, p.QuotaResetS = true, int64(r.IntN(2)), 600
						case 4: // an HTTP error, a 429 among them
							p.OK, p.Outcome, p.QueueS, p.GenS, p.Tokens, p.Status = false, "http_error", 0.5, 0, 0, []int64{429, 500}[r.IntN(2)]
						}
						day = append(day, p)
						if r.IntN(40) == 0 { // written twice, the second wins
							p.QueueS += 3
							day = append(day, p)
						}
					}
				}
				days = append(days, day)
			}
			// Days [from, to) are imported after the others: before the
			// policies' windows (streamed) or in them (read whole).
			from := r.IntN(len(days))
			to := min(len(days), from+r.IntN(4))
			for i := range days {
				if i < from || i >= to {
					if _, err := rec.Record(context.Background(), days[i]); err != nil {
						t.Fatal(err)
					}
				}
			}
			for i := from; i < to; i++ {
				if _, err := rec.Record(context.Background(), days[i]); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			for _, rule := range []string{"calibrated", "max"} {
				cfg := parse(t, dir, `store: {kind: file, path: s.lp}
lanes:
  - {name: free, kind: free, api: openai, base_url: "http://127.0.0.1:1/v1", model: m}
  - {name: paid, kind: paid, api: openai, base_url: "http://127.0.0.1:1/v1", model: m}
policy:
  rule: `+rule+`
  classes: [{name: c, deadline_s: 30, ceiling_tokens: 100, est_tokens: 40, paid_usd_per_1k: 1}]
`)
				st := openReader(t, cfg)
				for range 4 {
					h := start.Add(time.Duration(24*30+r.IntN(24*11)) * time.Hour)
					a, b := marshal(t, forHour(t, st, cfg, h)), marshal(t, forHour(t, plainStore{st}, cfg, h))
					if !bytes.Equal(a, b) {
						t.Errorf("%s %s: streamed\n%s\nread whole\n%s", rule, h.Format(time.RFC3339), a, b)
					}
					if c := marshal(t, forHour(t, projected{st}, cfg, h)); !bytes.Equal(b, c) {
						t.Errorf("%s %s: read whole\n%s\nthe fields read alone\n%s", rule, h.Format(time.RFC3339), b, c)
					}
				}
			}
		})
	}
}

// The status page's policy table (the sampler's Policy: load.ForHour at
// now) after one 429 of a lane on 12 probes a day at 07:17: while the
// back-off runs the lane is quota_exhausted with its until; once it ended
// the page never shows that until beside eligible "no". A Retry-After of
// 7 s is a busy lane (eligible again); Retry-After 7 with a request window
// that resets in 7 minutes (until 07:24) is a spent quota: probe_failed,
// with no until, at 07:28. Under both rules: the live file is as of the
// instant asked, whether the store streams its probes or not.
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
		for _, rule := range []string{policy.RuleMax, policy.RuleCalibrated} {
			t.Run(tc.name+"/"+rule, func(t *testing.T) {
				dir := t.TempDir()
				cfg := parse(t, dir, `quotas: [{name: q, probes_per_day: 12}]
store: {kind: file, path: samples.lp}
lanes:
  - {name: free, kind: free, api: openai, base_url: "http://127.0.0.1:1/v1", model: m, quota: q}
policy:
  rule: `+rule+`
  classes: [{name: c, deadline_s: 60, ceiling_tokens: 100, est_tokens: 10}]
`)
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
					f := forHour(t, st, cfg, now)
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
				if !l.Until.IsZero() || strings.Contains(html, tc.until) || l.Reason == policy.ReasonQuotaExhausted {
					t.Errorf("at 07:28: %+v (until on the page: %v); want the back-off over", l, strings.Contains(html, tc.until))
				}
				if rule == policy.RuleMax && (l.Reason != tc.after || l.Eligible != tc.afterEligible) {
					t.Errorf("at 07:28: %+v; want %s, eligible %v", l, tc.after, tc.afterEligible)
				}
			})
		}
	}
}

// counted counts the reads of a file store, per measurement: each Read
// with an Hourly callback, and each with a Probe callback, is one.
type counted struct {
	*file.Store
	hourly, probes int
	newest         bool // the probes' read asked for each series' newest alone
}

func (c *counted) Read(ctx context.Context, q store.Query, r store.Reader) error {
	if r.Hourly != nil {
		c.hourly++
	}
	if r.Probe != nil {
		c.probes++
		c.newest = q.Newest
	}
	return c.Store.Read(ctx, q, r)
}

// A live or forecast file reads the store once: the hourly records and
// the probes once each (under max each series' newest alone), however far
// back the newest probe of a lane lies (a lane probed a day before, one
// probed in the hour, one never), under both rules. A lane whose newest probe is in the span read has its
// last_sample; one never probed is never_sampled.
func TestPolicyReadsTheStoreOnce(t *testing.T) {
	dir := t.TempDir()
	st, err := file.Open(filepath.Join(dir, "s.lp"), file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	rec := store.NewRecorder(st, time.UTC)
	for _, p := range []store.Probe{
		{Lane: "old", Kind: "free", Time: h.Add(-26 * time.Hour), OK: true, Outcome: "ok", Status: 200, QueueS: 2, GenS: 0.4, Tokens: 16},
		{Lane: "now", Kind: "free", Time: h.Add(7 * time.Minute), OK: true, Outcome: "ok", Status: 200, QueueS: 2, GenS: 0.4, Tokens: 16},
	} {
		if _, err := rec.Record(context.Background(), []store.Probe{p}); err != nil {
			t.Fatal(err)
		}
	}
	for _, rule := range []string{policy.RuleMax, policy.RuleCalibrated} {
		cfg := parse(t, dir, `lanes:
  - {name: old, kind: free, api: openai, base_url: "http://127.0.0.1:1/v1", model: m}
  - {name: now, kind: free, api: openai, base_url: "http://127.0.0.1:1/v1", model: m}
  - {name: never, kind: paid, api: openai, base_url: "http://127.0.0.1:1/v1", model: m}
policy:
  rule: `+rule+`
  classes: [{name: c, deadline_s: 60, ceiling_tokens: 100, est_tokens: 10}]
`)
		c := &counted{Store: st}
		f, _, err := load.ForHour(context.Background(), c, cfg.PolicyParams(), h.Add(30*time.Minute), nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.hourly != 1 || c.probes != 1 || c.newest != (rule == policy.RuleMax) {
			t.Errorf("%s: ForHour read the hourly records %d times and the probes %d times, newest alone %t; want once each, and the newest under max",
				rule, c.hourly, c.probes, c.newest)
		}
		want := map[string]string{"old": policy.ReasonNoRecentSample, "now": policy.ReasonOK, "never": policy.ReasonNeverSampled}
		for _, l := range f.Lanes {
			if l.Reason != want[l.Name] || l.LastSample.IsZero() != (l.Name == "never") {
				t.Errorf("%s: lane %+v; want %s", rule, l, want[l.Name])
			}
		}
		c = &counted{Store: st}
		if _, _, err := load.Forecast(context.Background(), c, cfg.PolicyParams(), h.Add(24*time.Hour), nil); err != nil {
			t.Fatal(err)
		}
		if c.hourly != 1 || c.probes != 1 {
			t.Errorf("%s: Forecast read the hourly records %d times and the probes %d times; want once each", rule, c.hourly, c.probes)
		}
		// The sampler's files after a round, the live one and the next
		// hour's forecast, come from one read and are ForHour's and
		// Forecast's, the next hour in the same day or the next.
		for _, at := range []time.Time{h.Add(30 * time.Minute), h.Add(9*time.Hour + 30*time.Minute)} {
			c = &counted{Store: st}
			got, err := load.LiveAndNext(context.Background(), c, cfg.PolicyParams(), at)
			if err != nil || c.hourly != 1 || c.probes != 1 || len(got) != 2 {
				t.Fatalf("%s: LiveAndNext at %s: %v; %d hourly and %d probe reads, %d files; want once each, 2", rule, at, err, c.hourly, c.probes, len(got))
			}
			next := at.Add(time.Hour).Truncate(time.Hour)
			day, _, err := load.Forecast(context.Background(), st, cfg.PolicyParams(), next, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := []policy.File{forHour(t, st, cfg, at), day[next.Hour()]}
			sameFiles(t, fmt.Sprintf("%s: LiveAndNext at %s", rule, at), got, want)
		}
		// A site's view reads it alone; a site without a record in the
		// span (a -site typo) then looks up the sites there.
		for _, tc := range []struct {
			site   string
			hourly int
		}{{"", 1}, {"fra1", 2}} {
			c = &counted{Store: st}
			_, seen, err := load.ForHour(context.Background(), c, cfg.PolicyParams(), h, []string{tc.site})
			if err != nil || c.hourly != tc.hourly || c.probes != 1 || !slices.Equal(seen, []string{""}) {
				t.Errorf("%s: site %q: %v; %d hourly and %d probe reads, sites %q; want %d and 1, the untagged site", rule, tc.site, err, c.hourly, c.probes, seen, tc.hourly)
			}
		}
	}
}

// The live read reaches as far back as last_sample and back-offs need,
// beyond the hours whose records it reads: a lane last probed a day past
// its lookback still has its last_sample, and a 429 that asked for 26 h
// (the longest back-off) a little over a day before the hour still keeps
// its lane out, even with lookback_days 0. And as far back as a lane's
// basis, when that lies further: in a quota group of two lanes probed once
// a day (a basis of 49 h) with lookback_days 0, a probe in the first hour
// of the basis is its lane's last_sample and its basis record.
func TestForHourReachesTheNewestProbes(t *testing.T) {
	h := time.Date(2026, 11, 20, 14, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		lookback int
		perDay   int // the quota group of lanes a and b: probes a day (0: no group)
		probe    store.Probe
		reason   string
		until    time.Time
	}{
		{"a day past the lookback", 7, 0,
			store.Probe{Lane: "a", Kind: "free", Time: h.Add(-7*24*time.Hour - 20*time.Hour), QueueS: 2, GenS: 1, Tokens: 16, OK: true, Outcome: "ok"},
			policy.ReasonNoRecentSample, time.Time{}},
		{"a back-off of 26 h", 0, 0,
			store.Probe{Lane: "a", Kind: "free", Time: h.Add(-25*time.Hour - 30*time.Minute), Outcome: store.OutcomeRateLimited, Status: 429, QuotaResetS: 26 * 3600},
			policy.ReasonQuotaExhausted, h.Add(30 * time.Minute)},
		{"a basis of 49 h", 0, 1,
			store.Probe{Lane: "a", Kind: "free", Time: h.Add(-49*time.Hour + 10*time.Minute), QueueS: 2, GenS: 1, Tokens: 16, OK: true, Outcome: "ok"},
			policy.ReasonOK, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			st, err := file.Open(filepath.Join(dir, "s.lp"), file.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := store.NewRecorder(st, time.UTC).Record(context.Background(), []store.Probe{tc.probe}); err != nil {
				t.Fatal(err)
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			lanes := `lanes:
  - {name: a, kind: free, api: openai, base_url: "http://127.0.0.1:1/v1", model: m}
`
			if tc.perDay > 0 {
				lanes = fmt.Sprintf(`quotas: [{name: q, probes_per_day: %d}]
lanes:
  - {name: a, kind: free, api: openai, base_url: "http://127.0.0.1:1/v1", model: m, quota: q}
  - {name: b, kind: free, api: openai, base_url: "http://127.0.0.1:1/v1", model: m, quota: q}
`, tc.perDay)
			}
			cfg := parse(t, dir, fmt.Sprintf(`store: {kind: file, path: s.lp}
%spolicy: {rule: max, lookback_days: %d}
`, lanes, tc.lookback))
			l := forHour(t, openReader(t, cfg), cfg, h).Lanes[0]
			if !l.LastSample.Equal(tc.probe.Time) || l.Reason != tc.reason || !l.Until.Equal(tc.until) {
				t.Errorf("last_sample %v, reason %s, until %v; want %v, %s, %v", l.LastSample, l.Reason, l.Until, tc.probe.Time, tc.reason, tc.until)
			}
		})
	}
}

// A forecast from a store is what policy.ForecastProbes makes of the
// store's records and probes, under both rules: the records of the
// lookback days (the earliest day's first hour too), the calibrated rule's
// probes of twice its window, and each lane's newest probe before the day.
func TestForecastIsForecastProbesOfTheStore(t *testing.T) {
	days := zoneHistory(t)
	dir := t.TempDir()
	st := recordIn(t, filepath.Join(dir, "x.lp"), time.UTC, days)
	defer st.Close()
	day := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	ctx := context.Background()
	all := store.Between(day.AddDate(0, 0, -30), day.AddDate(0, 0, 2))
	recs, err := store.ReadHourly(ctx, st, all)
	if err != nil {
		t.Fatal(err)
	}
	probes, err := store.ReadProbes(ctx, st, all)
	if err != nil {
		t.Fatal(err)
	}
	newest := map[[2]string]store.Probe{}
	for _, pr := range probes {
		if pr.Time.Before(day) {
			newest[[2]string{pr.Lane, pr.Site}] = pr
		}
	}
	states := policy.States(slices.Collect(maps.Values(newest)), time.UTC)
	for _, rule := range []string{policy.RuleMax, policy.RuleCalibrated} {
		t.Run(rule, func(t *testing.T) {
			p := zoneConfig(t, dir, "UTC", rule).PolicyParams()
			var window []store.Probe // the calibrated rule's, twice lookback_days before the day
			for _, pr := range probes {
				if !pr.Time.Before(day.AddDate(0, 0, -2*p.LookbackDays)) {
					window = append(window, pr)
				}
			}
			got, _, err := load.Forecast(ctx, st, p, day, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := policy.ForecastProbes(p, recs, window, states, day)
			sameFiles(t, "load.Forecast against policy.ForecastProbes of the store", got, want)
		})
	}
}

// The sampler's two files after a round come from one read that spans
// both, yet each is what its own read makes: on ten days of three lanes,
// under both rules, the live file is ForHour's and the next hour's is
// Forecast's, the next hour in the same day (the forecast's day starts
// before the live window, so the read reaches further back than the live
// rule learns from) or the next.
func TestLiveAndNextIsForHourAndForecast(t *testing.T) {
	days := zoneHistory(t)
	dir := t.TempDir()
	st := recordIn(t, filepath.Join(dir, "x.lp"), time.UTC, days)
	defer st.Close()
	ctx := context.Background()
	for _, rule := range []string{policy.RuleMax, policy.RuleCalibrated} {
		p := zoneConfig(t, dir, "UTC", rule).PolicyParams()
		for _, at := range []time.Time{time.Date(2026, 11, 29, 14, 30, 0, 0, time.UTC), time.Date(2026, 11, 29, 23, 30, 0, 0, time.UTC)} {
			got, err := load.LiveAndNext(ctx, st, p, at)
			if err != nil {
				t.Fatal(err)
			}
			live, _, err := load.ForHour(ctx, st, p, at, nil)
			if err != nil {
				t.Fatal(err)
			}
			next := at.Add(time.Hour).Truncate(time.Hour)
			day, _, err := load.Forecast(ctx, st, p, next, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := []policy.File{live, day[next.Hour()]}
			sameFiles(t, fmt.Sprintf("%s: LiveAndNext at %s", rule, at), got, want)
		}
	}
}
