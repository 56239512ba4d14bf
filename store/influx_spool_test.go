package store_test

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/influxtest"
	"github.com/lanewatch/lanewatch/store"
)

// sortProbes sorts probes as the stores return them: time, then lane.
func sortProbes(ps []store.Probe) []store.Probe {
	ps = slices.Clone(ps)
	slices.SortFunc(ps, func(a, b store.Probe) int {
		return cmp.Or(a.Time.Compare(b.Time), cmp.Compare(a.Lane, b.Lane), cmp.Compare(a.Kind, b.Kind))
	})
	return ps
}

// wantRead checks that s returns exactly ps and hs for hour0.
func wantRead(t *testing.T, what string, s store.Store, ps []store.Probe, hs []store.Hourly) {
	t.Helper()
	gotP, err := s.Probes(ctx, store.Between(hour0, hour0.Add(time.Hour)))
	if err != nil || !slices.Equal(gotP, ps) {
		t.Errorf("%s: Probes = %v\n %+v\nwant\n %+v", what, err, gotP, ps)
	}
	gotH, err := s.Hourly(ctx, store.Between(hour0, hour0.Add(time.Hour)))
	if err != nil || !slices.Equal(gotH, hs) {
		t.Errorf("%s: Hourly = %v\n %+v\nwant\n %+v", what, err, gotH, hs)
	}
}

// Points spooled while InfluxDB refuses writes are read back by the store
// that spooled them and by the next store on the same spool; a read fails
// when the server cannot be read instead of returning the spool alone.
func TestInfluxReadsSpool(t *testing.T) {
	fake := &fakeInflux{plan: slices.Repeat([]int{http.StatusServiceUnavailable}, 100)}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	var w warnings
	o := store.InfluxOptions{URL: srv.URL, Bucket: "b", Warn: w.warn}
	so := store.SpoolOptions{Path: filepath.Join(t.TempDir(), "spool.lp"), Warn: w.warn}
	s1, err := openSpool(o, so)
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()

	ps0, hs0 := round(2, 0)
	if err := s1.Write(ctx, ps0, hs0); err != nil || s1.SpoolDepth() != 4 {
		t.Fatalf("Write = %v, depth %d; want nil, 4 (spooled)", err, s1.SpoolDepth())
	}
	wantRead(t, "after one spooled round", s1, ps0, hs0)
	ps1, hs1 := round(2, 1)
	if err := s1.Write(ctx, ps1, hs1); err != nil || s1.SpoolDepth() != 8 {
		t.Fatalf("Write = %v, depth %d; want nil, 8 (spooled)", err, s1.SpoolDepth())
	}
	both := sortProbes(append(slices.Clone(ps0), ps1...))
	wantRead(t, "after two spooled rounds (the later hourly line wins)", s1, both, hs1)
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s1.Probes(ctx, store.Between(hour0, hour0.Add(time.Hour))); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Probes after Close = %v; want os.ErrClosed", err)
	}
	if _, err := s1.Hourly(ctx, store.Between(hour0, hour0.Add(time.Hour))); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Hourly after Close = %v; want os.ErrClosed", err)
	}

	// A restarted sampler opens the same spool: the server still has none of
	// these points, the new store reads them from the spool.
	s2, err := openSpool(o, so)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	wantRead(t, "new store on the spool", s2, both, hs1)

	// The range is [from, to) on spooled points too.
	for _, c := range []struct {
		from, to time.Time
		want     []store.Probe
	}{
		{hour0, hour0.Add(10 * time.Minute), ps0},
		{hour0.Add(10 * time.Minute), hour0.Add(time.Hour), ps1},
		{hour0.Add(time.Millisecond), hour0.Add(10*time.Minute + time.Millisecond), []store.Probe{ps0[1], ps1[0]}},
		{hour0.Add(time.Hour), hour0.Add(2 * time.Hour), []store.Probe{}},
		{hour0, hour0, []store.Probe{}},
	} {
		got, err := s2.Probes(ctx, store.Between(c.from, c.to))
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("Probes(%s, %s) = %v %+v; want %+v", c.from.Format(time.TimeOnly), c.to.Format(time.TimeOnly), err, got, c.want)
		}
	}
	if got, err := s2.Hourly(ctx, store.Between(hour0.Add(time.Nanosecond), hour0.Add(time.Hour))); err != nil || len(got) != 0 {
		t.Errorf("Hourly after the hour start = %v %+v; want none", err, got)
	}

	// The server cannot be read: the read fails, it does not return the
	// spool alone (the sampler would take that for the whole hour).
	fake.setQueryStatus(http.StatusServiceUnavailable)
	if got, err := s2.Probes(ctx, store.Between(hour0, hour0.Add(time.Hour))); err == nil {
		t.Errorf("Probes with the server failing = %+v, nil; want an error", got)
	}
	if got, err := s2.Hourly(ctx, store.Between(hour0, hour0.Add(time.Hour))); err == nil {
		t.Errorf("Hourly with the server failing = %+v, nil; want an error", got)
	}
	fake.setQueryStatus(0)

	if strings.Contains(w.all(), "corrupt") {
		t.Errorf("warnings %q report corrupt spool lines", w.all())
	}
}

// Reads run alongside writes that spool: each read sees whole rounds.
func TestInfluxReadsSpoolConcurrently(t *testing.T) {
	fake := &fakeInflux{plan: slices.Repeat([]int{http.StatusServiceUnavailable}, 1000)}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	s := openSpooled(t, srv.URL, store.InfluxOptions{Bucket: "b"}, store.SpoolOptions{Path: filepath.Join(t.TempDir(), "spool.lp")})
	const writers, rounds = 3, 10
	var wg sync.WaitGroup
	for wr := range writers {
		wg.Go(func() {
			for r := range rounds {
				d := time.Duration(wr*rounds+r) * time.Millisecond
				ps := []store.Probe{probeAt("a", d, 1), probeAt("b", d, 2)}
				if err := s.Write(ctx, ps, []store.Hourly{hourlyAt(fmt.Sprint("w", wr), 0, float64(r))}); err != nil {
					t.Errorf("Write: %v", err)
				}
			}
		})
	}
	for range 3 {
		wg.Go(func() {
			for range rounds {
				ps, err := s.Probes(ctx, store.Between(hour0, hour0.Add(time.Hour)))
				if err != nil || len(ps)%2 != 0 {
					t.Errorf("Probes = %d points, %v; want whole rounds of 2", len(ps), err)
				}
				hs, err := s.Hourly(ctx, store.Between(hour0, hour0.Add(time.Hour)))
				if err != nil || len(hs) > writers {
					t.Errorf("Hourly = %d points, %v; want at most one per writer", len(hs), err)
				}
			}
		})
	}
	wg.Wait()
	ps, err := s.Probes(ctx, store.Between(hour0, hour0.Add(time.Hour)))
	if err != nil || len(ps) != 2*writers*rounds {
		t.Errorf("Probes at the end = %d points, %v; want %d", len(ps), err, 2*writers*rounds)
	}
	hs, err := s.Hourly(ctx, store.Between(hour0, hour0.Add(time.Hour)))
	if err != nil || len(hs) != writers {
		t.Fatalf("Hourly at the end = %+v, %v; want one per writer", hs, err)
	}
	for _, h := range hs {
		if h.WorstQueueS != rounds-1 {
			t.Errorf("hourly %s worst %v, want %d (the last round's)", h.Lane, h.WorstQueueS, rounds-1)
		}
	}
}

// The restart case against a real InfluxDB: a sampler spools during an
// outage and stops; the server comes back and a new sampler reads the hour
// before its first write has replayed the spool. It sees the server's points
// merged with the spooled ones (a spooled point replacing the server's of
// the same lane and time), and after the replay each point exactly once.
func TestInfluxOutageReadsSpool(t *testing.T) {
	srv := influxtest.Start(t)
	db := srv.CreateDB(t, "readspool")
	const lanes = 3
	o := store.InfluxOptions{URL: srv.URL, Bucket: db + "/autogen", RequestTimeout: 5 * time.Second}
	so := store.SpoolOptions{Path: filepath.Join(t.TempDir(), "spool.lp")}
	s1, err := openSpool(o, so)
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	ps0, hs0 := round(lanes, 0)
	if err := s1.Write(ctx, ps0, hs0); err != nil || s1.SpoolDepth() != 0 {
		t.Fatalf("Write with the server up = %v, depth %d", err, s1.SpoolDepth())
	}

	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	ps1, hs1 := round(lanes, 1)
	if err := s1.Write(ctx, ps1, hs1); err != nil {
		t.Fatalf("Write while down: %v", err)
	}
	// Two rewrites of a probe the server holds: the later spool line wins.
	v2 := ps0[0]
	v2.QueueS, v2.Outcome = 99, "rewritten"
	v3 := v2
	v3.QueueS, v3.OK, v3.Outcome, v3.Status = 123, false, "timeout", 0
	for _, p := range []store.Probe{v2, v3} {
		if err := s1.Write(ctx, []store.Probe{p}, nil); err != nil {
			t.Fatalf("Write while down: %v", err)
		}
	}
	if d := s1.SpoolDepth(); d != 2*lanes+2 {
		t.Fatalf("spool depth %d, want %d", d, 2*lanes+2)
	}
	if got, err := s1.Probes(ctx, store.Between(hour0, hour0.Add(time.Hour))); err == nil {
		t.Errorf("Probes with the server down = %+v, nil; want an error, not the spool alone", got)
	}
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}

	srv.Restart(t)
	s2, err := openSpool(o, so)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if n := countPoints(t, srv.URL, db, "probe", "queue_s"); n != lanes {
		t.Fatalf("server holds %d probes before the replay, want %d", n, lanes)
	}
	merged := slices.Clone(ps0)
	merged[0] = v3
	want := sortProbes(append(merged, ps1...))
	wantRead(t, "restarted store before the replay", s2, want, hs1)

	ps2, hs2 := round(lanes, 2)
	if err := s2.Write(ctx, ps2, hs2); err != nil || s2.SpoolDepth() != 0 {
		t.Fatalf("Write after the restart = %v, depth %d; want nil, 0 (replayed)", err, s2.SpoolDepth())
	}
	if n := countPoints(t, srv.URL, db, "probe", "queue_s"); n != 3*lanes {
		t.Errorf("server holds %d probes after the replay, want %d", n, 3*lanes)
	}
	want = sortProbes(append(want, ps2...))
	wantRead(t, "after the replay", s2, want, hs2)
}

// openSpool opens an Influx store wrapped in a Spool, as a sampler does.
func openSpool(o store.InfluxOptions, so store.SpoolOptions) (*store.Spool, error) {
	db, err := store.OpenInflux(ctx, o)
	if err != nil {
		return nil, err
	}
	sp, err := store.OpenSpool(db, so)
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	return sp, nil
}
