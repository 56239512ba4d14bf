package spool_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
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

func TestMain(m *testing.M) {
	code := m.Run()
	influxtest.StopShared()
	os.Exit(code)
}

var (
	ctx   = context.Background()
	hour0 = time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
)

func probeAt(lane string, d time.Duration, queue float64) store.Probe {
	return store.Probe{Lane: lane, Kind: "free", Time: hour0.Add(d), QueueS: queue, GenS: 2, HeadersS: 0.5, Tokens: 16, OK: true, Outcome: "ok", Status: 200}
}

// round builds round r of lanes probes, all in hour0, with the hourly
// points aggregated over rounds 0..r.
func round(lanes, r int) ([]store.Probe, []store.Hourly) {
	var ps []store.Probe
	var hs []store.Hourly
	for l := range lanes {
		lane := fmt.Sprintf("lane%02d", l)
		var all []store.Probe
		for i := 0; i <= r; i++ {
			p := store.Probe{Lane: lane, Kind: "free", Time: hour0.Add(time.Duration(i)*10*time.Minute + time.Duration(l)*time.Millisecond),
				QueueS: float64(10*i + l), GenS: 1.5, HeadersS: 0.2, Tokens: 16, OK: i%3 != 2, Outcome: "ok", Status: 200}
			if !p.OK {
				p.Outcome, p.Status = "http_error", 503
			}
			all = append(all, p)
		}
		ps = append(ps, all[r])
		hs = append(hs, store.Aggregate(lane, "free", "", hour0, all))
	}
	return ps, hs
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

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
	gotP, err := store.ReadProbes(ctx, s, store.Between(hour0, hour0.Add(time.Hour)))
	if err != nil || !slices.Equal(gotP, ps) {
		t.Errorf("%s: Probes = %v\n %+v\nwant\n %+v", what, err, gotP, ps)
	}
	gotH, err := store.ReadHourly(ctx, s, store.Between(hour0, hour0.Add(time.Hour)))
	if err != nil || !slices.Equal(gotH, hs) {
		t.Errorf("%s: Hourly = %v\n %+v\nwant\n %+v", what, err, gotH, hs)
	}
}

// openSpool opens an Influx store wrapped in a Spool, as a sampler does.
func openSpool(o influx.Options, so spool.Options) (*spool.Spool, error) {
	db, err := influx.Open(ctx, o)
	if err != nil {
		return nil, err
	}
	sp, err := spool.Open(db, so)
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	return sp, nil
}

// openSpooled opens an Influx store on a fresh database of the server at
// base (unless io names a bucket), wrapped in a Spool.
func openSpooled(t testing.TB, base string, io influx.Options, so spool.Options) *spool.Spool {
	t.Helper()
	db := openInflux(t, base, io)
	sp, err := spool.Open(db, so)
	if err != nil {
		t.Fatalf("OpenSpool: %v", err)
	}
	t.Cleanup(func() { _ = sp.Close() })
	return sp
}

// postQuery runs an InfluxQL statement at endpoint (base+"/query[?db=...]").
func postQuery(t *testing.T, endpoint, q string) {
	t.Helper()
	resp, err := http.PostForm(endpoint, map[string][]string{"q": {q}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || bytes.Contains(body, []byte(`"error"`)) {
		t.Fatalf("%s: %s %s", q, resp.Status, body)
	}
}

// openInflux opens a store on a fresh database of the server at base
// (unless o names a bucket).
func openInflux(t testing.TB, base string, o influx.Options) *influx.Store {
	t.Helper()
	o.URL = base
	if o.Bucket == "" {
		o.Bucket = influxtest.NewDB(t, base) + "/autogen"
	}
	s, err := influx.Open(ctx, o)
	if err != nil {
		t.Fatalf("influx.Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// countPoints counts the points of a measurement in hour0's day.
func countPoints(t *testing.T, base, db, measurement, field string) int {
	t.Helper()
	q := fmt.Sprintf(`SELECT count(%q) FROM %q WHERE time >= %d AND time < %d`, field, measurement, hour0.Add(-24*time.Hour).UnixNano(), hour0.Add(24*time.Hour).UnixNano())
	resp, err := http.PostForm(base+"/query?db="+url.QueryEscape(db), url.Values{"q": {q}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer struct {
		Results []struct {
			Series []struct{ Values [][]any }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || len(answer.Results) == 0 {
		t.Fatalf("%s: %v", q, err)
	}
	if len(answer.Results[0].Series) == 0 {
		return 0
	}
	return int(answer.Results[0].Series[0].Values[0][1].(float64))
}

// switchStore is a file store standing in for InfluxDB: a test takes it
// down (every write fails for a passing reason, as a server that cannot be
// reached) or makes it refuse writes for good (a *RefusedError with a
// status, as InfluxDB's 404 for a dropped database), or refuse the writes
// of hourly points alone (a rebuild). Reads always work.
type switchStore struct {
	*file.Store
	mu            sync.Mutex
	mode          string // "up", "down", "refuse"
	status        int
	hourlyRefused bool
}

func newSwitchStore(t *testing.T, mode string, status int) *switchStore {
	t.Helper()
	f, err := file.Open(filepath.Join(t.TempDir(), "inner.lp"), file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return &switchStore{Store: f, mode: mode, status: status}
}

func (s *switchStore) set(mode string, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mode, s.status = mode, status
}

func (s *switchStore) Write(ctx context.Context, b store.Batch) error {
	s.mu.Lock()
	mode, status, hourly := s.mode, s.status, s.hourlyRefused
	s.mu.Unlock()
	switch {
	case mode == "down":
		return errors.New("dial tcp 127.0.0.1:8086: connect: connection refused")
	case mode == "refuse":
		return &store.RefusedError{Points: b.Len(), Status: status, Err: fmt.Errorf("%d: database not found", status)}
	case hourly && len(b.Probes) == 0:
		return &store.RefusedError{Points: b.Len(), Status: 403, Err: errors.New("403: hourly points refused")}
	}
	return s.Store.Write(ctx, b)
}

// Close leaves the file to the test's cleanup, so that a test can read it
// after the spool around it is closed.
func (s *switchStore) Close() error { return nil }

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fullDisk returns a path whose writes fail with ENOSPC, as on a full disk:
// a symlink to /dev/full.
func fullDisk(t *testing.T, dir string) string {
	t.Helper()
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full:", err)
	}
	p := filepath.Join(dir, "dead-letter.lp")
	if err := os.Symlink("/dev/full", p); err != nil {
		t.Fatal(err)
	}
	return p
}

// wantKept checks the one-line error of points kept in the spool because
// the dead-letter file is on a full disk: it says they were kept and names
// the dead-letter file and the cause once each.
func wantKept(t *testing.T, what string, err error, dead string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s = nil; want an error saying the points were kept in the spool", what)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "kept") || strings.Contains(msg, "lost") ||
		strings.Count(msg, dead) != 1 || strings.Count(msg, "no space left on device") != 1 {
		t.Errorf("%s = %q; want one line saying the points were kept, naming %s and %q once each",
			what, msg, dead, "no space left on device")
	}
}

// fakeInflux answers Flux queries with an empty result (or with queryStatus
// when set) and writes with the statuses in plan (then 204), recording each
// write body.
type fakeInflux struct {
	mu          sync.Mutex
	plan        []int
	bodies      []string
	queryStatus int
}

func (f *fakeInflux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/api/v2/query", "/query":
		f.mu.Lock()
		status := f.queryStatus
		f.mu.Unlock()
		if status != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"code":"x","message":"status %d"}`, status)
			return
		}
		if r.URL.Path == "/query" { // InfluxQL: no rows
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"results":[{"statement_id":0}]}`)
			return
		}
		w.Header().Set("Content-Type", "text/csv")
		return
	case "/api/v2/write":
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		status := http.StatusNoContent
		if len(f.plan) > 0 {
			status, f.plan = f.plan[0], f.plan[1:]
		}
		if status == 0 { // drop the connection
			f.mu.Unlock()
			hj, _ := w.(http.Hijacker)
			conn, _, _ := hj.Hijack()
			conn.Close()
			return
		}
		if status == http.StatusNoContent {
			f.bodies = append(f.bodies, string(body))
		}
		f.mu.Unlock()
		if status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "1")
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"code":"x","message":"status %d"}`, status)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeInflux) setQueryStatus(status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queryStatus = status
}

func (f *fakeInflux) written() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.bodies)
}

// markerInflux is a fake InfluxDB that answers queries with no rows and
// accepts every write (204, body recorded) unless the body holds marker:
// then it answers 400, as InfluxDB 1.8 does for a batch with one bad point
// (a partial write).
type markerInflux struct {
	marker string
	mu     sync.Mutex
	bodies []string
}

func (f *markerInflux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/api/v2/query":
		w.Header().Set("Content-Type", "text/csv")
	case "/query": // InfluxQL: no rows
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"results":[{"statement_id":0}]}`)
	case "/api/v2/write":
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), f.marker) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"code":"invalid","message":"partial write: field type conflict: input field \"queue_s\" on measurement \"probe\" is type string, already exists as type float dropped=1"}`)
			return
		}
		f.mu.Lock()
		f.bodies = append(f.bodies, string(body))
		f.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	default:
		http.NotFound(w, r)
	}
}

func (f *markerInflux) written() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.bodies, "\n")
}

// The contract through a spool, around the file store and around InfluxDB,
// as a sampler has it.
func TestContract(t *testing.T) {
	t.Run("file", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store {
			dir := t.TempDir()
			f, err := file.Open(filepath.Join(dir, "samples.lp"), file.Options{Warn: storetest.FailOnWarn(t)})
			if err != nil {
				t.Fatal(err)
			}
			s, err := spool.Open(f, spool.Options{Path: filepath.Join(dir, "spool.lp"), Hours: time.UTC, Warn: storetest.FailOnWarn(t)})
			if err != nil {
				t.Fatal(err)
			}
			return s
		})
	})
	t.Run("influx", func(t *testing.T) {
		base := influxtest.URL(t)
		storetest.Run(t, func(t *testing.T) store.Store {
			s, err := openSpool(influx.Options{URL: base, Bucket: influxtest.NewDB(t, base) + "/autogen", Warn: storetest.FailOnWarn(t)},
				spool.Options{Path: filepath.Join(t.TempDir(), "spool.lp"), Hours: time.UTC, Warn: storetest.FailOnWarn(t)})
			if err != nil {
				t.Fatal(err)
			}
			return s
		})
	})
}

// An outage of the real server: rounds written while it is down are spooled
// and Write returns nil; after the restart the next Write replays them first,
// and the server holds every probe exactly once. Points spooled by one store
// (a sampler process) are replayed by the next one.
func TestOutage(t *testing.T) {
	srv := influxtest.Start(t)

	t.Run("spool and replay", func(t *testing.T) {
		db := srv.CreateDB(t, "outage")
		spoolPath := filepath.Join(t.TempDir(), "spool", "influx.lp")
		var w storetest.Warnings
		s := openSpooled(t, srv.URL, influx.Options{Bucket: db + "/autogen", Warn: w.Warn, RequestTimeout: 5 * time.Second}, spool.Options{Path: spoolPath, Warn: w.Warn})
		const lanes = 5
		write := func(r int) {
			t.Helper()
			ps, hs := round(lanes, r)
			if err := s.Write(ctx, store.Batch{Probes: ps, Hourly: hs}); err != nil {
				t.Fatalf("round %d: Write = %v; want nil (points stored or spooled)", r, err)
			}
		}
		write(0)
		if d := s.Status().Spooled; d != 0 {
			t.Fatalf("spool depth %d with the server up", d)
		}
		if err := srv.Stop(); err != nil {
			t.Fatal(err)
		}
		write(1)
		write(2)
		if d, want := s.Status().Spooled, 2*2*lanes; d != want {
			t.Fatalf("spool depth %d after two rounds down, want %d", d, want)
		}
		if n := countLines(t, spoolPath); n != 4*lanes {
			t.Fatalf("spool file has %d lines, want %d", n, 4*lanes)
		}
		srv.Restart(t)
		write(3)
		if d := s.Status().Spooled; d != 0 {
			t.Errorf("spool depth %d after replay, want 0", d)
		}
		if fi, err := os.Stat(spoolPath); err != nil || fi.Size() != 0 {
			t.Errorf("spool file after replay: %v, %v; want empty", fi, err)
		}
		if n := countPoints(t, srv.URL, db, "probe", "queue_s"); n != 4*lanes {
			t.Errorf("server holds %d probes, want %d (each exactly once)", n, 4*lanes)
		}
		if n := countPoints(t, srv.URL, db, "queue_hourly", "samples"); n != lanes {
			t.Errorf("server holds %d hourly points, want %d", n, lanes)
		}
		_, want := round(lanes, 3)
		got, err := store.ReadHourly(ctx, s, store.Between(hour0, hour0.Add(time.Hour)))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("hourly after replay:\n got %+v\nwant %+v (the last round's)", got, want)
		}
		if !strings.Contains(w.All(), "spooled") || !strings.Contains(w.All(), "replayed") {
			t.Errorf("warnings %q should report the spooling and the replay", w.All())
		}
	})

	t.Run("spool survives the store", func(t *testing.T) {
		db := srv.CreateDB(t, "reopen")
		spoolPath := filepath.Join(t.TempDir(), "spool.lp")
		o := influx.Options{URL: srv.URL, Bucket: db + "/autogen", RequestTimeout: 5 * time.Second}
		so := spool.Options{Path: spoolPath}
		s1, err := openSpool(o, so)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := openSpool(o, so); err == nil || !strings.Contains(err.Error(), spoolPath) {
			t.Fatalf("second OpenInflux on one spool = %v; want an error naming %s", err, spoolPath)
		}
		if err := srv.Stop(); err != nil {
			t.Fatal(err)
		}
		ps, hs := round(3, 0)
		if err := s1.Write(ctx, store.Batch{Probes: ps, Hourly: hs}); err != nil {
			t.Fatalf("Write while down: %v", err)
		}
		if err := s1.Close(); err != nil {
			t.Fatal(err)
		}
		srv.Restart(t)
		var w storetest.Warnings
		so.Warn = w.Warn
		s2, err := openSpool(o, so)
		if err != nil {
			t.Fatal(err)
		}
		defer s2.Close()
		if d := s2.Status().Spooled; d != 6 {
			t.Fatalf("reopened spool depth %d, want 6", d)
		}
		if !strings.Contains(w.All(), "earlier run") {
			t.Errorf("open warnings %q should mention the waiting points", w.All())
		}
		ps, hs = round(3, 1)
		if err := s2.Write(ctx, store.Batch{Probes: ps, Hourly: hs}); err != nil {
			t.Fatal(err)
		}
		if n := countPoints(t, srv.URL, db, "probe", "queue_s"); n != 6 {
			t.Errorf("server holds %d probes, want 6", n)
		}
		if d := s2.Status().Spooled; d != 0 {
			t.Errorf("spool depth %d, want 0", d)
		}
	})
}

// Points the real server refuses for good go to the dead-letter file, Write
// says so, and Import brings them back once the cause is fixed.
func TestRefused(t *testing.T) {
	base := influxtest.URL(t)
	for _, c := range []struct {
		name    string
		spoil   func(t *testing.T, db string) // makes the next write fail for good
		fix     func(t *testing.T, db string)
		want    string
		refused int // the points that go to the dead-letter file
	}{
		{
			name: "field type conflict (400)",
			spoil: func(t *testing.T, db string) {
				line := fmt.Sprintf("probe,kind=free,lane=lane00 queue_s=\"text\" %d", hour0.Add(-time.Minute).UnixNano())
				resp, err := http.Post(base+"/write?db="+db, "text/plain", strings.NewReader(line))
				if err != nil || resp.StatusCode != http.StatusNoContent {
					t.Fatalf("seed conflicting point: %v %v", resp, err)
				}
				resp.Body.Close()
			},
			fix:  func(t *testing.T, db string) { postQuery(t, base+"/query?db="+db, `DROP MEASUREMENT "probe"`) },
			want: "field type conflict",
			// A partial write: the probe points conflict, the hourly
			// points were accepted and must not be dead-lettered.
			refused: 2,
		},
		{
			name:    "database dropped after open (404)",
			spoil:   func(t *testing.T, db string) { postQuery(t, base+"/query", "DROP DATABASE "+strconv.Quote(db)) },
			fix:     func(t *testing.T, db string) { postQuery(t, base+"/query", "CREATE DATABASE "+strconv.Quote(db)) },
			want:    "database not found",
			refused: 4,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := influxtest.NewDB(t, base)
			spoolPath := filepath.Join(t.TempDir(), "spool.lp")
			s := openSpooled(t, base, influx.Options{Bucket: db + "/autogen"}, spool.Options{Path: spoolPath})
			c.spoil(t, db)
			ps, hs := round(2, 0)
			err := s.Write(ctx, store.Batch{Probes: ps, Hourly: hs})
			var re *store.RefusedError
			if !errors.As(err, &re) {
				t.Fatalf("Write = %v; want a *RefusedError", err)
			}
			if re.Points != c.refused || re.DeadLetter != spoolPath+".dead" || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "dead-letter") {
				t.Errorf("refusal %+v (%v); want %d points in %s.dead and %q", re, err, c.refused, spoolPath, c.want)
			}
			if n := countLines(t, spoolPath+".dead"); n != c.refused {
				t.Errorf("dead-letter file has %d lines, want %d", n, c.refused)
			}
			if d := s.Status().Spooled; d != 0 {
				t.Errorf("refused points went to the spool (depth %d)", d)
			}
			// After the fix the dead letters import as they are.
			c.fix(t, db)
			f, err := os.Open(spoolPath + ".dead")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			res, err := store.Import(ctx, store.NewRecorder(s, time.UTC), f, storetest.FailOnWarn(t))
			if err != nil || res.Probes != 2 || res.Hourly != 2 {
				t.Fatalf("Import of dead letters = %+v, %v; want 2 probes and 2 rebuilt hours", res, err)
			}
			got, err := store.ReadProbes(ctx, s, store.Between(hour0, hour0.Add(time.Hour)))
			if err != nil || !slices.Equal(got, ps) {
				t.Errorf("after import Probes = %+v, %v; want %+v", got, err, ps)
			}
		})
	}
}

func TestWriteStatuses(t *testing.T) {
	for _, c := range []struct {
		status int
		spool  bool // true: queued for replay; false: dead-lettered
	}{
		{0, true}, {408, true}, {429, true}, {500, true}, {502, true}, {503, true},
		{400, false}, {401, false}, {403, false}, {404, false}, {413, false},
	} {
		t.Run(strconv.Itoa(c.status), func(t *testing.T) {
			// A refusal is the same for any part of the batch, so the
			// server refuses every write: the split finds all 4 points.
			plan := []int{c.status}
			if !c.spool {
				plan = slices.Repeat(plan, 7)
			}
			fake := &fakeInflux{plan: plan}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			spoolPath := filepath.Join(t.TempDir(), "spool.lp")
			s := openSpooled(t, srv.URL, influx.Options{Bucket: "b", Token: "sekret-token"}, spool.Options{Path: spoolPath})
			ps, hs := round(2, 0)
			err := s.Write(ctx, store.Batch{Probes: ps, Hourly: hs})
			if c.spool {
				if err != nil || s.Status().Spooled != 4 || countLines(t, spoolPath) != 4 {
					t.Fatalf("Write = %v, depth %d, spool lines %d; want nil, 4, 4", err, s.Status().Spooled, countLines(t, spoolPath))
				}
				// The next write replays, then writes its own points.
				if err := s.Write(ctx, store.Batch{}); err != nil || s.Status().Spooled != 0 {
					t.Fatalf("replay: %v, depth %d", err, s.Status().Spooled)
				}
				if got := fake.written(); len(got) != 1 || strings.Count(got[0], "\n") != 3 {
					t.Fatalf("server received %q; want the 4 spooled lines once", got)
				}
				return
			}
			var re *store.RefusedError
			if !errors.As(err, &re) || re.Points != 4 || countLines(t, spoolPath+".dead") != 4 || s.Status().Spooled != 0 {
				t.Fatalf("Write = %v, depth %d; want a refusal of 4 points into the dead-letter file", err, s.Status().Spooled)
			}
			if strings.Contains(err.Error(), "sekret") || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q leaks the token or spans lines", err)
			}
		})
	}
}

// The spool is replayed in order, in batches of at most 5000 lines, before
// the new points.
func TestReplayOrder(t *testing.T) {
	fake := &fakeInflux{plan: []int{503, 503}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	s := openSpooled(t, srv.URL, influx.Options{Bucket: "b"}, spool.Options{Path: filepath.Join(t.TempDir(), "spool.lp")})
	for r := range 3 {
		var ps []store.Probe
		for i := range 3000 {
			ps = append(ps, probeAt(fmt.Sprintf("r%d", r), time.Duration(i)*time.Millisecond, float64(i)))
		}
		if err := s.Write(ctx, store.Batch{Probes: ps}); err != nil {
			t.Fatalf("round %d: %v", r, err)
		}
	}
	got := fake.written()
	var lines []string
	for i, b := range got {
		n := strings.Count(b, "\n") + 1
		if n > 5000 {
			t.Errorf("request %d carries %d lines, want at most 5000", i, n)
		}
		lines = append(lines, strings.Split(b, "\n")...)
	}
	if len(got) != 3 || len(lines) != 9000 {
		t.Fatalf("server got %d requests with %d lines; want 3 requests (5000 + 1000 replayed, then 3000 new) with 9000 lines", len(got), len(lines))
	}
	for i, line := range lines {
		want := fmt.Sprintf("lane=r%d queue_s=%d,", i/3000, i%3000)
		if !strings.Contains(line, want) {
			t.Fatalf("line %d is %q, want round %d: replay out of order", i, line, i/3000)
		}
	}
}

func TestCap(t *testing.T) {
	fake := &fakeInflux{plan: []int{503, 503, 503, 503, 503, 503}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	spoolPath := filepath.Join(t.TempDir(), "spool.lp")
	var warnings []string
	warn := func(msg string, _ ...any) { warnings = append(warnings, msg) }
	s := openSpooled(t, srv.URL, influx.Options{Bucket: "b", Warn: warn}, spool.Options{Path: spoolPath, MaxBytes: 1000, Warn: warn})
	ps, hs := round(2, 0) // about 600 bytes
	if err := s.Write(ctx, store.Batch{Probes: ps, Hourly: hs}); err != nil {
		t.Fatalf("first Write: %v", err)
	}
	if n := len(warnings); n == 0 || strings.Contains(warnings[n-1], "NEARLY FULL") {
		t.Errorf("at 60%% of the cap: warnings %q, want a spool warning but no NEARLY FULL", warnings)
	}
	ps, hs = round(2, 1)
	err := s.Write(ctx, store.Batch{Probes: ps, Hourly: hs})
	if !errors.Is(err, spool.ErrSpoolFull) || !strings.Contains(err.Error(), "4 points not stored") {
		t.Fatalf("Write past the cap = %v; want ErrSpoolFull saying 4 points were not stored", err)
	}
	if d := s.Status().Spooled; d != 4 || countLines(t, spoolPath) != 4 {
		t.Errorf("spool depth %d, %d lines; want the first round kept whole (4)", d, countLines(t, spoolPath))
	}
	// A smaller round still fits, past 80 % of the cap: the warning gets loud.
	ps, _ = round(2, 2) // two probe lines, about 300 bytes
	if err := s.Write(ctx, store.Batch{Probes: ps}); err != nil {
		t.Fatalf("small Write under the cap: %v", err)
	}
	if n := len(warnings); n == 0 || !strings.Contains(warnings[n-1], "NEARLY FULL") {
		t.Errorf("past 80%% of the cap: last warning %q, want NEARLY FULL", warnings)
	}
}

// Spooled points that InfluxDB refuses at replay go to the dead-letter file;
// the spool is emptied, the new points are written, and the one-line error
// says what was refused.
func TestReplayRefused(t *testing.T) {
	fake := &fakeInflux{plan: append([]int{503}, slices.Repeat([]int{400}, 7)...)} // 400 for the batch, its halves and each point
	srv := httptest.NewServer(fake)
	defer srv.Close()
	spoolPath := filepath.Join(t.TempDir(), "spool.lp")
	s := openSpooled(t, srv.URL, influx.Options{Bucket: "b"}, spool.Options{Path: spoolPath})
	ps, hs := round(2, 0)
	if err := s.Write(ctx, store.Batch{Probes: ps, Hourly: hs}); err != nil {
		t.Fatalf("Write 1: %v", err)
	}
	ps, hs = round(2, 1)
	err := s.Write(ctx, store.Batch{Probes: ps, Hourly: hs})
	var re *store.RefusedError
	if !errors.As(err, &re) || re.Points != 4 || !strings.Contains(err.Error(), "replaying spool") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Write 2 = %v; want a one-line refusal of the 4 spooled points", err)
	}
	if d := s.Status().Spooled; d != 0 || countLines(t, spoolPath) != 0 || countLines(t, spoolPath+".dead") != 4 {
		t.Errorf("depth %d, spool %d lines, dead letters %d lines; want 0, 0, 4", d, countLines(t, spoolPath), countLines(t, spoolPath+".dead"))
	}
	if got := fake.written(); len(got) != 1 || !strings.Contains(got[0], "queue_s=10,") {
		t.Errorf("server accepted %q; want round 1's points", got)
	}
}

// A Spool's refusal reports the store's HTTP status, as the bare store's
// does, whichever path the refused points took: to the dead-letter file,
// kept in the spool when that file cannot be written, or refused when the
// spool is replayed. (It was 0 on all three.)
func TestRefusalKeepsTheStatus(t *testing.T) {
	for _, c := range []struct {
		name   string
		status int
		run    func(t *testing.T, inner *switchStore, dir string) error
	}{
		{"a write to the dead-letter file", http.StatusNotFound, func(t *testing.T, inner *switchStore, dir string) error {
			s := openSwitchSpool(t, inner, dir, filepath.Join(dir, "dead.lp"))
			ps, hs := round(2, 0)
			return s.Write(ctx, store.Batch{Probes: ps, Hourly: hs})
		}},
		{"a write kept in the spool (dead-letter file on a full disk)", http.StatusForbidden, func(t *testing.T, inner *switchStore, dir string) error {
			s := openSwitchSpool(t, inner, dir, fullDisk(t, dir))
			ps, hs := round(2, 0)
			return s.Write(ctx, store.Batch{Probes: ps, Hourly: hs})
		}},
		{"a replay", http.StatusBadRequest, func(t *testing.T, inner *switchStore, dir string) error {
			status := inner.status
			inner.set("down", 0)
			s := openSwitchSpool(t, inner, dir, filepath.Join(dir, "dead.lp"))
			ps, hs := round(2, 0)
			if err := s.Write(ctx, store.Batch{Probes: ps, Hourly: hs}); err != nil || s.Status().Spooled == 0 {
				t.Fatalf("Write while down = %v, depth %d; want it spooled", err, s.Status().Spooled)
			}
			inner.set("refuse", status)
			return s.Drain(ctx)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			inner := newSwitchStore(t, "refuse", c.status)
			err := c.run(t, inner, t.TempDir())
			var re *store.RefusedError
			if !errors.As(err, &re) || re.Status != c.status {
				t.Fatalf("err = %v (%#v); want a *RefusedError with status %d", err, re, c.status)
			}
		})
	}
}

// Finding 1: the dead-letter file is on a full disk and the server then
// refuses the points (404). The previous release logged "dead-letter …: no
// space left on device; points lost" and emptied the spool: the points were
// on disk and were deleted, and its error repeated the path ("write X:
// write X: no space left on device"). The spool must be kept.
func TestDeadLetterOnFullDiskKeepsTheSpool(t *testing.T) {
	t.Run("spooled points refused at replay", func(t *testing.T) {
		dir := t.TempDir()
		spoolPath, dead := filepath.Join(dir, "spool.lp"), fullDisk(t, dir)
		inner := newSwitchStore(t, "down", 0)
		var w storetest.Warnings
		s, err := spool.Open(inner, spool.Options{Path: spoolPath, DeadLetter: dead, Warn: w.Warn})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ps0, hs0 := round(2, 0)
		if err := s.Write(ctx, store.Batch{Probes: ps0, Hourly: hs0}); err != nil || s.Status().Spooled != 4 {
			t.Fatalf("Write while down = %v, depth %d; want nil, 4 spooled", err, s.Status().Spooled)
		}
		before := readFile(t, spoolPath)

		inner.set("refuse", http.StatusNotFound)
		wantKept(t, "Drain", s.Drain(ctx), dead)
		if got := readFile(t, spoolPath); got != before || s.Status().Spooled != 4 {
			t.Fatalf("spool after the failed replay (depth %d):\n%s\nwant it kept as it was:\n%s", s.Status().Spooled, got, before)
		}

		// A round written now queues behind them, and the caller hears of it.
		ps1, hs1 := round(2, 1)
		wantKept(t, "Write", s.Write(ctx, store.Batch{Probes: ps1, Hourly: hs1}), dead)
		if got := readFile(t, spoolPath); !strings.HasPrefix(got, before) || countLines(t, spoolPath) != 8 || s.Status().Spooled != 8 {
			t.Fatalf("spool after the second round: depth %d, %d lines; want both rounds (8)", s.Status().Spooled, countLines(t, spoolPath))
		}

		// Once the server takes them, nothing was lost.
		inner.set("up", 0)
		if err := s.Drain(ctx); err != nil || s.Status().Spooled != 0 {
			t.Fatalf("Drain with the server up = %v, depth %d", err, s.Status().Spooled)
		}
		wantRead(t, "the server after the fix", inner.Store, sortProbes(append(ps0, ps1...)), hs1)
	})

	t.Run("new points refused", func(t *testing.T) {
		dir := t.TempDir()
		spoolPath, dead := filepath.Join(dir, "spool.lp"), fullDisk(t, dir)
		inner := newSwitchStore(t, "refuse", http.StatusNotFound)
		s, err := spool.Open(inner, spool.Options{Path: spoolPath, DeadLetter: dead})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ps, hs := round(2, 0)
		err = s.Write(ctx, store.Batch{Probes: ps, Hourly: hs})
		wantKept(t, "Write", err, dead)
		var re *store.RefusedError
		if !errors.As(err, &re) || re.DeadLetter != "" || !strings.Contains(err.Error(), spoolPath) {
			t.Errorf("Write = %v; want a refusal that names the spool, not a dead-letter file", err)
		}
		if countLines(t, spoolPath) != 4 || s.Status().Spooled != 4 {
			t.Fatalf("spool holds %d lines, depth %d; want the 4 refused points", countLines(t, spoolPath), s.Status().Spooled)
		}
		inner.set("up", 0)
		if err := s.Drain(ctx); err != nil {
			t.Fatal(err)
		}
		wantRead(t, "the server after the fix", inner.Store, ps, hs)
	})
}

// Finding 4: the previous release sent a spool line of a foreign
// measurement to InfluxDB, logged "spool replayed" for points then refused,
// warned about each corrupt line once per read and again at the replay,
// and sent a whole partially written batch, accepted points included, to
// the dead-letter file.
func TestBadLines(t *testing.T) {
	fake := &markerInflux{marker: "lane=poison"}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	dir := t.TempDir()
	spoolPath, dead := filepath.Join(dir, "spool.lp"), filepath.Join(dir, "dead.lp")
	ns := hour0.UnixNano()
	good := fmt.Sprintf(`probe,kind=free,lane=good queue_s=1,gen_s=1,headers_s=0.5,tokens=4i,ok=true,outcome="ok",status=200i %d`, ns)
	poison := fmt.Sprintf(`probe,kind=free,lane=poison queue_s=2,gen_s=1,headers_s=0.5,tokens=4i,ok=true,outcome="ok",status=200i %d`, ns)
	foreign := "cpu,host=a usage=1 1"
	corrupt := fmt.Sprintf(`probe,kind=free,lane=bad queue_s="oops" %d`, ns+1)
	content := strings.Join([]string{good, foreign, poison, corrupt}, "\n") + "\n"
	if err := os.WriteFile(spoolPath, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	var w storetest.Warnings
	s := openSpooled(t, srv.URL, influx.Options{Bucket: "b", Warn: w.Warn},
		spool.Options{Path: spoolPath, DeadLetter: dead, Warn: w.Warn})
	if w.Count() != 1 || !strings.Contains(w.All(), "earlier run") {
		t.Errorf("open warnings %q; want one about the waiting lines", w.All())
	}

	// Reads merge the good lines and say nothing about the bad ones: the
	// replay reports them.
	for range 2 {
		ps, err := store.ReadProbes(ctx, s, store.Between(hour0, hour0.Add(time.Hour)))
		if err != nil || len(ps) != 2 || ps[0].Lane != "good" || ps[1].Lane != "poison" {
			t.Fatalf("Probes before the replay = %+v, %v; want good and poison", ps, err)
		}
		if _, err := store.ReadHourly(ctx, s, store.Between(hour0, hour0.Add(time.Hour))); err != nil {
			t.Fatal(err)
		}
	}
	if w.Count() != 1 {
		t.Errorf("reads warned: %s", w.All())
	}

	ps, hs := round(2, 0)
	err := s.Write(ctx, store.Batch{Probes: ps, Hourly: hs})
	var re *store.RefusedError
	if !errors.As(err, &re) || re.Points != 3 || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Write = %v; want a one-line refusal of 3 spooled lines (poison, foreign, corrupt)", err)
	}
	got := fake.written()
	for _, bad := range []string{"cpu,", "lane=bad", "lane=poison"} {
		if strings.Contains(got, bad) {
			t.Errorf("the server was sent %q:\n%s", bad, got)
		}
	}
	if !strings.Contains(got, "lane=good") || strings.Count(got, "lane=lane0") != 4 {
		t.Errorf("the server got\n%s\nwant the good spooled probe and the new round", got)
	}
	deadLines := strings.Split(strings.TrimSuffix(readFile(t, dead), "\n"), "\n")
	if len(deadLines) != 3 || !slices.Contains(deadLines, foreign) || !slices.Contains(deadLines, corrupt) ||
		!slices.ContainsFunc(deadLines, func(l string) bool { return strings.HasPrefix(l, "probe,kind=free,lane=poison queue_s=2,") }) {
		t.Errorf("dead-letter file holds\n%s\nwant the foreign, corrupt and poison lines and nothing else", strings.Join(deadLines, "\n"))
	}
	if countLines(t, spoolPath) != 0 || s.Status().Spooled != 0 {
		t.Errorf("spool not emptied: %d lines, depth %d", countLines(t, spoolPath), s.Status().Spooled)
	}

	msgs := strings.Split(w.All(), "\n")
	if len(msgs) != 2 {
		t.Fatalf("warnings over open, reads and replay:\n%s\nwant two: the waiting lines, the replay's summary", w.All())
	}
	summary := msgs[1]
	for _, want := range []string{"stored=1", "refused=1", "not_lanewatch_lines=2", dead} {
		if !strings.Contains(summary, want) {
			t.Errorf("replay summary %q lacks %q", summary, want)
		}
	}
	if strings.Contains(summary, "replayed") {
		t.Errorf("replay summary %q says the refused points were replayed", summary)
	}
	if n := strings.Count(w.All(), "not_lanewatch"); n != 1 {
		t.Errorf("the bad lines are reported %d times:\n%s", n, w.All())
	}

	t.Run("partial write of new points", func(t *testing.T) {
		before := fake.written()
		dead2 := filepath.Join(t.TempDir(), "dead.lp")
		s := openSpooled(t, srv.URL, influx.Options{Bucket: "b"},
			spool.Options{Path: filepath.Join(t.TempDir(), "spool.lp"), DeadLetter: dead2})
		var ps []store.Probe
		for i := range 7 {
			ps = append(ps, probeAt(fmt.Sprint("lane", i), time.Duration(i)*time.Second, float64(i)))
		}
		ps[4].Lane = "poison"
		_, hs := round(3, 0)
		err := s.Write(ctx, store.Batch{Probes: ps, Hourly: hs})
		if !errors.As(err, &re) || re.Points != 1 || re.DeadLetter != dead2 {
			t.Fatalf("Write = %v; want a refusal of the one poison point", err)
		}
		lines := strings.Split(strings.TrimSuffix(readFile(t, dead2), "\n"), "\n")
		if len(lines) != 1 || !strings.Contains(lines[0], "lane=poison") {
			t.Errorf("dead-letter file holds %q; want the poison point alone", lines)
		}
		sent := strings.TrimPrefix(fake.written(), before)
		for i, p := range ps {
			if i != 4 && !strings.Contains(sent, "lane="+p.Lane+" ") {
				t.Errorf("accepted point %s was not stored", p.Lane)
			}
		}
		if strings.Count(sent, "queue_hourly") != 3 {
			t.Errorf("the server got %d hourly points, want 3:\n%s", strings.Count(sent, "queue_hourly"), sent)
		}
	})
}

// Finding 6: in the previous release the rounds InfluxDB refused never
// entered the hourly total, and importing their dead letters copied their
// older hourly lines over the newer ones (samples 9 → 5): after the import
// the hour counted 28 samples against 31 probes. Through a Spool on a real
// InfluxDB: the hour's record is the aggregate of every probe, refused
// ones included once imported.
func TestImportedDeadLettersEnterTheHour(t *testing.T) {
	base := influxtest.URL(t)
	db := influxtest.NewDB(t, base)
	g := newGate(t, base)
	dir := t.TempDir()
	dead := filepath.Join(dir, "dead-letter.lp")
	s, err := openSpool(influx.Options{URL: g.server.URL, Bucket: db + "/autogen", RequestTimeout: 5 * time.Second},
		spool.Options{Path: filepath.Join(dir, "spool.lp"), DeadLetter: dead, Hours: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec := store.NewRecorder(s, time.UTC)
	var all []store.Probe
	record := func(i int, refused bool) {
		t.Helper()
		var ps []store.Probe
		for _, lane := range []string{"a", "b"} {
			p := probeAt(lane, time.Duration(i)*2*time.Minute, float64(i%7)/100)
			if i%5 == 4 {
				p.OK, p.Outcome, p.Status = false, "timeout", 0
			}
			ps = append(ps, p)
		}
		all = append(all, ps...)
		_, err := rec.Record(ctx, ps)
		var re *store.RefusedError
		if refused && (!errors.As(err, &re) || re.DeadLetter != dead) || !refused && err != nil {
			t.Fatalf("round %d (refused %v): Record = %v", i, refused, err)
		}
	}
	g.set("refuse")
	for i := range 9 {
		record(i, true)
	}
	g.set("up")
	for i := 9; i < 28; i++ {
		record(i, false)
	}
	f, err := os.Open(dead)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := store.Import(ctx, rec, f, storetest.FailOnWarn(t))
	if err != nil || res.Probes != 18 || res.Skipped != 18 {
		t.Fatalf("Import = %+v, %v; want the 18 refused probes, their 18 hourly lines skipped", res, err)
	}
	hs, err := store.ReadHourly(ctx, s, store.Between(hour0, hour0.Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	want := store.Rollup(sortProbes(all), time.UTC)
	if !slices.Equal(hs, want) || len(hs) != 2 || hs[0].Samples != 28 {
		t.Errorf("hourly after the import:\n %+v\nwant the aggregate of all 28 probes per lane:\n %+v", hs, want)
	}
	bad, err := store.Check(ctx, s, time.UTC, store.Window{From: hour0, To: hour0.Add(time.Hour)}, nil)
	if err != nil || len(bad) != 0 {
		t.Errorf("Check = %v, %v; want no mismatch", bad, err)
	}
}

// A second writer of one spool is refused, naming the spool and its lock
// once each.
func TestSecondWriterRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "spool.lp")
	inner := newSwitchStore(t, "up", 0)
	s1, err := spool.Open(inner, spool.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	_, err = spool.Open(inner, spool.Options{Path: path})
	if err == nil || strings.Count(err.Error(), path) != 2 || !strings.Contains(err.Error(), path+".lock") {
		t.Errorf("second writer on one spool = %v; want the spool and its lock named once each", err)
	}
}

// An outage of the newer server: spooled rounds replay after its restart,
// each probe stored once.
func TestNewerServerReplay(t *testing.T) {
	srv := influxtest.StartNewer(t, influxtest.Options{})
	db := srv.CreateDB(t, "newerspool")
	const lanes = 3
	s := openSpooled(t, srv.URL, influx.Options{Bucket: db + "/autogen", RequestTimeout: 5 * time.Second},
		spool.Options{Path: filepath.Join(t.TempDir(), "spool.lp")})
	var all []store.Probe
	write := func(r int) {
		t.Helper()
		ps, hs := round(lanes, r)
		all = append(all, ps...)
		if err := s.Write(ctx, store.Batch{Probes: ps, Hourly: hs}); err != nil {
			t.Fatalf("round %d: %v", r, err)
		}
	}
	write(0)
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	write(1)
	if d := s.Status().Spooled; d != 2*lanes {
		t.Fatalf("spool depth %d while down, want %d", d, 2*lanes)
	}
	srv.Restart(t)
	write(2)
	if d := s.Status().Spooled; d != 0 {
		t.Fatalf("spool depth %d after the restart, want 0", d)
	}
	_, hs := round(lanes, 2)
	wantRead(t, "after the replay", s, sortProbes(all), hs)
}

// A database dropped while a store is open. InfluxDB 1.8.10 answers an
// InfluxQL SELECT on it with 200 and the error in the statement's result,
// {"results":[{"statement_id":0,"error":"database not found: DB"}]} (as
// MessagePack, without statement_id, when asked for it), a Flux query
// with 500 "failed to initialize execute state: no database", and a write,
// on /write and /api/v2/write, with 404 {"error":"database not found:
// \"DB\""}. Every read must fail naming the database, and lastingly (not
// ErrUnavailable: waiting does not bring a database back), never as an
// empty answer, which a sampler would take for "no probes yet" and spend
// the budget again. Through a Spool the read fails too, and a write is
// refused into the dead-letter file, not spooled for a retry that cannot
// succeed.
func TestDroppedDatabase(t *testing.T) {
	base := influxtest.URL(t)
	target, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	// jsonOnly takes MessagePack out of the Accept header: the server's
	// JSON answer, as to a client without MessagePack.
	jsonOnly := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		pr.Out.Header.Set("Accept", "application/json")
	}})
	defer jsonOnly.Close()

	q := store.Between(hour0.Add(-2*time.Hour), hour0.Add(2*time.Hour))
	reads := []struct {
		name string
		read func(st store.Store) error
	}{
		{"Probes", func(st store.Store) error { _, err := store.ReadProbes(ctx, st, q); return err }},
		{"Hourly", func(st store.Store) error { _, err := store.ReadHourly(ctx, st, q); return err }},
		{"Heartbeats", func(st store.Store) error {
			_, err := store.ReadHeartbeats(ctx, st, store.Query{Windows: []store.Window{q.Windows[0]}, Sites: []string{""}})
			return err
		}},
	}
	for _, c := range []struct {
		name string
		url  func() string
		want func(db string) string // the server's own words, as the error must carry them
	}{
		{"msgpack", func() string { return base }, func(db string) string { return "database not found: " + db }},
		{"json", func() string { return jsonOnly.URL }, func(db string) string { return "database not found: " + db }},
	} {
		for _, spooled := range []bool{false, true} {
			name := c.name
			if spooled {
				name += " spooled"
			}
			t.Run(name, func(t *testing.T) {
				db := influxtest.NewDB(t, base)
				o := influx.Options{URL: c.url(), Bucket: db + "/autogen", Warn: storetest.FailOnWarn(t)}
				inner, err := influx.Open(ctx, o)
				if err != nil {
					t.Fatal(err)
				}
				var st store.Store = inner
				spoolPath := filepath.Join(t.TempDir(), "spool.lp")
				if spooled {
					sp, err := spool.Open(inner, spool.Options{Path: spoolPath, Warn: storetest.FailOnWarn(t)})
					if err != nil {
						t.Fatal(err)
					}
					st = sp
				}
				defer func() { _ = st.Close() }()
				ps, hs := round(2, 0)
				if err := st.Write(ctx, store.Batch{Probes: ps, Hourly: hs}); err != nil {
					t.Fatal(err)
				}
				if got, err := store.ReadProbes(ctx, st, q); err != nil || len(got) != len(ps) {
					t.Fatalf("before the drop Probes = %d points, %v; want %d", len(got), err, len(ps))
				}
				postQuery(t, base+"/query", "DROP DATABASE "+strconv.Quote(db))

				for _, r := range reads {
					err := r.read(st)
					switch {
					case err == nil:
						t.Errorf("%s after the drop: no error (an empty answer reads as never probed)", r.name)
					case !strings.Contains(err.Error(), c.want(db)) || !strings.Contains(err.Error(), "does the bucket exist"):
						t.Errorf("%s after the drop = %v; want the server's %q and the bucket hint", r.name, err, c.want(db))
					case errors.Is(err, store.ErrUnavailable):
						t.Errorf("%s after the drop = %v: marked unavailable (passing), want a lasting failure", r.name, err)
					}
				}

				ps, hs = round(2, 1)
				err = st.Write(ctx, store.Batch{Probes: ps, Hourly: hs})
				var re *store.RefusedError
				switch {
				case !errors.As(err, &re) || !strings.Contains(err.Error(), `404 Not Found: database not found: "`+db+`"`):
					t.Errorf("Write after the drop = %v; want a *RefusedError of the 404 naming the database", err)
				case !spooled && re.Status != 404:
					t.Errorf("Write after the drop: status %d, want 404", re.Status)
				case spooled && re.DeadLetter != spoolPath+".dead":
					t.Errorf("spooled Write after the drop went to %q, want the dead-letter file", re.DeadLetter)
				}
				if d := st.Status().Spooled; d != 0 {
					t.Errorf("refused points went to the spool (depth %d)", d)
				}
				err = st.Write(ctx, store.Batch{Heartbeats: []store.Heartbeat{{Instance: "i", Shard: "0/1", Time: hour0}}})
				if err == nil || errors.Is(err, store.ErrUnavailable) {
					t.Errorf("a heartbeat's write after the drop = %v; want a lasting failure", err)
				}
			})
		}
	}
}

// After a replay the hours of the replayed probes are rebuilt, from the
// store's probes and the dead-lettered ones; a refused rebuild keeps the
// spool whole and is the replay's error.
func TestHoursRebuiltAfterTheReplay(t *testing.T) {
	for _, refuse := range []bool{false, true} {
		t.Run(fmt.Sprint("rebuild refused ", refuse), func(t *testing.T) {
			inner := newSwitchStore(t, "down", 0)
			path := filepath.Join(t.TempDir(), "spool.lp")
			sp, err := spool.Open(inner, spool.Options{Path: path, Hours: time.UTC})
			if err != nil {
				t.Fatal(err)
			}
			defer sp.Close()
			ps := []store.Probe{probeAt("a", time.Minute, 3), probeAt("a", time.Hour+time.Minute, 4)}
			if err := sp.Write(ctx, store.Batch{Probes: ps, Defer: true}); err != nil || sp.Status().Spooled != 2 {
				t.Fatalf("Defer = %v, depth %d", err, sp.Status().Spooled)
			}
			inner.set("up", 0)
			if refuse {
				inner.hourlyRefused = true
			}
			err = sp.Drain(ctx)
			hs, herr := store.ReadHourly(ctx, inner.Store, store.Between(hour0, hour0.Add(2*time.Hour)))
			if refuse {
				if err == nil || !strings.Contains(err.Error(), "kept") || sp.Status().Spooled != 2 {
					t.Errorf("Drain with the rebuild refused = %v, depth %d; want an error and the spool kept", err, sp.Status().Spooled)
				}
				return
			}
			want := store.Rollup(ps, time.UTC)
			if err != nil || herr != nil || !slices.Equal(hs, want) || sp.Status().Spooled != 0 {
				t.Errorf("after the replay: %v, hours %+v (%v), depth %d; want the hours %+v", err, hs, herr, sp.Status().Spooled, want)
			}
		})
	}
}

func openSwitchSpool(t *testing.T, inner *switchStore, dir, dead string) *spool.Spool {
	t.Helper()
	s, err := spool.Open(inner, spool.Options{Path: filepath.Join(dir, "spool.lp"), DeadLetter: dead})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// Every store keeps heartbeats, a spool passing them to its store: written,
// read back equal by sites and window (the later write of one instance and
// time winning), the sites they share quotas with or none (an older
// sampler's), unseen by the probe and hourly reads.
func TestHeartbeats(t *testing.T) {
	stores := []struct {
		name string
		open func(t *testing.T) store.Store
	}{
		{"file", func(t *testing.T) store.Store {
			st, err := file.Open(filepath.Join(t.TempDir(), "samples.lp"), file.Options{Warn: storetest.FailOnWarn(t)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			return st
		}},
		{"influx", func(t *testing.T) store.Store {
			return openInflux(t, influxtest.URL(t), influx.Options{Warn: storetest.FailOnWarn(t)})
		}},
		{"a spool around influx", func(t *testing.T) store.Store {
			return openSpooled(t, influxtest.URL(t), influx.Options{Warn: storetest.FailOnWarn(t)},
				spool.Options{Path: filepath.Join(t.TempDir(), "spool.lp"), Warn: storetest.FailOnWarn(t)})
		}},
	}
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	beat := func(inst, site string, at time.Duration) store.Heartbeat {
		return store.Heartbeat{Instance: inst, Shard: "1/2", Site: site, Time: t0.Add(at), Host: "host a",
			StartNS: t0.Add(-time.Hour).UnixNano() + 7, Version: "v1.2.3 (devel)", IntervalS: 60, Sites: "eu,us"}
	}
	older := beat("e", "us", 3*time.Minute)
	older.Sites = ""
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			st := s.open(t)
			ctx := context.Background()
			rewritten := beat("b", "eu", 2*time.Minute)
			rewritten.Version = "v2"
			for _, b := range []store.Heartbeat{
				beat("a", "eu", 0), beat("b", "eu", time.Minute), beat("b", "eu", 2*time.Minute),
				beat("c", "", time.Minute), beat("d", "us", time.Minute), rewritten, older,
			} {
				if err := st.Write(ctx, store.Batch{Heartbeats: []store.Heartbeat{b}}); err != nil {
					t.Fatalf("write %+v: %v", b, err)
				}
			}
			cases := []struct {
				sites    []string
				from, to time.Duration
				want     []store.Heartbeat
			}{
				{[]string{"eu"}, 0, time.Hour, []store.Heartbeat{beat("a", "eu", 0), beat("b", "eu", time.Minute), rewritten}},
				{[]string{"eu"}, time.Second, 2 * time.Minute, []store.Heartbeat{beat("b", "eu", time.Minute)}},
				{[]string{""}, 0, time.Hour, []store.Heartbeat{beat("c", "", time.Minute)}},
				{[]string{"us"}, 2 * time.Minute, time.Hour, []store.Heartbeat{older}},
				{[]string{"us", "eu"}, time.Second, time.Hour, []store.Heartbeat{beat("b", "eu", time.Minute), beat("d", "us", time.Minute), rewritten, older}},
				{[]string{"", "us"}, time.Second, 2 * time.Minute, []store.Heartbeat{beat("c", "", time.Minute), beat("d", "us", time.Minute)}},
				{[]string{}, 0, time.Hour, []store.Heartbeat{}},
			}
			for _, c := range cases {
				got, err := store.ReadHeartbeats(ctx, st, store.Query{Windows: []store.Window{store.Window{From: t0.Add(c.from), To: t0.Add(c.to)}}, Sites: c.sites})
				if err != nil {
					t.Fatalf("sites %q: %v", c.sites, err)
				}
				if !reflect.DeepEqual(got, c.want) {
					t.Errorf("sites %q [%s, %s): got\n  %+v\nwant\n  %+v", c.sites, c.from, c.to, got, c.want)
				}
			}
			if got := beat("a", "", 0).Start(); !got.Equal(t0.Add(-time.Hour + 7)) {
				t.Errorf("Start() = %s", got)
			}
			ps, err := store.ReadProbes(ctx, st, store.Between(t0.Add(-time.Hour), t0.Add(time.Hour)))
			if err != nil || len(ps) != 0 {
				t.Errorf("probes read %v, %v; want none beside heartbeats", ps, err)
			}
			hs, err := store.ReadHourly(ctx, st, store.Between(t0.Add(-time.Hour), t0.Add(time.Hour)))
			if err != nil || len(hs) != 0 {
				t.Errorf("hourly read %v, %v; want none beside heartbeats", hs, err)
			}
		})
	}
}
