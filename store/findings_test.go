package store_test

// Tests for the findings of the reliability review of the store, each
// reproduced on the previous release (before the store was restructured
// into Recorder + Spool). Each test says which old behaviour it catches.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/internal/influxtest"
	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/policy/load"
	"github.com/lanewatch/lanewatch/store"
)

// switchStore is a File store standing in for InfluxDB: a test takes it
// down (every write fails for a passing reason, as a server that cannot be
// reached) or makes it refuse writes for good (a *RefusedError with a
// status, as InfluxDB's 404 for a dropped database). Reads always work.
type switchStore struct {
	*store.File
	mu     sync.Mutex
	mode   string // "up", "down", "refuse"
	status int
}

func newSwitchStore(t *testing.T, mode string, status int) *switchStore {
	t.Helper()
	f, err := store.OpenFile(filepath.Join(t.TempDir(), "inner.lp"), store.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return &switchStore{File: f, mode: mode, status: status}
}

func (s *switchStore) set(mode string, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mode, s.status = mode, status
}

func (s *switchStore) Write(ctx context.Context, ps []store.Probe, hs []store.Hourly) error {
	s.mu.Lock()
	mode, status := s.mode, s.status
	s.mu.Unlock()
	switch mode {
	case "down":
		return errors.New("dial tcp 127.0.0.1:8086: connect: connection refused")
	case "refuse":
		return &store.RefusedError{Points: len(ps) + len(hs), Status: status,
			Err: fmt.Errorf("%d: database not found", status)}
	}
	return s.File.Write(ctx, ps, hs)
}

// Close leaves the File to the test's cleanup, so that a test can read it
// after the spool around it is closed.
func (s *switchStore) Close() error { return nil }

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fullDisk returns a path whose writes fail with ENOSPC, as on a full disk:
// a symlink to /dev/full.
func fullDisk(t *testing.T, dir string) string {
	t.Helper()
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full:", err)
	}
	p := filepath.Join(dir, "dead-letter.lp")
	if err := os.Symlink("/dev/full", p); err != nil {
		t.Fatal(err)
	}
	return p
}

// wantKept checks the one-line error of points kept in the spool because
// the dead-letter file is on a full disk: it says they were kept and names
// the dead-letter file and the cause once each.
func wantKept(t *testing.T, what string, err error, dead string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s = nil; want an error saying the points were kept in the spool", what)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "kept") || strings.Contains(msg, "lost") ||
		strings.Count(msg, dead) != 1 || strings.Count(msg, "no space left on device") != 1 {
		t.Errorf("%s = %q; want one line saying the points were kept, naming %s and %q once each",
			what, msg, dead, "no space left on device")
	}
}

// Finding 1: the dead-letter file is on a full disk and the server then
// refuses the points (404). The previous release logged "dead-letter …: no
// space left on device; points lost" and emptied the spool: the points were
// on disk and were deleted, and its error repeated the path ("write X:
// write X: no space left on device"). The spool must be kept.
func TestFindingDeadLetterOnFullDiskKeepsSpool(t *testing.T) {
	t.Run("spooled points refused at replay", func(t *testing.T) {
		dir := t.TempDir()
		spool, dead := filepath.Join(dir, "spool.lp"), fullDisk(t, dir)
		inner := newSwitchStore(t, "down", 0)
		var w warnings
		s, err := store.OpenSpool(inner, store.SpoolOptions{Path: spool, DeadLetter: dead, Warn: w.warn})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ps0, hs0 := round(2, 0)
		if err := s.Write(ctx, ps0, hs0); err != nil || s.SpoolDepth() != 4 {
			t.Fatalf("Write while down = %v, depth %d; want nil, 4 spooled", err, s.SpoolDepth())
		}
		before := readFile(t, spool)

		inner.set("refuse", http.StatusNotFound)
		wantKept(t, "Drain", s.Drain(ctx), dead)
		if got := readFile(t, spool); got != before || s.SpoolDepth() != 4 {
			t.Fatalf("spool after the failed replay (depth %d):\n%s\nwant it kept as it was:\n%s", s.SpoolDepth(), got, before)
		}

		// A round written now queues behind them, and the caller hears of it.
		ps1, hs1 := round(2, 1)
		wantKept(t, "Write", s.Write(ctx, ps1, hs1), dead)
		if got := readFile(t, spool); !strings.HasPrefix(got, before) || countLines(t, spool) != 8 || s.SpoolDepth() != 8 {
			t.Fatalf("spool after the second round: depth %d, %d lines; want both rounds (8)", s.SpoolDepth(), countLines(t, spool))
		}

		// Once the server takes them, nothing was lost.
		inner.set("up", 0)
		if err := s.Drain(ctx); err != nil || s.SpoolDepth() != 0 {
			t.Fatalf("Drain with the server up = %v, depth %d", err, s.SpoolDepth())
		}
		wantRead(t, "the server after the fix", inner.File, sortProbes(append(ps0, ps1...)), hs1)
	})

	t.Run("new points refused", func(t *testing.T) {
		dir := t.TempDir()
		spool, dead := filepath.Join(dir, "spool.lp"), fullDisk(t, dir)
		inner := newSwitchStore(t, "refuse", http.StatusNotFound)
		s, err := store.OpenSpool(inner, store.SpoolOptions{Path: spool, DeadLetter: dead})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ps, hs := round(2, 0)
		err = s.Write(ctx, ps, hs)
		wantKept(t, "Write", err, dead)
		var re *store.RefusedError
		if !errors.As(err, &re) || re.DeadLetter != "" || !strings.Contains(err.Error(), spool) {
			t.Errorf("Write = %v; want a refusal that names the spool, not a dead-letter file", err)
		}
		if countLines(t, spool) != 4 || s.SpoolDepth() != 4 {
			t.Fatalf("spool holds %d lines, depth %d; want the 4 refused points", countLines(t, spool), s.SpoolDepth())
		}
		inner.set("up", 0)
		if err := s.Drain(ctx); err != nil {
			t.Fatal(err)
		}
		wantRead(t, "the server after the fix", inner.File, ps, hs)
	})
}

// Finding 2: policygen, swings, -day and import could not run beside a
// sampler on InfluxDB: the previous release's read-only open took the
// spool's writer lock ("spool … is in use by another writer"; as another
// user, "permission denied" creating the lock). A read-only open takes no
// lock and creates nothing; its reads merge the spooled points.
func TestFindingReadOnlySpoolBesideWriter(t *testing.T) {
	dir := t.TempDir()
	spool := filepath.Join(dir, "spool.lp")
	inner := newSwitchStore(t, "up", 0)
	ps0, hs0 := round(2, 0)
	if err := inner.Write(ctx, ps0, hs0); err != nil {
		t.Fatal(err)
	}
	writer, err := store.OpenSpool(inner, store.SpoolOptions{Path: spool})
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	inner.set("down", 0)
	ps1, hs1 := round(2, 1)
	if err := writer.Write(ctx, ps1, hs1); err != nil || writer.SpoolDepth() != 4 {
		t.Fatalf("Write while down = %v, depth %d", err, writer.SpoolDepth())
	}

	var w warnings
	reader, err := store.OpenSpool(inner, store.SpoolOptions{Path: spool, ReadOnly: true, Warn: w.warn})
	if err != nil {
		t.Fatalf("read-only open beside the writer: %v", err)
	}
	defer reader.Close()
	wantRead(t, "read-only spool beside the writer", reader, sortProbes(append(ps0, ps1...)), hs1)
	latest, err := store.Latest(ctx, reader, store.Between(hour0, hour0.Add(time.Hour)))
	if err != nil || len(latest) != 2 || !latest[0].Time.Equal(ps1[0].Time) {
		t.Errorf("Latest = %+v, %v; want the spooled round's probes", latest, err)
	}
	if err := reader.Write(ctx, ps1, nil); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("Write on a read-only spool = %v; want a read-only error", err)
	}
	if w.count() > 0 {
		t.Errorf("warnings: %s", w.all())
	}

	t.Run("creates no lock", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "spool.lp")
		if err := os.WriteFile(path, []byte(readFile(t, spool)), 0o644); err != nil {
			t.Fatal(err)
		}
		missing := filepath.Join(dir, "none", "spool.lp")
		for _, p := range []string{path, missing} {
			r, err := store.OpenSpool(inner, store.SpoolOptions{Path: p, ReadOnly: true})
			if err != nil {
				t.Fatalf("read-only open of %s: %v", p, err)
			}
			if _, err := r.Probes(ctx, store.Between(hour0, hour0.Add(time.Hour))); err != nil {
				t.Fatal(err)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) != 1 || entries[0].Name() != "spool.lp" {
			t.Errorf("folder after read-only opens holds %v; want spool.lp alone (no .lock, nothing created)", entries)
		}
	})
}

// Finding 2, the other user: a spool the reader cannot open. Tests run as
// root here, where chmod does not stop a read, so the unreadable spool is
// made another way (a folder in its place; a path under a file): the read
// warns once and returns what the server holds instead of failing.
func TestFindingReadOnlySpoolUnreadable(t *testing.T) {
	inner := newSwitchStore(t, "up", 0)
	ps, hs := round(2, 0)
	if err := inner.Write(ctx, ps, hs); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		path func(dir string) string
	}{
		{"a folder in its place", func(dir string) string {
			p := filepath.Join(dir, "spool.lp")
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			return p
		}},
		{"a path under a file", func(dir string) string {
			f := filepath.Join(dir, "data")
			if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(f, "spool.lp")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := c.path(t.TempDir())
			var w warnings
			r, err := store.OpenSpool(inner, store.SpoolOptions{Path: path, ReadOnly: true, Warn: w.warn})
			if err != nil {
				t.Fatalf("read-only open: %v", err)
			}
			defer r.Close()
			wantRead(t, "unreadable spool", r, ps, hs)
			if _, err := store.Latest(ctx, r, store.Between(hour0, hour0.Add(time.Hour))); err != nil {
				t.Errorf("Latest: %v", err)
			}
			if w.count() != 1 || !strings.Contains(w.all(), path) || strings.Count(w.all(), path) != 1 {
				t.Errorf("warnings over three reads: %q; want one naming %s once", w.all(), path)
			}
		})
	}
}

// Finding 3: a symlink to the store file got its own lock in the previous
// release, so two daemons wrote one file. OpenFile locks the resolved path:
// the second open fails, naming the lock, whichever name each one used.
func TestFindingSymlinkedStoreSharesTheLock(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(real, "samples.lp")
	fileLink := filepath.Join(dir, "link.lp")
	dirLink := filepath.Join(dir, "linkdir")
	for link, to := range map[string]string{fileLink: target, dirLink: real} {
		if err := os.Symlink(to, link); err != nil {
			t.Fatal(err)
		}
	}
	lock := target + ".lock"
	for _, c := range []struct {
		name          string
		first, second string
		create        bool // the target exists before the first open
	}{
		{"link to a file not created yet, then the real path", fileLink, target, false},
		{"real path, then a link to it", target, fileLink, true},
		{"link to the file, then the real path", fileLink, target, true},
		{"symlinked folder, then the real folder", filepath.Join(dirLink, "samples.lp"), target, true},
		{"real folder, then a symlinked one", target, filepath.Join(dirLink, "samples.lp"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_ = os.Remove(target)
			if c.create {
				if err := os.WriteFile(target, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			w1, err := store.OpenFile(c.first, store.FileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer w1.Close()
			if w1.Path() != target {
				t.Errorf("Path() = %s, want the resolved %s", w1.Path(), target)
			}
			w2, err := store.OpenFile(c.second, store.FileOptions{})
			if err == nil {
				_ = w2.Close()
				t.Fatalf("a second writer opened %s while %s is open: two daemons would append to one file", c.second, c.first)
			}
			if !strings.Contains(err.Error(), lock) || !strings.Contains(err.Error(), "in use") {
				t.Errorf("second OpenFile = %v; want an in-use error naming %s", err, lock)
			}
			if fi, err := os.Lstat(fileLink); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("the link was replaced: %v %v", fi, err)
			}
		})
	}
}

// Finding 3: a store file moved away (or deleted, or replaced) while the
// daemon runs was written to silently in the previous release, while
// policygen said "no such file" and /healthz said ok. Write now refuses with
// ErrMoved and writes nothing to the file that moved.
func TestFindingStoreFileMovedWhileOpen(t *testing.T) {
	for _, c := range []struct {
		name string
		do   func(path, aside string) error
	}{
		{"moved", func(path, aside string) error { return os.Rename(path, aside) }},
		{"deleted", func(path, aside string) error {
			if err := os.Link(path, aside); err != nil { // keep a name to check it is not written
				return err
			}
			return os.Remove(path)
		}},
		{"replaced", func(path, aside string) error {
			if err := os.Rename(path, aside); err != nil {
				return err
			}
			return os.WriteFile(path, nil, 0o644)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path, aside := filepath.Join(dir, "samples.lp"), filepath.Join(dir, "aside.lp")
			s, err := store.OpenFile(path, store.FileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.Write(ctx, []store.Probe{probeAt("a", 0, 1)}, nil); err != nil {
				t.Fatal(err)
			}
			before := readFile(t, path)
			if err := c.do(path, aside); err != nil {
				t.Fatal(err)
			}
			err = s.Write(ctx, []store.Probe{probeAt("a", time.Minute, 2)}, nil)
			if !errors.Is(err, store.ErrMoved) || !strings.Contains(err.Error(), path) {
				t.Fatalf("Write after the file was %s = %v; want ErrMoved naming %s", c.name, err, path)
			}
			if got := readFile(t, aside); got != before {
				t.Errorf("the %s file was written to:\n%s", c.name, got)
			}
			if b, err := os.ReadFile(path); err == nil && len(b) != 0 {
				t.Errorf("the new file at the path was written to:\n%s", b)
			}
			if _, err := s.Probes(ctx, store.Between(hour0, hour0.Add(time.Hour))); !errors.Is(err, store.ErrMoved) {
				t.Errorf("Probes after the file was %s = %v; want ErrMoved", c.name, err)
			}
		})
	}
}

// markerInflux is a fake InfluxDB that answers queries with no rows and
// accepts every write (204, body recorded) unless the body holds marker:
// then it answers 400, as InfluxDB 1.8 does for a batch with one bad point
// (a partial write).
type markerInflux struct {
	marker string
	mu     sync.Mutex
	bodies []string
}

func (f *markerInflux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/api/v2/query":
		w.Header().Set("Content-Type", "text/csv")
	case "/query": // InfluxQL: no rows
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"results":[{"statement_id":0}]}`)
	case "/api/v2/write":
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), f.marker) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"code":"invalid","message":"partial write: field type conflict: input field \"queue_s\" on measurement \"probe\" is type string, already exists as type float dropped=1"}`)
			return
		}
		f.mu.Lock()
		f.bodies = append(f.bodies, string(body))
		f.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	default:
		http.NotFound(w, r)
	}
}

func (f *markerInflux) written() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.bodies, "\n")
}

// Finding 4: the previous release sent a spool line of a foreign
// measurement to InfluxDB, logged "spool replayed" for points then refused,
// warned about each corrupt line once per read and again at the replay,
// and sent a whole partially written batch, accepted points included, to
// the dead-letter file.
func TestFindingSpoolBadLines(t *testing.T) {
	fake := &markerInflux{marker: "lane=poison"}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	dir := t.TempDir()
	spool, dead := filepath.Join(dir, "spool.lp"), filepath.Join(dir, "dead.lp")
	ns := hour0.UnixNano()
	good := fmt.Sprintf(`probe,kind=free,lane=good queue_s=1,gen_s=1,headers_s=0.5,tokens=4i,ok=true,outcome="ok",status=200i %d`, ns)
	poison := fmt.Sprintf(`probe,kind=free,lane=poison queue_s=2,gen_s=1,headers_s=0.5,tokens=4i,ok=true,outcome="ok",status=200i %d`, ns)
	foreign := "cpu,host=a usage=1 1"
	corrupt := fmt.Sprintf(`probe,kind=free,lane=bad queue_s="oops" %d`, ns+1)
	content := strings.Join([]string{good, foreign, poison, corrupt}, "\n") + "\n"
	if err := os.WriteFile(spool, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	var w warnings
	s := openSpooled(t, srv.URL, store.InfluxOptions{Bucket: "b", Warn: w.warn},
		store.SpoolOptions{Path: spool, DeadLetter: dead, Warn: w.warn})
	if w.count() != 1 || !strings.Contains(w.all(), "earlier run") {
		t.Errorf("open warnings %q; want one about the waiting lines", w.all())
	}

	// Reads merge the good lines and say nothing about the bad ones: the
	// replay reports them.
	for range 2 {
		ps, err := s.Probes(ctx, store.Between(hour0, hour0.Add(time.Hour)))
		if err != nil || len(ps) != 2 || ps[0].Lane != "good" || ps[1].Lane != "poison" {
			t.Fatalf("Probes before the replay = %+v, %v; want good and poison", ps, err)
		}
		if _, err := s.Hourly(ctx, store.Between(hour0, hour0.Add(time.Hour))); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Latest(ctx, s, store.Between(hour0, hour0.Add(time.Hour))); err != nil {
			t.Fatal(err)
		}
	}
	if w.count() != 1 {
		t.Errorf("reads warned: %s", w.all())
	}

	ps, hs := round(2, 0)
	err := s.Write(ctx, ps, hs)
	var re *store.RefusedError
	if !errors.As(err, &re) || re.Points != 3 || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Write = %v; want a one-line refusal of 3 spooled lines (poison, foreign, corrupt)", err)
	}
	got := fake.written()
	for _, bad := range []string{"cpu,", "lane=bad", "lane=poison"} {
		if strings.Contains(got, bad) {
			t.Errorf("the server was sent %q:\n%s", bad, got)
		}
	}
	if !strings.Contains(got, "lane=good") || strings.Count(got, "lane=lane0") != 4 {
		t.Errorf("the server got\n%s\nwant the good spooled probe and the new round", got)
	}
	deadLines := strings.Split(strings.TrimSuffix(readFile(t, dead), "\n"), "\n")
	if len(deadLines) != 3 || !slices.Contains(deadLines, foreign) || !slices.Contains(deadLines, corrupt) ||
		!slices.ContainsFunc(deadLines, func(l string) bool { return strings.HasPrefix(l, "probe,kind=free,lane=poison queue_s=2,") }) {
		t.Errorf("dead-letter file holds\n%s\nwant the foreign, corrupt and poison lines and nothing else", strings.Join(deadLines, "\n"))
	}
	if countLines(t, spool) != 0 || s.SpoolDepth() != 0 {
		t.Errorf("spool not emptied: %d lines, depth %d", countLines(t, spool), s.SpoolDepth())
	}

	msgs := strings.Split(w.all(), "\n")
	if len(msgs) != 2 {
		t.Fatalf("warnings over open, reads and replay:\n%s\nwant two: the waiting lines, the replay's summary", w.all())
	}
	summary := msgs[1]
	for _, want := range []string{"stored=1", "refused=1", "not_lanewatch_lines=2", dead} {
		if !strings.Contains(summary, want) {
			t.Errorf("replay summary %q lacks %q", summary, want)
		}
	}
	if strings.Contains(summary, "replayed") {
		t.Errorf("replay summary %q says the refused points were replayed", summary)
	}
	if n := strings.Count(w.all(), "not_lanewatch"); n != 1 {
		t.Errorf("the bad lines are reported %d times:\n%s", n, w.all())
	}

	t.Run("partial write of new points", func(t *testing.T) {
		before := fake.written()
		dead2 := filepath.Join(t.TempDir(), "dead.lp")
		s := openSpooled(t, srv.URL, store.InfluxOptions{Bucket: "b"},
			store.SpoolOptions{Path: filepath.Join(t.TempDir(), "spool.lp"), DeadLetter: dead2})
		var ps []store.Probe
		for i := range 7 {
			ps = append(ps, probeAt(fmt.Sprint("lane", i), time.Duration(i)*time.Second, float64(i)))
		}
		ps[4].Lane = "poison"
		_, hs := round(3, 0)
		err := s.Write(ctx, ps, hs)
		if !errors.As(err, &re) || re.Points != 1 || re.DeadLetter != dead2 {
			t.Fatalf("Write = %v; want a refusal of the one poison point", err)
		}
		lines := strings.Split(strings.TrimSuffix(readFile(t, dead2), "\n"), "\n")
		if len(lines) != 1 || !strings.Contains(lines[0], "lane=poison") {
			t.Errorf("dead-letter file holds %q; want the poison point alone", lines)
		}
		sent := strings.TrimPrefix(fake.written(), before)
		for i, p := range ps {
			if i != 4 && !strings.Contains(sent, "lane="+p.Lane+" ") {
				t.Errorf("accepted point %s was not stored", p.Lane)
			}
		}
		if strings.Count(sent, "queue_hourly") != 3 {
			t.Errorf("the server got %d hourly points, want 3:\n%s", strings.Count(sent, "queue_hourly"), sent)
		}
	})
}

// Finding 4: errors repeated their prefix in the previous release ("spool
// X: X is in use …", "read X: open X: …"): each names the file once.
func TestFindingErrorsNameTheFileOnce(t *testing.T) {
	dir := t.TempDir()
	spool := filepath.Join(dir, "spool.lp")
	inner := newSwitchStore(t, "up", 0)
	s1, err := store.OpenSpool(inner, store.SpoolOptions{Path: spool})
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	_, err = store.OpenSpool(inner, store.SpoolOptions{Path: spool})
	if err == nil || strings.Count(err.Error(), spool) != 2 || !strings.Contains(err.Error(), spool+".lock") {
		t.Errorf("second writer on one spool = %v; want the spool and its lock named once each", err)
	}

	path := filepath.Join(dir, "samples.lp")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := store.OpenFile(path, store.FileOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	_, err = r.Probes(ctx, store.Between(hour0, hour0.Add(time.Hour)))
	if err == nil || strings.Count(err.Error(), path) != 1 || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("read of a removed file = %v; want %s named once, and fs.ErrNotExist", err, path)
	}
}

// Finding 5: a lane whose kind changed mid-hour kept a stale record of the
// old kind in the previous release (see TestKindChangeMidHour). Through the
// policy: the stale record (paid, one ok probe) sorted after the new one
// (free, the timeout) and won, so the lane read eligible. It must read
// probe_failed.
func TestFindingKindChangeThroughPolicy(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.Parse(strings.NewReader("timezone: UTC\nstore: {kind: file, path: s.lp}\nlanes:\n"+
		"  - {name: x, kind: free, api: openai, base_url: \"http://127.0.0.1:1/v1\", model: m}\n"), dir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := store.OpenFile(cfg.Store.Path, store.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rec := store.NewRecorder(f, cfg.Location)
	for _, p := range []store.Probe{
		{Lane: "x", Kind: policy.KindPaid, Time: hour0.Add(7 * time.Minute), QueueS: 1, GenS: 1, Tokens: 8, OK: true, Outcome: "ok", Status: 200},
		{Lane: "x", Kind: policy.KindFree, Time: hour0.Add(27 * time.Minute), QueueS: 30, Outcome: "timeout"},
	} {
		if _, err := rec.Record(ctx, []store.Probe{p}); err != nil {
			t.Fatal(err)
		}
	}
	pf, _, err := load.ForHour(ctx, f, cfg.PolicyParams(), hour0.Add(40*time.Minute), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(pf.Lanes) != 1 || pf.Lanes[0].Eligible || pf.Lanes[0].Reason != policy.ReasonProbeFailed {
		t.Fatalf("policy lanes %+v; want x probe_failed (the timeout after the kind change)", pf.Lanes)
	}
}

// Finding 6: in the previous release the rounds InfluxDB refused never
// entered the hourly total, and importing their dead letters copied their
// older hourly lines over the newer ones (samples 9 → 5): after the import
// the hour counted 28 samples against 31 probes. Through a Spool on a real
// InfluxDB: the hour's record is the aggregate of every probe, refused
// ones included once imported.
func TestFindingImportedDeadLettersEnterTheHour(t *testing.T) {
	base := influxtest.URL(t)
	db := influxtest.NewDB(t, base)
	g := newGate(t, base)
	dir := t.TempDir()
	dead := filepath.Join(dir, "dead-letter.lp")
	s, err := openSpool(store.InfluxOptions{URL: g.server.URL, Bucket: db + "/autogen", RequestTimeout: 5 * time.Second},
		store.SpoolOptions{Path: filepath.Join(dir, "spool.lp"), DeadLetter: dead, AfterReplay: store.RebuildAfterReplay(time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec := store.NewRecorder(s, time.UTC)
	var all []store.Probe
	record := func(i int, refused bool) {
		t.Helper()
		var ps []store.Probe
		for _, lane := range []string{"a", "b"} {
			p := probeAt(lane, time.Duration(i)*2*time.Minute, float64(i%7)/100)
			if i%5 == 4 {
				p.OK, p.Outcome, p.Status = false, "timeout", 0
			}
			ps = append(ps, p)
		}
		all = append(all, ps...)
		_, err := rec.Record(ctx, ps)
		var re *store.RefusedError
		if refused && (!errors.As(err, &re) || re.DeadLetter != dead) || !refused && err != nil {
			t.Fatalf("round %d (refused %v): Record = %v", i, refused, err)
		}
	}
	g.set("refuse")
	for i := range 9 {
		record(i, true)
	}
	g.set("up")
	for i := 9; i < 28; i++ {
		record(i, false)
	}
	f, err := os.Open(dead)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := store.Import(ctx, rec, f, failOnWarn(t))
	if err != nil || res.Probes != 18 || res.Skipped != 18 {
		t.Fatalf("Import = %+v, %v; want the 18 refused probes, their 18 hourly lines skipped", res, err)
	}
	hs, err := s.Hourly(ctx, store.Between(hour0, hour0.Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	want := store.Rollup(sortProbes(all), time.UTC)
	if !slices.Equal(hs, want) || len(hs) != 2 || hs[0].Samples != 28 {
		t.Errorf("hourly after the import:\n %+v\nwant the aggregate of all 28 probes per lane:\n %+v", hs, want)
	}
	bad, err := store.Check(ctx, s, time.UTC, store.Window{From: hour0, To: hour0.Add(time.Hour)}, nil)
	if err != nil || len(bad) != 0 {
		t.Errorf("Check = %v, %v; want no mismatch", bad, err)
	}
}
