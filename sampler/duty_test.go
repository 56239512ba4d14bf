package sampler_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/internal/influxtest"
	"github.com/lanewatch/lanewatch/probe"
	"github.com/lanewatch/lanewatch/sampler"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
	"github.com/lanewatch/lanewatch/store/influx"
)

// raceStore is one store two samplers share, as two hosts share an
// InfluxDB, that can replay the race of two instances started together:
// while blind, a heartbeat read sees no other instance's (it ran before
// their writes landed), and while both samplers' first probe reads wait
// for each other, each plans without the other's probes.
type raceStore struct {
	*file.Store
	blind   atomic.Bool
	barrier sync.WaitGroup // armed with 2 for one round
	armed   atomic.Int64   // the reads left that wait at the barrier
}

// Status is not Exclusive: the two samplers share the store, as two hosts
// share an InfluxDB (a file store is held by one).
func (s *raceStore) Status() store.Status {
	st := s.Store.Status()
	st.Exclusive = false
	return st
}

func (s *raceStore) Read(ctx context.Context, q store.Query, r store.Reader) error {
	if r.Heartbeat != nil && s.blind.Load() {
		r.Heartbeat = func(store.Heartbeat) error { return nil }
	}
	err := s.Store.Read(ctx, q, r)
	if r.Probe != nil && s.armed.Add(-1) >= 0 {
		s.barrier.Done()
		s.barrier.Wait()
	}
	return err
}

// pair sets up two samplers of shard 0/1 at site eu on one raceStore, on a
// fake clock: lane a in a group of 24 probes a day (one an hour), lane b
// unbudgeted. a started first.
func pair(t *testing.T, interval time.Duration) (a, b *sampler.Sampler, st *raceStore, lanes *lane, clock *atomic.Int64) {
	t.Helper()
	lanes = &lane{delay: map[string]time.Duration{}, hang: map[string]bool{}}
	srv := httptest.NewServer(lanes)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	var cfgText strings.Builder
	cfgText.WriteString("site: eu\nquotas:\n  - {name: g, probes_per_day: 24, scope: site}\nstore: {kind: file, path: samples.lp}\nlanes:\n")
	fmt.Fprintf(&cfgText, "  - {name: a, kind: free, api: openai, base_url: %q, model: a, timeout: 2s, quota: g}\n", srv.URL)
	fmt.Fprintf(&cfgText, "  - {name: b, kind: free, api: openai, base_url: %q, model: b, timeout: 2s}\n", srv.URL)
	cfg, err := config.Parse(strings.NewReader(cfgText.String()), dir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := file.Open(filepath.Join(dir, "samples.lp"), file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	st = &raceStore{Store: f}
	clock = &atomic.Int64{}
	t0 := time.Date(2026, 3, 1, 10, 0, 30, 0, time.UTC)
	clock.Store(t0.UnixNano())
	// Two hosts' clocks are never on the same nanosecond: b's is 1 ms
	// ahead (on one clock the two would book their probes at one time,
	// the later replacing the other).
	mk := func(id string, start time.Time, skew time.Duration) *sampler.Sampler {
		o, err := cfg.SamplerOptions(st, nil, config.Shard{})
		if err != nil {
			t.Fatal(err)
		}
		o.Now = func() time.Time { return time.Unix(0, clock.Load()).Add(skew).UTC() }
		s := sampler.New(o)
		s.SetIdentity(sampler.Identity{Instance: id, Host: "host-" + id, Version: "test", Start: start, Interval: interval})
		return s
	}
	return mk("a", t0.Add(-time.Minute), 0), mk("b", t0.Add(-time.Minute+time.Second), time.Millisecond), st, lanes, clock
}

func checkHours(t *testing.T, st store.Store, when string) []store.Mismatch {
	t.Helper()
	day := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	bad, err := store.Check(context.Background(), st, time.UTC, store.Window{From: day, To: day.Add(24 * time.Hour)}, nil)
	if err != nil {
		t.Fatalf("%s: check: %v", when, err)
	}
	return bad
}

// Of two samplers of one shard and site, the later started stands by (and
// says which instance probes) while the other's heartbeat is live, and
// takes over once it is two intervals old; the lane server sees one
// probe per lane and round, and every hourly record stays the aggregate
// of its probes.
func TestStandbyAndTakeover(t *testing.T) {
	const iv = time.Minute
	a, b, st, lanes, clock := pair(t, iv)
	step := func(d time.Duration) { clock.Add(int64(d)) }
	run := func(s *sampler.Sampler, name string) *sampler.Round {
		t.Helper()
		r, err := s.Run(context.Background(), false, false)
		if err != nil || r.DutyErr != nil {
			t.Fatalf("%s: %v, %v", name, err, r.DutyErr)
		}
		return r
	}
	for round := range 3 {
		before := lanes.hits.Load()
		ra, rb := run(a, "a"), run(b, "b")
		if !ra.Duty.Active || rb.Duty.Active {
			t.Fatalf("round %d: a active %v, b active %v; want a alone", round, ra.Duty.Active, rb.Duty.Active)
		}
		if want := "standby: instance a on host host-a"; !strings.Contains(rb.Duty.Reason, want) || rb.Duty.Live != 2 {
			t.Errorf("round %d: b says %q (live %d), want %q", round, rb.Duty.Reason, rb.Duty.Live, want)
		}
		if len(rb.Samples) != 0 || len(rb.Plan.Probe) != 0 {
			t.Errorf("round %d: b on standby probed %d lanes", round, len(rb.Samples))
		}
		if got := lanes.hits.Load() - before; got != int64(len(ra.Samples)) || len(ra.Samples) == 0 {
			t.Errorf("round %d: the lane server got %d requests, a probed %d", round, got, len(ra.Samples))
		}
		step(iv)
	}
	// a stops. Its last heartbeat is an interval old: b waits one more.
	r := run(b, "b")
	if r.Duty.Active || len(r.Samples) != 0 {
		t.Fatalf("b took over with a's heartbeat %s old", iv)
	}
	step(iv)
	before := lanes.hits.Load()
	r = run(b, "b")
	if !r.Duty.Active || r.Duty.Live != 1 || len(r.Samples) == 0 || lanes.hits.Load()-before != int64(len(r.Samples)) {
		t.Fatalf("b with a's heartbeat two intervals old: active %v live %d, %d probes; want it to take over", r.Duty.Active, r.Duty.Live, len(r.Samples))
	}
	if bad := checkHours(t, st, "after the takeover"); len(bad) != 0 {
		t.Errorf("hourly records that disagree with their probes: %v", bad)
	}
	beats, err := store.ReadHeartbeats(context.Background(), st, store.Query{Windows: []store.Window{store.Window{From: time.Unix(0, 0), To: time.Unix(0, clock.Load()).Add(time.Minute)}}, Sites: []string{"eu"}})
	if err != nil || len(beats) != 3+5 {
		t.Errorf("heartbeats stored: %d, %v; want one per round of each (8)", len(beats), err)
	}
}

// The race of two instances started together: in their first round each
// reads the heartbeats before the other's write lands and the probes
// before the other's reservations, so both book the budget-1 lane (one of
// the two bookings is withdrawn once they read each other's: one request)
// and both probe the unbudgeted lane, whose hour's record keeps one
// writer's view (samples=1, the probes say 2). The next round one stands
// by, and the other, seeing it live, rebuilds the recent hours from all
// the probes in the store, the budgeted lane not probed again: the record
// heals and a check finds nothing.
func TestRaceHealsNextRound(t *testing.T) {
	const iv = time.Minute
	a, b, st, lanes, clock := pair(t, iv)
	st.blind.Store(true)
	st.barrier.Add(2)
	st.armed.Store(2)
	var wg sync.WaitGroup
	rounds := make([]*sampler.Round, 2)
	for i, s := range []*sampler.Sampler{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := s.Run(context.Background(), false, false)
			if err != nil {
				t.Errorf("sampler %d: %v", i, err)
			}
			rounds[i] = r
		}()
	}
	wg.Wait()
	st.blind.Store(false)
	if t.Failed() {
		return
	}
	probedA := 0
	for i, r := range rounds {
		if !r.Duty.Active || !slices.ContainsFunc(r.Samples, func(sm probe.Sample) bool { return sm.Lane == "b" }) {
			t.Fatalf("race round: sampler %d active %v with %d probes; want both active, each probing b", i, r.Duty.Active, len(r.Samples))
		}
		if slices.ContainsFunc(r.Samples, func(sm probe.Sample) bool { return sm.Lane == "a" }) {
			probedA++
		}
	}
	if got := lanes.hits.Load(); got != 3 || probedA != 1 {
		t.Fatalf("the lane server got %d requests in the race, lane a from %d samplers; want 3, a from one", got, probedA)
	}
	if bad := checkHours(t, st, "after the race"); len(bad) == 0 {
		t.Fatal("the race left every hourly record right: the test does not replay the clobber")
	}

	clock.Add(int64(iv))
	rb, err := b.Run(context.Background(), false, false)
	if err != nil || rb.Duty.Active {
		t.Fatalf("b after the race: %v, active %v; want standby", err, rb.Duty != nil && rb.Duty.Active)
	}
	ra, err := a.Run(context.Background(), false, false)
	if err != nil || !ra.Duty.Active || ra.Duty.Live != 2 {
		t.Fatalf("a after the race: %v, %+v; want active beside b", err, ra.Duty)
	}
	for _, sm := range ra.Samples {
		if sm.Lane == "a" {
			t.Fatalf("a probed the budgeted lane again: the test no longer shows the heal of an unprobed lane-hour")
		}
	}
	if bad := checkHours(t, st, "after the next round"); len(bad) != 0 {
		t.Errorf("the next round left hourly records that disagree with their probes: %v", bad)
	}
}

// On a file store (one writer: its lock) the daemon still writes its
// heartbeat each round, readable there, but reads none: it probes.
func TestFileStoreHeartbeat(t *testing.T) {
	l := &lane{delay: map[string]time.Duration{}, hang: map[string]bool{}}
	srv := httptest.NewServer(l)
	t.Cleanup(srv.Close)
	s, st := setup(t, srv, []string{"a"}, "", "")
	start := time.Now()
	s.SetIdentity(sampler.Identity{Instance: "solo", Host: "h", Version: "test", Start: start, Interval: time.Minute})
	for range 2 {
		r, err := s.Run(context.Background(), false, false)
		if err != nil || r.Duty == nil || !r.Duty.Active || r.Duty.Live != 1 || len(r.Samples) != 1 {
			t.Fatalf("round: %v, %+v, %d probes; want active alone", err, r.Duty, len(r.Samples))
		}
	}
	beats, err := store.ReadHeartbeats(context.Background(), st, store.Query{Windows: []store.Window{{From: start.Add(-time.Minute), To: time.Now().Add(time.Minute)}}, Sites: []string{""}})
	if err != nil || len(beats) != 2 || beats[0].Instance != "solo" || beats[0].Shard != "0/1" || beats[0].StartNS != start.UnixNano() {
		t.Fatalf("heartbeats in the file: %+v, %v; want the two rounds'", beats, err)
	}
}

// Issue 28: one forged or corrupt heartbeat of the shard and site in a
// real InfluxDB, interval_s 5e9 and an earlier start, held the shard on
// standby for as long as the rounds read it (its lifetime was 277 years;
// a round reads the beats within half an hour of now). The sampler now
// ignores it, probes, and its rounds say which beat they ignored and why.
// So does one stamped far ahead of the sampler's clock.
func TestForgedHeartbeatIgnored(t *testing.T) {
	url := influxtest.URL(t)
	db := influxtest.NewDB(t, url)
	l := &lane{delay: map[string]time.Duration{}, hang: map[string]bool{}}
	srv := httptest.NewServer(l)
	t.Cleanup(srv.Close)
	cfg, err := config.Parse(strings.NewReader(fmt.Sprintf("site: eu\nstore: {kind: file, path: unused.lp}\nlanes:\n"+
		"  - {name: a, kind: free, api: openai, base_url: %q, model: a, timeout: 2s}\n", srv.URL)), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	st, err := influx.Open(context.Background(), influx.Options{URL: url, Bucket: db + "/autogen"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	var clock atomic.Int64
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	clock.Store(t0.UnixNano())
	o, err := cfg.SamplerOptions(st, nil, config.Shard{})
	if err != nil {
		t.Fatal(err)
	}
	o.Now = func() time.Time { return time.Unix(0, clock.Load()).UTC() }
	s := sampler.New(o)
	const iv = time.Minute
	s.SetIdentity(sampler.Identity{Instance: "real", Host: "h", Version: "test", Start: t0.Add(-time.Minute), Interval: iv})

	forged := []store.Heartbeat{
		{Instance: "forged", Shard: "0/1", Site: "eu", Time: t0, Host: "nowhere", StartNS: t0.Add(-time.Hour).UnixNano(), IntervalS: 5e9},
		{Instance: "ahead", Shard: "0/1", Site: "eu", Time: t0.Add(20 * time.Minute), Host: "nowhere", StartNS: t0.Add(-time.Hour).UnixNano(), IntervalS: 5e9},
		{Instance: "skewed", Shard: "0/1", Site: "eu", Time: t0.Add(20 * time.Minute), Host: "nowhere", StartNS: t0.Add(-time.Hour).UnixNano(), IntervalS: 60},
	}
	for _, b := range forged {
		if err := st.Write(context.Background(), store.Batch{Heartbeats: []store.Heartbeat{b}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, at := range []time.Duration{time.Second, 5 * time.Minute, 15 * time.Minute} {
		clock.Store(t0.Add(at).UnixNano())
		before := l.hits.Load()
		r, err := s.Run(context.Background(), false, false)
		if err != nil || r.DutyErr != nil {
			t.Fatalf("round at t0+%s: %v, %v", at, err, r.DutyErr)
		}
		if !r.Duty.Active || r.Duty.Live != 1 || len(r.Samples) != 1 || l.hits.Load()-before != 1 {
			t.Fatalf("round at t0+%s: active %v, live %d, %d probes (%s); want it to probe alone", at, r.Duty.Active, r.Duty.Live, len(r.Samples), r.Duty.Reason)
		}
		why := map[string]string{}
		for _, ig := range r.Duty.Ignored {
			why[ig.Beat.Instance] = ig.Err.Error()
		}
		for inst, want := range map[string]string{"forged": "interval_s 5e+09", "ahead": "interval_s 5e+09", "skewed": "ahead of this host's clock"} {
			if !strings.Contains(why[inst], want) {
				t.Errorf("round at t0+%s: beat of %s ignored for %q, want %q (ignored: %v)", at, inst, why[inst], want, why)
			}
		}
	}
}
