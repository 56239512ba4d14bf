package app_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/app"
	"github.com/lanewatch/lanewatch/config"
)

// InfluxDB reads go to /query (InfluxQL; on 2.x the v1-compatibility API)
// with an org too, and store.timeout bounds each request: a server slower than it fails the
// open's read check with a timeout.
func TestOpenStoreInfluxKnobs(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		switch r.URL.Path {
		case "/query":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"results":[{"statement_id":0}]}` + "\n"))
		case "/api/v2/query":
			w.Header().Set("Content-Type", "text/csv")
			_, _ = w.Write([]byte("\r\n"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	for _, c := range []struct {
		name, store string
		want        string
	}{
		{"auto without org", "", "/query"},
		{"auto with org", "org: o\n  ", "/query"},
		{"influxql", "query_language: influxql\n  ", "/query"},
		{"influxql with org", "org: o\n  query_language: influxql\n  ", "/query"},
	} {
		t.Run(c.name, func(t *testing.T) {
			mu.Lock()
			paths = nil
			mu.Unlock()
			dir := t.TempDir()
			cfg, err := config.Parse(strings.NewReader("store:\n  kind: influx\n  "+c.store+"url: "+srv.URL+"\n"+
				"lanes:\n  - {name: a, kind: free, api: openai, base_url: \"http://x/v1\", model: m}\n"), dir)
			if err != nil {
				t.Fatal(err)
			}
			st, err := app.OpenStoreReadOnly(context.Background(), cfg, nil, func(string) (string, bool) { return "", false })
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			mu.Lock()
			defer mu.Unlock()
			if len(paths) != 1 || paths[0] != c.want {
				t.Errorf("read check went to %q, want [%s]", paths, c.want)
			}
		})
	}

	t.Run("timeout", func(t *testing.T) {
		release := make(chan struct{})
		slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-time.After(10 * time.Second):
			}
		}))
		defer slow.Close()
		defer close(release) // before Close, which waits for the handler
		cfg, err := config.Parse(strings.NewReader("store:\n  kind: influx\n  url: "+slow.URL+"\n  timeout: 200ms\n"+
			"lanes:\n  - {name: a, kind: free, api: openai, base_url: \"http://x/v1\", model: m}\n"), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		st, err := app.OpenStoreReadOnly(context.Background(), cfg, nil, func(string) (string, bool) { return "", false })
		if err == nil {
			st.Close()
			t.Fatal("OpenStoreReadOnly succeeded against a server that never answers")
		}
		if el := time.Since(t0); el > 10*time.Second || !strings.Contains(err.Error(), "Timeout") {
			t.Errorf("open failed after %s with %v; want a timeout after about 200ms", el, err)
		}
	})
}
