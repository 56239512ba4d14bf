package atomicfile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func age(t *testing.T, path string, d time.Duration) {
	t.Helper()
	past := time.Now().Add(-d)
	if err := os.Chtimes(path, past, past); err != nil {
		t.Fatal(err)
	}
}

func TestWriteReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.yaml")
	if err := os.WriteFile(path, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("a: 1\n")); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "a: 1\n" {
		t.Fatalf("file holds %q, %v", got, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, %v; want 0644", fi.Mode(), err)
	}
	if n := names(t, dir); !slices.Equal(n, []string{"x.yaml"}) {
		t.Errorf("folder holds %v; want x.yaml alone", n)
	}
	if err := Write(path, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); len(got) != 0 {
		t.Errorf("empty write left %q", got)
	}
}

func TestWriteFolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", "such", "x.yaml")
	err := Write(path, []byte("a\n"))
	if !errors.Is(err, os.ErrNotExist) || strings.Count(err.Error(), path) != 1 {
		t.Fatalf("Write into a missing folder = %v; want ErrNotExist naming %s once", err, path)
	}
	if err := Write(path, []byte("a\n"), MakeDir()); err != nil {
		t.Fatalf("Write with MakeDir: %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "a\n" {
		t.Errorf("file holds %q", got)
	}
}

// A write cut short at either stage leaves the old file and no temp file.
func TestWriteFailureKeepsOldFile(t *testing.T) {
	for _, stage := range []string{"partial", "synced"} {
		t.Run(stage, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "x.yaml")
			old := []byte("old: true\n")
			if err := os.WriteFile(path, old, 0o644); err != nil {
				t.Fatal(err)
			}
			fault := errors.New("disk on fire")
			sawTemp := false
			err := Write(path, []byte("new: true\n"), Hook(func(s, tmp string) error {
				if s != stage {
					return nil
				}
				if filepath.Dir(tmp) != dir || !isTemp(filepath.Base(tmp)) {
					t.Errorf("temp file %s is not a temp file beside %s", tmp, path)
				}
				_, err := os.Stat(tmp)
				sawTemp = err == nil
				return fault
			}))
			if !errors.Is(err, fault) || strings.Count(err.Error(), path) != 1 {
				t.Fatalf("Write = %v; want the hook's error naming %s once", err, path)
			}
			if !sawTemp {
				t.Error("the hook did not see the temp file")
			}
			if now, _ := os.ReadFile(path); !bytes.Equal(now, old) {
				t.Errorf("the old file changed: %q", now)
			}
			if n := names(t, dir); !slices.Equal(n, []string{"x.yaml"}) {
				t.Errorf("folder holds %v; want x.yaml alone (the temp file removed)", n)
			}
		})
	}
	t.Run("rename", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "x.yaml")
		if err := os.MkdirAll(filepath.Join(path, "in-the-way"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := Write(path, []byte("a\n")); err == nil {
			t.Fatal("Write over a folder succeeded")
		}
		if n := names(t, dir); !slices.Equal(n, []string{"x.yaml"}) {
			t.Errorf("folder holds %v; want the temp file removed", n)
		}
	})
}

// RemoveStale removes the target's own leftovers of killed runs, and only
// those old enough not to belong to a write in progress.
func TestRemoveStale(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, ".x.yaml.tmp-1")
	young := filepath.Join(dir, ".x.yaml.tmp-2")
	other := filepath.Join(dir, ".y.yaml.tmp-3")
	for _, p := range []string{stale, young, other} {
		if err := os.WriteFile(p, []byte("in progress"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	age(t, stale, 2*time.Hour)
	age(t, other, 2*time.Hour)
	if err := Write(filepath.Join(dir, "x.yaml"), []byte("a: 1\n"), RemoveStale(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n := names(t, dir); !slices.Equal(n, []string{".x.yaml.tmp-2", ".y.yaml.tmp-3", "x.yaml"}) {
		t.Errorf("folder holds %v; want the stale temp of x.yaml gone, the young one and y.yaml's kept", n)
	}
}

// RemoveStaleTemps removes the stale temp files of every target in the
// folder, and nothing else.
func TestRemoveStaleTemps(t *testing.T) {
	dir := t.TempDir()
	files := map[string]bool{ // name → removed
		".2026-11-29T03.yaml.tmp-123": true,
		".2026-11-30T14.yaml.tmp-9":   true,
		".2026-11-30T15.yaml.tmp-77":  false, // young: a run in progress
		"2026-11-29T03.yaml":          false, // not a temp file
		".tmp-5":                      false, // no target name
		".x.tmp-":                     false, // no random part
		"notes.tmp-1":                 false, // not hidden
	}
	for name := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if name != ".2026-11-30T15.yaml.tmp-77" {
			age(t, p, 3*time.Hour)
		}
	}
	link := filepath.Join(dir, ".l.yaml.tmp-1")
	if err := os.Symlink("2026-11-29T03.yaml", link); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, ".d.yaml.tmp-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if n := RemoveStaleTemps(dir, time.Hour); n != 2 {
		t.Errorf("RemoveStaleTemps removed %d files, want 2", n)
	}
	for name, removed := range files {
		_, err := os.Lstat(filepath.Join(dir, name))
		if gone := errors.Is(err, os.ErrNotExist); gone != removed {
			t.Errorf("%s: removed %v, want %v", name, gone, removed)
		}
	}
	for _, p := range []string{link, filepath.Join(dir, ".d.yaml.tmp-1")} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s (not a regular file) was removed: %v", p, err)
		}
	}
	if n := RemoveStaleTemps(filepath.Join(dir, "missing"), time.Hour); n != 0 {
		t.Errorf("RemoveStaleTemps of a missing folder = %d", n)
	}
}
