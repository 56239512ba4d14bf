package influx_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
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
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/influxtest"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
	"github.com/lanewatch/lanewatch/store/influx"
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

func failOnWarn(t *testing.T) func(string, ...any) {
	return func(msg string, args ...any) {
		t.Errorf("unexpected warning: %s %v", msg, args)
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

func TestContract(t *testing.T) {
	base := influxtest.URL(t)
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := influx.Open(ctx, influx.Options{URL: base, Bucket: influxtest.NewDB(t, base) + "/autogen", Warn: failOnWarn(t)})
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

// query runs an InfluxQL statement on db of the server at base, as a
// dashboard or the influx CLI would, and returns the values of its rows by
// column.
func query(t *testing.T, base, db, q string) []map[string]any {
	t.Helper()
	resp, err := http.PostForm(base+"/query?db="+url.QueryEscape(db), url.Values{"q": {q}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer struct {
		Results []struct {
			Error  string
			Series []struct {
				Name    string
				Columns []string
				Values  [][]any
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || len(answer.Results) == 0 || answer.Results[0].Error != "" {
		t.Fatalf("%s: %v %+v", q, err, answer)
	}
	var rows []map[string]any
	for _, s := range answer.Results[0].Series {
		for _, v := range s.Values {
			row := map[string]any{"name": s.Name}
			for i, c := range s.Columns {
				row[c] = v[i]
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// countPoints counts the points of a measurement in hour0's day.
func countPoints(t *testing.T, base, db, measurement, field string) int {
	t.Helper()
	rows := query(t, base, db, fmt.Sprintf(`SELECT count(%q) FROM %q WHERE time >= %d AND time < %d`,
		field, measurement, hour0.Add(-24*time.Hour).UnixNano(), hour0.Add(24*time.Hour).UnixNano()))
	if len(rows) == 0 {
		return 0
	}
	return int(rows[0]["count"].(float64))
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

func TestOpenErrors(t *testing.T) {
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
		o      influx.Options
		want   []string // substrings of the error
		secret string   // must not appear
	}{
		{"closed port", influx.Options{URL: closed, Bucket: "lanewatch/autogen", Token: "tok-123456"},
			[]string{closed, "lanewatch/autogen", "connection refused"}, "tok-123456"},
		{"missing database", influx.Options{URL: base, Bucket: "nosuch/autogen"},
			[]string{base, "nosuch/autogen", "database not found", "does the bucket exist", "DBRP mapping"}, ""},
		{"missing retention policy", influx.Options{URL: base, Bucket: influxtest.NewDB(t, base) + "/nosuchrp"},
			[]string{"/nosuchrp", "retention policy"}, ""},
		{"wrong password", influx.Options{URL: auth.URL, Bucket: "lanewatch/autogen", Token: "admin:wrong-pw-77"},
			[]string{auth.URL, "401 Unauthorized", "check the token"}, "wrong-pw-77"},
		{"no token where auth is on", influx.Options{URL: auth.URL, Bucket: "lanewatch/autogen"},
			[]string{"401"}, ""},
		{"credentials in the url", influx.Options{URL: strings.Replace(closed, "http://", "http://me:url-secret-9@", 1), Bucket: "b"},
			[]string{closed, "connection refused"}, "url-secret-9"},
		{"not a url", influx.Options{URL: "127.0.0.1:8086", Bucket: "b"}, []string{"want http(s)://host:port"}, ""},
		{"no bucket", influx.Options{URL: base}, []string{"bucket is empty"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := influx.Open(ctx, c.o)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
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
		s, err := influx.Open(ctx, influx.Options{URL: auth.URL, Bucket: "lanewatch/autogen", Token: "admin:pw-Zq81x"})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ps, hs := round(1, 0)
		if err := s.Write(ctx, store.Batch{Probes: ps, Hourly: hs}); err != nil {
			t.Fatal(err)
		}
		got, err := store.ReadHourly(ctx, s, store.Between(hour0, hour0.Add(time.Hour)))
		if err != nil || !slices.Equal(got, hs) {
			t.Fatalf("Hourly = %+v, %v", got, err)
		}
	})
}

// A query from outside lanewatch (a dashboard, the influx CLI) reads the
// points with the schema's fields and tags.
func TestRawQueryReadsSchema(t *testing.T) {
	base := influxtest.URL(t)
	db := influxtest.NewDB(t, base)
	s := openInflux(t, base, influx.Options{Bucket: db + "/autogen"})
	ps, hs := round(2, 2)
	if err := s.Write(ctx, store.Batch{Probes: ps, Hourly: hs}); err != nil {
		t.Fatal(err)
	}
	fields := map[string]any{} // measurement.field -> a value
	for _, m := range []string{"probe", "queue_hourly"} {
		for _, r := range query(t, base, db, fmt.Sprintf(`SELECT * FROM %q`, m)) {
			if r["lane"] == nil || r["kind"] != "free" {
				t.Errorf("row without lane/kind tags: %v", r)
			}
			for k, v := range r {
				if k != "lane" && k != "kind" && k != "site" && k != "time" && k != "name" && v != nil {
					fields[m+"."+k] = v
				}
			}
		}
	}
	want := map[string]any{
		"probe.queue_s": nil, "probe.gen_s": 1.5, "probe.headers_s": 0.2, "probe.tokens": 16.0,
		"probe.ok": nil, "probe.outcome": nil, "probe.status": nil, "probe.connect_s": 0.0,
		"queue_hourly.worst_queue_s": nil, "queue_hourly.worst_gen_s": 1.5, "queue_hourly.min_tok_per_s": 10.666666666666666,
		"queue_hourly.samples": 3.0, "queue_hourly.failures": 1.0, "queue_hourly.eligible": false,
		"queue_hourly.worst_censored_s": nil,
	}
	for k, v := range want {
		if got, ok := fields[k]; !ok {
			t.Errorf("field %s missing from the answer", k)
		} else if v != nil && got != v {
			t.Errorf("%s = %v, want %v", k, got, v)
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
	f, err := file.Open(path, file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for r := range 4 {
		ps, hs := round(3, r)
		if err := f.Write(ctx, store.Batch{Probes: ps, Hourly: hs}); err != nil {
			t.Fatal(err)
		}
	}
	tricky := store.Probe{Lane: "a b,c=d", Kind: "paid", Time: hour0.Add(time.Second), Outcome: `stream_error "x" \ y`, OK: false}
	if err := f.Write(ctx, store.Batch{Probes: []store.Probe{tricky}}); err != nil {
		t.Fatal(err)
	}
	wantP, _ := store.ReadProbes(ctx, f, store.Between(hour0, hour0.Add(time.Hour)))
	wantH, _ := store.ReadHourly(ctx, f, store.Between(hour0, hour0.Add(time.Hour)))
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
		s := openInflux(t, base, influx.Options{Bucket: db + "/autogen"})
		gotP, err := store.ReadProbes(ctx, s, store.Between(hour0, hour0.Add(time.Hour)))
		if err != nil || !slices.Equal(gotP, wantP) {
			t.Errorf("probes differ:\n got %+v\nwant %+v (%v)", gotP, wantP, err)
		}
		gotH, err := store.ReadHourly(ctx, s, store.Between(hour0, hour0.Add(time.Hour)))
		if err != nil || !slices.Equal(gotH, wantH) {
			t.Errorf("hourly differ:\n got %+v\nwant %+v (%v)", gotH, wantH, err)
		}
	})
	t.Run("store.Import", func(t *testing.T) {
		s := openInflux(t, base, influx.Options{})
		res, err := store.Import(ctx, store.NewRecorder(s, time.UTC), bytes.NewReader(raw), failOnWarn(t))
		if err != nil || res != (store.Imported{Probes: 13, Hourly: 4, Skipped: 12}) {
			t.Fatalf("Import = %+v, %v; want 13 probes, 4 rebuilt hours (3 lanes and the tricky one), 12 hourly lines skipped", res, err)
		}
		gotP, err := store.ReadProbes(ctx, s, store.Between(hour0, hour0.Add(time.Hour)))
		if err != nil || !slices.Equal(gotP, wantP) {
			t.Errorf("probes differ:\n got %+v\nwant %+v (%v)", gotP, wantP, err)
		}
		gotH, err := store.ReadHourly(ctx, s, store.Between(hour0, hour0.Add(time.Hour)))
		if want := store.Rollup(wantP, time.UTC); err != nil || !slices.Equal(gotH, want) {
			t.Errorf("hourly differ:\n got %+v\nwant %+v (%v)", gotH, want, err)
		}
	})
}

// InfluxQL reads are chunked: a server with a max-row-limit (influxtest's
// is influxtest.MaxRowLimit) cuts a plain query short without an error, and
// a short read would roll up, and decide, on part of the probes.
func TestReadsPastTheRowLimit(t *testing.T) {
	srv := influxtest.Start(t)
	s := openInflux(t, srv.URL, influx.Options{Bucket: srv.CreateDB(t, "rows") + "/autogen"})
	n := 3*influxtest.MaxRowLimit + 7
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	ps := make([]store.Probe, n)
	for i := range ps {
		ps[i] = store.Probe{Lane: fmt.Sprintf("l%d", i%13), Kind: "free", Time: start.Add(time.Duration(i) * time.Second),
			QueueS: float64(i), OK: true, Outcome: "ok", Status: 200}
	}
	if err := s.Write(ctx, store.Batch{Probes: ps}); err != nil {
		t.Fatal(err)
	}
	got, err := store.ReadProbes(ctx, s, store.Between(start, start.Add(time.Duration(n)*time.Second)))
	if err != nil || len(got) != n {
		t.Fatalf("read %d of %d probes, %v", len(got), n, err)
	}
	for i, p := range got { // batches of the reader handed over and filled again: each point read once, as written
		if p.QueueS != float64(i) || !p.Time.Equal(ps[i].Time) || p.Lane != ps[i].Lane {
			t.Fatalf("probe %d read as %+v, written as %+v", i, p, ps[i])
		}
	}
}

// A server whose coordinator limits a select (max-select-point,
// max-select-series) fails a read past them, loudly: InfluxQL is the only
// read path, and a short answer would read as fewer probes.
func TestReadPastTheCoordinatorLimitsFails(t *testing.T) {
	srv := influxtest.StartWith(t, influxtest.Options{Env: []string{"INFLUXDB_COORDINATOR_MAX_SELECT_POINT=500", "INFLUXDB_COORDINATOR_MAX_SELECT_SERIES=5"}})
	s := openInflux(t, srv.URL, influx.Options{Bucket: srv.CreateDB(t, "rows") + "/autogen"})
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	ps := make([]store.Probe, 1000)
	for i := range ps {
		ps[i] = store.Probe{Lane: fmt.Sprintf("l%02d", i%13), Kind: "free", Time: start.Add(time.Duration(i) * time.Second), QueueS: float64(i), OK: true, Outcome: "ok"}
	}
	if err := s.Write(ctx, store.Batch{Probes: ps}); err != nil {
		t.Fatal(err)
	}
	got, err := store.ReadProbes(ctx, s, store.Between(start, start.Add(time.Hour)))
	if err == nil || !strings.Contains(err.Error(), "max-select-series limit exceeded") {
		t.Errorf("read = %d probes, %v; want an error saying max-select-series limit exceeded", len(got), err)
	}
}

// The store contract through InfluxQL reads answered as JSON (a server
// without MessagePack): a proxy takes MessagePack out of the Accept header.
func TestContractJSON(t *testing.T) {
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
		s, err := influx.Open(ctx, influx.Options{URL: srv.URL, Bucket: db + "/autogen", Warn: failOnWarn(t)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
	if msgpack.Load() == 0 || gzip.Load() != 0 {
		t.Errorf("%d reads through /query: %d asked for MessagePack (want some), %d for a compressed answer (want none)", asked.Load(), msgpack.Load(), gzip.Load())
	}
}

// A read of a field no measurement has is an error naming it.
func TestUnknownField(t *testing.T) {
	s := openInflux(t, influxtest.URL(t), influx.Options{})
	q := store.Between(hour0, hour0.Add(time.Hour))
	q.Fields = []string{"samples", "no_such_field"}
	if _, err := store.ReadHourly(ctx, s, q); err == nil || !strings.Contains(err.Error(), `no measurement has the field "no_such_field"`) {
		t.Errorf("read with an unknown field = %v; want an error naming it", err)
	}
}

// recorder is a reverse proxy in front of a real server that records the
// method, path and query of each request.
type recorder struct {
	mu   sync.Mutex
	reqs []*url.URL
	prox *httputil.ReverseProxy
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	u := *req.URL
	if req.Method == http.MethodPost && req.URL.Path == "/query" {
		body, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		u.RawQuery = string(body)
	}
	r.mu.Lock()
	r.reqs = append(r.reqs, &u)
	r.mu.Unlock()
	r.prox.ServeHTTP(w, req)
}

func (r *recorder) recorded() []*url.URL {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reqs)
}

// Writes go through /api/v2/write with the bucket (db/rp) and nanosecond
// precision, reads through /query with the bucket's database and retention
// policy, and nothing else; with an org (2.x) too, where /query is the
// v1-compatibility API and db/rp its DBRP mapping.
func TestEndpoints(t *testing.T) {
	base := influxtest.URL(t)
	target, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	for _, org := range []string{"", "my-org"} {
		t.Run("org "+org, func(t *testing.T) {
			rec := &recorder{prox: httputil.NewSingleHostReverseProxy(target)}
			proxy := httptest.NewServer(rec)
			defer proxy.Close()
			db := influxtest.NewDB(t, base)
			s := openInflux(t, proxy.URL, influx.Options{Bucket: db + "/autogen", Org: org})
			ps, hs := round(3, 1)
			if err := s.Write(ctx, store.Batch{Probes: ps, Hourly: hs}); err != nil {
				t.Fatal(err)
			}
			wantRead(t, "org "+org, s, sortProbes(ps), hs)
			writes, reads := 0, 0
			for _, u := range rec.recorded() {
				q := u.Query()
				switch u.Path {
				case "/api/v2/write":
					writes++
					if q.Get("bucket") != db+"/autogen" || q.Get("precision") != "ns" || q.Get("org") != org {
						t.Errorf("write %s: want bucket %q, precision ns, org %q", u, db+"/autogen", org)
					}
				case "/query":
					reads++
					if q.Get("db") != db || q.Get("rp") != "autogen" || q.Get("epoch") != "ns" || q.Get("chunked") != "true" {
						t.Errorf("read %s: want db %q, rp autogen, epoch ns, chunked", u, db)
					}
				default:
					t.Errorf("request to %s; want writes to /api/v2/write and reads from /query only", u)
				}
			}
			if writes != 1 || reads < 3 { // the read check at open, the probes, the hourly points
				t.Errorf("%d writes and %d reads; want 1 and at least 3", writes, reads)
			}
		})
	}
}

// createRP creates retention policy rp on db of the shared server, not the
// default, kept forever.
func createRP(t *testing.T, base, db, rp string) {
	t.Helper()
	postQuery(t, base+"/query", fmt.Sprintf(`CREATE RETENTION POLICY %q ON %q DURATION INF REPLICATION 1`, rp, db))
}

// The store contract on a bucket that names a retention policy other than
// the default: a store that dropped the "/rp" would write to autogen and
// fail here, not on the default policy.
func TestContractRetentionPolicy(t *testing.T) {
	base := influxtest.URL(t)
	storetest.Run(t, func(t *testing.T) store.Store {
		db := influxtest.NewDB(t, base)
		createRP(t, base, db, "keep")
		s, err := influx.Open(ctx, influx.Options{URL: base, Bucket: db + "/keep", Warn: failOnWarn(t)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// A bucket db/rp writes to and reads from that retention policy only.
func TestBucketIsDatabaseAndRetentionPolicy(t *testing.T) {
	base := influxtest.URL(t)
	db := influxtest.NewDB(t, base)
	createRP(t, base, db, "keep")
	inKeep := openInflux(t, base, influx.Options{Bucket: db + "/keep"})
	inAutogen := openInflux(t, base, influx.Options{Bucket: db + "/autogen"})
	ps, hs := round(4, 2)
	if err := inKeep.Write(ctx, store.Batch{Probes: ps, Hourly: hs}); err != nil {
		t.Fatal(err)
	}
	wantRead(t, db+"/keep", inKeep, sortProbes(ps), hs)
	wantRead(t, db+"/autogen", inAutogen, nil, nil)
	if n := countPoints(t, base, db, "probe", "queue_s"); n != 0 {
		t.Errorf("%s/autogen holds %d probes; want 0, they belong to %s/keep", db, n, db)
	}
}

// With auth on, the token is user:password (1.8's form of a 2.x token):
// the admin reads and writes, a wrong password or none fails
// at open with a hint and without the secret, a read-only user opens and
// reads but its writes are refused for good.
func TestAuth(t *testing.T) {
	srv := influxtest.StartWith(t, influxtest.Options{Auth: true, Password: "pw-Flux-4417"})
	db := srv.CreateDB(t, "lanewatch")
	for _, q := range []string{
		`CREATE USER "reader" WITH PASSWORD 'rd-pw-8812'`,
		`GRANT READ ON "lanewatch" TO "reader"`,
		`CREATE USER "stranger" WITH PASSWORD 'st-pw-9923'`,
	} {
		if err := srv.Query(q); err != nil {
			t.Fatal(err)
		}
	}
	bucket := db + "/autogen"
	open := func(token string) (*influx.Store, error) {
		return influx.Open(ctx, influx.Options{URL: srv.URL, Bucket: bucket, Token: token})
	}
	ps, hs := round(2, 1)

	t.Run("admin reads and writes", func(t *testing.T) {
		s, err := open("admin:pw-Flux-4417")
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.Write(ctx, store.Batch{Probes: ps, Hourly: hs}); err != nil {
			t.Fatal(err)
		}
		wantRead(t, "admin", s, sortProbes(ps), hs)
	})
	for _, c := range []struct {
		name, token, secret string
		want                []string
	}{
		{"wrong password", "admin:wrong-pw-5531", "wrong-pw-5531", []string{srv.URL, bucket, "401", "check the token"}},
		{"no token", "", "", []string{srv.URL, "401"}},
		{"user without privileges", "stranger:st-pw-9923", "st-pw-9923", []string{srv.URL, bucket, `requires READ on lanewatch`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := open(c.token)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			msg := err.Error()
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
			if strings.Contains(msg, "\n") || (c.secret != "" && strings.Contains(msg, c.secret)) {
				t.Errorf("error %q spans lines or leaks the password", msg)
			}
		})
	}
	// A user without READ is a refusal, not an outage: a writer that may
	// start while the server is unreachable still fails at open.
	t.Run("user without privileges, start unreachable", func(t *testing.T) {
		s, err := influx.Open(ctx, influx.Options{URL: srv.URL, Bucket: bucket, Token: "stranger:st-pw-9923",
			StartUnreachable: true})
		if err == nil {
			s.Close()
			t.Fatal("Open with StartUnreachable succeeded for a user without READ; want the refusal")
		}
		if errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "requires READ") || !strings.Contains(err.Error(), "check the token") {
			t.Errorf("error %q: want a lasting refusal saying requires READ, with the token hint", err)
		}
	})
	t.Run("read-only user", func(t *testing.T) {
		s, err := open("reader:rd-pw-8812")
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		wantRead(t, "reader", s, sortProbes(ps), hs)
		more, moreH := round(2, 2)
		err = s.Write(ctx, store.Batch{Probes: more, Hourly: moreH})
		var re *store.RefusedError
		if !errors.As(err, &re) || re.Points != 4 || re.Status != http.StatusForbidden || strings.Contains(err.Error(), "rd-pw-8812") {
			t.Errorf("Write as a reader = %v (%+v); want a 403 refusal of 4 points without the password", err, re)
		}
	})
}

// The store contract on the newer server.
func TestNewerContract(t *testing.T) {
	srv := influxtest.StartNewer(t, influxtest.Options{})
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := influx.Open(ctx, influx.Options{URL: srv.URL, Bucket: influxtest.NewDB(t, srv.URL) + "/autogen", Warn: failOnWarn(t)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// Chunked InfluxQL reads get past the newer server's max-row-limit too.
func TestNewerReadsPastTheRowLimit(t *testing.T) {
	srv := influxtest.StartNewer(t, influxtest.Options{})
	s := openInflux(t, srv.URL, influx.Options{Bucket: srv.CreateDB(t, "rows") + "/autogen"})
	n := 3*influxtest.MaxRowLimit + 7
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	ps := make([]store.Probe, n)
	for i := range ps {
		ps[i] = store.Probe{Lane: fmt.Sprintf("l%d", i%13), Kind: "free", Time: start.Add(time.Duration(i) * time.Second),
			QueueS: float64(i), OK: true, Outcome: "ok", Status: 200}
	}
	if err := s.Write(ctx, store.Batch{Probes: ps}); err != nil {
		t.Fatal(err)
	}
	got, err := store.ReadProbes(ctx, s, store.Between(start, start.Add(time.Duration(n)*time.Second)))
	if err != nil || !slices.Equal(got, ps) {
		t.Fatalf("read %d of %d probes, %v", len(got), n, err)
	}
}

// With auth on, the token user:password reads and writes; a wrong password
// fails at open with a hint and without the password.
func TestNewerAuth(t *testing.T) {
	srv := influxtest.StartNewer(t, influxtest.Options{Auth: true, Password: "pw-New-2291"})
	bucket := srv.CreateDB(t, "lanewatch") + "/autogen"
	s, err := influx.Open(ctx, influx.Options{URL: srv.URL, Bucket: bucket, Token: "admin:pw-New-2291"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ps, hs := round(2, 1)
	if err := s.Write(ctx, store.Batch{Probes: ps, Hourly: hs}); err != nil {
		t.Fatal(err)
	}
	wantRead(t, "admin", s, sortProbes(ps), hs)
	_, err = influx.Open(ctx, influx.Options{URL: srv.URL, Bucket: bucket, Token: "admin:wrong-pw-6620"})
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "check the token") || strings.Contains(err.Error(), "wrong-pw-6620") {
		t.Errorf("OpenInflux with a wrong password = %v; want a 401 with a hint, without the password", err)
	}
}

func probeAt(lane string, d time.Duration, queue float64) store.Probe {
	return store.Probe{Lane: lane, Kind: "free", Time: hour0.Add(d), QueueS: queue, GenS: 2, HeadersS: 0.5, Tokens: 16, OK: true, Outcome: "ok", Status: 200}
}
