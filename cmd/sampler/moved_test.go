package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A store file moved away while the daemon runs: the previous release kept
// appending to the moved file while /healthz said ok. The next round is not
// stored, the moved file is left as it was, and /healthz turns 503 naming
// the file and what happened to it.
func TestStoreFileMovedTurnsUnhealthy(t *testing.T) {
	d, addr, dir := servingDaemon(t)
	health := func() (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if _, err := d.round(context.Background(), false, false); err != nil {
		t.Fatal(err)
	}
	if code, body := health(); code != http.StatusOK {
		t.Fatalf("/healthz after a stored round = %d %q", code, body)
	}

	path, err := filepath.EvalSymlinks(filepath.Join(dir, "samples.lp"))
	if err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(dir, "moved.lp")
	if err := os.Rename(path, moved); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(moved)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.round(context.Background(), false, false); err == nil {
		t.Fatal("a round after the store file moved was reported stored")
	}
	if after, _ := os.ReadFile(moved); !bytes.Equal(after, before) {
		t.Errorf("the moved file was written to:\n%s", after)
	}
	code, body := health()
	if code != http.StatusServiceUnavailable || !strings.Contains(body, path) || !strings.Contains(body, "moved") {
		t.Errorf("/healthz after the store file moved = %d %q; want 503 naming %s and that it moved", code, body, path)
	}
}
