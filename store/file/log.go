package file

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

// ErrMoved is returned (wrapped) by a write when the path no longer names
// the file the writer opened.
var ErrMoved = errors.New("store file was moved, deleted or replaced while open")

// ErrNotRegular marks (errors.Is) a path that names no regular file.
var ErrNotRegular = errors.New("not a regular file")

// notRegularError is an ErrNotRegular about one path.
type notRegularError struct {
	path   string // "" when the caller names the file
	target string // what path links to, when it is a link
	mode   fs.FileMode
}

func (e *notRegularError) Error() string {
	what := "mode " + e.mode.String()
	switch m := e.mode; {
	case m&fs.ModeDir != 0:
		what = "a directory"
	case m&fs.ModeCharDevice != 0:
		what = "a character device"
	case m&fs.ModeDevice != 0:
		what = "a device"
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	}
	if e.target != "" {
		what = "a link to " + e.target + ", " + what
	}
	msg := fmt.Sprintf("%v (%s)", ErrNotRegular, what)
	if e.path != "" {
		msg = e.path + ": " + msg
	}
	return msg
}

func (e *notRegularError) Is(target error) bool { return target == ErrNotRegular }

// CheckRegular fails with an ErrNotRegular naming path when path (links
// followed) exists and is not a regular file.
func CheckRegular(path string) error {
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().IsRegular() {
		return nil
	}
	e := &notRegularError{path: path, mode: fi.Mode().Type()}
	if li, err := os.Lstat(path); err == nil && li.Mode()&fs.ModeSymlink != 0 {
		e.target, _ = filepath.EvalSymlinks(path)
	}
	return e
}

// regular fails with an ErrNotRegular naming path unless f is a regular file.
func regular(f *os.File, path string) error {
	fi, err := f.Stat()
	if err != nil || fi.Mode().IsRegular() {
		return nil
	}
	return &notRegularError{path: path, mode: fi.Mode().Type()}
}

// OpenImport opens a regular file to Import.
func OpenImport(path string) (*os.File, error) { return openRegular(path, os.O_RDONLY, path) }

// openRegular opens path (os.OpenFile's flag) when it names a regular
// file, links followed; its errors name the file as name ("": not at all).
func openRegular(path string, flag int, name string) (*os.File, error) {
	if err := CheckRegular(path); err != nil {
		if e := (*notRegularError)(nil); name == "" && errors.As(err, &e) {
			e.path, e.target = "", ""
		}
		return nil, err
	}
	f, err := os.OpenFile(path, flag, 0o644)
	if err == nil {
		if err = regular(f, name); err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	return f, err
}

// Log is a file one process appends to, holding path+".lock" until Close.
type Log struct {
	path string
	f    *os.File
	lock *os.File
	warn func(string, ...any)
}

// OpenLog opens the file at path (resolved; made if need be) for
// appending, or fails naming the holder of its lock. Without sink (a file
// only appended to, taken as named) it must be a regular file. A torn last
// line is cut off with a warning.
func OpenLog(path string, sink bool, warn func(string, ...any)) (*Log, error) {
	if !sink {
		if err := CheckRegular(path); err != nil {
			return nil, err
		}
		var err error
		if path, err = Resolve(path); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := lockExclusiveNB(lock); err != nil {
		defer lock.Close()
		if errors.Is(err, errLocked) {
			b, _ := io.ReadAll(io.LimitReader(lock, 200))
			holder := strings.TrimSpace(strings.ToValidUTF8(string(b), "?"))
			return nil, fmt.Errorf("%s is in use by another sampler (%s; lock %s): sampler probe -lane NAME, with the same -config, probes beside it",
				path, cmp.Or(holder, "holder unknown"), path+".lock")
		}
		return nil, fmt.Errorf("lock %s: %w", path+".lock", err)
	}
	host, _ := os.Hostname()
	_ = lock.Truncate(0)
	_, _ = fmt.Fprintf(lock, "pid %d on host %s since %s\n", os.Getpid(), host, time.Now().UTC().Format(time.RFC3339))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err == nil && !sink {
		err = regular(f, path)
	}
	if err != nil {
		if f != nil {
			_ = f.Close()
		}
		_ = lock.Close()
		return nil, err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil { // fsync the folder, best effort
		_ = d.Sync()
		_ = d.Close()
	}
	l := &Log{path: path, f: f, lock: lock, warn: warn}
	if err := l.repairTail(); err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("%s: %w", path, unpath(err))
	}
	return l, nil
}

// Path is the file's resolved path.
func (l *Log) Path() string { return l.path }

// repairTail truncates the file after its last newline: the tail is a
// write never acknowledged.
func (l *Log) repairTail() error {
	if err := lockExclusive(l.f); err != nil {
		return err
	}
	defer func() { _ = unlock(l.f) }()
	fi, err := l.f.Stat()
	if err != nil || fi.Size() == 0 {
		return err
	}
	size := fi.Size()
	buf := make([]byte, 256<<10)
	cut := int64(-1) // after the last newline
	for end := size; end > 0 && cut < 0; end -= int64(len(buf)) {
		b := buf[:min(end, int64(len(buf)))]
		if _, err := l.f.ReadAt(b, end-int64(len(b))); err != nil {
			return err
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			cut = end - int64(len(b)) + int64(i) + 1
		}
	}
	if cut = max(cut, 0); cut == size {
		return nil
	}
	var lines int64 // before the cut
	count := func(n int64) { lines = n }
	if err := store.ScanLines(context.Background(), io.NewSectionReader(l.f, 0, cut), func(n int64, _ []byte, _ bool) error { count(n); return nil }, count); err != nil {
		return err
	}
	if err := l.f.Truncate(cut); err != nil {
		return err
	}
	if err := l.f.Sync(); err != nil {
		return err
	}
	l.warn("removed torn last line (a write cut short by a crash)", "path", l.path, "line", lines+1, "bytes", size-cut)
	return nil
}

// Append writes whole lines b in one write and fsyncs it, under the file's
// flock, once the path still names the file (ErrMoved); a failure cuts the
// file back. Its errors do not name the file.
func (l *Log) Append(b []byte) error {
	if err := l.check(); err != nil || len(b) == 0 {
		return err
	}
	if err := lockExclusive(l.f); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	defer func() { _ = unlock(l.f) }()
	return unpath(appendLocked(l.f, b))
}

// appendLocked appends b to f, whose flock is held, and fsyncs it; a
// failure cuts f back.
func appendLocked(f *os.File, b []byte) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if _, err = f.Write(b); err == nil {
		err = f.Sync()
	}
	if err != nil {
		_ = f.Truncate(fi.Size())
	}
	return err
}

// check fails with ErrMoved unless the path still names the open file.
func (l *Log) check() error {
	open, err := l.f.Stat()
	if err != nil {
		return unpath(err)
	}
	if named, err := os.Stat(l.path); err != nil || !os.SameFile(open, named) {
		return ErrMoved
	}
	return nil
}

// Truncate empties the file durably.
func (l *Log) Truncate() error {
	if err := lockExclusive(l.f); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	defer func() { _ = unlock(l.f) }()
	if err := l.f.Truncate(0); err != nil {
		return unpath(err)
	}
	return unpath(l.f.Sync())
}

// Lines streams the file's lines under a shared flock (store.ScanLines).
func (l *Log) Lines(ctx context.Context, fn func(n int64, line []byte, terminated bool) error) error {
	f, err := openShared(l.path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	return unpath(store.ScanLines(ctx, f, fn, nil))
}

// Close releases the lock.
func (l *Log) Close() error {
	err := l.f.Close()
	if lerr := l.lock.Close(); err == nil { // closing releases the lock
		err = lerr
	}
	return err
}

// AppendShared appends whole lines b to the file at path under its flock,
// beside the writer that holds its lock; create makes it if need be. A file
// replaced before the flock is opened again; one not ending in a newline
// gets one first. Its errors do not name the file.
func AppendShared(path string, b []byte, create bool) error {
	if len(b) == 0 {
		return nil
	}
	for range 8 {
		done, err := appendOnce(path, b, create)
		if err != nil || done {
			return unpath(err)
		}
	}
	return ErrMoved
}

// appendOnce appends b unless the path no longer names the file it locked.
func appendOnce(path string, b []byte, create bool) (done bool, err error) {
	flags := os.O_RDWR | os.O_APPEND
	if create {
		flags |= os.O_CREATE
	}
	f, err := openRegular(path, flags, path)
	if err != nil {
		return false, err
	}
	defer func() { _ = f.Close() }()
	if err := lockExclusive(f); err != nil {
		return false, fmt.Errorf("lock: %w", err)
	}
	defer func() { _ = unlock(f) }()
	open, err := f.Stat()
	if err != nil {
		return false, err
	}
	if named, err := os.Stat(path); err != nil || !os.SameFile(open, named) {
		return false, nil // replaced by a prune (or removed): reopen
	}
	var last [1]byte
	if size := open.Size(); size > 0 {
		if _, err := f.ReadAt(last[:], size-1); err != nil {
			return false, err
		}
		if last[0] != '\n' {
			b = append([]byte{'\n'}, b...)
		}
	}
	return true, appendLocked(f, b)
}

// Take hands the whole lines of the file at path to fn and empties it if
// fn returns nil, under its flock. A missing file is empty, one over max
// refused; a torn last line is dropped with a warning.
func Take(path string, max int64, warn func(string, ...any), fn func(lines []byte) error) error {
	f, err := openRegular(path, os.O_RDWR, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return unpath(err)
	}
	defer func() { _ = f.Close() }()
	if err := lockExclusive(f); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	defer func() { _ = unlock(f) }()
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return unpath(err)
	}
	if fi.Size() > max {
		return fmt.Errorf("%d bytes, more than %d", fi.Size(), max)
	}
	body, err := io.ReadAll(io.NewSectionReader(f, 0, fi.Size()))
	if err != nil {
		return unpath(err)
	}
	if cut := bytes.LastIndexByte(body, '\n') + 1; cut < len(body) {
		warn("dropped a torn last line (an append cut short by a crash)", "path", path, "bytes", len(body)-cut)
		body = body[:cut]
	}
	if err := fn(body); err != nil {
		return err
	}
	if err := f.Truncate(0); err != nil {
		return unpath(err)
	}
	return unpath(f.Sync())
}

// Scan hands fn each whole line of kind want in the file at path whose
// cheap timestamp is not outside f's windows, under a shared flock. Torn,
// long, foreign and Corrupt lines are skipped. Its errors do not name the
// file.
func Scan(ctx context.Context, path string, want store.Kind, f *store.Filter, fn func(line []byte) error) error {
	file, err := openShared(path)
	if err != nil {
		return err
	}
	defer func() { _ = file.Close() }()
	line, long := filterLines(path, want, f, nil, fn)
	return unpath(store.ScanLines(ctx, file, line, long))
}

// Corrupt is a scan's fn's error for a line it cannot decode.
type Corrupt struct{ error }

// filterLines makes the line and long-line functions of a scan (Scan);
// ScanLines stops the scan once its context is done.
func filterLines(path string, want store.Kind, f *store.Filter, warn func(string, ...any),
	fn func(line []byte) error) (func(n int64, line []byte, terminated bool) error, func(n int64)) {
	if warn == nil {
		warn = func(string, ...any) {}
	}
	return func(n int64, line []byte, terminated bool) error {
			if !terminated {
				warn("skipped torn last line (no newline: a write cut short, or one in progress)", "path", path, "line", n)
				return nil
			}
			k := store.KindOf(line)
			if k == store.KindOther {
				warn("skipped corrupt line: not a probe or queue_hourly point", "path", path, "line", n)
				return nil
			}
			if k != want {
				return nil
			}
			if ns, ok := store.LineTime(line); ok && !f.Time(ns) {
				return nil
			}
			if err := fn(line); err != nil {
				var c Corrupt
				if !errors.As(err, &c) {
					return err
				}
				warn("skipped corrupt line", "path", path, "line", n, "err", c.Error())
			}
			return nil
		}, func(n int64) {
			warn("skipped corrupt line: longer than 1 MiB", "path", path, "line", n)
		}
}

// openShared opens the regular file at path under a shared flock. Its
// errors do not name the file.
func openShared(path string) (*os.File, error) {
	f, err := openRegular(path, os.O_RDONLY, "")
	if err != nil {
		return nil, unpath(err)
	}
	if err := lockShared(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock: %w", err)
	}
	return f, nil
}

// unpath drops the path from a *fs.PathError, for callers that name it.
func unpath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}

// Resolve returns path absolute with its links followed, dangling ones too.
func Resolve(path string) (string, error) {
	for links := 0; ; links++ {
		abs, err := filepath.Abs(path)
		if err != nil {
			return "", err
		}
		if r, err := filepath.EvalSymlinks(abs); err == nil {
			return r, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		dir, base := filepath.Split(abs)
		if dir = filepath.Clean(dir); dir == abs { // the root
			return abs, nil
		}
		rdir, err := Resolve(dir)
		if err != nil {
			return "", err
		}
		p := filepath.Join(rdir, base)
		target, err := os.Readlink(p)
		if err != nil { // not a link: the file is yet to be made
			return p, nil
		}
		if links >= 40 { // as Linux's ELOOP
			return "", fmt.Errorf("resolve %s: too many levels of symbolic links", path)
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(rdir, target)
		}
		path = target
	}
}
