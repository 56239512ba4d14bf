package sampler_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/internal/influxtest"
	"github.com/lanewatch/lanewatch/sampler"
	"github.com/lanewatch/lanewatch/sampler/budget"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
	"github.com/lanewatch/lanewatch/store/influx"
	"github.com/lanewatch/lanewatch/store/spool"
)

// holdProxy is a reverse proxy in front of a real influxd that can hold
// a write: it takes the request, answers nothing until the client gives
// up, and hands it to influxd only when told, as a server that applies a
// write after its client timed out.
type holdProxy struct {
	rp     *httputil.ReverseProxy
	target string
	mu     sync.Mutex
	hold   bool            // hold the next write
	held   []*http.Request // the writes held, with their bodies
	got    chan struct{}   // a write was held
}

func newHoldProxy(t *testing.T, target string) (*holdProxy, string) {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &holdProxy{rp: httputil.NewSingleHostReverseProxy(u), target: target, got: make(chan struct{}, 1)}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return p, srv.URL
}

func (p *holdProxy) holdNextWrite() {
	p.mu.Lock()
	p.hold = true
	p.mu.Unlock()
}

func (p *holdProxy) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	p.mu.Lock()
	hold := p.hold && strings.HasSuffix(req.URL.Path, "/write")
	if hold {
		p.hold = false
	}
	p.mu.Unlock()
	if !hold {
		p.rp.ServeHTTP(w, req)
		return
	}
	body, _ := io.ReadAll(req.Body)
	late, err := http.NewRequest(req.Method, p.target+req.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		panic(err)
	}
	late.Header = req.Header.Clone()
	p.mu.Lock()
	p.held = append(p.held, late)
	p.mu.Unlock()
	p.got <- struct{}{}
	<-req.Context().Done() // the client timed out: it never learns the write's fate
}

// release has influxd apply the held writes now.
func (p *holdProxy) release(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	held := p.held
	p.held = nil
	p.mu.Unlock()
	for _, req := range held {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("the held write got %s", resp.Status)
		}
	}
}

// Issue 28, item 2: a booking that InfluxDB answers after the client's
// timeout is spooled, the round probes and stores its probe (the spool's
// replay of the booking first), and then the server applies the booking
// it held, of the same series and time. The stored probe stays the probe
// (not "reserved" with queue_s 0), and its hour agrees with it.
func TestLateBookingNeverOverwritesItsProbe(t *testing.T) {
	base := influxtest.URL(t)
	db := influxtest.NewDB(t, base)
	p, purl := newHoldProxy(t, base)
	open := func() store.Store {
		st, err := influx.Open(context.Background(), influx.Options{URL: purl, Bucket: db + "/autogen", RequestTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	r := newRigWith(t, true, "", map[string]string{"a": ""}, open)
	r.lane.set("a", 200*time.Millisecond)
	p.holdNextWrite()
	rd, err := r.round(0)
	if err != nil || len(rd.Samples) != 1 || !rd.Samples[0].OK() {
		t.Fatalf("round %+v, %v; want lane a probed ok", rd, err)
	}
	select {
	case <-p.got:
	default:
		t.Fatal("the proxy held no write: the booking went through")
	}
	p.release(t)

	direct, err := influx.Open(context.Background(), influx.Options{URL: base, Bucket: db + "/autogen"})
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	w := store.Window{From: r.now().Add(-time.Hour), To: r.now().Add(time.Hour)}
	ps, err := store.ReadProbes(context.Background(), direct, store.Query{Windows: []store.Window{w}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 || ps[0].Outcome != "ok" || ps[0].QueueS < 0.2 {
		t.Fatalf("the server holds %+v; want lane a's ok probe, its queue at least 0.2 s", ps)
	}
	bad, err := store.Check(context.Background(), direct, r.cfg.Location, w, nil)
	if err != nil || len(bad) != 0 {
		t.Fatalf("hours that disagree with their probes: %v, %v", bad, err)
	}
}

// actors is one world for concurrent samplers: a config of a quota group
// (lanes a and b) and an unbudgeted lane c on one lane server, a store,
// and Samplers that share it as separate processes would: the daemon (the
// store's writer) and probers beside it, each with its own handle.
type actors struct {
	t      *testing.T
	cfg    *config.Config
	lane   *lane
	led    *ledger
	mu     sync.Mutex
	clock  time.Time
	daemon *sampler.Sampler
	probes []*sampler.Sampler
	read   store.Store // the daemon's store, to check
}

func (a *actors) now() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.clock
}

// actorsStart is the actors' clock at the start: all they store is after.
var actorsStart = time.Date(2026, 12, 1, 10, 20, 0, 0, time.UTC)

// newActors opens the world on the file store (influxURL "") or on
// InfluxDB (a daemon's spool writer, probers beside it).
func newActors(t *testing.T, perDay, probers int, influxURL string) *actors {
	t.Helper()
	a := &actors{t: t, lane: &lane{delay: map[string]time.Duration{"a": 50 * time.Millisecond, "b": 50 * time.Millisecond}, hang: map[string]bool{}},
		clock: actorsStart}
	a.led = &ledger{now: a.now, next: a.lane}
	srv := httptest.NewServer(a.led)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	yaml := fmt.Sprintf("quotas:\n  - {name: g, probes_per_day: %d}\nstore: {kind: file, path: samples.lp}\nlanes:\n", perDay)
	for _, l := range []string{"a", "b", "c"} {
		q := ", quota: g"
		if l == "c" {
			q = ""
		}
		yaml += fmt.Sprintf("  - {name: %s, kind: free, api: openai, base_url: %q, model: %s, timeout: 5s%s}\n", l, srv.URL, l, q)
	}
	cfg, err := config.Parse(strings.NewReader(yaml), dir)
	if err != nil {
		t.Fatal(err)
	}
	a.cfg = cfg
	var daemonStore store.Store
	besides := make([]store.Store, probers)
	if influxURL == "" {
		path := filepath.Join(dir, "samples.lp")
		f, err := file.Open(path, file.Options{})
		if err != nil {
			t.Fatal(err)
		}
		daemonStore = f
		for i := range besides {
			if besides[i], err = file.Open(path, file.Options{Beside: true}); err != nil {
				t.Fatal(err)
			}
		}
	} else {
		bucket := influxtest.NewDB(t, influxURL) + "/autogen"
		spoolPath := filepath.Join(dir, "spool.lp")
		open := func(o spool.Options) store.Store {
			db, err := influx.Open(context.Background(), influx.Options{URL: influxURL, Bucket: bucket})
			if err != nil {
				t.Fatal(err)
			}
			o.Path, o.Hours = spoolPath, time.UTC
			sp, err := spool.Open(db, o)
			if err != nil {
				t.Fatal(err)
			}
			return sp
		}
		daemonStore = open(spool.Options{})
		for i := range besides {
			besides[i] = open(spool.Options{Beside: true})
		}
	}
	a.read = daemonStore
	mk := func(st store.Store) *sampler.Sampler {
		t.Cleanup(func() { _ = st.Close() })
		o, err := cfg.SamplerOptions(st, nil, config.Shard{})
		if err != nil {
			t.Fatal(err)
		}
		o.Now = a.now
		return sampler.New(o)
	}
	a.daemon = mk(daemonStore)
	for _, st := range besides {
		a.probes = append(a.probes, mk(st))
	}
	return a
}

// The rule of issue 28, item 4: samplers that read the budget and book
// their requests at the same moment (probers beside the daemon, and the
// daemon's round) send the quota group one request a slot, under any
// interleaving: every one books, reads again, and withdraws the bookings
// that lose to another's before anything leaves. Random ticks of 1 to 8
// concurrent actors, on both stores, for budgets of 1 and 4: the group
// never gets two requests in one slot nor more than its budget a day,
// every request is stored, and a tick that finds the slot free spends it
// (one request, not none).
func TestPropertyConcurrentBookingsSpendOneSlot(t *testing.T) {
	stores := []struct {
		name   string
		influx bool
	}{{"file", false}, {"influx", true}}
	for _, sc := range stores {
		for _, perDay := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s/%d a day", sc.name, perDay), func(t *testing.T) {
				url := ""
				if sc.influx {
					url = influxtest.URL(t)
				}
				for seed := range propertySeeds(t) {
					t.Run(fmt.Sprint(seed), func(t *testing.T) {
						driveConcurrent(t, uint64(seed), perDay, url)
					})
				}
			})
		}
	}
}

func driveConcurrent(t *testing.T, seed uint64, perDay int, influxURL string) {
	rnd := rand.New(rand.NewPCG(seed, 28))
	const maxProbers = 7
	a := newActors(t, perDay, maxProbers, influxURL)
	groups := a.cfg.Groups()
	var steps []string
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d, %d a day: %s\nsteps:\n  %s", seed, perDay, fmt.Sprintf(format, args...), strings.Join(steps, "\n  "))
	}
	ctx := context.Background()
	for i := range 10 {
		// On to the next slot half the time, else a little later.
		step := time.Duration(1+rnd.IntN(300)) * time.Minute
		if rnd.IntN(2) == 0 {
			step = 24 * time.Hour / time.Duration(perDay)
		}
		a.mu.Lock()
		a.clock = a.clock.Add(step)
		a.mu.Unlock()
		now := a.now()
		stored, err := store.ReadProbes(ctx, a.read, store.Between(now.Add(-48*time.Hour), now.Add(48*time.Hour)))
		if err != nil {
			fail("read: %v", err)
		}
		free := slices.ContainsFunc(budget.Decide(budget.Input{Now: now, Lanes: []string{"a", "b"}, Groups: groups,
			Location: a.cfg.Location, Probes: stored}).Probe, func(string) bool { return true })
		n := 1 + rnd.IntN(maxProbers)
		withDaemon := rnd.IntN(2) == 0
		before := a.led.groupCount()
		bookedBefore, withdrawnBefore := bookings(t, a)
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make(chan error, n+1)
		for _, s := range a.probes[:n] {
			lane := []string{"a", "b"}[rnd.IntN(2)]
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, err := s.ProbeLane(ctx, lane, false)
				errs <- err
			}()
		}
		if withDaemon {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, err := a.daemon.Run(ctx, false, false)
				errs <- err
			}()
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				fail("tick %d: %v", i, err)
			}
		}
		got := a.led.groupCount() - before
		booked, withdrawn := bookings(t, a)
		steps = append(steps, fmt.Sprintf("%d: %s, slot free %v: %d probers, daemon %v: %d bookings of the group, %d withdrawn, %d requests",
			i, now.Format("01-02T15:04"), free, n, withDaemon, booked-bookedBefore, withdrawn-withdrawnBefore, got))
		if want := map[bool]int{true: 1, false: 0}[free]; got != want {
			fail("tick %d: the group got %d requests, want %d", i, got, want)
		}
		checkSpent(t, a, groups, perDay, fail)
	}
	t.Logf("seed %d, %d a day:\n  %s", seed, perDay, strings.Join(steps, "\n  "))
}

// groupCount is how many requests the quota group's lanes received.
func (l *ledger) groupCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, q := range l.reqs {
		if q.lane != "c" {
			n++
		}
	}
	return n
}

// checkSpent fails when the group's requests (stamped with the sampler's
// clock) exceed one a slot or the day's budget, or the store holds fewer
// of them than were sent.
func checkSpent(t *testing.T, a *actors, groups []budget.Group, perDay int, fail func(string, ...any)) {
	t.Helper()
	a.led.mu.Lock()
	reqs := slices.Clone(a.led.reqs)
	a.led.mu.Unlock()
	perSlot, perDayGot, sentTo := map[time.Time]int{}, map[string]int{}, map[string]int{}
	for _, q := range reqs {
		sentTo[q.lane]++
		if q.lane == "c" {
			continue
		}
		slot, _ := budget.SlotStart(groups[0], q.at)
		perSlot[slot]++
		perDayGot[q.at.UTC().Format("2006-01-02")]++
	}
	for slot, n := range perSlot {
		if n > 1 {
			fail("the group got %d requests in the slot from %s", n, slot.Format("01-02T15:04"))
		}
	}
	for day, n := range perDayGot {
		if n > perDay {
			fail("the group got %d requests on %s, budget %d", n, day, perDay)
		}
	}
	w := store.Window{From: actorsStart.Add(-time.Hour), To: a.now().Add(72 * time.Hour)}
	ps, err := store.ReadProbes(context.Background(), a.read, store.Query{Windows: []store.Window{w}})
	if err != nil {
		fail("read: %v", err)
	}
	stored := map[string]int{}
	for _, p := range ps {
		if store.Sent(p) {
			stored[p.Lane]++
		}
	}
	for lane, n := range sentTo {
		if stored[lane] < n {
			fail("lane %s got %d requests, the store holds %d", lane, n, stored[lane])
		}
	}
	bad, err := store.Check(context.Background(), a.read, a.cfg.Location, w, nil)
	if err != nil || len(bad) > 0 {
		fail("hours that disagree with their probes: %v, %v", bad, err)
	}
}

// bookings is how many bookings of the group the store holds, and how
// many of them as released: withdrawn by confirm (no actor here stops
// mid-round).
func bookings(t *testing.T, a *actors) (booked, withdrawn int) {
	t.Helper()
	ps, err := store.ReadProbes(context.Background(), a.read, store.Between(actorsStart.Add(-time.Hour), a.now().Add(72*time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.Lane != "c" {
			booked++
			if p.Outcome == store.OutcomeUnsent {
				withdrawn++
			}
		}
	}
	return booked, withdrawn
}
