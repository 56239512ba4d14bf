package series_test

// Tests for the findings of the reliability review of the store, each
// reproduced on the previous release (before the store was restructured
// into Recorder + Spool). Each test says which old behaviour it catches.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/lanewatch/lanewatch/series"
)

// switchStore is a File store standing in for InfluxDB: a test takes it
// down (every write fails for a passing reason, as a server that cannot be
// reached) or makes it refuse writes for good (a *RefusedError with a
// status, as InfluxDB's 404 for a dropped database). Reads always work.
type switchStore struct {
	*series.File
	mu     sync.Mutex
	mode   string // "up", "down", "refuse"
	status int
}

func newSwitchStore(t *testing.T, mode string, status int) *switchStore {
	t.Helper()
	f, err := series.OpenFile(filepath.Join(t.TempDir(), "inner.lp"), series.FileOptions{})
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

func (s *switchStore) Write(ctx context.Context, ps []series.Probe, hs []series.Hourly) error {
	s.mu.Lock()
	mode, status := s.mode, s.status
	s.mu.Unlock()
	switch mode {
	case "down":
		return errors.New("dial tcp 127.0.0.1:8086: connect: connection refused")
	case "refuse":
		return &series.RefusedError{Points: len(ps) + len(hs), Status: status,
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
		s, err := series.OpenSpool(inner, series.SpoolOptions{Path: spool, DeadLetter: dead, Warn: w.warn})
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
		s, err := series.OpenSpool(inner, series.SpoolOptions{Path: spool, DeadLetter: dead})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ps, hs := round(2, 0)
		err = s.Write(ctx, ps, hs)
		wantKept(t, "Write", err, dead)
		var re *series.RefusedError
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
