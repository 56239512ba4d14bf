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

	"github.com/lanewatch/lanewatch/internal/influxtest"
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
// writes, disk full, restarts and clock steps, through both stores. After
// every step: the requests the lanes of the quota group received on a day
// never exceed its probes_per_day; every request sent is in the store, the
// spool or the dead-letter file; every hour is the aggregate of its probes
// or holds a reservation not settled yet (incomplete: its round is in
// flight or its sampler died, and a later round rebuilds it).
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
	for i := range 40 {
		r.setClock(r.now().Add(time.Duration(1+rnd.IntN(90)) * time.Minute))
		r.lane.set("c", 0)
		interrupt := time.Duration(0)
		var read, write error
		killAt := 0
		switch op := rnd.IntN(12); op {
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
			r.lane.set("c", 400*time.Millisecond)
			interrupt = 100 * time.Millisecond
		case 7:
			r.setClock(r.now().Add(-time.Duration(1+rnd.IntN(60)) * time.Minute))
		case 8:
			r.restart()
		}
		r.fault.set(read, write)
		if killAt > 0 {
			r.kill.mu.Lock()
			r.kill.killAt = r.kill.writes + killAt
			r.kill.mu.Unlock()
		}
		rd, err := r.round(interrupt)
		logf("%d: %s read=%v write=%v kill=%d interrupt=%s: probed %d, err %v", i, r.now().Format("01-02T15:04"), read, write, killAt, interrupt, len(rd.Samples), err)
		if errors.Is(err, store.ErrHoursNotRebuilt) && !spooled {
			rebuildOwed = true // a spool rebuilds them at its next write, which the check's drain is
		}
		if killAt > 0 {
			r.restart() // the process died: a new one starts on its files
		}
		r.fault.set(nil, nil)
		checkMeter(r, led, perDay, &rebuildOwed, fail)
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
	w := store.Window{From: r.now().Add(-72 * time.Hour), To: r.now().Add(72 * time.Hour)}
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
	sentTo := map[string]int{}
	for _, q := range reqs {
		sentTo[q.lane]++
		if q.lane != "c" {
			perDayGot[q.at.UTC().Format("2006-01-02")]++
		}
	}
	for day, n := range perDayGot {
		if n > perDay {
			fail("the quota group's lanes got %d requests on %s, cap %d", n, day, perDay)
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
