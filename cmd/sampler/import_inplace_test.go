package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/influxtest"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
)

// Moving to InfluxDB in place: the influx config sets no store.path, and
// `sampler import -config influx.yaml data/samples.lp` beside it imports the
// old file store (the file store's default path is not the InfluxDB
// store's own file) (issue 20, item 3).
func TestImportInPlaceIntoInflux(t *testing.T) {
	url := influxtest.URL(t)
	db := influxtest.NewDB(t, url)
	free, _ := sseServer(t, 5*time.Millisecond, 2, http.StatusOK)
	fileDir := t.TempDir()
	fileCfg := writeConfig(t, fileDir, "@every 1s", map[string]string{"free": free.URL})
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"-config", fileCfg, "-once"}, &stdout, &stderr, env); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(fileDir, "samples.lp"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	old := filepath.Join(dir, "data", "samples.lp") // the file store's default path
	if err := os.MkdirAll(filepath.Dir(old), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(old, data, 0o600); err != nil {
		t.Fatal(err)
	}
	influxConfig(t, dir, url, db, map[string]string{"free": free.URL})
	t.Chdir(dir) // as the issue ran it: relative paths, in the store's folder
	stdout.Reset()
	args := []string{"import", "-config", "lanewatch.yaml", filepath.Join("data", "samples.lp")}
	if err := run(context.Background(), args, &stdout, &stderr, influxEnv); err != nil {
		t.Fatalf("import: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "data/samples.lp: imported ") {
		t.Errorf("import output: %q", stdout.String())
	}
	// InfluxDB holds what the old file holds, as the store reads it.
	src, err := file.Open(old, file.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	want, err := store.ReadProbes(context.Background(), src, store.Between(time.Now().Add(-2*time.Hour), time.Now().Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	if got := influxProbes(t, url, db); len(want) == 0 || len(got) != len(want) {
		t.Errorf("InfluxDB holds %d probes, the old file %d", len(got), len(want))
	}
}
