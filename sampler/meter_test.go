package sampler_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/sampler"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
	"github.com/lanewatch/lanewatch/store/spool"
)

// fault is a store wrapper that fails on demand, as a store, a proxy in
// front of it or a full disk would.
type fault struct {
	store.Store
	mu       sync.Mutex
	readErr  error // returned by Read
	writeErr error // returned by Write, which then writes nothing
	// killAt, when > 0, makes write number killAt and every later one fail
	// with errKilled without writing: the process died before it wrote.
	killAt, writes int
}

var errKilled = errors.New("killed before the write")

func (f *fault) set(read, write error) {
	f.mu.Lock()
	f.readErr, f.writeErr = read, write
	f.mu.Unlock()
}

// Read fails with readErr but for a Local read, which does not reach the
// store.
func (f *fault) Read(ctx context.Context, q store.Query, r store.Reader) error {
	f.mu.Lock()
	err := f.readErr
	f.mu.Unlock()
	if err != nil && !r.Local {
		return err
	}
	return f.Store.Read(ctx, q, r)
}

func (f *fault) Write(ctx context.Context, b store.Batch) error {
	f.mu.Lock()
	f.writes++
	err := f.writeErr
	if f.killAt > 0 && f.writes >= f.killAt {
		err = errKilled
	}
	f.mu.Unlock()
	if err != nil {
		return err
	}
	return f.Store.Write(ctx, b)
}

// spoolFault is a fault above a Spool: a deferred batch still goes to the
// spool, as the Spool keeps it without trying the store.
type spoolFault struct {
	*fault
	sp *spool.Spool
}

func (f spoolFault) Write(ctx context.Context, b store.Batch) error {
	if b.Defer {
		return f.sp.Write(ctx, b)
	}
	return f.fault.Write(ctx, b)
}

// Failures as the stores report them.
var (
	errPassing = fmt.Errorf("connection refused: %w", store.ErrUnavailable)
	errRevoked = errors.New("401 Unauthorized: the token was revoked") // a read refused for good
	errRefused = &store.RefusedError{Points: 1, Status: 403, Err: errors.New("403 Forbidden")}
	errDisk    = fmt.Errorf("write samples.lp: %w", syscall.ENOSPC)
)

// rig is one sampler's world: a lane server, a config, a file store (the
// inner store of a spool when spooled, as InfluxDB is) behind a fault, a
// clock, and the Sampler, which open makes anew as a new process would.
type rig struct {
	t      *testing.T
	dir    string
	cfg    *config.Config
	lane   *lane
	srv    *httptest.Server
	spool  bool
	inner  store.Store // the store under test, opened by openInner
	fault  *fault      // between the spool (if any) and the store: the store's and the network's failures
	kill   *fault      // above everything: a process killed before a write
	st     store.Store // what the sampler writes to
	sp     *spool.Spool
	s      *sampler.Sampler
	mu     sync.Mutex
	clock  time.Time
	inject func(*fault) // applied to every fault open makes
	// storeTimeout, when set, is how long each of the sampler's store
	// calls may take instead of sampler.DefaultStoreTimeout (hasty).
	storeTimeout time.Duration
	// openInner opens the store under test; nil is a file store in dir.
	openInner func() store.Store
}

// rigStart is a rig's clock when it starts.
var rigStart = time.Date(2026, 12, 1, 23, 40, 0, 0, time.UTC)

// newRig starts a lane server and writes a config of the lanes (each its
// model on it, timeout 2 s) with the extra top-level YAML and lane YAML.
func newRig(t *testing.T, spool bool, extra string, lanes map[string]string) *rig {
	t.Helper()
	return newRigWith(t, spool, extra, lanes, nil)
}

// newRigWith is newRig on the store openInner opens (nil: a file store).
func newRigWith(t *testing.T, spool bool, extra string, lanes map[string]string, openInner func() store.Store) *rig {
	t.Helper()
	r := &rig{t: t, dir: t.TempDir(), lane: &lane{delay: map[string]time.Duration{}, hang: map[string]bool{}}, spool: spool,
		clock: rigStart, openInner: openInner}
	r.srv = httptest.NewServer(r.lane)
	t.Cleanup(r.srv.Close)
	var b strings.Builder
	b.WriteString(extra)
	b.WriteString("store: {kind: file, path: samples.lp}\nlanes:\n")
	for _, l := range sortedKeys(lanes) {
		fmt.Fprintf(&b, "  - {name: %s, kind: free, api: openai, base_url: %q, model: %s, timeout: 2s%s}\n", l, r.srv.URL, l, lanes[l])
	}
	cfg, err := config.Parse(strings.NewReader(b.String()), r.dir)
	if err != nil {
		t.Fatalf("config: %v\n%s", err, b.String())
	}
	r.cfg = cfg
	r.open()
	t.Cleanup(r.close)
	return r
}

func sortedKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func (r *rig) now() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.clock
}

func (r *rig) setClock(t time.Time) {
	r.mu.Lock()
	r.clock = t
	r.mu.Unlock()
}

// open opens the store and a Sampler on it: a new process.
func (r *rig) open() {
	r.t.Helper()
	if r.openInner != nil {
		r.inner = r.openInner()
	} else {
		f, err := file.Open(filepath.Join(r.dir, "samples.lp"), file.Options{})
		if err != nil {
			r.t.Fatal(err)
		}
		r.inner = f
	}
	r.fault = &fault{Store: r.inner}
	if r.inject != nil {
		r.inject(r.fault)
	}
	var st store.Store = r.fault
	if r.spool {
		sp, err := spool.Open(r.fault, spool.Options{Path: filepath.Join(r.dir, "spool.lp"),
			DeadLetter: filepath.Join(r.dir, "dead.lp"), Hours: r.cfg.Location})
		if err != nil {
			r.t.Fatal(err)
		}
		st = sp
	}
	r.kill = &fault{Store: st}
	r.st = r.kill
	if sp, ok := st.(*spool.Spool); ok {
		r.sp, r.st = sp, spoolFault{r.kill, sp}
	}
	r.st = hasty{r.st, r}
	o, err := r.cfg.SamplerOptions(r.st, nil, config.Shard{})
	if err != nil {
		r.t.Fatal(err)
	}
	o.Now = r.now
	r.s = sampler.New(o)
}

// hasty brings the deadline of each store call the sampler makes (it sets
// sampler.DefaultStoreTimeout from the call's context's start) in to the
// rig's storeTimeout from that same start, so that a round whose probes
// outlast a store deadline takes a second, not minutes. Deadlines made
// from one context stay one deadline: a write that shared the probes'
// context would find its time spent.
type hasty struct {
	store.Store
	r *rig
}

func (h hasty) shorten(ctx context.Context) (context.Context, context.CancelFunc) {
	h.r.mu.Lock()
	d := h.r.storeTimeout
	h.r.mu.Unlock()
	dl, ok := ctx.Deadline()
	if d == 0 || !ok {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, dl.Add(d-sampler.DefaultStoreTimeout))
}

func (h hasty) Write(ctx context.Context, b store.Batch) error {
	ctx, cancel := h.shorten(ctx)
	defer cancel()
	return h.Store.Write(ctx, b)
}

func (h hasty) Read(ctx context.Context, q store.Query, rd store.Reader) error {
	ctx, cancel := h.shorten(ctx)
	defer cancel()
	return h.Store.Read(ctx, q, rd)
}

func (r *rig) setStoreTimeout(d time.Duration) {
	r.mu.Lock()
	r.storeTimeout = d
	r.mu.Unlock()
}

// beside opens a store beside the rig's writer, as sampler probe does
// (config.Beside): the file without its lock, behind the spool's inbox
// when the rig is spooled.
func (r *rig) beside() store.Store {
	r.t.Helper()
	var inner store.Store
	if r.openInner != nil {
		inner = r.openInner()
	} else {
		f, err := file.Open(filepath.Join(r.dir, "samples.lp"), file.Options{Beside: true})
		if err != nil {
			r.t.Fatal(err)
		}
		inner = f
	}
	if !r.spool {
		return inner
	}
	sp, err := spool.Open(inner, spool.Options{Path: filepath.Join(r.dir, "spool.lp"),
		DeadLetter: filepath.Join(r.dir, "dead.lp"), Hours: r.cfg.Location, Beside: true})
	if err != nil {
		r.t.Fatal(err)
	}
	return sp
}

func (r *rig) close() {
	if r.st != nil {
		_ = r.st.Close()
		r.st = nil
	}
}

// restart is a new process on the same files.
func (r *rig) restart() {
	r.close()
	r.open()
}

// round runs a daemon's round (interrupt 0) or an interruptible -once cut
// short after interrupt.
func (r *rig) round(interrupt time.Duration) (*sampler.Round, error) {
	ctx := context.Background()
	if interrupt > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		time.AfterFunc(interrupt, cancel)
	}
	return r.s.Run(ctx, false, interrupt > 0)
}

// view reads everything the sampler's store holds (spool and dead letter
// merged), through a fresh read-only view when the store is spooled.
func (r *rig) probes() []store.Probe {
	r.t.Helper()
	ps, err := store.ReadProbes(context.Background(), r.st, store.Between(r.now().Add(-48*time.Hour), r.now().Add(48*time.Hour)))
	if err != nil {
		r.t.Fatalf("read: %v", err)
	}
	return ps
}

// check fails when an hour of the store is not the aggregate of its probes.
func (r *rig) check() {
	r.t.Helper()
	bad, err := store.Check(context.Background(), r.st, r.cfg.Location,
		store.Window{From: r.now().Add(-48 * time.Hour), To: r.now().Add(48 * time.Hour)}, nil)
	if err != nil {
		r.t.Fatalf("check: %v", err)
	}
	if len(bad) > 0 {
		r.t.Fatalf("hours that are not the aggregate of their probes: %v", bad)
	}
}

const budgetOne = "quotas:\n  - {name: g, probes_per_day: 1}\n"

// Finding 2: a sampler killed after its request left and before it stored
// the probe spent a request; a restart must not spend another. The
// reservation, written before the request, counts; once no round can
// settle it any more its hour counts it as a failure.
func TestKilledMidProbeSpendsOnce(t *testing.T) {
	r := newRig(t, false, budgetOne, map[string]string{"a": ", quota: g"})
	r.kill.killAt = 2 // the reservation is written, the round's write is not
	if _, err := r.round(0); !errors.Is(err, errKilled) {
		t.Fatalf("round = %v, want the kill", err)
	}
	for range 2 {
		r.restart()
		r.setClock(r.now().Add(time.Minute))
		if _, err := r.round(0); err != nil {
			t.Fatal(err)
		}
	}
	if n := r.lane.hits.Load(); n != 1 {
		t.Fatalf("the lane got %d requests, want 1 (probes_per_day: 1)", n)
	}
	r.setClock(r.now().Add(5 * time.Minute)) // the reservation is abandoned now
	if _, err := r.round(0); err != nil {
		t.Fatal(err)
	}
	r.check()
	hs, err := store.ReadHourly(context.Background(), r.st, store.Between(r.now().Add(-time.Hour), r.now().Add(time.Hour)))
	if err != nil || len(hs) != 1 || hs[0].Failures != 1 || hs[0].Eligible {
		t.Fatalf("hour %+v, %v; want one record counting the abandoned request as a failure", hs, err)
	}
}

// Finding 2: `timeout -s INT 2 sampler -once` three times on a lane that
// answers after 5 s, budget 1, then a full round: one request, not four.
func TestInterruptedOnceSpendsOnce(t *testing.T) {
	r := newRig(t, false, budgetOne, map[string]string{"a": ", quota: g"})
	r.lane.set("a", 5*time.Second)
	for i := range 3 {
		r.restart()
		if _, err := r.round(100 * time.Millisecond); i == 0 && !errors.Is(err, sampler.ErrInterrupted) {
			t.Fatalf("round = %v, want ErrInterrupted", err)
		}
		r.setClock(r.now().Add(time.Minute))
	}
	r.restart()
	if _, err := r.round(0); err != nil {
		t.Fatal(err)
	}
	if n := r.lane.hits.Load(); n != 1 {
		t.Fatalf("the lane got %d requests, want 1", n)
	}
	ps := r.probes()
	if len(ps) != 1 || ps[0].Outcome != store.OutcomeCancelled {
		t.Fatalf("stored %+v, want the one cancelled probe", ps)
	}
	r.check()
}

// Findings 3 and 5: a store that refuses the round's writes for good (a
// 403, a type conflict, a 413) sends them to the dead letter; they still
// count against the budget, and the hour rebuilt later counts the refused
// probe (its 2 s timeout), not only the quick one the store took.
func TestRefusedProbesCountAndEnterTheirHour(t *testing.T) {
	r := newRig(t, true, budgetOne, map[string]string{"a": ", quota: g", "b": ""})
	r.lane.setHang("b", true)
	r.fault.set(nil, errRefused)
	for range 3 {
		if _, err := r.round(0); err == nil {
			t.Fatal("a refused round reported no error")
		}
		r.setClock(r.now().Add(time.Minute))
		r.restart()
		r.fault.set(nil, errRefused)
	}
	// a: 1 request (budget), b: 3 (unbudgeted, hung until its timeout)
	if n := r.lane.hits.Load(); n != 4 {
		t.Fatalf("the lanes got %d requests, want 4 (lane a 1: probes_per_day 1)", n)
	}
	r.fault.set(nil, nil)
	r.lane.setHang("b", false)
	if _, err := r.round(0); err != nil {
		t.Fatal(err)
	}
	r.check()
	hs, err := store.ReadHourly(context.Background(), r.st, store.Between(r.now().Add(-time.Hour), r.now().Add(time.Hour)).OfLanes("b"))
	if err != nil || len(hs) != 1 {
		t.Fatalf("hour of b %+v, %v", hs, err)
	}
	if h := hs[0]; h.Samples != 4 || h.Failures != 3 || h.Eligible || h.WorstCensoredS < 1.5 {
		t.Fatalf("hour of b %+v; want 4 samples, the 3 refused timeouts failures, censored about 2 s", h)
	}
}

// Finding 8: a clock stepped back does not make the day's probes vanish
// from the count.
func TestClockSteppedBackSpendsOnce(t *testing.T) {
	r := newRig(t, false, budgetOne, map[string]string{"a": ", quota: g"})
	if _, err := r.round(0); err != nil {
		t.Fatal(err)
	}
	r.setClock(r.now().Add(-20 * time.Minute))
	r.restart()
	if _, err := r.round(0); err != nil {
		t.Fatal(err)
	}
	if n := r.lane.hits.Load(); n != 1 {
		t.Fatalf("the lane got %d requests, want 1", n)
	}
}

// 429 answers a lane's model with Retry-After 3600.
type limited struct{ *lane }

func (l limited) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	l.hits.Add(1)
	w.Header().Set("Retry-After", "3600")
	http.Error(w, `{"error":{"type":"rate_limit_error"}}`, http.StatusTooManyRequests)
}

// Finding 9: a restart while the store cannot be read keeps the back-off
// a spooled 429 asks for.
func TestBackoffFromTheSpoolAcrossARestart(t *testing.T) {
	r := newRig(t, true, "", map[string]string{"a": ""})
	r.srv.Config.Handler = limited{r.lane}
	r.inject = func(f *fault) { f.set(errPassing, errPassing) }
	r.restart()
	if _, err := r.round(0); err != nil {
		t.Fatal(err)
	}
	r.restart()
	r.setClock(r.now().Add(time.Minute))
	rd, err := r.round(0)
	if err != nil {
		t.Fatal(err)
	}
	if n := r.lane.hits.Load(); n != 1 || len(rd.Plan.Skip) != 1 || rd.Plan.Skip[0].Reason != "quota" {
		t.Fatalf("the lane got %d requests, skips %v; want 1 and a quota skip", n, rd.Plan.Skip)
	}
}

// Finding 1: a read refused for good while the daemon runs (token revoked,
// bucket dropped) does not drop the round: its probes reach the store, or
// the dead letter when the writes are refused too, and the error says
// which.
func TestRefusedReadDropsNoRound(t *testing.T) {
	for _, tc := range []struct {
		name     string
		writeErr error
		want     error
	}{
		{"writes taken", nil, store.ErrHoursNotRebuilt},
		{"writes refused", errRefused, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, true, "", map[string]string{"a": "", "b": ""})
			r.fault.set(errRevoked, tc.writeErr)
			_, err := r.round(0)
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("round = %v, want an error wrapping %v", err, tc.want)
			}
			r.fault.set(nil, nil)
			got := map[string]string{}
			for _, p := range r.probes() {
				got[p.Lane] = p.Outcome
			}
			if got["a"] != "ok" || got["b"] != "ok" {
				t.Fatalf("stored %v, want both probes", got)
			}
		})
	}
}

// A disk that is full refuses the reservations: no request leaves.
func TestFullDiskProbesNothing(t *testing.T) {
	r := newRig(t, false, "", map[string]string{"a": ""})
	r.fault.set(nil, errDisk)
	if _, err := r.round(0); !errors.Is(err, sampler.ErrNotBooked) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("round = %v, want ErrNotBooked for the full disk", err)
	}
	if n := r.lane.hits.Load(); n != 0 {
		t.Fatalf("the lane got %d requests, want none", n)
	}
}

// A clock stepped back onto the very time of a stored probe while the
// store cannot be read: the booking cannot see the stored point, and a
// booking at its time would replace it (one point for two requests). Found
// by TestPropertyMeterFirstProxy (seed 125 of 150: a 503 to the read).
func TestUnreadableStoreBookingReplacesNoProbe(t *testing.T) {
	for _, tc := range []struct {
		name    string
		readErr error
	}{
		{"read passing failure", errPassing},
		{"read refused", errRevoked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, true, "", map[string]string{"a": ""})
			led := &ledger{now: r.now, next: r.lane}
			r.srv.Config.Handler = led
			at := r.now()
			if _, err := r.round(0); err != nil {
				t.Fatal(err)
			}
			r.setClock(at) // stepped back onto the first probe's time
			r.fault.set(tc.readErr, nil)
			_, _ = r.round(0)
			r.fault.set(nil, nil)
			if err := r.sp.Drain(context.Background()); err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, p := range r.probes() {
				if p.Lane == "a" && store.Sent(p) {
					n++
				}
			}
			led.mu.Lock()
			sent := len(led.reqs)
			led.mu.Unlock()
			if sent != 2 || n != sent {
				t.Fatalf("lane a got %d requests, the store holds %d of them", sent, n)
			}
		})
	}
}
