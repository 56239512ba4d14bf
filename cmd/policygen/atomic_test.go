package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Temp files left in the policy folder by killed runs went only when the
// same hour was written again, so those of other hours stayed for good.
// Every run now removes the stale ones of the folder, whatever their hour,
// and leaves young ones (a run in progress) and other files alone.
func TestRunRemovesStaleTempsOfEveryHour(t *testing.T) {
	fx := newFixture(t, "UTC")
	h := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	fx.seed(t, history(time.UTC, h.Add(10*time.Minute), 1))
	if err := os.MkdirAll(fx.out, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]bool{ // name → removed by the run
		".2026-11-29T03.yaml.tmp-1": true,  // stale, another hour
		".2026-12-01T00.yaml.tmp-2": true,  // stale, a -day run's
		".2026-11-30T15.yaml.tmp-3": false, // young: a run in progress
		"2026-11-29T03.yaml":        false, // an old policy file
	}
	for name := range files {
		p := filepath.Join(fx.out, name)
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if name != ".2026-11-30T15.yaml.tmp-3" {
			past := time.Now().Add(-2 * staleTemp)
			if err := os.Chtimes(p, past, past); err != nil {
				t.Fatal(err)
			}
		}
	}
	runOK(t, &env{}, "", "-config", fx.config, "-hour", "2026-11-30T14")
	for name, removed := range files {
		_, err := os.Stat(filepath.Join(fx.out, name))
		if gone := errors.Is(err, os.ErrNotExist); gone != removed {
			t.Errorf("%s: removed %v, want %v", name, gone, removed)
		}
	}
	if _, err := os.Stat(filepath.Join(fx.out, "2026-11-30T14.yaml")); err != nil {
		t.Errorf("the policy was not written: %v", err)
	}
}
