package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// staleTemp is how old a leftover temp file of a killed run must be before a
// later write of the same file removes it (younger ones may belong to a run
// still in progress).
const staleTemp = time.Hour

// writeAtomic replaces path with data so that a reader (or a crash) sees the
// old file or the new one, never a mix: a temp file in the same folder,
// written and fsynced, renamed over path, then the folder fsynced. hook, if
// set, runs at stage "partial" (half written) and "synced" (before the
// rename); an error from it aborts the write. On any error the temp file is
// removed and path is untouched.
func writeAtomic(path string, data []byte, hook func(stage, tmp string) error) (err error) {
	dir, name := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	removeStaleTemps(dir, name)
	tmp, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
			err = fmt.Errorf("write %s: %w", path, err)
		}
	}()
	half := len(data) / 2
	if _, err := tmp.Write(data[:half]); err != nil {
		return err
	}
	if hook != nil {
		if err := hook("partial", tmp.Name()); err != nil {
			return err
		}
	}
	if _, err := tmp.Write(data[half:]); err != nil {
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if hook != nil {
		if err := hook("synced", tmp.Name()); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		err = d.Sync()
		_ = d.Close()
		if err != nil && !errors.Is(err, os.ErrInvalid) {
			return fmt.Errorf("sync folder %s: %w", dir, err)
		}
	}
	return nil
}

// removeStaleTemps removes temp files of name left by killed runs.
func removeStaleTemps(dir, name string) {
	matches, _ := filepath.Glob(filepath.Join(dir, "."+name+".tmp-*"))
	for _, m := range matches {
		if fi, err := os.Lstat(m); err == nil && fi.Mode().IsRegular() && time.Since(fi.ModTime()) > staleTemp {
			_ = os.Remove(m)
		}
	}
}
