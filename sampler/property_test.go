package sampler_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/internal/influxtest"
	"github.com/lanewatch/lanewatch/probe"
	"github.com/lanewatch/lanewatch/sampler"
	"github.com/lanewatch/lanewatch/sampler/budget"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/influx"
)

func TestMain(m *testing.M) { influxtest.Main(m) }

// propertySeeds is how many random sequences each store runs:
// LANEWATCH_PROPERTY_SEEDS, else 3.
func propertySeeds(t *testing.T) int {
	if s := os.Getenv("LANEWATCH_PROPERTY_SEEDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("LANEWATCH_PROPERTY_SEEDS=%q: want a positive number", s)
		}
		return n
	}
	return 3
}

// sent is one request a lane server received, with the sampler's clock
// at the time.
type sentReq struct {
	lane string
	at   time.Time
}

// ledger wraps a lane server's handler and records every request.
type ledger struct {
	now  func() time.Time // the sampler's clock
	next http.Handler
	mu   sync.Mutex
	reqs []sentReq
}

func (l *ledger) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body := make([]byte, 4096)
	n, _ := req.Body.Read(body)
	model := ""
	if i := strings.Index(string(body[:n]), `"model":"`); i >= 0 {
		model = strings.SplitN(string(body[:n])[i+9:], `"`, 2)[0]
	}
	l.mu.Lock()
	l.reqs = append(l.reqs, sentReq{model, l.now()})
	l.mu.Unlock()
	req.Body = readCloser{strings.NewReader(string(body[:n]))}
	l.next.ServeHTTP(w, req)
}

type readCloser struct{ *strings.Reader }

func (readCloser) Close() error { return nil }

// The property of issue 18: random sequences of rounds, interrupts,
// kill -9 between reservation, request and store write, refused reads and
// writes, disk full, restarts and clock steps, through both stores; and
// those of issue 28: a daemon round and sampler probes beside it at the
// same tick on the quota group (released together), a lane answering
// 307 or 308 to itself, and a round whose probes outlast its store
// deadline. After every step: the requests the lanes of the quota group
// received on a day never exceed its probes_per_day; every request sent
// is in the store, the spool or the dead-letter file, and a probe a round
// settled (not killed before its write) reads back settled, never as its
// booking; a lane got one request per probe started on it, and a
// redirect's probe is an http_error; every hour is the aggregate of its
// probes or holds a reservation not settled yet (incomplete: its round is
// in flight or its sampler died, and a later round rebuilds it).
func TestPropertyMeterFirst(t *testing.T) {
	stores := []struct {
		name string
		open func(t *testing.T) func() store.Store // nil: the file store
	}{
		{"file", nil},
		{"influx", func(t *testing.T) func() store.Store {
			url := influxtest.URL(t)
			db := influxtest.NewDB(t, url)
			return func() store.Store {
				st, err := influx.Open(context.Background(), influx.Options{URL: url, Bucket: db + "/autogen"})
				if err != nil {
					t.Fatal(err)
				}
				return st
			}
		}},
	}
	for _, sc := range stores {
		t.Run(sc.name, func(t *testing.T) {
			for seed := range propertySeeds(t) {
				t.Run(fmt.Sprint(seed), func(t *testing.T) {
					var open func() store.Store
					if sc.open != nil {
						open = sc.open(t)
					}
					driveMeter(t, uint64(seed), open)
				})
			}
		})
	}
}

// A slow step's store deadline (the rig's storeTimeout) and its lanes'
// first-token delays, longer: the round's probes outlast it. The deadline
// is long enough that a loaded machine does not pass it between the end
// of the probes and the record write that has a deadline of its own.
const (
	slowStoreTimeout = 400 * time.Millisecond
	slowFirstToken   = 450 * time.Millisecond
)

var rigLanes = []string{"a", "b", "c"}

func driveMeter(t *testing.T, seed uint64, openInner func() store.Store) {
	rnd := rand.New(rand.NewPCG(seed, 18))
	perDay := 2 + rnd.IntN(5)
	extra := fmt.Sprintf("quotas:\n  - {name: g, probes_per_day: %d}\n", perDay)
	spooled := openInner != nil
	r := newRigWith(t, spooled, extra, map[string]string{"a": ", quota: g", "b": ", quota: g", "c": ""}, openInner)
	led := &ledger{now: r.now, next: r.lane}
	r.srv.Config.Handler = led
	var steps []string
	logf := func(format string, args ...any) { steps = append(steps, fmt.Sprintf(format, args...)) }
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d, %d a day: %s\nsteps:\n  %s", seed, perDay, fmt.Sprintf(format, args...), strings.Join(steps, "\n  "))
	}
	rebuildOwed := false // a round said its hours were not rebuilt: the operator runs rollup (no spool to do it)
	settled := results{}
	for i := range 40 {
		r.setClock(r.now().Add(time.Duration(1+rnd.IntN(90)) * time.Minute))
		w := world{}
		var read, write error
		killAt := 0
		switch op := rnd.IntN(15); op {
		case 0:
			read = errPassing
		case 1:
			read = errRevoked
		case 2:
			write = errPassing
		case 3:
			write = errRefused
			if !spooled {
				write = errDisk
			}
		case 4:
			killAt = 1 // dies writing the reservations: nothing leaves
		case 5:
			killAt = 2 // dies after the requests left, before the round's write
		case 6:
			w.delay = map[string]time.Duration{"c": 400 * time.Millisecond}
			w.interrupt = 100 * time.Millisecond
		case 7:
			r.setClock(r.now().Add(-time.Duration(1+rnd.IntN(60)) * time.Minute))
		case 8:
			r.restart()
		case 9:
			r.setClock(nextSlot(r, rnd)) // a free slot, mostly: the actors contend for it
			w.probers = randomProbers(rnd)
		case 10:
			w.redirect = rigLanes[rnd.IntN(len(rigLanes))]
			w.code = 307 + rnd.IntN(2)
		case 11:
			w = slowWorld(rnd)
		}
		r.fault.set(read, write)
		if killAt > 0 {
			r.kill.mu.Lock()
			r.kill.killAt = r.kill.writes + killAt
			r.kill.mu.Unlock()
		}
		tk := w.step(r, led)
		logf("%d: %s read=%v write=%v kill=%d %s: %s", i, r.now().Format("01-02T15:04"), read, write, killAt, w, tk)
		if errors.Is(tk.err, store.ErrHoursNotRebuilt) && !spooled {
			rebuildOwed = true // a spool rebuilds them at its next write, which the check's drain is
		}
		if killAt > 0 {
			r.restart() // the process died: a new one starts on its files
		} else {
			settled.add(tk.rounds)
		}
		r.fault.set(nil, nil)
		tk.check(w, fail)
		checkMeter(r, led, perDay, &rebuildOwed, fail)
		settled.check(r, fail)
	}
}

// world is how one step's lanes and store behave and who acts in it: the
// daemon's round alone (cut short after interrupt, when set), or with
// sampler probes of the lanes in probers beside it, all released at once.
type world struct {
	delay     map[string]time.Duration // first-token delay by lane; the others answer at once
	interrupt time.Duration
	probers   []string
	redirect  string // the lane that answers code to itself, "" none
	code      int
	// storeTimeout replaces sampler.DefaultStoreTimeout (hasty); 0 keeps it.
	storeTimeout time.Duration
}

func (w world) String() string {
	var b strings.Builder
	for _, l := range rigLanes {
		if d := w.delay[l]; d > 0 {
			fmt.Fprintf(&b, "%s first token after %s ", l, d)
		}
	}
	if w.interrupt > 0 {
		fmt.Fprintf(&b, "interrupt=%s ", w.interrupt)
	}
	if len(w.probers) > 0 {
		fmt.Fprintf(&b, "probers of %s beside the round ", strings.Join(w.probers, ","))
	}
	if w.redirect != "" {
		fmt.Fprintf(&b, "%s answers %d to itself ", w.redirect, w.code)
	}
	if w.storeTimeout > 0 {
		fmt.Fprintf(&b, "store deadline %s ", w.storeTimeout)
	}
	return strings.TrimSpace(b.String())
}

// nextSlot is a moment in the first minutes of the quota group's next
// slot.
func nextSlot(r *rig, rnd *rand.Rand) time.Time {
	g := r.cfg.Groups()[0]
	now := r.now()
	cur, _ := budget.SlotStart(g, now)
	for at := now; ; at = at.Add(time.Minute) {
		if start, ok := budget.SlotStart(g, at); ok && !start.Equal(cur) {
			return start.Add(time.Duration(rnd.IntN(600)) * time.Second)
		}
	}
}

// randomProbers is 1 to 3 sampler probes, each of a lane of the quota
// group.
func randomProbers(rnd *rand.Rand) []string {
	out := make([]string, 1+rnd.IntN(3))
	for i := range out {
		out[i] = []string{"a", "b"}[rnd.IntN(2)]
	}
	return out
}

// slowWorld is a round whose probes take longer than its store deadline:
// one or more lanes send their first token after it has passed.
func slowWorld(rnd *rand.Rand) world {
	w := world{storeTimeout: slowStoreTimeout, delay: map[string]time.Duration{}}
	for len(w.delay) == 0 {
		for _, l := range rigLanes {
			if rnd.IntN(2) == 0 {
				w.delay[l] = slowFirstToken + time.Duration(rnd.IntN(4))*50*time.Millisecond
			}
		}
	}
	return w
}

// tick is what a step's actors did: their rounds, and the requests each
// lane got meanwhile.
type tick struct {
	rounds []*sampler.Round
	errs   []error
	err    error // the daemon's round's
	got    map[string]int
}

func (d tick) String() string {
	var b strings.Builder
	for i, rd := range d.rounds {
		if rd != nil {
			fmt.Fprintf(&b, "probed %d, ", len(rd.Samples))
		}
		fmt.Fprintf(&b, "err %v; ", d.errs[i])
	}
	fmt.Fprintf(&b, "requests %v", d.got)
	return b.String()
}

// step sets the lanes and the store deadline as w says and runs its
// actors: the rig's daemon round (or -once cut short) and, beside it, a
// sampler probe of each of w.probers (each its own process: a store
// opened beside the daemon's writer), released together.
func (w world) step(r *rig, led *ledger) tick {
	for _, l := range rigLanes {
		r.lane.set(l, w.delay[l])
		r.lane.setRedirect(l, 0)
	}
	if w.redirect != "" {
		r.lane.setRedirect(w.redirect, w.code)
	}
	r.setStoreTimeout(w.storeTimeout)
	defer r.setStoreTimeout(0)
	before := led.byLane()
	d := tick{rounds: make([]*sampler.Round, 1+len(w.probers)), errs: make([]error, 1+len(w.probers))}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, lane := range w.probers {
		st := r.beside()
		o, err := r.cfg.SamplerOptions(st, nil, config.Shard{})
		if err != nil {
			r.t.Fatal(err)
		}
		o.Now = r.now
		s := sampler.New(o)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { _ = st.Close() }()
			<-start
			d.rounds[i+1], d.errs[i+1] = s.ProbeLane(context.Background(), lane, false)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-start
		d.rounds[0], d.errs[0] = r.round(w.interrupt)
	}()
	close(start)
	wg.Wait()
	d.err = d.errs[0]
	after := led.byLane()
	d.got = map[string]int{}
	for l, n := range after {
		if n > before[l] {
			d.got[l] = n - before[l]
		}
	}
	return d
}

// check fails when a lane got more requests in the step than the probes
// its actors started on it (a booking is one request: a redirect is
// never followed), or when a probe of the lane that redirected is not an
// http_error.
func (d tick) check(w world, fail func(string, ...any)) {
	started := map[string]int{}
	for _, rd := range d.rounds {
		for _, sm := range roundSamples(rd) {
			started[sm.Lane]++
		}
	}
	for l, n := range d.got {
		if n > started[l] {
			fail("lane %s got %d requests for %d probes started on it: one booking, one request", l, n, started[l])
		}
	}
	for _, rd := range d.rounds {
		for _, sm := range roundSamples(rd) {
			if sm.Lane == w.redirect && sm.Outcome != probe.HTTPError {
				fail("lane %s answered %d to itself; its probe's outcome is %s (%s), want http_error", sm.Lane, w.code, sm.Outcome, sm.Detail)
			}
		}
	}
}

func roundSamples(rd *sampler.Round) []probe.Sample {
	if rd == nil {
		return nil
	}
	return rd.Samples
}

// byLane is how many requests each lane received.
func (l *ledger) byLane() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int{}
	for _, q := range l.reqs {
		out[q.lane]++
	}
	return out
}

// results are the probes rounds settled (their outcome by point), which
// must read back as they were settled: stored, spooled or dead-lettered,
// never replaced by their booking nor left as the booking alone.
type results map[resultKey]string

type resultKey struct {
	lane, site string
	ns         int64
}

// add notes the settled points of rounds that were not killed.
func (s results) add(rounds []*sampler.Round) {
	for _, rd := range rounds {
		if rd == nil {
			continue
		}
		for _, p := range rd.Points {
			if p.Outcome != store.OutcomeReserved && store.Sent(p) {
				s[resultKey{p.Lane, p.Site, p.Time.UnixNano()}] = p.Outcome
			}
		}
	}
}

func (s results) check(r *rig, fail func(string, ...any)) {
	if len(s) == 0 {
		return
	}
	var from, to time.Time
	for k := range s {
		at := time.Unix(0, k.ns)
		if from.IsZero() || at.Before(from) {
			from = at
		}
		if at.After(to) {
			to = at
		}
	}
	ps, err := store.ReadProbes(context.Background(), r.st, store.Between(from.Add(-time.Hour), to.Add(time.Hour)))
	if err != nil {
		fail("read: %v", err)
	}
	stored := map[resultKey]string{}
	for _, p := range ps {
		stored[resultKey{p.Lane, p.Site, p.Time.UnixNano()}] = p.Outcome
	}
	for k, want := range s {
		if got, ok := stored[k]; got != want {
			at := time.Unix(0, k.ns).UTC().Format(time.RFC3339Nano)
			if !ok {
				fail("lane %s's %s probe at %s, settled, is in neither the store, the spool nor the dead letter", k.lane, want, at)
			}
			if got == store.OutcomeReserved {
				fail("lane %s's %s probe at %s reads as its booking: the result was lost or replaced", k.lane, want, at)
			}
			fail("lane %s's %s probe at %s reads %s", k.lane, want, at, got)
		}
	}
}

// checkMeter checks the three rules of the property test.
func checkMeter(r *rig, led *ledger, perDay int, rebuildOwed *bool, fail func(string, ...any)) {
	ctx := context.Background()
	// The state a next write leaves: the spool replayed, the hours of
	// refused probes rebuilt (a read-only check otherwise, as policygen).
	if sp := r.sp; sp != nil {
		var re *store.RefusedError
		if err := sp.Drain(ctx); err != nil && !errors.As(err, &re) {
			fail("drain: %v", err)
		}
	}
	// Everything stored since the rig started (a step back is at most an
	// hour, in a run of a few days), and whatever a stepped clock left in
	// the future.
	w := store.Window{From: rigStart.Add(-24 * time.Hour), To: r.now().Add(72 * time.Hour)}
	if *rebuildOwed {
		if _, err := store.RebuildWindow(ctx, r.st, r.cfg.Location, w, nil); err != nil {
			fail("rollup: %v", err)
		}
		*rebuildOwed = false
	}
	led.mu.Lock()
	reqs := append([]sentReq(nil), led.reqs...)
	led.mu.Unlock()
	perDayGot := map[string]int{}
	perSlot := map[time.Time]int{}
	sentTo := map[string]int{}
	for _, q := range reqs {
		sentTo[q.lane]++
		if q.lane != "c" {
			perDayGot[q.at.UTC().Format("2006-01-02")]++
			slot, _ := budget.SlotStart(r.cfg.Groups()[0], q.at)
			perSlot[slot]++
		}
	}
	for day, n := range perDayGot {
		if n > perDay {
			fail("the quota group's lanes got %d requests on %s, cap %d", n, day, perDay)
		}
	}
	for slot, n := range perSlot {
		if n > 1 {
			fail("the quota group's lanes got %d requests in the slot from %s", n, slot.Format("01-02T15:04"))
		}
	}
	ps, err := store.ReadProbes(ctx, r.st, store.Query{Windows: []store.Window{w}})
	if err != nil {
		fail("read: %v", err)
	}
	stored := map[string]int{}
	incomplete := map[store.LaneHour]bool{}
	for _, p := range ps {
		if store.Sent(p) {
			stored[p.Lane]++
		}
		if p.Outcome == store.OutcomeReserved {
			incomplete[store.LaneHour{Lane: p.Lane, Site: p.Site, Hour: p.Time.Truncate(time.Hour).UTC()}] = true
		}
	}
	for lane, n := range sentTo {
		if stored[lane] < n {
			fail("lane %s got %d requests, the store, spool and dead letter hold %d of them", lane, n, stored[lane])
		}
	}
	bad, err := store.Check(ctx, r.st, r.cfg.Location, w, nil)
	if err != nil {
		fail("check: %v", err)
	}
	for _, m := range bad {
		h := m.Want
		if m.Problem == store.ProblemOrphan {
			h = m.Stored
		}
		if !incomplete[store.LaneHour{Lane: h.Lane, Site: h.Site, Hour: h.Hour.UTC()}] {
			fail("hour not the aggregate of its probes, and no reservation marks it incomplete: %s %s", m.Problem, m)
		}
	}
}
