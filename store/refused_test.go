package store_test

import (
	"errors"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/lanewatch/lanewatch/store"
)

// A Spool's refusal reports the store's HTTP status, as the bare store's
// does, whichever path the refused points took: to the dead-letter file,
// kept in the spool when that file cannot be written, or refused when the
// spool is replayed. (It was 0 on all three.)
func TestSpoolRefusalKeepsTheStatus(t *testing.T) {
	for _, c := range []struct {
		name   string
		status int
		run    func(t *testing.T, inner *switchStore, dir string) error
	}{
		{"a write to the dead-letter file", http.StatusNotFound, func(t *testing.T, inner *switchStore, dir string) error {
			s := openSwitchSpool(t, inner, dir, filepath.Join(dir, "dead.lp"))
			ps, hs := round(2, 0)
			return s.Write(ctx, ps, hs)
		}},
		{"a write kept in the spool (dead-letter file on a full disk)", http.StatusForbidden, func(t *testing.T, inner *switchStore, dir string) error {
			s := openSwitchSpool(t, inner, dir, fullDisk(t, dir))
			ps, hs := round(2, 0)
			return s.Write(ctx, ps, hs)
		}},
		{"a replay", http.StatusBadRequest, func(t *testing.T, inner *switchStore, dir string) error {
			status := inner.status
			inner.set("down", 0)
			s := openSwitchSpool(t, inner, dir, filepath.Join(dir, "dead.lp"))
			ps, hs := round(2, 0)
			if err := s.Write(ctx, ps, hs); err != nil || s.SpoolDepth() == 0 {
				t.Fatalf("Write while down = %v, depth %d; want it spooled", err, s.SpoolDepth())
			}
			inner.set("refuse", status)
			return s.Drain(ctx)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			inner := newSwitchStore(t, "refuse", c.status)
			err := c.run(t, inner, t.TempDir())
			var re *store.RefusedError
			if !errors.As(err, &re) || re.Status != c.status {
				t.Fatalf("err = %v (%#v); want a *RefusedError with status %d", err, re, c.status)
			}
		})
	}
}

func openSwitchSpool(t *testing.T, inner *switchStore, dir, dead string) *store.Spool {
	t.Helper()
	s, err := store.OpenSpool(inner, store.SpoolOptions{Path: filepath.Join(dir, "spool.lp"), DeadLetter: dead})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
