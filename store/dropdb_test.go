package store_test

import (
	"errors"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/influxtest"
	"github.com/lanewatch/lanewatch/store"
)

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
func TestInfluxDroppedDatabase(t *testing.T) {
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
		{"Probes", func(st store.Store) error { _, err := st.Probes(ctx, q); return err }},
		{"Hourly", func(st store.Store) error { _, err := st.Hourly(ctx, q); return err }},
		{"EachHourly", func(st store.Store) error {
			return store.EachHourly(ctx, st, q, func([]store.Hourly) error { return nil })
		}},
		{"Latest", func(st store.Store) error { _, err := store.Latest(ctx, st, q); return err }},
		{"Heartbeats", func(st store.Store) error {
			_, err := st.(store.HeartbeatStore).Heartbeats(ctx, []string{""}, q.Windows[0])
			return err
		}},
	}
	for _, c := range []struct {
		name  string
		url   func() string
		query string
		want  func(db string) string // the server's own words, as the error must carry them
	}{
		{"influxql msgpack", func() string { return base }, store.QueryInfluxQL, func(db string) string { return "database not found: " + db }},
		{"influxql json", func() string { return jsonOnly.URL }, store.QueryInfluxQL, func(db string) string { return "database not found: " + db }},
		{"flux", func() string { return base }, store.QueryFlux, func(string) string { return "no database" }},
	} {
		for _, spooled := range []bool{false, true} {
			name := c.name
			if spooled {
				name += " spooled"
			}
			t.Run(name, func(t *testing.T) {
				db := influxtest.NewDB(t, base)
				o := store.InfluxOptions{URL: c.url(), Bucket: db + "/autogen", Query: c.query, Warn: failOnWarn(t)}
				inner, err := store.OpenInflux(ctx, o)
				if err != nil {
					t.Fatal(err)
				}
				var st store.Store = inner
				spool := filepath.Join(t.TempDir(), "spool.lp")
				if spooled {
					sp, err := store.OpenSpool(inner, store.SpoolOptions{Path: spool, Warn: failOnWarn(t)})
					if err != nil {
						t.Fatal(err)
					}
					st = sp
				}
				defer func() { _ = st.Close() }()
				ps, hs := round(2, 0)
				if err := st.Write(ctx, ps, hs); err != nil {
					t.Fatal(err)
				}
				if got, err := st.Probes(ctx, q); err != nil || len(got) != len(ps) {
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
				err = st.Write(ctx, ps, hs)
				var re *store.RefusedError
				switch {
				case !errors.As(err, &re) || !strings.Contains(err.Error(), `404 Not Found: database not found: "`+db+`"`):
					t.Errorf("Write after the drop = %v; want a *RefusedError of the 404 naming the database", err)
				case !spooled && re.Status != 404:
					t.Errorf("Write after the drop: status %d, want 404", re.Status)
				case spooled && re.DeadLetter != spool+".dead":
					t.Errorf("spooled Write after the drop went to %q, want the dead-letter file", re.DeadLetter)
				}
				if d, ok := st.(store.Depther); ok && d.SpoolDepth() != 0 {
					t.Errorf("refused points went to the spool (depth %d)", d.SpoolDepth())
				}
				err = st.(store.HeartbeatStore).WriteHeartbeat(ctx, store.Heartbeat{Instance: "i", Time: hour0})
				if err == nil || errors.Is(err, store.ErrUnavailable) {
					t.Errorf("WriteHeartbeat after the drop = %v; want a lasting failure", err)
				}
			})
		}
	}
}
