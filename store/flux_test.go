package store_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/influxtest"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/storetest"
)

// The Flux read path against a real InfluxDB 1.8 with flux-enabled, through
// its 2.x-compatible API: what a 2.x server or Cloud would be asked, on the
// only server the tests can run.

// recorder is a reverse proxy in front of a real server that records the
// method, path and query of each request.
type recorder struct {
	mu   sync.Mutex
	reqs []*url.URL
	prox *httputil.ReverseProxy
}

func newRecorder(t *testing.T, base string) *httptest.Server {
	t.Helper()
	target, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{prox: httputil.NewSingleHostReverseProxy(target)}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	recorders.Store(srv.URL, r)
	return srv
}

var recorders sync.Map // URL of a recorder's server -> *recorder

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	u := *req.URL
	r.mu.Lock()
	r.reqs = append(r.reqs, &u)
	r.mu.Unlock()
	r.prox.ServeHTTP(w, req)
}

func recorded(srvURL string) []*url.URL {
	v, _ := recorders.Load(srvURL)
	r := v.(*recorder)
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reqs)
}

// Writes go through /api/v2/write with the bucket as db/rp and nanosecond
// precision, whichever language reads; Flux reads go through /api/v2/query
// and nothing else, InfluxQL reads through /query. A config with an org
// (as for 2.x) reads with Flux on 1.8 too: 1.8 ignores the org.
func TestFluxUsesTheV2API(t *testing.T) {
	base := influxtest.URL(t)
	for _, c := range []struct {
		name, org, query string
		readPath         string
	}{
		{"flux", "", store.QueryFlux, "/api/v2/query"},
		{"org set", "my-org", "", "/api/v2/query"},
		{"influxql", "", store.QueryInfluxQL, "/query"},
		{"default on 1.x", "", "", "/query"},
	} {
		t.Run(c.name, func(t *testing.T) {
			proxy := newRecorder(t, base)
			db := influxtest.NewDB(t, base)
			s := openInflux(t, proxy.URL, store.InfluxOptions{Bucket: db + "/autogen", Org: c.org, Query: c.query})
			ps, hs := round(3, 1)
			if err := s.Write(ctx, ps, hs); err != nil {
				t.Fatal(err)
			}
			wantRead(t, c.name, s, sortProbes(ps), hs)
			writes, reads := 0, 0
			for _, u := range recorded(proxy.URL) {
				switch u.Path {
				case "/api/v2/write":
					writes++
					if b, p := u.Query().Get("bucket"), u.Query().Get("precision"); b != db+"/autogen" || p != "ns" {
						t.Errorf("write %s: bucket %q precision %q; want %q, ns", u, b, p, db+"/autogen")
					}
				case c.readPath:
					reads++
				default:
					t.Errorf("request to %s; want writes to /api/v2/write and reads from %s only", u, c.readPath)
				}
			}
			if writes != 1 || reads < 3 { // the read check at open, Probes, Hourly
				t.Errorf("%d writes through /api/v2/write and %d reads through %s; want 1 and at least 3", writes, reads, c.readPath)
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

// The store contract through Flux on a bucket that names a retention policy
// other than the default: a store that dropped the "/rp" would write to
// autogen and fail here, not on the default policy.
func TestFluxContractRetentionPolicy(t *testing.T) {
	base := influxtest.URL(t)
	storetest.Run(t, func(t *testing.T) store.Store {
		db := influxtest.NewDB(t, base)
		createRP(t, base, db, "keep")
		s, err := openSpool(store.InfluxOptions{URL: base, Bucket: db + "/keep", Query: store.QueryFlux, Warn: failOnWarn(t)},
			store.SpoolOptions{Path: filepath.Join(t.TempDir(), "spool.lp"), Warn: failOnWarn(t)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// A bucket db/rp writes to and reads from that retention policy only.
func TestFluxBucketIsDatabaseAndRetentionPolicy(t *testing.T) {
	base := influxtest.URL(t)
	db := influxtest.NewDB(t, base)
	createRP(t, base, db, "keep")
	inKeep := openInflux(t, base, store.InfluxOptions{Bucket: db + "/keep", Query: store.QueryFlux})
	inAutogen := openInflux(t, base, store.InfluxOptions{Bucket: db + "/autogen", Query: store.QueryFlux})
	ps, hs := round(4, 2)
	if err := inKeep.Write(ctx, ps, hs); err != nil {
		t.Fatal(err)
	}
	wantRead(t, db+"/keep", inKeep, sortProbes(ps), hs)
	wantRead(t, db+"/autogen", inAutogen, nil, nil)
	if n := countPoints(t, base, db, "probe", "queue_s"); n != 0 {
		t.Errorf("%s/autogen holds %d probes; want 0, they belong to %s/keep", db, n, db)
	}
}

// Flux reads are not chunked, and need not be: InfluxDB 1.8's max-row-limit
// and its coordinator limits (max-select-point, max-select-series) apply to
// InfluxQL only. A read of more points than any of them returns them all;
// an InfluxQL read past a coordinator limit fails, loudly (qlErr).
func TestFluxReadsPastTheRowLimit(t *testing.T) {
	for _, c := range []struct {
		name  string
		env   []string
		qlErr string // "": InfluxQL reads everything too (chunked)
	}{
		{"max-row-limit", nil, ""},
		{"coordinator limits", []string{"INFLUXDB_COORDINATOR_MAX_SELECT_POINT=500", "INFLUXDB_COORDINATOR_MAX_SELECT_SERIES=5"},
			"max-select-series limit exceeded"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := influxtest.StartWith(t, influxtest.Options{Env: c.env})
			bucket := srv.CreateDB(t, "rows") + "/autogen"
			s := openInflux(t, srv.URL, store.InfluxOptions{Bucket: bucket, Query: store.QueryFlux})
			ql := openInflux(t, srv.URL, store.InfluxOptions{Bucket: bucket, Query: store.QueryInfluxQL})
			n := 3*influxtest.MaxRowLimit + 7
			start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
			ps := make([]store.Probe, n)
			hs := make([]store.Hourly, n)
			const lanes = 13
			for i := range ps {
				lane := fmt.Sprintf("l%02d", i%lanes)
				ps[i] = store.Probe{Lane: lane, Kind: "free", Time: start.Add(time.Duration(i) * time.Second),
					QueueS: float64(i), OK: true, Outcome: "ok", Status: 200}
				hs[i] = store.Hourly{Lane: lane, Kind: "free", Hour: start.Add(time.Duration(i/lanes) * time.Hour),
					WorstQueueS: float64(i), Samples: 1, Eligible: true}
			}
			if err := s.Write(ctx, ps, hs); err != nil {
				t.Fatal(err)
			}
			got, err := s.Probes(ctx, store.Between(start, start.Add(time.Duration(n)*time.Second)))
			if err != nil || !slices.Equal(got, ps) {
				t.Errorf("read %d of %d probes, %v", len(got), n, err)
			}
			gotH, err := s.Hourly(ctx, store.Between(start, start.Add(time.Duration(n)*time.Hour)))
			if err != nil || !slices.Equal(gotH, hs) {
				t.Errorf("read %d of %d hourly points, %v", len(gotH), n, err)
			}
			got, err = ql.Probes(ctx, store.Between(start, start.Add(time.Duration(n)*time.Second)))
			switch {
			case c.qlErr == "" && (err != nil || !slices.Equal(got, ps)):
				t.Errorf("InfluxQL read %d of %d probes, %v", len(got), n, err)
			case c.qlErr != "" && (err == nil || !strings.Contains(err.Error(), c.qlErr)):
				t.Errorf("InfluxQL read = %d probes, %v; want an error saying %q", len(got), err, c.qlErr)
			}
		})
	}
}

// An outage with Flux reads: rounds written while the server is down are
// spooled, a read then fails instead of returning the spool alone, a new
// store reads the server's points merged with the spool before the replay,
// and after the replay the server holds each point exactly once.
func TestFluxSpoolReplay(t *testing.T) {
	srv := influxtest.Start(t)
	db := srv.CreateDB(t, "fluxspool")
	const lanes = 4
	o := store.InfluxOptions{URL: srv.URL, Bucket: db + "/autogen", Query: store.QueryFlux, RequestTimeout: 5 * time.Second}
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
	if err := s1.Write(ctx, ps1, hs1); err != nil || s1.SpoolDepth() != 2*lanes {
		t.Fatalf("Write while down = %v, depth %d; want nil, %d", err, s1.SpoolDepth(), 2*lanes)
	}
	if got, err := s1.Hourly(ctx, store.Between(hour0, hour0.Add(time.Hour))); err == nil || !errors.Is(err, store.ErrUnavailable) {
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
	if err := s2.Write(ctx, ps2, hs2); err != nil || s2.SpoolDepth() != 0 {
		t.Fatalf("Write after the restart = %v, depth %d; want nil, 0 (replayed)", err, s2.SpoolDepth())
	}
	if n := countPoints(t, srv.URL, db, "probe", "queue_s"); n != 3*lanes {
		t.Errorf("server holds %d probes after the replay, want %d (each once)", n, 3*lanes)
	}
	if n := countPoints(t, srv.URL, db, "queue_hourly", "samples"); n != lanes {
		t.Errorf("server holds %d hourly points after the replay, want %d", n, lanes)
	}
	wantRead(t, "after the replay", s2, sortProbes(append(append(slices.Clone(ps0), ps1...), ps2...)), hs2)
}

// With auth on, the token is user:password (1.8's form of a 2.x token):
// the admin reads and writes through Flux, a wrong password or none fails
// at open with a hint and without the secret, a read-only user opens and
// reads but its writes are refused for good.
func TestFluxAuth(t *testing.T) {
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
	open := func(token string) (*store.Influx, error) {
		return store.OpenInflux(ctx, store.InfluxOptions{URL: srv.URL, Bucket: bucket, Token: token, Query: store.QueryFlux})
	}
	ps, hs := round(2, 1)

	t.Run("admin reads and writes", func(t *testing.T) {
		s, err := open("admin:pw-Flux-4417")
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.Write(ctx, ps, hs); err != nil {
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
		// 1.8's Flux answers this with a 500 ("failed to initialize
		// execute state"), InfluxQL with a 403.
		{"user without privileges", "stranger:st-pw-9923", "st-pw-9923", []string{srv.URL, bucket, `requires READ for database "lanewatch"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := open(c.token)
			if err == nil {
				s.Close()
				t.Fatal("OpenInflux succeeded")
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
	// The 500 of a user without READ is a refusal, not an outage: a writer
	// that may start while the server is unreachable still fails at open.
	t.Run("user without privileges, start unreachable", func(t *testing.T) {
		s, err := store.OpenInflux(ctx, store.InfluxOptions{URL: srv.URL, Bucket: bucket, Token: "stranger:st-pw-9923",
			Query: store.QueryFlux, StartUnreachable: true})
		if err == nil {
			s.Close()
			t.Fatal("OpenInflux with StartUnreachable succeeded for a user without READ; want the refusal")
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
		err = s.Write(ctx, more, moreH)
		var re *store.RefusedError
		if !errors.As(err, &re) || re.Points != 4 || re.Status != http.StatusForbidden || strings.Contains(err.Error(), "rd-pw-8812") {
			t.Errorf("Write as a reader = %v (%+v); want a 403 refusal of 4 points without the password", err, re)
		}
	})
}
