package store_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/influxtest"
	"github.com/lanewatch/lanewatch/internal/missingtool"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/storetest"
)

// A newer InfluxDB 1.x than 1.8.10, the one $INFLUXD_BIN_NEWER names:
// `make test` builds 1.13.2 and sets it (scripts/influxd.sh build 1.13.2, or
// 1.11.8, builds one by hand). It is built without Flux (libflux, Rust
// through cgo, cannot be built here), so only the InfluxQL read path and the
// writes run against it. Unset, the test skips as for a missing tool (and
// fails under CI).
func newerServer(t *testing.T, o influxtest.Options) *influxtest.Server {
	t.Helper()
	bin := os.Getenv("INFLUXD_BIN_NEWER")
	if bin == "" {
		missingtool.Skip(t, "influxd 1.13.2", "scripts/influxd.sh build 1.13.2, then INFLUXD_BIN_NEWER=~/.cache/lanewatch/bin/influxd-1.13.2",
			"INFLUXD_BIN_NEWER is not set; no InfluxDB newer than 1.8 to test against")
	}
	if _, err := os.Stat(bin); err != nil {
		missingtool.Skip(t, "influxd 1.13.2", "scripts/influxd.sh build 1.13.2", fmt.Sprintf("INFLUXD_BIN_NEWER=%s is not there", bin))
	}
	// Its Flux is a stub: with flux-enabled it stops at start ("panic:
	// flux is not available: this influxd was built without libflux").
	o.Bin, o.Env = bin, append(o.Env, "INFLUXDB_HTTP_FLUX_ENABLED=false")
	srv := influxtest.StartWith(t, o)
	resp, err := http.Get(srv.URL + "/ping")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	v := resp.Header.Get("X-Influxdb-Version")
	if v == "" || strings.HasPrefix(v, "1.8.") {
		t.Fatalf("%s answers as InfluxDB %q; want a release newer than 1.8", bin, v)
	}
	t.Logf("InfluxDB %s", v)
	return srv
}

// The store contract through InfluxQL reads and /api/v2/write on the newer
// server, with the spool around the store as a sampler has it.
func TestInfluxNewerContract(t *testing.T) {
	srv := newerServer(t, influxtest.Options{})
	storetest.Run(t, func(t *testing.T) store.Store {
		db := influxtest.NewDB(t, srv.URL)
		s, err := openSpool(store.InfluxOptions{URL: srv.URL, Bucket: db + "/autogen", Query: store.QueryInfluxQL, Warn: failOnWarn(t)},
			store.SpoolOptions{Path: filepath.Join(t.TempDir(), "spool.lp"), Warn: failOnWarn(t)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// Chunked InfluxQL reads get past the newer server's max-row-limit too.
func TestInfluxNewerReadsPastTheRowLimit(t *testing.T) {
	srv := newerServer(t, influxtest.Options{})
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
	if err != nil || !slices.Equal(got, ps) {
		t.Fatalf("read %d of %d probes, %v", len(got), n, err)
	}
}

// An outage of the newer server: spooled rounds replay after its restart,
// each probe stored once.
func TestInfluxNewerSpoolReplay(t *testing.T) {
	srv := newerServer(t, influxtest.Options{})
	db := srv.CreateDB(t, "newerspool")
	const lanes = 3
	s := openSpooled(t, srv.URL, store.InfluxOptions{Bucket: db + "/autogen", RequestTimeout: 5 * time.Second},
		store.SpoolOptions{Path: filepath.Join(t.TempDir(), "spool.lp")})
	var all []store.Probe
	write := func(r int) {
		t.Helper()
		ps, hs := round(lanes, r)
		all = append(all, ps...)
		if err := s.Write(ctx, ps, hs); err != nil {
			t.Fatalf("round %d: %v", r, err)
		}
	}
	write(0)
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	write(1)
	if d := s.SpoolDepth(); d != 2*lanes {
		t.Fatalf("spool depth %d while down, want %d", d, 2*lanes)
	}
	srv.Restart(t)
	write(2)
	if d := s.SpoolDepth(); d != 0 {
		t.Fatalf("spool depth %d after the restart, want 0", d)
	}
	_, hs := round(lanes, 2)
	wantRead(t, "after the replay", s, sortProbes(all), hs)
}

// With auth on, the token user:password reads and writes; a wrong password
// fails at open with a hint and without the password.
func TestInfluxNewerAuth(t *testing.T) {
	srv := newerServer(t, influxtest.Options{Auth: true, Password: "pw-New-2291"})
	bucket := srv.CreateDB(t, "lanewatch") + "/autogen"
	s, err := store.OpenInflux(ctx, store.InfluxOptions{URL: srv.URL, Bucket: bucket, Token: "admin:pw-New-2291"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ps, hs := round(2, 1)
	if err := s.Write(ctx, ps, hs); err != nil {
		t.Fatal(err)
	}
	wantRead(t, "admin", s, sortProbes(ps), hs)
	_, err = store.OpenInflux(ctx, store.InfluxOptions{URL: srv.URL, Bucket: bucket, Token: "admin:wrong-pw-6620"})
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "check the token") || strings.Contains(err.Error(), "wrong-pw-6620") {
		t.Errorf("OpenInflux with a wrong password = %v; want a 401 with a hint, without the password", err)
	}
}
