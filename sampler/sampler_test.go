package sampler_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/probe"
	"github.com/lanewatch/lanewatch/sampler"
	"github.com/lanewatch/lanewatch/sampler/shard"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
)

// newSampler returns the Sampler of cfg's shard sh (the config's when
// sh.Count is 0) on st, as cmd/sampler wires it.
func newSampler(cfg *config.Config, st store.Store, lookupEnv func(string) (string, bool), sh config.Shard) (*sampler.Sampler, error) {
	o, err := cfg.SamplerOptions(st, lookupEnv, sh)
	if err != nil {
		return nil, err
	}
	return sampler.New(o), nil
}

// lane is a test server: an OpenAI-compatible stream whose first token
// comes after delay (or never, when hang), counting the requests it gets.
type lane struct {
	delay map[string]time.Duration // by model
	hang  map[string]bool
	// redirect, by model: 307 or 308 to the request's own URL instead of
	// a stream (setRedirect).
	redirect map[string]int
	hits     atomic.Int64
	mu       sync.Mutex // guards delay, hang and redirect once requests are in flight
	// onHit, when set, is called with each request's number (from 1) as
	// the request arrives, before any delay: a test can act on what the
	// server saw rather than on its own clock.
	onHit func(n int64)
}

// set changes a model's delay while requests of abandoned rounds may still
// be in flight.
func (l *lane) set(model string, d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.delay[model] = d
}

// setHang changes whether a model hangs, as set does its delay.
func (l *lane) setHang(model string, h bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.hang[model] = h
}

// setRedirect makes a model answer code (307 or 308; 0: a stream again)
// with its own URL as the Location, as set does its delay.
func (l *lane) setRedirect(model string, code int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.redirect == nil {
		l.redirect = map[string]int{}
	}
	l.redirect[model] = code
}

func (l *lane) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if n := l.hits.Add(1); l.onHit != nil {
		l.onHit(n)
	}
	body := make([]byte, 4096)
	n, _ := r.Body.Read(body)
	model := ""
	if i := strings.Index(string(body[:n]), `"model":"`); i >= 0 {
		model = strings.SplitN(string(body[:n])[i+9:], `"`, 2)[0]
	}
	l.mu.Lock()
	code := l.redirect[model]
	l.mu.Unlock()
	if code != 0 {
		http.Redirect(w, r, r.URL.RequestURI(), code)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	l.mu.Lock()
	hang, delay := l.hang[model], l.delay[model]
	l.mu.Unlock()
	if hang {
		<-r.Context().Done()
		return
	}
	select {
	case <-time.After(delay):
	case <-r.Context().Done():
		return
	}
	for _, tok := range []string{"o", "k"} {
		fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":%q}}]}\n\n", tok)
	}
	fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
}

// setup writes a config of the named lanes (each its own model on srv) with
// extra top-level YAML, opens a file store and returns a Sampler on it.
func setup(t *testing.T, srv *httptest.Server, lanes []string, extra, laneExtra string) (*sampler.Sampler, store.Store) {
	t.Helper()
	return setupWith(t, srv, lanes, extra, laneExtra, nil)
}

// setupWith is setup with the Sampler on wrap(store) (nil: the store).
func setupWith(t *testing.T, srv *httptest.Server, lanes []string, extra, laneExtra string, wrap func(store.Store) store.Store) (*sampler.Sampler, store.Store) {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString(extra)
	b.WriteString("store: {kind: file, path: samples.lp}\nlanes:\n")
	for _, l := range lanes {
		fmt.Fprintf(&b, "  - {name: %s, kind: free, api: openai, base_url: %q, model: %s%s}\n", l, srv.URL, l, laneExtra)
	}
	cfg, err := config.Parse(strings.NewReader(b.String()), dir)
	if err != nil {
		t.Fatalf("config: %v\n%s", err, b.String())
	}
	st, err := file.Open(filepath.Join(dir, "samples.lp"), file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	var on store.Store = st
	if wrap != nil {
		on = wrap(st)
	}
	s, err := newSampler(cfg, on, nil, config.Shard{})
	if err != nil {
		t.Fatal(err)
	}
	return s, st
}

// awayMidnight waits, when the next midnight UTC (the day of the quota
// groups of these tests' configs) is closer than need, until just past it,
// so that a test on the real clock counts its probes in one day.
func awayMidnight(t *testing.T, need time.Duration) {
	t.Helper()
	now := time.Now().UTC()
	next := now.Truncate(24 * time.Hour).Add(24 * time.Hour)
	if wait := next.Sub(now); wait < need {
		t.Logf("waiting %s for midnight UTC", wait.Round(time.Second))
		time.Sleep(wait + 2*time.Second)
	}
}

func stored(t *testing.T, st store.Store) map[string]store.Probe {
	t.Helper()
	ps, err := store.ReadProbes(context.Background(), st, store.Between(time.Now().Add(-time.Hour), time.Now().Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]store.Probe{}
	for _, p := range ps {
		if store.Sent(p) { // a released reservation is no probe
			out[p.Lane] = p
		}
	}
	return out
}

// 200 lanes with the default settings, one of them queueing 15 s: every
// probe is stored, and none reads as a timeout.
func TestWideRoundStoresEveryProbe(t *testing.T) {
	if testing.Short() {
		t.Skip("a 15 s queue")
	}
	srv := httptest.NewServer(&lane{delay: map[string]time.Duration{"l000": 15 * time.Second}})
	defer srv.Close()
	var names []string
	for i := range 200 {
		names = append(names, fmt.Sprintf("l%03d", i))
	}
	s, st := setup(t, srv, names, "", "")
	r, err := s.Run(context.Background(), false, false)
	if err != nil {
		t.Fatal(err)
	}
	got := stored(t, st)
	if len(r.Samples) != 200 || len(got) != 200 {
		t.Fatalf("%d probes ran, %d stored; want 200 and 200", len(r.Samples), len(got))
	}
	for name, p := range got {
		if !p.OK {
			t.Errorf("lane %s stored as %s (queue %.1f s)", name, p.Outcome, p.QueueS)
		}
	}
	if q := got["l000"].QueueS; q < 15 {
		t.Errorf("the slow lane's queue %.3f s, want at least 15", q)
	}
}

// Thirty lanes that accept and never answer do not take the healthy ones
// with them: every probe is stored, the hung ones as timeouts with their
// wait as a lower bound.
func TestHungLanesDoNotTakeHealthyOnes(t *testing.T) {
	hang := map[string]bool{}
	var names []string
	for i := range 30 {
		n := fmt.Sprintf("hung%02d", i)
		hang[n] = true
		names = append(names, n)
	}
	names = append(names, "ok1", "ok2")
	srv := httptest.NewServer(&lane{hang: hang})
	defer srv.Close()
	s, st := setup(t, srv, names, "concurrency: 4\n", ", timeout: 1s")
	r, err := s.Run(context.Background(), false, false)
	if err != nil {
		t.Fatal(err)
	}
	sentS := map[string]float64{} // start → request written, per lane
	for _, sm := range r.Samples {
		sentS[sm.Lane] = sm.SentS()
	}
	got := stored(t, st)
	if len(got) != 32 {
		t.Fatalf("%d probes stored, want 32", len(got))
	}
	for _, ok := range []string{"ok1", "ok2"} {
		if !got[ok].OK {
			t.Errorf("healthy lane %s stored as %+v", ok, got[ok])
		}
	}
	for n := range hang {
		// The wait runs from the request written to the 1 s timeout that
		// began at the probe's start: with the time it took to send (a
		// connect on a loaded machine can take 100 ms) it is about 1 s.
		p := got[n]
		if p.Outcome != "timeout" || p.QueueS+sentS[n] < 0.9 || p.QueueS > 1.5 {
			t.Errorf("hung lane %s stored as %s with wait %.3f (sent after %.3f); want a timeout waited about its 1 s",
				n, p.Outcome, p.QueueS, sentS[n])
		}
	}
}

// A daemon stopping mid-round finishes and stores the probes in flight and
// does not start the rest: they are not probes at all, not timeouts.
func TestStopStartsNothingNew(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Stop when lane a's request reaches the server (400 ms before its
	// answer, so before b could start), not at a fixed time: on a loaded
	// machine the round's reading and booking before it can take longer
	// than any fixed delay, and nothing would have started.
	srv := httptest.NewServer(&lane{delay: map[string]time.Duration{"a": 400 * time.Millisecond, "b": 400 * time.Millisecond,
		"c": 400 * time.Millisecond, "d": 400 * time.Millisecond}, onHit: func(int64) { cancel() }})
	defer srv.Close()
	s, st := setup(t, srv, []string{"a", "b", "c", "d"}, "concurrency: 1\n", "")
	r, err := s.Run(ctx, false, false)
	if err != nil {
		t.Fatal(err)
	}
	got := stored(t, st)
	if len(r.Samples) != 1 || len(r.NotStarted) != 3 || len(got) != 1 || !got["a"].OK {
		t.Fatalf("ran %d, not started %v, stored %+v; want lane a probed and stored, b c d not started", len(r.Samples), r.NotStarted, got)
	}
	// Their reservations are released: stored as unsent, so neither the
	// budget nor their hours count them.
	ps, err := store.ReadProbes(context.Background(), st, store.Between(time.Now().Add(-time.Hour), time.Now().Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if want := map[bool]string{true: "ok", false: store.OutcomeUnsent}[p.Lane == "a"]; p.Outcome != want {
			t.Errorf("lane %s stored as %s, want %s", p.Lane, p.Outcome, want)
		}
	}
}

// An interruptible round (-once at a terminal) cut short stores the probe
// it had sent as cancelled, with its wait so far: the request was sent (the
// budget counts it), and its hour is not failed by it but knows the wait.
func TestInterruptStoresCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Interrupt 100 ms after the server has the request, not 100 ms after
	// Run starts: on a loaded machine the round's reading and booking can
	// take that long, and the probe would be sent after the interrupt, or
	// have waited less than the 0.05 s below. The request was written
	// before the server read it, so its wait is at least the 100 ms.
	interrupted := make(chan time.Time, 1)
	srv := httptest.NewServer(&lane{delay: map[string]time.Duration{"a": 5 * time.Second}, onHit: func(int64) {
		time.AfterFunc(100*time.Millisecond, func() {
			interrupted <- time.Now()
			cancel()
		})
	}})
	defer srv.Close()
	s, st := setup(t, srv, []string{"a"}, "", "")
	if _, err := s.Run(ctx, false, true); err != sampler.ErrInterrupted {
		t.Fatalf("Run = %v, want ErrInterrupted", err)
	}
	if d := time.Since(<-interrupted); d > 2*time.Second {
		t.Errorf("took %s after the interrupt", d)
	}
	got := stored(t, st)
	if p := got["a"]; len(got) != 1 || p.Outcome != store.OutcomeCancelled || p.OK || p.QueueS < 0.05 || p.QueueS > 2 {
		t.Fatalf("stored %+v; want lane a cancelled after a wait of about 0.1 s", got)
	}
	hs, err := store.ReadHourly(context.Background(), st, store.Between(time.Now().Add(-2*time.Hour), time.Now().Add(time.Hour)))
	if err != nil || len(hs) != 1 {
		t.Fatalf("hourly %+v, %v; want one record", hs, err)
	}
	if h := hs[0]; h.Samples != 1 || h.Failures != 0 || h.WorstCensoredS != got["a"].QueueS {
		t.Errorf("hour %+v; want 1 sample, no failure, worst_censored_s %g", h, got["a"].QueueS)
	}
}

func TestRoundWarning(t *testing.T) {
	srv := httptest.NewServer(&lane{})
	defer srv.Close()
	names := make([]string, 200)
	for i := range names {
		names[i] = fmt.Sprintf("l%03d", i)
	}
	s, _ := setup(t, srv, names, "concurrency: 16\n", "")
	w := s.RoundWarning(20 * time.Minute)
	for _, want := range []string{"200 lanes", "16 in flight", "2m0s timeout", "26m", "20m0s interval", "raise concurrency"} {
		if !strings.Contains(w, want) {
			t.Errorf("warning %q lacks %q", w, want)
		}
	}
	s, _ = setup(t, srv, names, "", "")
	if w := s.RoundWarning(20 * time.Minute); w != "" {
		t.Errorf("default concurrency: warning %q, want none (4 waves of 2 min fit 20 min)", w)
	}
}

// A shard needs only the keys of the lanes it owns.
func TestShardNeedsOnlyItsOwnKeys(t *testing.T) {
	yaml := "lanes:\n" +
		"  - {name: a, kind: free, api: openai, base_url: \"http://127.0.0.1:1/v1\", model: m, api_key_env: LW_KEY_A}\n" +
		"  - {name: b, kind: free, api: openai, base_url: \"http://127.0.0.1:1/v1\", model: m, api_key_env: LW_KEY_B}\n"
	cfg, err := config.Parse(strings.NewReader(yaml), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	onlyA := func(k string) (string, bool) {
		if k == "LW_KEY_A" {
			return "key-a", true
		}
		return "", false
	}
	owner := shard.Of(shard.Key("a", ""), 2)
	s, err := newSampler(cfg, nil, onlyA, config.Shard{Index: owner, Count: 2})
	if err != nil || !slices.Equal(s.Owned(), []string{"a"}) {
		t.Fatalf("shard %d/2: %v, owned %v; want lane a alone, without b's key", owner, err, s.Owned())
	}
	if _, err := newSampler(cfg, nil, onlyA, config.Shard{}); err == nil || !strings.Contains(err.Error(), "LW_KEY_B") {
		t.Fatalf("all lanes without b's key: %v; want an error naming LW_KEY_B", err)
	}
}

// The status page shows the budgets of the quota groups this shard owns,
// counted as the round's plan counts them, and no other shard's group as
// unspent.
func TestStatusShowsOwnGroups(t *testing.T) {
	// Status reads the real clock: the rounds and the pages must fall in
	// one day, or a page after midnight counts none of the day spent.
	awayMidnight(t, 10*time.Second)
	srv := httptest.NewServer(&lane{})
	defer srv.Close()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("quotas:\n")
	for g := range 6 {
		fmt.Fprintf(&b, "  - {name: g%d, probes_per_day: 48}\n", g)
	}
	b.WriteString("store: {kind: file, path: samples.lp}\nlanes:\n")
	for g := range 6 {
		fmt.Fprintf(&b, "  - {name: l%d, kind: free, api: openai, base_url: %q, model: m, quota: g%d}\n", g, srv.URL, g)
	}
	cfg, err := config.Parse(strings.NewReader(b.String()), dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := file.Open(filepath.Join(dir, "samples.lp"), file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	seen := map[string]int{}
	for i := range 2 {
		s, err := newSampler(cfg, st, nil, config.Shard{Index: i, Count: 2})
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.Run(context.Background(), true, false) // forced: every owned lane once
		if err != nil || len(r.Samples) != len(s.Owned()) {
			t.Fatalf("shard %d: round %+v, %v", i, r, err)
		}
		page := s.Status(context.Background())
		var names []string
		for _, g := range page.Groups {
			names = append(names, g.Name)
			seen[g.Name]++
			if g.Spent != 1 || g.Left != 47 || g.PerDay != 48 {
				t.Errorf("shard %d: group %+v, want 1 spent and 47 left of 48", i, g)
			}
		}
		var want []string
		for _, l := range s.Owned() {
			want = append(want, "g"+strings.TrimPrefix(l, "l"))
		}
		if !slices.Equal(names, want) || !page.Healthy {
			t.Errorf("shard %d owns %v: page groups %v (healthy %v), want %v", i, s.Owned(), names, page.Healthy, want)
		}
	}
	if len(seen) != 6 {
		t.Errorf("groups across both shards' pages: %v, want each of 6 once", seen)
	}
}

// The status page says why a failing lane fails: its newest probe's
// outcome and HTTP status from the store, and what the probe said while
// this process remembers it (issue 31: it said "failing" only). A lane
// whose newest probe is ok says nothing.
func TestStatusSaysWhyALaneFails(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/bad/") {
			http.Error(w, `{"error":{"message":"invalid key"}}`, http.StatusUnauthorized)
			return
		}
		(&lane{}).ServeHTTP(w, r)
	}))
	defer srv.Close()
	dir := t.TempDir()
	cfg, err := config.Parse(strings.NewReader(fmt.Sprintf(`store: {kind: file, path: samples.lp}
lanes:
  - {name: good, kind: free, api: openai, base_url: %q, model: m}
  - {name: bad, kind: free, api: openai, base_url: %q, model: m}
`, srv.URL+"/good/v1", srv.URL+"/bad/v1")), dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := file.Open(filepath.Join(dir, "samples.lp"), file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := newSampler(cfg, st, nil, config.Shard{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Run(context.Background(), false, false)
	if err != nil {
		t.Fatal(err)
	}
	var bad probe.Sample
	for _, sm := range r.Samples {
		if sm.Lane == "bad" {
			bad = sm
		}
	}
	if bad.OK() || bad.Detail == "" {
		t.Fatalf("lane bad's probe: %+v, want a failure with a detail", bad)
	}
	stored := string(bad.Outcome) + " (HTTP 401)"
	restarted, err := newSampler(cfg, st, nil, config.Shard{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		s    *sampler.Sampler
		want string
	}{{"this process", s, stored + ": " + bad.Detail}, {"after a restart", restarted, stored}} {
		why := map[string]string{}
		for _, l := range tc.s.Status(context.Background()).Lanes {
			why[l.Name] = l.Why
		}
		if why["bad"] != tc.want || why["good"] != "" {
			t.Errorf("%s: why bad %q, good %q; want %q and nothing", tc.name, why["bad"], why["good"], tc.want)
		}
	}
}

// deadlineStore notes the deadline of each write's context, and whether
// the write held a settled probe (the round's record) or reservations.
type deadlineStore struct {
	store.Store
	mu     sync.Mutex
	record []time.Time // the deadlines of the writes that held a settled probe
}

func (d *deadlineStore) Write(ctx context.Context, b store.Batch) error {
	probes := b.Probes
	if slices.ContainsFunc(probes, func(p store.Probe) bool { return p.Outcome != store.OutcomeReserved }) {
		dl, _ := ctx.Deadline()
		d.mu.Lock()
		d.record = append(d.record, dl)
		d.mu.Unlock()
	}
	return d.Store.Write(ctx, b)
}

// A round's record write has its own deadline, DefaultStoreTimeout from
// the end of its probes, not one the probes used up: 60 lanes queueing 8 s
// at 4 in flight took two minutes and lost every result to "context
// deadline exceeded" when the booking's deadline was shared. The daemon's
// round, -once's and sampler probe's, each with probes that take a while.
func TestRecordWriteHasItsOwnDeadline(t *testing.T) {
	srv := httptest.NewServer(&lane{delay: map[string]time.Duration{"a": 300 * time.Millisecond, "b": 300 * time.Millisecond}})
	defer srv.Close()
	runs := []struct {
		name string
		run  func(s *sampler.Sampler) (*sampler.Round, error)
	}{
		{"daemon round", func(s *sampler.Sampler) (*sampler.Round, error) { return s.Run(context.Background(), false, false) }},
		{"once", func(s *sampler.Sampler) (*sampler.Round, error) { return s.Run(context.Background(), false, true) }},
		{"probe", func(s *sampler.Sampler) (*sampler.Round, error) {
			return s.ProbeLane(context.Background(), "b", false)
		}},
	}
	for _, c := range runs {
		t.Run(c.name, func(t *testing.T) {
			ds := &deadlineStore{}
			s, _ := setupWith(t, srv, []string{"a", "b"}, "concurrency: 1\n", "", func(st store.Store) store.Store {
				ds.Store = st
				return ds
			})
			r, err := c.run(s)
			if err != nil || len(r.Samples) == 0 {
				t.Fatalf("round %+v, %v", r, err)
			}
			var ended time.Time
			for _, sm := range r.Samples {
				if sm.End.After(ended) {
					ended = sm.End
				}
			}
			ds.mu.Lock()
			defer ds.mu.Unlock()
			if len(ds.record) != 1 {
				t.Fatalf("%d writes of settled probes, want 1", len(ds.record))
			}
			if dl := ds.record[0]; dl.Before(ended.Add(sampler.DefaultStoreTimeout)) {
				t.Errorf("the record write's deadline is %s after the last probe ended, want at least %s",
					dl.Sub(ended).Round(time.Millisecond), sampler.DefaultStoreTimeout)
			}
		})
	}
}
