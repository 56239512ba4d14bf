//go:build unix

package api

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/policy"
)

// An hour's policy file that is not a regular file is refused at once with
// one line naming it and what it is, by Folder.Read and by the API's
// answer: opening a named pipe without a writer used to block every
// request for that hour for good, and each took a connection of the
// server. A link to a regular file is read as the file.
func TestReadRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	real := testFile("2026-11-30T10", policy.BasisLive, []string{"free"}, true)
	writeFile(t, filepath.Join(dir, "elsewhere"), real)
	link := func(hour, target string) {
		if err := os.Symlink(target, filepath.Join(dir, hour+".yaml")); err != nil {
			t.Fatal(err)
		}
	}
	link("2026-11-30T10", filepath.Join(dir, "elsewhere", "2026-11-30T10.yaml"))
	if err := syscall.Mkfifo(filepath.Join(dir, "2026-11-30T11.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	link("2026-11-30T12", filepath.Join(dir, "2026-11-30T11.yaml"))
	if err := os.Mkdir(filepath.Join(dir, "2026-11-30T13.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	link("2026-11-30T14", "/dev/zero")
	// Unblock an open that would otherwise wait for a writer for ever, so
	// that a failing run ends.
	defer func() {
		if f, err := os.OpenFile(filepath.Join(dir, "2026-11-30T11.yaml"), os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	}()

	d := Folder{Dir: dir}
	srv := httptest.NewServer(Handler(Options{Folder: d, Lanes: testLanes}))
	defer srv.Close()
	client := &http.Client{Timeout: 10 * time.Second}
	for _, c := range []struct{ hour, what string }{
		{"2026-11-30T10", ""},
		{"2026-11-30T11", "a named pipe"},
		{"2026-11-30T12", "a named pipe"},
		{"2026-11-30T13", "a directory"},
		{"2026-11-30T14", "a character device"},
	} {
		t.Run(c.hour, func(t *testing.T) {
			want := "policy file " + d.Path(c.hour) + ": not a regular file (" + c.what + ")"
			done := make(chan error, 1)
			go func() { _, _, err := d.Read(c.hour); done <- err }()
			select {
			case err := <-done:
				switch {
				case c.what == "" && err != nil:
					t.Errorf("Read through a link to a regular file: %v", err)
				case c.what != "" && (err == nil || err.Error() != want):
					t.Errorf("Read: %v\nwant %s", err, want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("Read blocked for 10 s")
			}
			resp, err := client.Get(srv.URL + "/api/v1/policy?hour=" + c.hour)
			if err != nil {
				t.Fatalf("GET /api/v1/policy: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if c.what == "" {
				if resp.StatusCode != http.StatusOK {
					t.Errorf("GET through a link to a regular file: %d %s", resp.StatusCode, body)
				}
				return
			}
			var e struct{ Error, Code string }
			if resp.StatusCode != http.StatusServiceUnavailable || json.Unmarshal(body, &e) != nil ||
				e.Code != "unavailable" || e.Error != want || strings.Count(string(body), "\n") != 1 {
				t.Errorf("GET: %d %s\nwant 503 unavailable %q", resp.StatusCode, body, want)
			}
		})
	}
}
