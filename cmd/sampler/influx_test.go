package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/influxtest"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/influx"
)

func TestMain(m *testing.M) { influxtest.Main(m) }

// influxConfig writes a config whose store is InfluxDB 1.8 database db at url.
func influxConfig(t *testing.T, dir, url, db string, lanes map[string]string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "jitter: 0s\nstore: {kind: influx, url: %q, bucket: %q, token_env: LW_TEST_TOKEN, spool: spool.lp, dead_letter: dead.lp}\n", url, db+"/autogen")
	fmt.Fprintf(&b, "probe: {prompt: %q, max_tokens: 8, timeout: 10s}\nlanes:\n", prompt)
	for _, name := range []string{"free", "paid"} {
		if u, ok := lanes[name]; ok {
			fmt.Fprintf(&b, "  - {name: %s, kind: %s, api: openai, base_url: %q, model: m, api_key_env: LW_TEST_KEY}\n", name, name, u)
		}
	}
	p := filepath.Join(dir, "lanewatch.yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func influxEnv(k string) (string, bool) {
	switch k {
	case "LW_TEST_KEY":
		return secretKey, true
	case "LW_TEST_TOKEN":
		return "tok-SECRET-9d2e", true // ignored by a server with auth off, but sent
	}
	return "", false
}

func influxProbes(t *testing.T, url, db string) []store.Probe {
	t.Helper()
	st, err := influx.Open(context.Background(), influx.Options{URL: url, Bucket: db + "/autogen"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ps, err := store.ReadProbes(context.Background(), st, store.Between(time.Now().Add(-2*time.Hour), time.Now().Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// An outage, including one at start: -once exits 0 and says how many points
// wait in the spool; once the server is back, it holds every probe once.
func TestOnceDuringInfluxOutage(t *testing.T) {
	srv := influxtest.Start(t)
	db := srv.CreateDB(t, "lanewatch")
	free, _ := sseServer(t, 20*time.Millisecond, 3, http.StatusOK)
	paid, _ := sseServer(t, 5*time.Millisecond, 2, http.StatusOK)
	dir := t.TempDir()
	cfg := influxConfig(t, dir, srv.URL, db, map[string]string{"free": free.URL, "paid": paid.URL})
	once := func() string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), []string{"-config", cfg, "-once"}, &stdout, &stderr, influxEnv); err != nil {
			t.Fatalf("-once: %v\n%s", err, stderr.String())
		}
		for _, blob := range []string{stdout.String(), stderr.String()} {
			if strings.Contains(blob, "tok-SECRET-9d2e") || strings.Contains(blob, secretKey) {
				t.Fatalf("a secret reached the output:\n%s", blob)
			}
		}
		return stdout.String()
	}

	once() // the server is up
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	for round := 1; round <= 2; round++ {
		out := once()
		// The 2 probes of each round wait in the spool, each after its
		// reservation; their hours are rebuilt once the server can be read
		// again.
		if want := fmt.Sprintf("%d points wait in the spool", 4*round); !strings.Contains(out, want) {
			t.Fatalf("round %d during the outage: output lacks %q:\n%s", round, want, out)
		}
	}
	srv.Restart(t)
	if out := once(); strings.Contains(out, "wait in the spool") {
		t.Fatalf("spool not drained after the restart:\n%s", out)
	}
	probes := influxProbes(t, srv.URL, db)
	seen := map[string]int{}
	for _, p := range probes {
		seen[p.Lane+p.Time.String()]++
	}
	if len(probes) != 8 || len(seen) != 8 {
		t.Fatalf("server holds %d probes (%d distinct), want 8 exactly once: %+v", len(probes), len(seen), probes)
	}
	spool, err := os.ReadFile(filepath.Join(dir, "spool.lp"))
	if err != nil {
		t.Fatal(err)
	}
	if len(bytes.TrimSpace(spool)) != 0 {
		t.Errorf("spool not empty after replay: %q", spool)
	}
	// Every hourly record is the aggregate of all its probes, including
	// those of the rounds that waited in the spool.
	st, err := influx.Open(context.Background(), influx.Options{URL: srv.URL, Bucket: db + "/autogen"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	bad, err := store.Check(context.Background(), st, time.UTC, store.Window{From: time.Now().Add(-2 * time.Hour), To: time.Now().Add(time.Hour)}, nil)
	if err != nil || len(bad) != 0 {
		t.Fatalf("hourly records after the outage: %v, %v; want every one equal to its probes' aggregate", bad, err)
	}
}

func TestInfluxStartErrors(t *testing.T) {
	url := influxtest.URL(t)
	free, _ := sseServer(t, 5*time.Millisecond, 2, http.StatusOK)
	cases := []struct {
		name, url, db, want string
	}{
		{"missing database", url, "nosuchdb", "nosuchdb"},
		{"host that does not resolve", "http://no-such-host.invalid:8086", "lanewatch", "no-such-host.invalid"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := influxConfig(t, t.TempDir(), c.url, c.db, map[string]string{"free": free.URL})
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), []string{"-config", cfg, "-once"}, &stdout, &stderr, influxEnv)
			var line bytes.Buffer
			if code := exitCode(err, &line); code != 1 {
				t.Fatalf("exit %d, want 1 (err %v)", code, err)
			}
			if !strings.Contains(line.String(), c.want) || strings.Count(line.String(), "\n") != 1 {
				t.Errorf("want one line naming %q, got %q", c.want, line.String())
			}
			if strings.Contains(line.String(), "tok-SECRET-9d2e") {
				t.Errorf("the token reached the error: %q", line.String())
			}
		})
	}
}

// `sampler import` moves an embedded store into InfluxDB; running it twice
// rewrites instead of double counting.
func TestImportFileIntoInflux(t *testing.T) {
	url := influxtest.URL(t)
	db := influxtest.NewDB(t, url)
	free, _ := sseServer(t, 10*time.Millisecond, 2, http.StatusOK)
	fileDir := t.TempDir()
	fileCfg := writeConfig(t, fileDir, "@every 1s", map[string]string{"free": free.URL})
	var stdout, stderr bytes.Buffer
	for i := 0; i < 3; i++ {
		if err := run(context.Background(), []string{"-config", fileCfg, "-once"}, &stdout, &stderr, env); err != nil {
			t.Fatal(err)
		}
	}
	influxCfg := influxConfig(t, t.TempDir(), url, db, map[string]string{"free": free.URL})
	for i := 0; i < 2; i++ {
		stdout.Reset()
		args := []string{"import", "-config", influxCfg, filepath.Join(fileDir, "samples.lp")}
		if err := run(context.Background(), args, &stdout, &stderr, influxEnv); err != nil {
			t.Fatalf("import: %v\n%s", err, stderr.String())
		}
	}
	// 6 lines: each round's reservation and the probe that replaced it;
	// InfluxDB keeps the 3 probes.
	if !strings.Contains(stdout.String(), "imported 6 probe") {
		t.Errorf("import output: %q", stdout.String())
	}
	if got := influxProbes(t, url, db); len(got) != 3 {
		t.Errorf("InfluxDB holds %d probes after two imports, want 3", len(got))
	}
}

// A file that holds no lanewatch points is bad input, not an empty import.
func TestImportRejectsAFileWithoutPoints(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "@every 1s", map[string]string{"free": "http://127.0.0.1:1/v1"})
	empty := filepath.Join(dir, "empty.lp")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		file string
		code int
		want string
	}{
		{"the config itself", cfg, 1, "no lanewatch points in it"},
		{"an empty spool", empty, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr, line bytes.Buffer
			err := run(context.Background(), []string{"import", "-config", cfg, c.file}, &stdout, &stderr, env)
			if code := exitCode(err, &line); code != c.code || !strings.Contains(line.String(), c.want) {
				t.Errorf("exit %d %q, want %d with %q", code, line.String(), c.code, c.want)
			}
		})
	}
}

// Importing the store's own file into it would read its own appends forever.
func TestImportRefusesTheStoresOwnFile(t *testing.T) {
	free, _ := sseServer(t, 5*time.Millisecond, 2, http.StatusOK)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "@every 1s", map[string]string{"free": free.URL})
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"-config", cfg, "-once"}, &stdout, &stderr, env); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, "samples.lp")
	before, _ := os.Stat(store)
	var line bytes.Buffer
	err := run(context.Background(), []string{"import", "-config", cfg, store}, &stdout, &stderr, env)
	if code := exitCode(err, &line); code != 1 || !strings.Contains(line.String(), "move it aside first") {
		t.Fatalf("exit %d %q, want 1 refusing the store's own file", code, line.String())
	}
	if after, _ := os.Stat(store); after.Size() != before.Size() {
		t.Errorf("store grew from %d to %d bytes", before.Size(), after.Size())
	}
}
