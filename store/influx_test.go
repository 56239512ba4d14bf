package store_test

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/influxtest"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/storetest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	influxtest.StopShared()
	removeBenchFiles()
	os.Exit(code)
}

// openInflux opens a store on a fresh database of the server at base.
func openInflux(t testing.TB, base string, o store.InfluxOptions) *store.Influx {
	t.Helper()
	o.URL = base
	if o.Bucket == "" {
		o.Bucket = influxtest.NewDB(t, base) + "/autogen"
	}
	s, err := store.OpenInflux(ctx, o)
	if err != nil {
		t.Fatalf("OpenInflux: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestInfluxContract(t *testing.T) {
	base := influxtest.URL(t)
	storetest.Run(t, func(t *testing.T) store.Store {
		db := influxtest.NewDB(t, base)
		s, err := openSpool(store.InfluxOptions{URL: base, Bucket: db + "/autogen", Warn: failOnWarn(t)},
			store.SpoolOptions{Path: filepath.Join(t.TempDir(), "spool.lp"), Warn: failOnWarn(t)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// The same contract through Flux reads, as on InfluxDB 2.x (the default on
// 1.x is InfluxQL).
func TestInfluxContractFlux(t *testing.T) {
	base := influxtest.URL(t)
	storetest.Run(t, func(t *testing.T) store.Store {
		db := influxtest.NewDB(t, base)
		s, err := openSpool(store.InfluxOptions{URL: base, Bucket: db + "/autogen", Query: store.QueryFlux, Warn: failOnWarn(t)},
			store.SpoolOptions{Path: filepath.Join(t.TempDir(), "spool.lp"), Warn: failOnWarn(t)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
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

// fluxCSV posts a raw Flux query (as a dashboard or CLI would) and returns
// the CSV rows as maps from column name to value.
func fluxCSV(t *testing.T, base, flux string) []map[string]string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/api/v2/query", strings.NewReader(flux))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/csv")
	req.Header.Set("Content-Type", "application/vnd.flux")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("flux query: %s: %s", resp.Status, body)
	}
	r := csv.NewReader(bytes.NewReader(body))
	r.FieldsPerRecord = -1
	var rows []map[string]string
	var header []string
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("flux csv: %v\n%s", err, body)
		}
		switch {
		case len(rec) > 0 && strings.HasPrefix(rec[0], "#"):
			header = nil // annotations start each table
		case header == nil:
			header = rec
		default:
			row := map[string]string{}
			for i, v := range rec {
				if i < len(header) {
					row[header[i]] = v
				}
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// countPoints counts the points of a measurement in hour0's day via Flux.
func countPoints(t *testing.T, base, db, measurement, field string) int {
	t.Helper()
	rows := fluxCSV(t, base, fmt.Sprintf(`from(bucket: "%s/autogen")
  |> range(start: %s, stop: %s)
  |> filter(fn: (r) => r._measurement == %q and r._field == %q)
  |> group()
  |> count()`, db, hour0.Add(-24*time.Hour).Format(time.RFC3339), hour0.Add(24*time.Hour).Format(time.RFC3339), measurement, field))
	if len(rows) == 0 {
		return 0
	}
	n, err := strconv.Atoi(rows[0]["_value"])
	if err != nil {
		t.Fatalf("count: %v in %v", err, rows)
	}
	return n
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

// An outage of the real server: rounds written while it is down are spooled
// and Write returns nil; after the restart the next Write replays them first,
// and the server holds every probe exactly once. Points spooled by one store
// (a sampler process) are replayed by the next one.
func TestInfluxOutage(t *testing.T) {
	srv := influxtest.Start(t)

	t.Run("spool and replay", func(t *testing.T) {
		db := srv.CreateDB(t, "outage")
		spool := filepath.Join(t.TempDir(), "spool", "influx.lp")
		var w warnings
		s := openSpooled(t, srv.URL, store.InfluxOptions{Bucket: db + "/autogen", Warn: w.warn, RequestTimeout: 5 * time.Second}, store.SpoolOptions{Path: spool, Warn: w.warn})
		const lanes = 5
		write := func(r int) {
			t.Helper()
			ps, hs := round(lanes, r)
			if err := s.Write(ctx, ps, hs); err != nil {
				t.Fatalf("round %d: Write = %v; want nil (points stored or spooled)", r, err)
			}
		}
		write(0)
		if d := s.SpoolDepth(); d != 0 {
			t.Fatalf("spool depth %d with the server up", d)
		}
		if err := srv.Stop(); err != nil {
			t.Fatal(err)
		}
		write(1)
		write(2)
		if d, want := s.SpoolDepth(), 2*2*lanes; d != want {
			t.Fatalf("spool depth %d after two rounds down, want %d", d, want)
		}
		if n := countLines(t, spool); n != 4*lanes {
			t.Fatalf("spool file has %d lines, want %d", n, 4*lanes)
		}
		srv.Restart(t)
		write(3)
		if d := s.SpoolDepth(); d != 0 {
			t.Errorf("spool depth %d after replay, want 0", d)
		}
		if fi, err := os.Stat(spool); err != nil || fi.Size() != 0 {
			t.Errorf("spool file after replay: %v, %v; want empty", fi, err)
		}
		if n := countPoints(t, srv.URL, db, "probe", "queue_s"); n != 4*lanes {
			t.Errorf("server holds %d probes, want %d (each exactly once)", n, 4*lanes)
		}
		if n := countPoints(t, srv.URL, db, "queue_hourly", "samples"); n != lanes {
			t.Errorf("server holds %d hourly points, want %d", n, lanes)
		}
		_, want := round(lanes, 3)
		got, err := s.Hourly(ctx, store.Between(hour0, hour0.Add(time.Hour)))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("hourly after replay:\n got %+v\nwant %+v (the last round's)", got, want)
		}
		if !strings.Contains(w.all(), "spooled") || !strings.Contains(w.all(), "replayed") {
			t.Errorf("warnings %q should report the spooling and the replay", w.all())
		}
	})

	t.Run("spool survives the store", func(t *testing.T) {
		db := srv.CreateDB(t, "reopen")
		spool := filepath.Join(t.TempDir(), "spool.lp")
		o := store.InfluxOptions{URL: srv.URL, Bucket: db + "/autogen", RequestTimeout: 5 * time.Second}
		so := store.SpoolOptions{Path: spool}
		s1, err := openSpool(o, so)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := openSpool(o, so); err == nil || !strings.Contains(err.Error(), spool) {
			t.Fatalf("second OpenInflux on one spool = %v; want an error naming %s", err, spool)
		}
		if err := srv.Stop(); err != nil {
			t.Fatal(err)
		}
		ps, hs := round(3, 0)
		if err := s1.Write(ctx, ps, hs); err != nil {
			t.Fatalf("Write while down: %v", err)
		}
		if err := s1.Close(); err != nil {
			t.Fatal(err)
		}
		srv.Restart(t)
		var w warnings
		so.Warn = w.warn
		s2, err := openSpool(o, so)
		if err != nil {
			t.Fatal(err)
		}
		defer s2.Close()
		if d := s2.SpoolDepth(); d != 6 {
			t.Fatalf("reopened spool depth %d, want 6", d)
		}
		if !strings.Contains(w.all(), "earlier run") {
			t.Errorf("open warnings %q should mention the waiting points", w.all())
		}
		ps, hs = round(3, 1)
		if err := s2.Write(ctx, ps, hs); err != nil {
			t.Fatal(err)
		}
		if n := countPoints(t, srv.URL, db, "probe", "queue_s"); n != 6 {
			t.Errorf("server holds %d probes, want 6", n)
		}
		if d := s2.SpoolDepth(); d != 0 {
			t.Errorf("spool depth %d, want 0", d)
		}
	})
}

// Points the real server refuses for good go to the dead-letter file, Write
// says so, and Import brings them back once the cause is fixed.
func TestInfluxRefused(t *testing.T) {
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
			spool := filepath.Join(t.TempDir(), "spool.lp")
			s := openSpooled(t, base, store.InfluxOptions{Bucket: db + "/autogen"}, store.SpoolOptions{Path: spool})
			c.spoil(t, db)
			ps, hs := round(2, 0)
			err := s.Write(ctx, ps, hs)
			var re *store.RefusedError
			if !errors.As(err, &re) {
				t.Fatalf("Write = %v; want a *RefusedError", err)
			}
			if re.Points != c.refused || re.DeadLetter != spool+".dead" || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "dead-letter") {
				t.Errorf("refusal %+v (%v); want %d points in %s.dead and %q", re, err, c.refused, spool, c.want)
			}
			if n := countLines(t, spool+".dead"); n != c.refused {
				t.Errorf("dead-letter file has %d lines, want %d", n, c.refused)
			}
			if d := s.SpoolDepth(); d != 0 {
				t.Errorf("refused points went to the spool (depth %d)", d)
			}
			// After the fix the dead letters import as they are.
			c.fix(t, db)
			f, err := os.Open(spool + ".dead")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			res, err := store.Import(ctx, store.NewRecorder(s, time.UTC), f, failOnWarn(t))
			if err != nil || res.Probes != 2 || res.Hourly != 2 {
				t.Fatalf("Import of dead letters = %+v, %v; want 2 probes and 2 rebuilt hours", res, err)
			}
			got, err := s.Probes(ctx, store.Between(hour0, hour0.Add(time.Hour)))
			if err != nil || !slices.Equal(got, ps) {
				t.Errorf("after import Probes = %+v, %v; want %+v", got, err, ps)
			}
		})
	}
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

func TestInfluxWriteStatuses(t *testing.T) {
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
			spool := filepath.Join(t.TempDir(), "spool.lp")
			s := openSpooled(t, srv.URL, store.InfluxOptions{Bucket: "b", Token: "sekret-token"}, store.SpoolOptions{Path: spool})
			ps, hs := round(2, 0)
			err := s.Write(ctx, ps, hs)
			if c.spool {
				if err != nil || s.SpoolDepth() != 4 || countLines(t, spool) != 4 {
					t.Fatalf("Write = %v, depth %d, spool lines %d; want nil, 4, 4", err, s.SpoolDepth(), countLines(t, spool))
				}
				// The next write replays, then writes its own points.
				if err := s.Write(ctx, nil, nil); err != nil || s.SpoolDepth() != 0 {
					t.Fatalf("replay: %v, depth %d", err, s.SpoolDepth())
				}
				if got := fake.written(); len(got) != 1 || strings.Count(got[0], "\n") != 3 {
					t.Fatalf("server received %q; want the 4 spooled lines once", got)
				}
				return
			}
			var re *store.RefusedError
			if !errors.As(err, &re) || re.Points != 4 || countLines(t, spool+".dead") != 4 || s.SpoolDepth() != 0 {
				t.Fatalf("Write = %v, depth %d; want a refusal of 4 points into the dead-letter file", err, s.SpoolDepth())
			}
			if strings.Contains(err.Error(), "sekret") || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q leaks the token or spans lines", err)
			}
		})
	}
}

// The spool is replayed in order, in batches of at most 5000 lines, before
// the new points.
func TestInfluxReplayOrder(t *testing.T) {
	fake := &fakeInflux{plan: []int{503, 503}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	s := openSpooled(t, srv.URL, store.InfluxOptions{Bucket: "b"}, store.SpoolOptions{Path: filepath.Join(t.TempDir(), "spool.lp")})
	for r := range 3 {
		var ps []store.Probe
		for i := range 3000 {
			ps = append(ps, probeAt(fmt.Sprintf("r%d", r), time.Duration(i)*time.Millisecond, float64(i)))
		}
		if err := s.Write(ctx, ps, nil); err != nil {
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

func TestInfluxSpoolCap(t *testing.T) {
	fake := &fakeInflux{plan: []int{503, 503, 503, 503, 503, 503}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	spool := filepath.Join(t.TempDir(), "spool.lp")
	var warnings []string
	warn := func(msg string, _ ...any) { warnings = append(warnings, msg) }
	s := openSpooled(t, srv.URL, store.InfluxOptions{Bucket: "b", Warn: warn}, store.SpoolOptions{Path: spool, MaxBytes: 1000, Warn: warn})
	ps, hs := round(2, 0) // about 600 bytes
	if err := s.Write(ctx, ps, hs); err != nil {
		t.Fatalf("first Write: %v", err)
	}
	if n := len(warnings); n == 0 || strings.Contains(warnings[n-1], "NEARLY FULL") {
		t.Errorf("at 60%% of the cap: warnings %q, want a spool warning but no NEARLY FULL", warnings)
	}
	ps, hs = round(2, 1)
	err := s.Write(ctx, ps, hs)
	if !errors.Is(err, store.ErrSpoolFull) || !strings.Contains(err.Error(), "4 points not stored") {
		t.Fatalf("Write past the cap = %v; want ErrSpoolFull saying 4 points were not stored", err)
	}
	if d := s.SpoolDepth(); d != 4 || countLines(t, spool) != 4 {
		t.Errorf("spool depth %d, %d lines; want the first round kept whole (4)", d, countLines(t, spool))
	}
	// A smaller round still fits, past 80 % of the cap: the warning gets loud.
	ps, _ = round(2, 2) // two probe lines, about 300 bytes
	if err := s.Write(ctx, ps, nil); err != nil {
		t.Fatalf("small Write under the cap: %v", err)
	}
	if n := len(warnings); n == 0 || !strings.Contains(warnings[n-1], "NEARLY FULL") {
		t.Errorf("past 80%% of the cap: last warning %q, want NEARLY FULL", warnings)
	}
}

func TestOpenInfluxErrors(t *testing.T) {
	base := influxtest.URL(t)
	closed := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return "http://" + l.Addr().String()
	}()
	auth := influxtest.StartWith(t, influxtest.Options{Auth: true, Password: "pw-Zq81x"})
	auth.CreateDB(t, "lanewatch")
	for _, c := range []struct {
		name   string
		o      store.InfluxOptions
		want   []string // substrings of the error
		secret string   // must not appear
	}{
		{"closed port", store.InfluxOptions{URL: closed, Bucket: "lanewatch/autogen", Token: "tok-123456"},
			[]string{closed, "lanewatch/autogen", "connection refused"}, "tok-123456"},
		{"missing database", store.InfluxOptions{URL: base, Bucket: "nosuch/autogen"},
			[]string{base, "nosuch/autogen", "database not found", "does the bucket exist"}, ""},
		{"missing retention policy", store.InfluxOptions{URL: base, Bucket: influxtest.NewDB(t, base) + "/nosuchrp"},
			[]string{"/nosuchrp", "retention policy"}, ""},
		{"wrong password", store.InfluxOptions{URL: auth.URL, Bucket: "lanewatch/autogen", Token: "admin:wrong-pw-77"},
			[]string{auth.URL, "401 Unauthorized", "check the token"}, "wrong-pw-77"},
		{"no token where auth is on", store.InfluxOptions{URL: auth.URL, Bucket: "lanewatch/autogen"},
			[]string{"401"}, ""},
		{"credentials in the url", store.InfluxOptions{URL: strings.Replace(closed, "http://", "http://me:url-secret-9@", 1), Bucket: "b"},
			[]string{closed, "connection refused"}, "url-secret-9"},
		{"not a url", store.InfluxOptions{URL: "127.0.0.1:8086", Bucket: "b"}, []string{"want http(s)://host:port"}, ""},
		{"no bucket", store.InfluxOptions{URL: base}, []string{"bucket is empty"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := store.OpenInflux(ctx, c.o)
			if err == nil {
				s.Close()
				t.Fatal("OpenInflux succeeded")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("error spans lines: %q", msg)
			}
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
			if c.secret != "" && strings.Contains(msg, c.secret) {
				t.Errorf("error %q leaks the secret", msg)
			}
		})
	}
	t.Run("right password works", func(t *testing.T) {
		s, err := store.OpenInflux(ctx, store.InfluxOptions{URL: auth.URL, Bucket: "lanewatch/autogen", Token: "admin:pw-Zq81x"})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ps, hs := round(1, 0)
		if err := s.Write(ctx, ps, hs); err != nil {
			t.Fatal(err)
		}
		got, err := s.Hourly(ctx, store.Between(hour0, hour0.Add(time.Hour)))
		if err != nil || !slices.Equal(got, hs) {
			t.Fatalf("Hourly = %+v, %v", got, err)
		}
	})
}

// A Flux query from outside lanewatch (a dashboard, the influx CLI) reads
// the points with the schema's fields and tags.
func TestInfluxRawFluxReadsSchema(t *testing.T) {
	base := influxtest.URL(t)
	db := influxtest.NewDB(t, base)
	s := openInflux(t, base, store.InfluxOptions{Bucket: db + "/autogen"})
	ps, hs := round(2, 2)
	if err := s.Write(ctx, ps, hs); err != nil {
		t.Fatal(err)
	}
	rows := fluxCSV(t, base, fmt.Sprintf(`from(bucket: "%s/autogen")
  |> range(start: 2026-11-30T00:00:00Z, stop: 2026-12-01T00:00:00Z)
  |> filter(fn: (r) => r._measurement == "probe" or r._measurement == "queue_hourly")`, db))
	fields := map[string]string{} // measurement.field -> a value
	for _, r := range rows {
		if r["lane"] == "" || r["kind"] != "free" {
			t.Errorf("row without lane/kind tags: %v", r)
		}
		fields[r["_measurement"]+"."+r["_field"]] = r["_value"]
	}
	want := map[string]string{
		"probe.queue_s": "20", "probe.gen_s": "1.5", "probe.headers_s": "0.2", "probe.tokens": "16",
		"probe.ok": "false", "probe.outcome": "http_error", "probe.status": "503", "probe.connect_s": "0",
		"queue_hourly.worst_queue_s": "11", "queue_hourly.worst_gen_s": "1.5", "queue_hourly.min_tok_per_s": "10.666666666666666",
		"queue_hourly.samples": "3", "queue_hourly.failures": "1", "queue_hourly.eligible": "false",
		"queue_hourly.worst_censored_s": "21",
	}
	for k, v := range want {
		if got, ok := fields[k]; !ok {
			t.Errorf("field %s missing from the Flux result", k)
		} else if k != "probe.queue_s" && k != "queue_hourly.worst_queue_s" && k != "queue_hourly.worst_censored_s" && got != v {
			t.Errorf("%s = %s, want %s", k, got, v)
		}
	}
	if len(fields) != len(want) {
		t.Errorf("fields %v, want exactly %v", fields, want)
	}
}

// Every line of the embedded file imports into InfluxDB as it is, and
// store.Import moves a file's history into InfluxDB: both stores then
// answer the same.
func TestFileImportsIntoInflux(t *testing.T) {
	base := influxtest.URL(t)
	path := filepath.Join(t.TempDir(), "samples.lp")
	f, err := store.OpenFile(path, store.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for r := range 4 {
		ps, hs := round(3, r)
		if err := f.Write(ctx, ps, hs); err != nil {
			t.Fatal(err)
		}
	}
	tricky := store.Probe{Lane: "a b,c=d", Kind: "paid", Time: hour0.Add(time.Second), Outcome: `stream_error "x" \ y`, OK: false}
	if err := f.Write(ctx, []store.Probe{tricky}, nil); err != nil {
		t.Fatal(err)
	}
	wantP, _ := f.Probes(ctx, store.Between(hour0, hour0.Add(time.Hour)))
	wantH, _ := f.Hourly(ctx, store.Between(hour0, hour0.Add(time.Hour)))
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("raw POST of the file", func(t *testing.T) {
		db := influxtest.NewDB(t, base)
		resp, err := http.Post(base+"/api/v2/write?bucket="+db+"/autogen&precision=ns", "text/plain", bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("InfluxDB refused the file: %s %s", resp.Status, body)
		}
		s := openInflux(t, base, store.InfluxOptions{Bucket: db + "/autogen"})
		gotP, err := s.Probes(ctx, store.Between(hour0, hour0.Add(time.Hour)))
		if err != nil || !slices.Equal(gotP, wantP) {
			t.Errorf("probes differ:\n got %+v\nwant %+v (%v)", gotP, wantP, err)
		}
		gotH, err := s.Hourly(ctx, store.Between(hour0, hour0.Add(time.Hour)))
		if err != nil || !slices.Equal(gotH, wantH) {
			t.Errorf("hourly differ:\n got %+v\nwant %+v (%v)", gotH, wantH, err)
		}
	})
	t.Run("store.Import", func(t *testing.T) {
		s := openInflux(t, base, store.InfluxOptions{})
		res, err := store.Import(ctx, store.NewRecorder(s, time.UTC), bytes.NewReader(raw), failOnWarn(t))
		if err != nil || res != (store.Imported{Probes: 13, Hourly: 4, Skipped: 12}) {
			t.Fatalf("Import = %+v, %v; want 13 probes, 4 rebuilt hours (3 lanes and the tricky one), 12 hourly lines skipped", res, err)
		}
		gotP, err := s.Probes(ctx, store.Between(hour0, hour0.Add(time.Hour)))
		if err != nil || !slices.Equal(gotP, wantP) {
			t.Errorf("probes differ:\n got %+v\nwant %+v (%v)", gotP, wantP, err)
		}
		gotH, err := s.Hourly(ctx, store.Between(hour0, hour0.Add(time.Hour)))
		if want := store.Rollup(wantP, time.UTC); err != nil || !slices.Equal(gotH, want) {
			t.Errorf("hourly differ:\n got %+v\nwant %+v (%v)", gotH, want, err)
		}
	})
}

// Spooled points that InfluxDB refuses at replay go to the dead-letter file;
// the spool is emptied, the new points are written, and the one-line error
// says what was refused.
func TestInfluxReplayRefused(t *testing.T) {
	fake := &fakeInflux{plan: append([]int{503}, slices.Repeat([]int{400}, 7)...)} // 400 for the batch, its halves and each point
	srv := httptest.NewServer(fake)
	defer srv.Close()
	spool := filepath.Join(t.TempDir(), "spool.lp")
	s := openSpooled(t, srv.URL, store.InfluxOptions{Bucket: "b"}, store.SpoolOptions{Path: spool})
	ps, hs := round(2, 0)
	if err := s.Write(ctx, ps, hs); err != nil {
		t.Fatalf("Write 1: %v", err)
	}
	ps, hs = round(2, 1)
	err := s.Write(ctx, ps, hs)
	var re *store.RefusedError
	if !errors.As(err, &re) || re.Points != 4 || !strings.Contains(err.Error(), "replaying spool") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Write 2 = %v; want a one-line refusal of the 4 spooled points", err)
	}
	if d := s.SpoolDepth(); d != 0 || countLines(t, spool) != 0 || countLines(t, spool+".dead") != 4 {
		t.Errorf("depth %d, spool %d lines, dead letters %d lines; want 0, 0, 4", d, countLines(t, spool), countLines(t, spool+".dead"))
	}
	if got := fake.written(); len(got) != 1 || !strings.Contains(got[0], "queue_s=10,") {
		t.Errorf("server accepted %q; want round 1's points", got)
	}
}

// openSpooled opens an Influx store on a fresh database of the server at
// base (unless io names a bucket), wrapped in a Spool.
func openSpooled(t testing.TB, base string, io store.InfluxOptions, so store.SpoolOptions) *store.Spool {
	t.Helper()
	db := openInflux(t, base, io)
	sp, err := store.OpenSpool(db, so)
	if err != nil {
		t.Fatalf("OpenSpool: %v", err)
	}
	t.Cleanup(func() { _ = sp.Close() })
	return sp
}

// InfluxQL reads are chunked: a server with a max-row-limit (influxtest's
// is influxtest.MaxRowLimit) cuts a plain query short without an error, and
// a short read would roll up, and decide, on part of the probes.
func TestInfluxReadsPastTheRowLimit(t *testing.T) {
	srv := influxtest.Start(t)
	s := openInflux(t, srv.URL, store.InfluxOptions{Bucket: srv.CreateDB(t, "rows") + "/autogen"})
	n := 3*influxtest.MaxRowLimit + 7
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	ps := make([]store.Probe, n)
	for i := range ps {
		ps[i] = store.Probe{Lane: fmt.Sprintf("l%d", i%13), Kind: "free", Time: start.Add(time.Duration(i) * time.Second),
			QueueS: float64(i), OK: true, Outcome: "ok", Status: 200}
	}
	if err := s.Write(ctx, ps, nil); err != nil {
		t.Fatal(err)
	}
	got, err := s.Probes(ctx, store.Between(start, start.Add(time.Duration(n)*time.Second)))
	if err != nil || len(got) != n {
		t.Fatalf("read %d of %d probes, %v", len(got), n, err)
	}
}

// The store contract through InfluxQL reads answered as JSON (a server
// without MessagePack): a proxy takes MessagePack out of the Accept header.
func TestInfluxContractJSON(t *testing.T) {
	base := influxtest.URL(t)
	target, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	var asked, msgpack, gzip atomic.Int64
	proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		r := pr.Out
		if r.URL.Path == "/query" {
			asked.Add(1)
			if strings.Contains(r.Header.Get("Accept"), "msgpack") {
				msgpack.Add(1)
			}
			if r.Header.Get("Accept-Encoding") != "identity" {
				gzip.Add(1) // a server on loopback is not asked to compress
			}
			r.Header.Set("Accept", "application/json")
		}
	}}
	srv := httptest.NewServer(proxy)
	defer srv.Close()
	storetest.Run(t, func(t *testing.T) store.Store {
		db := influxtest.NewDB(t, base)
		s, err := openSpool(store.InfluxOptions{URL: srv.URL, Bucket: db + "/autogen", Warn: failOnWarn(t)},
			store.SpoolOptions{Path: filepath.Join(t.TempDir(), "spool.lp"), Warn: failOnWarn(t)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
	if msgpack.Load() == 0 || gzip.Load() != 0 {
		t.Errorf("%d reads through /query: %d asked for MessagePack (want some), %d for a compressed answer (want none)", asked.Load(), msgpack.Load(), gzip.Load())
	}
}

// A read of a field the measurement lacks is an error naming it.
func TestInfluxUnknownField(t *testing.T) {
	base := influxtest.URL(t)
	db := influxtest.NewDB(t, base)
	for _, lang := range []string{store.QueryInfluxQL, store.QueryFlux} {
		s := openInflux(t, base, store.InfluxOptions{Bucket: db + "/autogen", Query: lang})
		q := store.Between(hour0, hour0.Add(time.Hour))
		q.Fields = []string{"samples", "no_such_field"}
		if _, err := s.Hourly(ctx, q); err == nil || !strings.Contains(err.Error(), `queue_hourly has no field "no_such_field"`) {
			t.Errorf("%s: Hourly with an unknown field = %v; want an error naming it", lang, err)
		}
	}
}
