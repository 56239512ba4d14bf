package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeInflux is a hostile stand-in for InfluxDB's HTTP API: it answers the
// store's read check, then fails in the way mode says, and every error it
// sends echoes the Authorization header (the token) and the request body.
type fakeInflux struct {
	srv    *httptest.Server
	mode   string // down | refuse | deny
	writes atomic.Int64
	token  atomic.Int64 // requests that carried the token
}

// newFakeInflux starts one. Modes:
//
//	down    reads work, every write is a 503 (transient: the points are spooled)
//	refuse  reads work, every write is a 400 (permanent: dead letter, exit 1)
//	deny    the read check is a 401 (the store does not open)
func newFakeInflux(t *testing.T, mode, token string) *fakeInflux {
	t.Helper()
	f := &fakeInflux{mode: mode}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		auth := r.Header.Get("Authorization")
		if token != "" && strings.Contains(auth, token) {
			f.token.Add(1)
		}
		fail := func(code int, c string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			msg := fmt.Sprintf("echo: Authorization=%q body=%q", auth, body)
			_ = json.NewEncoder(w).Encode(map[string]string{"code": c, "message": msg, "error": msg})
		}
		switch r.URL.Path {
		case "/ping", "/health":
			w.WriteHeader(http.StatusNoContent)
		case "/api/v2/query", "/query":
			if mode == "deny" {
				fail(http.StatusUnauthorized, "unauthorized")
				return
			}
			if r.URL.Path == "/query" { // InfluxQL: no rows
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"results":[{"statement_id":0}]}`)
				return
			}
			w.Header().Set("Content-Type", "text/csv; charset=utf-8")
			w.WriteHeader(http.StatusOK) // no rows
		case "/api/v2/write":
			f.writes.Add(1)
			switch mode {
			case "down":
				fail(http.StatusServiceUnavailable, "unavailable")
			case "refuse":
				fail(http.StatusBadRequest, "invalid")
			default:
				w.WriteHeader(http.StatusNoContent)
			}
		default:
			fail(http.StatusNotFound, "not found")
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// influxStore is the YAML store block for InfluxDB 1.8 at url, database db,
// with the token from LW_E2E_INFLUX_TOKEN and the spool under dir.
func influxStore(url, db, dir string) string {
	return fmt.Sprintf(`  kind: influx
  url: %q
  org: ""
  bucket: %s/autogen
  token_env: LW_E2E_INFLUX_TOKEN
  spool: %q
  dead_letter: %q
`, url, db, dir+"/spool.lp", dir+"/dead-letter.lp")
}
