package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// store.timeout bounds one InfluxDB request (default 20s, > 0 and at most
// 1h); store.query_language is auto or influxql (the same: InfluxQL), and
// flux, no longer read, is refused saying so. A bad value is one error
// naming the field and its line.
func TestStoreTimeoutAndQueryLanguage(t *testing.T) {
	const lane = "lanes:\n  - {name: a, kind: free, api: openai, base_url: \"http://x/v1\", model: m}\n"
	const influx = "store:\n  kind: influx\n  url: \"http://h:8086\"\n"
	cases := []struct {
		name, src string
		timeout   time.Duration
		lang      string
		err       string
	}{
		{"absent", lane, 20 * time.Second, "auto", ""},
		{"influx absent", influx + lane, 20 * time.Second, "auto", ""},
		{"a minute", influx + "  timeout: 1m\n" + lane, time.Minute, "auto", ""},
		{"an hour", influx + "  timeout: 1h\n" + lane, time.Hour, "auto", ""},
		{"zero", influx + "  timeout: 0s\n" + lane, 0, "", `:4: store.timeout: must be > 0 and at most 1h0m0s, got 0s`},
		{"negative", influx + "  timeout: -5s\n" + lane, 0, "", `:4: store.timeout: must be > 0 and at most 1h0m0s, got -5s`},
		{"past an hour", influx + "  timeout: 61m\n" + lane, 0, "", `:4: store.timeout: must be > 0 and at most 1h0m0s, got 1h1m0s`},
		{"not a duration", influx + "  timeout: 30\n" + lane, 0, "", `:4: store.timeout: want a duration such as "30s", got "30"`},
		{"influxql", influx + "  query_language: influxql\n" + lane, 20 * time.Second, "influxql", ""},
		{"flux", influx + "  query_language: flux\n" + lane, 0, "", `:4: store.query_language: flux is no longer read: lanewatch reads InfluxQL through /query (on InfluxDB 2.x its v1-compatibility API, with the bucket's DBRP mapping); remove the key or set auto`},
		{"auto", influx + "  query_language: auto\n" + lane, 20 * time.Second, "auto", ""},
		{"unknown language", influx + "  query_language: sql\n" + lane, 0, "", `:4: store.query_language: want auto or influxql, got "sql"`},
		{"empty language", influx + "  query_language: \"\"\n" + lane, 0, "", `:4: store.query_language: want auto or influxql, got ""`},
		{"upper case", influx + "  query_language: Flux\n" + lane, 0, "", `store.query_language: want auto or influxql, got "Flux"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(p, []byte(c.src), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := Load(p)
			switch {
			case c.err == "" && err != nil:
				t.Fatal(err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("error %v, want one containing %q", err, c.err)
			case c.err == "" && (cfg.Store.Timeout.D() != c.timeout || cfg.Store.QueryLanguage != c.lang):
				t.Errorf("timeout %s query_language %q, want %s %q", cfg.Store.Timeout.D(), cfg.Store.QueryLanguage, c.timeout, c.lang)
			}
		})
	}
}
