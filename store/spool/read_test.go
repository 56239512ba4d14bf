package spool_test

// Reads (read.go): the spool's files merged into the store's.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
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
	"github.com/lanewatch/lanewatch/store/storetest"
)

// Points spooled while InfluxDB refuses writes are read back by the store
// that spooled them and by the next store on the same spool; a read fails
// when the server cannot be read instead of returning the spool alone.
func TestReadsTheSpool(t *testing.T) {
	fake := &fakeInflux{plan: slices.Repeat([]int{http.StatusServiceUnavailable}, 100)}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	var w storetest.Warnings
	o := influx.Options{URL: srv.URL, Bucket: "b", Warn: w.Warn}
	so := spool.Options{Path: filepath.Join(t.TempDir(), "spool.lp"), Warn: w.Warn}
	s1, err := openSpool(o, so)
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()

	ps0, hs0 := round(2, 0)
	if err := s1.Write(ctx, store.Batch{Probes: ps0, Hourly: hs0}); err != nil || s1.Status().Spooled != 4 {
		t.Fatalf("Write = %v, depth %d; want nil, 4 (spooled)", err, s1.Status().Spooled)
	}
	wantRead(t, "after one spooled round", s1, ps0, hs0)
	ps1, hs1 := round(2, 1)
	if err := s1.Write(ctx, store.Batch{Probes: ps1, Hourly: hs1}); err != nil || s1.Status().Spooled != 8 {
		t.Fatalf("Write = %v, depth %d; want nil, 8 (spooled)", err, s1.Status().Spooled)
	}
	both := sortProbes(append(slices.Clone(ps0), ps1...))
	wantRead(t, "after two spooled rounds (the later hourly line wins)", s1, both, hs1)
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := store.ReadProbes(ctx, s1, store.Between(hour0, hour0.Add(time.Hour))); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Probes after Close = %v; want os.ErrClosed", err)
	}
	if _, err := store.ReadHourly(ctx, s1, store.Between(hour0, hour0.Add(time.Hour))); !errors.Is(err, os.ErrClosed) {
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
		got, err := store.ReadProbes(ctx, s2, store.Between(c.from, c.to))
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("Probes(%s, %s) = %v %+v; want %+v", c.from.Format(time.TimeOnly), c.to.Format(time.TimeOnly), err, got, c.want)
		}
	}
	if got, err := store.ReadHourly(ctx, s2, store.Between(hour0.Add(time.Nanosecond), hour0.Add(time.Hour))); err != nil || len(got) != 0 {
		t.Errorf("Hourly after the hour start = %v %+v; want none", err, got)
	}

	// The server cannot be read: the read fails, it does not return the
	// spool alone (the sampler would take that for the whole hour).
	fake.setQueryStatus(http.StatusServiceUnavailable)
	if got, err := store.ReadProbes(ctx, s2, store.Between(hour0, hour0.Add(time.Hour))); err == nil {
		t.Errorf("Probes with the server failing = %+v, nil; want an error", got)
	}
	if got, err := store.ReadHourly(ctx, s2, store.Between(hour0, hour0.Add(time.Hour))); err == nil {
		t.Errorf("Hourly with the server failing = %+v, nil; want an error", got)
	}
	fake.setQueryStatus(0)

	if strings.Contains(w.All(), "corrupt") {
		t.Errorf("warnings %q report corrupt spool lines", w.All())
	}
}

// Reads run alongside writes that spool: each read sees whole rounds.
func TestReadsTheSpoolConcurrently(t *testing.T) {
	fake := &fakeInflux{plan: slices.Repeat([]int{http.StatusServiceUnavailable}, 1000)}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	s := openSpooled(t, srv.URL, influx.Options{Bucket: "b"}, spool.Options{Path: filepath.Join(t.TempDir(), "spool.lp")})
	const writers, rounds = 3, 10
	var wg sync.WaitGroup
	for wr := range writers {
		wg.Go(func() {
			for r := range rounds {
				d := time.Duration(wr*rounds+r) * time.Millisecond
				ps := []store.Probe{probeAt("a", d, 1), probeAt("b", d, 2)}
				if err := s.Write(ctx, store.Batch{Probes: ps, Hourly: []store.Hourly{hourlyAt(fmt.Sprint("w", wr), 0, float64(r))}}); err != nil {
					t.Errorf("Write: %v", err)
				}
			}
		})
	}
	for range 3 {
		wg.Go(func() {
			for range rounds {
				ps, err := store.ReadProbes(ctx, s, store.Between(hour0, hour0.Add(time.Hour)))
				if err != nil || len(ps)%2 != 0 {
					t.Errorf("Probes = %d points, %v; want whole rounds of 2", len(ps), err)
				}
				hs, err := store.ReadHourly(ctx, s, store.Between(hour0, hour0.Add(time.Hour)))
				if err != nil || len(hs) > writers {
					t.Errorf("Hourly = %d points, %v; want at most one per writer", len(hs), err)
				}
			}
		})
	}
	wg.Wait()
	ps, err := store.ReadProbes(ctx, s, store.Between(hour0, hour0.Add(time.Hour)))
	if err != nil || len(ps) != 2*writers*rounds {
		t.Errorf("Probes at the end = %d points, %v; want %d", len(ps), err, 2*writers*rounds)
	}
	hs, err := store.ReadHourly(ctx, s, store.Between(hour0, hour0.Add(time.Hour)))
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
func TestOutageReadsTheSpool(t *testing.T) {
	srv := influxtest.Start(t)
	db := srv.CreateDB(t, "readspool")
	const lanes = 3
	o := influx.Options{URL: srv.URL, Bucket: db + "/autogen", RequestTimeout: 5 * time.Second}
	so := spool.Options{Path: filepath.Join(t.TempDir(), "spool.lp")}
	s1, err := openSpool(o, so)
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	ps0, hs0 := round(lanes, 0)
	if err := s1.Write(ctx, store.Batch{Probes: ps0, Hourly: hs0}); err != nil || s1.Status().Spooled != 0 {
		t.Fatalf("Write with the server up = %v, depth %d", err, s1.Status().Spooled)
	}

	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	ps1, hs1 := round(lanes, 1)
	if err := s1.Write(ctx, store.Batch{Probes: ps1, Hourly: hs1}); err != nil {
		t.Fatalf("Write while down: %v", err)
	}
	// Two rewrites of a probe the server holds: the later spool line wins.
	v2 := ps0[0]
	v2.QueueS, v2.Outcome = 99, "rewritten"
	v3 := v2
	v3.QueueS, v3.OK, v3.Outcome, v3.Status = 123, false, "timeout", 0
	for _, p := range []store.Probe{v2, v3} {
		if err := s1.Write(ctx, store.Batch{Probes: []store.Probe{p}}); err != nil {
			t.Fatalf("Write while down: %v", err)
		}
	}
	if d := s1.Status().Spooled; d != 2*lanes+2 {
		t.Fatalf("spool depth %d, want %d", d, 2*lanes+2)
	}
	if got, err := store.ReadProbes(ctx, s1, store.Between(hour0, hour0.Add(time.Hour))); err == nil {
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
	// A newest read merges the spool's points into the server's newest: in
	// the first ten minutes the spool's rewrite of a probe the server holds.
	for _, to := range []time.Duration{10 * time.Minute, time.Hour} {
		var last []store.Probe
		for i, p := range want {
			if p.Time.Before(hour0.Add(to)) && !slices.ContainsFunc(want[i+1:], func(q store.Probe) bool {
				return q.Lane == p.Lane && q.Kind == p.Kind && q.Time.Before(hour0.Add(to))
			}) {
				last = append(last, p)
			}
		}
		q := store.Query{Windows: []store.Window{{From: hour0, To: hour0.Add(to)}}, Newest: true}
		if got, err := store.ReadProbes(ctx, s2, q); err != nil || !slices.Equal(got, last) || len(last) != lanes {
			t.Errorf("newest probes before %v = %v\n %+v\nwant\n %+v", to, err, got, last)
		}
	}

	ps2, hs2 := round(lanes, 2)
	if err := s2.Write(ctx, store.Batch{Probes: ps2, Hourly: hs2}); err != nil || s2.Status().Spooled != 0 {
		t.Fatalf("Write after the restart = %v, depth %d; want nil, 0 (replayed)", err, s2.Status().Spooled)
	}
	if n := countPoints(t, srv.URL, db, "probe", "queue_s"); n != 3*lanes {
		t.Errorf("server holds %d probes after the replay, want %d", n, 3*lanes)
	}
	want = sortProbes(append(want, ps2...))
	wantRead(t, "after the replay", s2, want, hs2)
}

// Finding 2: policygen, swings, -day and import could not run beside a
// sampler on InfluxDB: the previous release's read-only open took the
// spool's writer lock ("spool … is in use by another writer"; as another
// user, "permission denied" creating the lock). A read-only open takes no
// lock and creates nothing; its reads merge the spooled points.
func TestReadOnlySpoolBesideTheWriter(t *testing.T) {
	dir := t.TempDir()
	spoolPath := filepath.Join(dir, "spool.lp")
	inner := newSwitchStore(t, "up", 0)
	ps0, hs0 := round(2, 0)
	if err := inner.Write(ctx, store.Batch{Probes: ps0, Hourly: hs0}); err != nil {
		t.Fatal(err)
	}
	writer, err := spool.Open(inner, spool.Options{Path: spoolPath})
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	inner.set("down", 0)
	ps1, hs1 := round(2, 1)
	if err := writer.Write(ctx, store.Batch{Probes: ps1, Hourly: hs1}); err != nil || writer.Status().Spooled != 4 {
		t.Fatalf("Write while down = %v, depth %d", err, writer.Status().Spooled)
	}

	var w storetest.Warnings
	reader, err := spool.Open(inner, spool.Options{Path: spoolPath, ReadOnly: true, Warn: w.Warn})
	if err != nil {
		t.Fatalf("read-only open beside the writer: %v", err)
	}
	defer reader.Close()
	wantRead(t, "read-only spool beside the writer", reader, sortProbes(append(ps0, ps1...)), hs1)
	if err := reader.Write(ctx, store.Batch{Probes: ps1}); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("Write on a read-only spool = %v; want a read-only error", err)
	}
	if w.Count() > 0 {
		t.Errorf("warnings: %s", w.All())
	}

	t.Run("creates no lock", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "spool.lp")
		if err := os.WriteFile(path, []byte(readFile(t, spoolPath)), 0o644); err != nil {
			t.Fatal(err)
		}
		missing := filepath.Join(dir, "none", "spool.lp")
		for _, p := range []string{path, missing} {
			r, err := spool.Open(inner, spool.Options{Path: p, ReadOnly: true})
			if err != nil {
				t.Fatalf("read-only open of %s: %v", p, err)
			}
			if _, err := store.ReadProbes(ctx, r, store.Between(hour0, hour0.Add(time.Hour))); err != nil {
				t.Fatal(err)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) != 1 || entries[0].Name() != "spool.lp" {
			t.Errorf("folder after read-only opens holds %v; want spool.lp alone (no .lock, nothing created)", entries)
		}
	})
}

// Finding 2, the other user: a spool the reader cannot open. Tests run as
// root here, where chmod does not stop a read, so the unreadable spool is
// made another way (a folder in its place; a path under a file): the read
// warns once and returns what the server holds instead of failing.
func TestReadOnlySpoolUnreadable(t *testing.T) {
	inner := newSwitchStore(t, "up", 0)
	ps, hs := round(2, 0)
	if err := inner.Write(ctx, store.Batch{Probes: ps, Hourly: hs}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		path func(dir string) string
	}{
		{"a folder in its place", func(dir string) string {
			p := filepath.Join(dir, "spool.lp")
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			return p
		}},
		{"a path under a file", func(dir string) string {
			f := filepath.Join(dir, "data")
			if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(f, "spool.lp")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := c.path(t.TempDir())
			var w storetest.Warnings
			r, err := spool.Open(inner, spool.Options{Path: path, ReadOnly: true, Warn: w.Warn})
			if err != nil {
				t.Fatalf("read-only open: %v", err)
			}
			defer r.Close()
			wantRead(t, "unreadable spool", r, ps, hs)
			if _, err := store.ReadProbes(ctx, r, store.Between(hour0, hour0.Add(time.Hour))); err != nil {
				t.Errorf("second read: %v", err)
			}
			if w.Count() != 1 || !strings.Contains(w.All(), path) || strings.Count(w.All(), path) != 1 {
				t.Errorf("warnings over three reads: %q; want one naming %s once", w.All(), path)
			}
		})
	}
}

// A read-only spool at /dev/zero (policygen beside a misconfigured
// sampler) is not read: reads return the store's points at once and warn
// that the spool is not readable.
func TestReadOnlySpoolOfDeviceIsNotRead(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	var warned []string
	s, err := spool.Open(nopStore{}, spool.Options{Path: "/dev/zero", ReadOnly: true,
		Warn: func(msg string, args ...any) { warned = append(warned, msg) }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	done := make(chan error, 1)
	go func() {
		_, err := store.ReadProbes(t.Context(), s, store.Between(time.Unix(0, 0), time.Now()))
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("read still running after 10 s")
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "spool not readable") {
		t.Errorf("warnings %q, want one saying the spool is not readable", warned)
	}
}

// refusing is a store that refuses every write for good.
type refusing struct{ store.Store }

func (refusing) Write(context.Context, store.Batch) error {
	return &store.RefusedError{Status: 403, Err: errors.New("403 Forbidden")}
}

// nopClose is a store that its spool does not close.
type nopClose struct{ store.Store }

func (nopClose) Close() error { return nil }

// nopStore keeps nothing and reads nothing.
type nopStore struct{}

func (nopStore) Write(context.Context, store.Batch) error               { return nil }
func (nopStore) Read(context.Context, store.Query, store.Reader) error  { return nil }
func (nopStore) Prune(context.Context, time.Time) (store.Pruned, error) { return store.Pruned{}, nil }
func (nopStore) Status() store.Status                                   { return store.Status{Where: "nowhere"} }
func (nopStore) Close() error                                           { return nil }

// A probe the store refused was sent: the spool's reads merge the
// dead-letter file's probes (after a restart too), LocalProbes reads them
// without the store, and a dead-lettered reservation never replaces the
// probe that settled it.
func TestReadsMergeTheDeadLetter(t *testing.T) {
	dir := t.TempDir()
	fs, err := file.Open(filepath.Join(dir, "samples.lp"), file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	so := spool.Options{Path: filepath.Join(dir, "spool.lp"), DeadLetter: filepath.Join(dir, "dead.lp")}
	ctx := context.Background()
	sp, err := spool.Open(refusing{nopClose{fs}}, so)
	if err != nil {
		t.Fatal(err)
	}
	booked := store.Probe{Lane: "a", Kind: "free", Time: at, Outcome: store.OutcomeReserved}
	refused := store.Probe{Lane: "b", Kind: "free", Time: at, Outcome: "rate_limited", Status: 429}
	if err := store.Booked(sp.Write(ctx, store.Batch{Probes: []store.Probe{booked, refused}})); err != nil {
		t.Fatalf("the refused points are not in the dead-letter file: %v", err)
	}
	settled := booked
	settled.Outcome, settled.OK, settled.QueueS = "ok", true, 1
	if err := fs.Write(ctx, store.Batch{Probes: []store.Probe{settled}}); err != nil {
		t.Fatal(err)
	}
	_ = sp.Close()
	sp, err = spool.Open(nopClose{fs}, so) // a new process
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	q := store.Between(at.Add(-time.Hour), at.Add(time.Hour))
	ps, err := store.ReadProbes(ctx, sp, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0].Outcome != "ok" || ps[1].Outcome != "rate_limited" {
		t.Fatalf("read %+v; want a settled ok and the refused 429", ps)
	}
	local, err := store.ReadProbes(ctx, sp, q) /*LOCAL*/
	if err != nil || len(local) != 2 {
		t.Fatalf("LocalProbes = %+v, %v; want the 2 dead-lettered points", local, err)
	}
}

// A spool's probe reads merge its dead-letter file and its spool file, a
// reader's (another process's spool) as a writer's: the refused probes
// were sent, the spooled ones too. No test saw localMerge read the dead
// letter only for a writer with one (a reader's never); the whole suite
// sees it stop after the dead letter (the spool's probes never merged)
// only through TestFindingReadOnlySpoolBesideWriter.
func TestProbesMergeTheDeadLetterAndTheSpool(t *testing.T) {
	at := hour0.Add(-2 * time.Hour)
	refused := store.Probe{Lane: "a", Kind: "free", Time: at, Outcome: "rate_limited", Status: 429}
	spooled := store.Probe{Lane: "b", Kind: "free", Time: at.Add(time.Minute), Outcome: "ok", OK: true, QueueS: 2}
	for _, readOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("read-only %t", readOnly), func(t *testing.T) {
			dir := t.TempDir()
			so := spool.Options{Path: filepath.Join(dir, "spool.lp"), ReadOnly: readOnly}
			for _, f := range []struct {
				path string
				p    store.Probe
			}{{so.Path + ".dead", refused}, {so.Path, spooled}} {
				lp, err := file.Open(f.path, file.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if err := lp.Write(ctx, store.Batch{Probes: []store.Probe{f.p}}); err != nil {
					t.Fatal(err)
				}
				if err := lp.Close(); err != nil {
					t.Fatal(err)
				}
			}
			inner := newSwitchStore(t, "up", 0)
			sp, err := spool.Open(inner, so)
			if err != nil {
				t.Fatal(err)
			}
			defer sp.Close()
			q := store.Between(at.Add(-time.Hour), at.Add(time.Hour))
			ps, err := store.ReadProbes(ctx, sp, q)
			if err != nil || len(ps) != 2 || ps[0].Lane != "a" || ps[1].Lane != "b" {
				t.Errorf("Probes = %+v, %v; want the refused probe and the spooled one", ps, err)
			}
			local, err := store.ReadProbes(ctx, sp, q) /*LOCAL*/
			if err != nil || len(local) != 2 {
				t.Errorf("LocalProbes = %+v, %v; want the refused probe and the spooled one", local, err)
			}
		})
	}
}

// hourlyFails is a spool's inner store whose writes fail as an outage (so
// the spool keeps them) and whose hourly reads fail with err when set.
type hourlyFails struct {
	*switchStore
	err error
}

func (h *hourlyFails) Read(ctx context.Context, q store.Query, r store.Reader) error {
	if h.err != nil && r.Hourly != nil {
		return h.err
	}
	return h.switchStore.Read(ctx, q, r)
}

// A spool's streamed hourly read fails when it cannot be read whole: the
// inner store's read fails while the spool holds points (merged from a
// whole read), the context ended before a reader's spool files were read,
// or the writer's spool file cannot be read; Hourly fails alike. fn is
// never called: a failed read is no empty answer.
func TestReadFails(t *testing.T) {
	boom := errors.New("store on fire")
	spooled := store.Hourly{Lane: "a", Kind: "free", Site: "fra1", Hour: hour0, WorstQueueS: 3, Samples: 1}
	q := store.Between(hour0.Add(-time.Hour), hour0.Add(time.Hour))
	for _, c := range []struct {
		name string
		// open returns the spool to read (with spooled in its file) and
		// the context to read with
		open func(t *testing.T, path string) (*spool.Spool, context.Context)
		want error // errors.Is the error, when not nil
	}{
		{"the inner store's read fails", func(t *testing.T, path string) (*spool.Spool, context.Context) {
			inner := &hourlyFails{switchStore: newSwitchStore(t, "down", 0)}
			sp := spoolWith(t, inner, path, spooled)
			inner.err = boom
			return sp, ctx
		}, boom},
		{"a reader's, the context ended", func(t *testing.T, path string) (*spool.Spool, context.Context) {
			w := spoolWith(t, newSwitchStore(t, "down", 0), path, spooled)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			r, err := spool.Open(newSwitchStore(t, "up", 0), spool.Options{Path: path, ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = r.Close() })
			done, cancel := context.WithCancel(ctx)
			cancel()
			return r, done
		}, context.Canceled},
		{"the writer's spool file is not readable", func(t *testing.T, path string) (*spool.Spool, context.Context) {
			sp := spoolWith(t, newSwitchStore(t, "down", 0), path, spooled)
			if err := os.Rename(path, path+".moved"); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
			return sp, ctx
		}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			sp, rctx := c.open(t, filepath.Join(t.TempDir(), "spool.lp"))
			called := false
			err := storetest.EachHour(rctx, sp, q, func([]store.Hourly) error {
				called = true
				return nil
			})
			if err == nil || called || c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("the read = %v (fn called: %t); want an error (%v), fn never called", err, called, c.want)
			}
			if hs, err := store.ReadHourly(rctx, sp, q); err == nil || c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("Hourly = %d points, %v; want an error (%v)", len(hs), err, c.want)
			}
		})
	}
}

// spoolWith opens a writing spool at path over inner (down: writes are
// spooled) and writes the points, which it keeps.
func spoolWith(t *testing.T, inner store.Store, path string, hs ...store.Hourly) *spool.Spool {
	t.Helper()
	sp, err := spool.Open(inner, spool.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sp.Close() })
	if err := sp.Write(ctx, store.Batch{Hourly: hs}); err != nil || sp.Status().Spooled != len(hs) {
		t.Fatalf("Write = %v, depth %d; want nil, %d (spooled)", err, sp.Status().Spooled, len(hs))
	}
	return sp
}

// hoursOf writes lanes × sites hourly records for each hour of [from, from
// + n hours) and returns them.
func hoursOf(from time.Time, n int, lanes int, sites []string) []store.Hourly {
	var hs []store.Hourly
	for h := range n {
		for l := range lanes {
			for s, site := range sites {
				hs = append(hs, store.Hourly{Lane: fmt.Sprintf("lane-%02d", l), Kind: "free", Site: site,
					Hour: from.Add(time.Duration(h) * time.Hour), WorstQueueS: float64(h*100 + l*10 + s), Samples: 3})
			}
		}
	}
	return hs
}

// A reader whose spool (another process's) holds hourly points the server
// does not have gets them through EachHourly as through Hourly: the read
// merges the spool, a later spooled line replacing the server's point.
func TestReadMergesTheSpool(t *testing.T) {
	srv := influxtest.Start(t)
	db := srv.CreateDB(t, "eachspool")
	first := hour0.Add(-72 * time.Hour)
	stored := hoursOf(first, 73, 3, []string{"fra1", "iad1"})
	direct := openInflux(t, srv.URL, influx.Options{Bucket: db + "/autogen"})
	if err := direct.Write(ctx, store.Batch{Hourly: stored}); err != nil {
		t.Fatal(err)
	}

	// A sampler's spool, written while its server refused every write.
	path := filepath.Join(t.TempDir(), "spool.lp")
	down := httptest.NewServer(&fakeInflux{plan: slices.Repeat([]int{http.StatusServiceUnavailable}, 100)})
	defer down.Close()
	w, err := openSpool(influx.Options{URL: down.URL, Bucket: "b"}, spool.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	rewrite := stored[7]
	rewrite.WorstQueueS = 999
	added := store.Hourly{Lane: "lane-09", Kind: "paid", Site: "sin1", Hour: first.Add(5 * time.Hour), WorstQueueS: 1, Samples: 1}
	if err := w.Write(ctx, store.Batch{Hourly: []store.Hourly{rewrite, added}}); err != nil || w.Status().Spooled != 2 {
		t.Fatalf("Write = %v, depth %d; want nil, 2 (spooled)", err, w.Status().Spooled)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	r := openSpooled(t, srv.URL, influx.Options{Bucket: db + "/autogen"}, spool.Options{Path: path, ReadOnly: true})
	q := store.Between(first, hour0.Add(time.Hour))
	want, err := store.ReadHourly(ctx, r, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != len(stored)+1 || !slices.Contains(want, rewrite) || !slices.Contains(want, added) {
		t.Fatalf("Hourly = %d points; want the %d stored with one rewritten and one added from the spool", len(want), len(stored))
	}
	runs, err := storetest.HourlyRuns(r, q)
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Concat(runs...); !slices.Equal(got, want) {
		t.Errorf("EachHourly through the reader's spool: %d points, not Hourly's %d", len(got), len(want))
	}
	if len(runs) != 73 {
		t.Errorf("EachHourly handed %d runs, want one per hour: 73", len(runs))
	}
}

// A sampler's spool read an hour at a time (its status page) while the
// sampler writes: the write waits for the read, which sees the store at
// one moment (none of the write's points, though its hour is read after
// the write began), and neither deadlocks. fn runs under the spool's read
// lock and does not call the spool (see Spool.HourlyEach).
func TestReadWhileTheSpoolWrites(t *testing.T) {
	base := influxtest.URL(t)
	first := hour0.Add(-4 * 24 * time.Hour) // four pieces
	sp := openSpooled(t, base, influx.Options{}, spool.Options{Path: filepath.Join(t.TempDir(), "spool.lp")})
	stored := hoursOf(first, 4*24-1, 2, []string{"fra1"})
	if err := sp.Write(ctx, store.Batch{Hourly: stored}); err != nil {
		t.Fatal(err)
	}
	late := store.Hourly{Lane: "lane-00", Kind: "free", Site: "fra1", Hour: hour0.Add(-time.Hour), WorstQueueS: 7, Samples: 1}
	wrote := make(chan error, 1)
	var got []store.Hourly
	read := make(chan error, 1)
	go func() {
		read <- storetest.EachHour(ctx, sp, store.Between(first, hour0), func(hs []store.Hourly) error {
			if len(got) == 0 {
				go func() { wrote <- sp.Write(ctx, store.Batch{Hourly: []store.Hourly{late}}) }()
				time.Sleep(100 * time.Millisecond) // the write waits for the lock meanwhile
			}
			got = append(got, hs...)
			return nil
		})
	}()
	for _, c := range []struct {
		name string
		ch   chan error
	}{{"EachHourly", read}, {"Write", wrote}} {
		select {
		case err := <-c.ch:
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
		case <-time.After(20 * time.Second):
			buf := make([]byte, 1<<20)
			t.Fatalf("%s still running after 20 s:\n%s", c.name, buf[:runtime.Stack(buf, true)])
		}
	}
	if !slices.Equal(got, stored) {
		t.Errorf("EachHourly during a write gave %d points; want the %d stored before it", len(got), len(stored))
	}
	after, err := store.ReadHourly(ctx, sp, store.Between(first, hour0))
	if err != nil || len(after) != len(stored)+1 {
		t.Errorf("Hourly after the write = %d points, %v; want %d", len(after), err, len(stored)+1)
	}
}

// An outage with Flux reads: rounds written while the server is down are
// spooled, a read then fails instead of returning the spool alone, a new
// store reads the server's points merged with the spool before the replay,
// and after the replay the server holds each point exactly once.
func TestReadsTheSpoolBeforeTheReplay(t *testing.T) {
	srv := influxtest.Start(t)
	db := srv.CreateDB(t, "fluxspool")
	const lanes = 4
	o := influx.Options{URL: srv.URL, Bucket: db + "/autogen", RequestTimeout: 5 * time.Second}
	so := spool.Options{Path: filepath.Join(t.TempDir(), "spool.lp")}
	s1, err := openSpool(o, so)
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	ps0, hs0 := round(lanes, 0)
	if err := s1.Write(ctx, store.Batch{Probes: ps0, Hourly: hs0}); err != nil || s1.Status().Spooled != 0 {
		t.Fatalf("Write with the server up = %v, depth %d", err, s1.Status().Spooled)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	ps1, hs1 := round(lanes, 1)
	if err := s1.Write(ctx, store.Batch{Probes: ps1, Hourly: hs1}); err != nil || s1.Status().Spooled != 2*lanes {
		t.Fatalf("Write while down = %v, depth %d; want nil, %d", err, s1.Status().Spooled, 2*lanes)
	}
	if got, err := store.ReadHourly(ctx, s1, store.Between(hour0, hour0.Add(time.Hour))); err == nil || !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Hourly with the server down = %+v, %v; want ErrUnavailable, not the spool alone", got, err)
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
	wantRead(t, "before the replay", s2, sortProbes(append(slices.Clone(ps0), ps1...)), hs1)
	ps2, hs2 := round(lanes, 2)
	if err := s2.Write(ctx, store.Batch{Probes: ps2, Hourly: hs2}); err != nil || s2.Status().Spooled != 0 {
		t.Fatalf("Write after the restart = %v, depth %d; want nil, 0 (replayed)", err, s2.Status().Spooled)
	}
	if n := countPoints(t, srv.URL, db, "probe", "queue_s"); n != 3*lanes {
		t.Errorf("server holds %d probes after the replay, want %d (each once)", n, 3*lanes)
	}
	if n := countPoints(t, srv.URL, db, "queue_hourly", "samples"); n != lanes {
		t.Errorf("server holds %d hourly points after the replay, want %d", n, lanes)
	}
	wantRead(t, "after the replay", s2, sortProbes(append(append(slices.Clone(ps0), ps1...), ps2...)), hs2)
}

func hourlyAt(lane string, h int, worst float64) store.Hourly {
	return store.Hourly{Lane: lane, Kind: "free", Hour: hour0.Add(time.Duration(h) * time.Hour), WorstQueueS: worst, WorstGenS: 2, MinTokPerS: 8, Samples: 1, Eligible: true}
}
