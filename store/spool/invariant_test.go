package spool_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/influxtest"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
	"github.com/lanewatch/lanewatch/store/influx"
	"github.com/lanewatch/lanewatch/store/spool"
)

// gate is a reverse proxy in front of a real InfluxDB that a test can take
// down (every request answers 503, as a restarting server or a broken load
// balancer does) or make refuse writes (400, as for a bad point).
type gate struct {
	mu     sync.Mutex
	mode   string // "up", "down", "refuse"
	proxy  *httputil.ReverseProxy
	server *httptest.Server
}

func newGate(t *testing.T, base string) *gate {
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{mode: "up", proxy: httputil.NewSingleHostReverseProxy(u)}
	g.server = httptest.NewServer(g)
	t.Cleanup(g.server.Close)
	return g
}

func (g *gate) set(mode string) {
	g.mu.Lock()
	g.mode = mode
	g.mu.Unlock()
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	mode := g.mode
	g.mu.Unlock()
	switch {
	case mode == "down":
		http.Error(w, `{"code":"unavailable","message":"down for the test"}`, http.StatusServiceUnavailable)
	case mode == "refuse" && strings.Contains(r.URL.Path, "write"):
		http.Error(w, `{"code":"invalid","message":"unable to parse points: refused for the test"}`, http.StatusBadRequest)
	default:
		g.proxy.ServeHTTP(w, r)
	}
}

// world is one store under test and the truth it must keep: every probe
// Record accepted is in the store (or, refused, in the dead-letter file),
// and every hourly point is the aggregate of its lane-hour's probes.
type world struct {
	t      *testing.T
	loc    *time.Location
	open   func() store.Store // a fresh stack on the same files and server
	st     store.Store
	rec    *store.Recorder
	gate   *gate  // nil for the file store
	dead   string // dead-letter path ("" for the file store)
	stored map[string]store.Probe
	refsd  map[string]store.Probe // refused, waiting in the dead-letter file
	steps  []string
}

func key(p store.Probe) string { return fmt.Sprintf("%s|%s|%d", p.Lane, p.Site, p.Time.UnixNano()) }

func (w *world) logf(format string, args ...any) {
	w.steps = append(w.steps, fmt.Sprintf(format, args...))
}

func (w *world) fail(format string, args ...any) {
	w.t.Helper()
	w.t.Fatalf("%s\nsteps:\n  %s", fmt.Sprintf(format, args...), strings.Join(w.steps, "\n  "))
}

func (w *world) restart() {
	if err := w.st.Close(); err != nil {
		w.fail("close: %v", err)
	}
	w.st = w.open()
	w.rec = store.NewRecorder(w.st, w.loc)
}

func (w *world) record(ps []store.Probe) {
	w.t.Helper()
	_, err := w.rec.Record(context.Background(), ps)
	var re *store.RefusedError
	switch {
	case err == nil:
		for _, p := range ps {
			w.stored[key(p)] = p
			delete(w.refsd, key(p))
		}
	case errors.As(err, &re) && re.DeadLetter != "":
		// Refused for good: the round is in the dead-letter file. A
		// replay in the same Write may have stored older points.
		for _, p := range ps {
			w.refsd[key(p)] = p
			delete(w.stored, key(p))
		}
	default:
		w.fail("Record: %v", err)
	}
}

// importDead moves the dead-letter file aside and imports it, as docs/schema.md
// tells an operator to once the cause is fixed.
func (w *world) importDead() {
	if w.dead == "" {
		return
	}
	aside := w.dead + ".retry"
	if err := os.Rename(w.dead, aside); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return
		}
		w.fail("%v", err)
	}
	w.restart() // the spool reopens its dead-letter file on first use
	f, err := os.Open(aside)
	if err != nil {
		w.fail("%v", err)
	}
	defer f.Close()
	if _, err := store.Import(context.Background(), w.rec, f, nil); err != nil {
		w.fail("import dead letters: %v", err)
	}
	for k, p := range w.refsd {
		w.stored[k] = p
	}
	clear(w.refsd)
	_ = os.Remove(aside)
}

// check drains the spool (the store is up) and asserts the invariant and
// that nothing was lost.
func (w *world) check(from, to time.Time) {
	w.t.Helper()
	ctx := context.Background()
	if sp, ok := w.st.(*spool.Spool); ok {
		if err := sp.Drain(ctx); err != nil {
			var re *store.RefusedError
			if !errors.As(err, &re) {
				w.fail("drain: %v", err)
			}
		}
	}
	bad, err := store.Check(ctx, w.st, w.loc, store.Window{From: from, To: to}, nil)
	if err != nil {
		w.fail("check: %v", err)
	}
	if len(bad) > 0 {
		var lines []string
		for _, m := range bad {
			lines = append(lines, m.String())
		}
		w.fail("hourly records that are not the aggregate of their probes:\n  %s", strings.Join(lines, "\n  "))
	}
	got, err := store.ReadProbes(ctx, w.st, store.Between(from, to))
	if err != nil {
		w.fail("probes: %v", err)
	}
	have := map[string]store.Probe{}
	for _, p := range got {
		have[key(p)] = p
	}
	for k, p := range w.stored {
		if q, ok := have[k]; !ok || q.QueueS != p.QueueS || q.Outcome != p.Outcome || q.Kind != p.Kind {
			w.fail("probe %s lost or changed: have %+v, want %+v", k, q, p)
		}
	}
	if w.dead != "" {
		lines := countLinesIfAny(w.dead)
		if len(w.refsd) > 0 && lines < len(w.refsd) {
			w.fail("%d refused probes but the dead-letter file has %d lines", len(w.refsd), lines)
		}
	}
}

func countLinesIfAny(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "\n")
}

// drive runs a random sequence of rounds (crossing hour boundaries, kinds
// changing, censored and rate-limited probes), outages, refusals,
// restarts and dead-letter imports against w, checking after each step.
func drive(t *testing.T, w *world, seed uint64, steps int) {
	r := rand.New(rand.NewPCG(seed, 7))
	lanes := []string{"free", "paid", "or-llama"}
	kinds := map[string]string{"free": "free", "paid": "paid", "or-llama": "free"}
	start := time.Date(2026, 11, 29, 22, 10, 0, 0, time.UTC)
	now := start
	down := false
	for i := range steps {
		switch op := r.IntN(20); {
		case op < 12: // a round of some lanes
			now = now.Add(time.Duration(1+r.IntN(40)) * time.Minute)
			var ps []store.Probe
			for j, l := range lanes {
				if r.IntN(4) == 0 {
					continue
				}
				if r.IntN(15) == 0 { // the lane's kind changes in the config
					kinds[l] = map[string]string{"free": "paid", "paid": "free"}[kinds[l]]
				}
				p := store.Probe{Lane: l, Kind: kinds[l], Time: now.Add(time.Duration(j) * time.Millisecond),
					QueueS: float64(r.IntN(3000)) / 100, GenS: 0.5, Tokens: 12, OK: true, Outcome: "ok", Status: 200}
				switch r.IntN(8) {
				case 0:
					p.OK, p.Outcome, p.Status, p.GenS, p.Tokens = false, "timeout", 200, 0, 0 // censored at QueueS
				case 1:
					p.OK, p.Outcome, p.Status, p.QueueS, p.GenS, p.Tokens = false, "rate_limited", 429, 0, 0, 0
					p.QuotaResetS = float64(r.IntN(600))
				}
				ps = append(ps, p)
			}
			if len(ps) == 0 {
				continue
			}
			w.logf("%d: round at %s (%d probes, down=%v)", i, now.Format("01-02T15:04"), len(ps), down)
			w.record(ps)
		case op < 14 && w.gate != nil: // an outage starts or ends
			down = !down
			w.logf("%d: influx %s", i, map[bool]string{true: "down", false: "up"}[down])
			w.gate.set(map[bool]string{true: "down", false: "up"}[down])
		case op < 16: // the sampler restarts (crash-looping during an outage too)
			w.logf("%d: restart", i)
			w.restart()
		case op < 17 && w.gate != nil && !down: // the next write is refused for good
			w.logf("%d: refusal", i)
			w.gate.set("refuse")
			now = now.Add(time.Minute)
			w.record([]store.Probe{{Lane: "free", Kind: kinds["free"], Time: now, QueueS: 1, OK: true, Outcome: "ok", Status: 200}})
			w.gate.set("up")
		case op < 18 && !down:
			w.logf("%d: import the dead letters", i)
			w.importDead()
		default:
			continue
		}
		if !down {
			w.check(start.Add(-2*time.Hour), now.Add(2*time.Hour))
		}
	}
	if down {
		w.gate.set("up")
		w.logf("end: influx up")
	}
	w.importDead()
	w.check(start.Add(-2*time.Hour), now.Add(2*time.Hour))
}

var invariantZones = []string{"Asia/Kolkata", "UTC", "America/St_Johns", "Asia/Kathmandu"}

// seeds is how many random sequences a property test runs: a few in make
// test, LANEWATCH_PROPERTY_SEEDS for a longer sweep.
func seeds(t *testing.T, def uint64) uint64 {
	if v := os.Getenv("LANEWATCH_PROPERTY_SEEDS"); v != "" {
		var n uint64
		if _, err := fmt.Sscan(v, &n); err != nil || n == 0 {
			t.Fatalf("LANEWATCH_PROPERTY_SEEDS=%q: want a positive integer", v)
		}
		return n
	}
	return def
}

func TestInvariantFileStore(t *testing.T) {
	for seed := range seeds(t, 4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			loc, _ := time.LoadLocation(invariantZones[seed%uint64(len(invariantZones))])
			path := filepath.Join(t.TempDir(), "samples.lp")
			open := func() store.Store {
				f, err := file.Open(path, file.Options{})
				if err != nil {
					t.Fatal(err)
				}
				return f
			}
			w := &world{t: t, loc: loc, open: open, st: open(), stored: map[string]store.Probe{}, refsd: map[string]store.Probe{}}
			w.rec = store.NewRecorder(w.st, loc)
			t.Cleanup(func() { _ = w.st.Close() })
			drive(t, w, seed, 120)
		})
	}
}

func TestInvariantInfluxThroughOutages(t *testing.T) {
	base := influxtest.URL(t)
	for seed := range seeds(t, 4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			loc, _ := time.LoadLocation(invariantZones[seed%uint64(len(invariantZones))])
			db := influxtest.NewDB(t, base)
			g := newGate(t, base)
			dir := t.TempDir()
			spoolPath, dead := filepath.Join(dir, "spool.lp"), filepath.Join(dir, "dead-letter.lp")
			open := func() store.Store {
				s, err := openSpool(influx.Options{URL: g.server.URL, Bucket: db + "/autogen", StartUnreachable: true, RequestTimeout: 5 * time.Second},
					spool.Options{Path: spoolPath, DeadLetter: dead, Hours: loc})
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			w := &world{t: t, loc: loc, open: open, st: open(), gate: g, dead: dead,
				stored: map[string]store.Probe{}, refsd: map[string]store.Probe{}}
			w.rec = store.NewRecorder(w.st, loc)
			t.Cleanup(func() { _ = w.st.Close() })
			drive(t, w, seed, 100)
		})
	}
}

// The reviewer's case: InfluxDB down across an hour boundary (Kolkata),
// two sampler runs in one hour (queues 2.0 s and 0.05 s), the second after a
// restart. The hour's record must hold both probes once InfluxDB is back.
func TestOutageAcrossRestartsKeepsTheHoursWorst(t *testing.T) {
	base := influxtest.URL(t)
	loc, _ := time.LoadLocation("Asia/Kolkata")
	db := influxtest.NewDB(t, base)
	g := newGate(t, base)
	dir := t.TempDir()
	open := func() *spool.Spool {
		s, err := openSpool(influx.Options{URL: g.server.URL, Bucket: db + "/autogen", StartUnreachable: true, RequestTimeout: 5 * time.Second},
			spool.Options{Path: filepath.Join(dir, "spool.lp"), Hours: loc})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	hour := time.Date(2026, 11, 30, 8, 30, 0, 0, time.UTC) // 14:00 in Kolkata
	probe := func(at time.Duration, q float64) []store.Probe {
		return []store.Probe{{Lane: "free", Kind: "free", Time: hour.Add(at), QueueS: q, GenS: 1, Tokens: 10, OK: true, Outcome: "ok", Status: 200}}
	}
	s := open()
	if _, err := store.NewRecorder(s, loc).Record(ctx, probe(-13*time.Minute, 1)); err != nil { // 13:47, server up
		t.Fatal(err)
	}
	g.set("down")
	if _, err := store.NewRecorder(s, loc).Record(ctx, probe(7*time.Minute, 2.0)); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	s = open() // restarted mid-outage
	defer s.Close()
	if _, err := store.NewRecorder(s, loc).Record(ctx, probe(27*time.Minute, 0.05)); err != nil {
		t.Fatal(err)
	}
	g.set("up")
	if _, err := store.NewRecorder(s, loc).Record(ctx, probe(47*time.Minute, 0.5)); err != nil {
		t.Fatal(err)
	}
	hs, err := store.ReadHourly(ctx, s, store.Between(hour, hour.Add(time.Hour)))
	if err != nil || len(hs) != 1 || hs[0].Samples != 3 || hs[0].WorstQueueS != 2.0 {
		t.Fatalf("the hour's record = %+v, %v; want samples 3, worst 2.0", hs, err)
	}
}

// A lane whose kind changed mid-hour has no stale record that hides a
// failure after the change.
func TestKindChangeMidHour(t *testing.T) {
	f, err := file.Open(filepath.Join(t.TempDir(), "s.lp"), file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rec := store.NewRecorder(f, time.UTC)
	if _, err := rec.Record(ctx, []store.Probe{{Lane: "x", Kind: "paid", Time: hour0.Add(7 * time.Minute), QueueS: 1, OK: true, Outcome: "ok"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := rec.Record(ctx, []store.Probe{{Lane: "x", Kind: "free", Time: hour0.Add(27 * time.Minute), QueueS: 30, Outcome: "timeout"}}); err != nil {
		t.Fatal(err)
	}
	hs, err := store.ReadHourly(ctx, f, store.Between(hour0, hour0.Add(time.Hour)))
	if err != nil || len(hs) != 2 {
		t.Fatalf("Hourly = %+v, %v; want one record per kind", hs, err)
	}
	for _, h := range hs {
		if h.Eligible || h.Failures != 1 || h.Samples != 2 || h.WorstCensoredS != 30 {
			t.Errorf("record of kind %s = %+v; want the whole hour: 2 samples, 1 failure, censored 30", h.Kind, h)
		}
	}
	if !slices.ContainsFunc(hs, func(h store.Hourly) bool { return h.Kind == "paid" }) {
		t.Error("the earlier kind's record was not rewritten")
	}
}
