// Package atomicfile replaces a file so that a reader, or a crash, sees the
// old file or the new one, never a mix: the one atomic writer of the
// commands (policy files, charts, address files).
package atomicfile

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// tempMark is in the name of every temp file Write makes: "."+name+tempMark+random.
const tempMark = ".tmp-"

// Option tunes Write.
type Option func(*options)

type options struct {
	hook     func(stage, tmp string) error
	mkdir    bool
	staleAge time.Duration
}

// MakeDir creates the target's folder (0755) when it does not exist.
func MakeDir() Option { return func(o *options) { o.mkdir = true } }

// Hook runs hook at stage "partial" (half the data written to the temp
// file tmp) and "synced" (before the rename); an error from it aborts the
// write. For tests of a write cut short.
func Hook(hook func(stage, tmp string) error) Option { return func(o *options) { o.hook = hook } }

// RemoveStale removes, before writing, the temp files of the same target
// that are older than age: the leftovers of killed runs. Younger ones may
// belong to a write still in progress.
func RemoveStale(age time.Duration) Option { return func(o *options) { o.staleAge = age } }

// Write replaces path with data (mode 0644): a temp file beside path,
// written and fsynced, renamed over path, then the folder fsynced. On any
// error the temp file is removed and path is untouched. Errors name path.
func Write(path string, data []byte, opts ...Option) error {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return WriteFile(path, func(tmp string) error {
		f, err := os.OpenFile(tmp, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		half := len(data) / 2
		if _, err := f.Write(data[:half]); err != nil {
			return err
		}
		if o.hook != nil {
			if err := o.hook("partial", tmp); err != nil {
				return err
			}
		}
		if _, err := f.Write(data[half:]); err != nil {
			return err
		}
		return f.Close()
	}, opts...)
}

// WriteFile replaces path with the file fill makes: fill gets the path of
// an empty temp file beside path, which it may reopen or open as a store;
// the file is then fsynced (mode 0644), renamed over path and the folder
// fsynced. On any error the temp file is removed and path is untouched.
// Errors name path.
func WriteFile(path string, fill func(tmp string) error, opts ...Option) (err error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	dir, name := filepath.Split(path)
	dir = cmp.Or(dir, ".")
	defer func() {
		if err != nil {
			err = fmt.Errorf("write %s: %w", path, err)
		}
	}()
	if o.mkdir {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	if o.staleAge > 0 {
		removeStale(dir, func(n string) bool { return strings.HasPrefix(n, "."+name+tempMark) }, o.staleAge)
	}
	tmp, err := os.CreateTemp(dir, "."+name+tempMark+"*")
	if err != nil {
		return err
	}
	tmpPath := tmp.Name()
	_ = tmp.Close()
	defer func() {
		if err != nil {
			_ = os.Remove(tmpPath)
		}
	}()
	if err := fill(tmpPath); err != nil {
		return err
	}
	if err := syncFile(tmpPath); err != nil {
		return err
	}
	if o.hook != nil {
		if err := o.hook("synced", tmpPath); err != nil {
			return err
		}
	}
	if err := os.Rename(tmpPath, path); err != nil {
		return err
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("sync folder %s: %w", dir, err)
	}
	return nil
}

// syncFile makes path mode 0644 and fsyncs it.
func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	if err := f.Chmod(0o644); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return f.Close()
}

// syncDir fsyncs a folder so that the rename survives a crash. A platform or
// file system that cannot sync a folder (EINVAL) is not an error.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return nil // the rename happened; nothing to sync with
	}
	defer func() { _ = d.Close() }()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}

// RemoveStaleTemps removes the temp files Write left in dir, for any
// target, that are older than age, and returns how many it removed: for a
// folder that holds nothing but files written by Write. It is best effort:
// a file it cannot remove stays.
func RemoveStaleTemps(dir string, age time.Duration) int {
	return removeStale(dir, isTemp, age)
}

// removeStale removes the regular files of dir whose names match and that
// are older than age.
func removeStale(dir string, match func(name string) bool, age time.Duration) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if !match(e.Name()) || !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if err != nil || time.Since(fi.ModTime()) <= age {
			continue
		}
		if os.Remove(filepath.Join(dir, e.Name())) == nil {
			n++
		}
	}
	return n
}

// isTemp reports whether name (a base name) is one of Write's temp files:
// "."+target+".tmp-"+random.
func isTemp(name string) bool {
	i := strings.LastIndex(name, tempMark)
	return strings.HasPrefix(name, ".") && i > 1 && i+len(tempMark) < len(name)
}
