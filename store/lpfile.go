package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/lanewatch/lanewatch/store/lineproto"
)

// ErrMoved is returned (wrapped) by File.Write when the file at the store's
// path is no longer the file the store opened: it was moved, deleted or
// replaced while the store was open. Nothing is written to the old file.
var ErrMoved = errors.New("store file was moved, deleted or replaced while open")

// readBuf is the buffer of a read of the file that is not a scan.
const readBuf = 256 << 10

// ErrNotRegular marks (errors.Is) a path the stores refuse because it names
// something other than a regular file: a device such as /dev/zero, a named
// pipe, a socket or a directory, which would read without end, block or
// fail obscurely.
var ErrNotRegular = errors.New("not a regular file")

// notRegularError is an ErrNotRegular about one path.
type notRegularError struct {
	path   string // "" when the caller names the file
	target string // what path links to, when it is a link
	mode   fs.FileMode
}

func (e *notRegularError) Error() string {
	what := modeName(e.mode)
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

func modeName(m fs.FileMode) string {
	switch {
	case m&fs.ModeDir != 0:
		return "a directory"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "mode " + m.String()
}

// checkRegular fails with an ErrNotRegular naming path when path (its
// links followed) exists and is not a regular file. A path that cannot be
// looked at passes: the open that follows creates or reports it.
func checkRegular(path string) error {
	if e := notRegular(path); e != nil {
		return e
	}
	return nil
}

// notRegular is checkRegular's error, nil when path passes.
func notRegular(path string) *notRegularError {
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().IsRegular() {
		return nil
	}
	e := &notRegularError{path: path, mode: fi.Mode().Type()}
	if li, err := os.Lstat(path); err == nil && li.Mode()&fs.ModeSymlink != 0 {
		if t, err := filepath.EvalSymlinks(path); err == nil {
			e.target = t
		}
	}
	return e
}

// fstatNotRegular is a path-less ErrNotRegular unless f is a regular file
// (what was checked by name may have been replaced before the open), nil
// when it is.
func fstatNotRegular(f *os.File) *notRegularError {
	fi, err := f.Stat()
	if err != nil || fi.Mode().IsRegular() {
		return nil
	}
	return &notRegularError{mode: fi.Mode().Type()}
}

// OpenImport opens a line-protocol file to Import, refusing (with an
// ErrNotRegular naming it) anything but a regular file: /dev/zero, a pipe
// or a device would be read without end.
func OpenImport(path string) (*os.File, error) {
	if err := checkRegular(path); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if e := fstatNotRegular(f); e != nil {
		_ = f.Close()
		e.path = path
		return nil, e
	}
	return f, nil
}

// appendFile is a line-protocol file that one process appends to. It holds
// an exclusive lock on path+".lock" for its whole life, so a second writer
// fails at open, and an exclusive flock on the data file while appending, so
// readers that take a shared flock never see half a round.
type appendFile struct {
	path string
	f    *os.File
	lock *os.File
}

// openAppend opens (creating it and its folder if needed) a line-protocol file
// for appending. A torn last line left by a crash is cut off, with a warning,
// so the next append does not glue onto it. It takes what path names: a
// file that is also read (a store's, a spool) is checked first with
// checkRegular, then with regular.
func openAppend(path string, warn func(string, ...any)) (*appendFile, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := lockExclusiveNB(lock); err != nil {
		_ = lock.Close()
		if errors.Is(err, errLocked) {
			return nil, fmt.Errorf("%s is in use by another writer (lock %s is held)", path, path+".lock")
		}
		return nil, fmt.Errorf("lock %s: %w", path+".lock", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		_ = lock.Close()
		return nil, err
	}
	syncDir(filepath.Dir(path)) // a new file's directory entry must survive a crash too
	a := &appendFile{path: path, f: f, lock: lock}
	if err := a.repairTail(warn); err != nil {
		_ = a.close()
		return nil, err
	}
	return a, nil
}

// repairTail truncates the file after its last newline when it does not end
// with one: that tail is a write that never completed (Write fsyncs whole
// lines, so it was never acknowledged).
func (a *appendFile) repairTail(warn func(string, ...any)) error {
	if err := lockExclusive(a.f); err != nil {
		return fmt.Errorf("lock %s: %w", a.path, err)
	}
	defer func() { _ = unlock(a.f) }()
	size, err := a.f.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	if size == 0 {
		return nil
	}
	var last [1]byte
	if _, err := a.f.ReadAt(last[:], size-1); err != nil {
		return err
	}
	if last[0] == '\n' {
		return nil
	}
	// Find the last newline, reading backwards in blocks.
	cut := int64(0)
	buf := make([]byte, 64<<10)
	for end := size; end > 0 && cut == 0; {
		start := max(end-int64(len(buf)), 0)
		b := buf[:end-start]
		if _, err := a.f.ReadAt(b, start); err != nil {
			return err
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			cut = start + int64(i) + 1
		}
		end = start
	}
	lines, err := countLines(a.f, cut)
	if err != nil {
		return err
	}
	if err := a.f.Truncate(cut); err != nil {
		return err
	}
	if err := a.f.Sync(); err != nil {
		return err
	}
	if warn != nil {
		warn("removed torn last line (a write cut short by a crash)", "path", a.path, "line", lines+1, "bytes", size-cut)
	}
	return nil
}

// countLines counts the newlines in the first n bytes of f.
func countLines(f *os.File, n int64) (int64, error) {
	var lines int64
	buf := make([]byte, readBuf)
	for off := int64(0); off < n; {
		b := buf[:min(int64(len(buf)), n-off)]
		if _, err := f.ReadAt(b, off); err != nil {
			return 0, err
		}
		lines += int64(bytes.Count(b, []byte{'\n'}))
		off += int64(len(b))
	}
	return lines, nil
}

// append writes b (whole lines) in one write and fsyncs. On failure it cuts
// the file back to its size before the write, so no partial line remains.
// Its errors do not repeat the path: callers name the file.
func (a *appendFile) append(b []byte) error {
	return unpath(a.appendPathErr(b))
}

func (a *appendFile) appendPathErr(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if err := lockExclusive(a.f); err != nil {
		return err
	}
	defer func() { _ = unlock(a.f) }()
	fi, err := a.f.Stat()
	if err != nil {
		return err
	}
	if _, err := a.f.Write(b); err != nil {
		_ = a.f.Truncate(fi.Size())
		return err
	}
	if err := a.f.Sync(); err != nil {
		_ = a.f.Truncate(fi.Size())
		return err
	}
	return nil
}

// sharedAttempts bounds the reopens of one appendShared (each needs a
// prune between the open and the flock).
const sharedAttempts = 8

// appendShared appends b (whole lines) to the file at path in one write
// and fsyncs it, under an exclusive flock on the file for that write
// alone, beside a writer that holds the file's lock (SharedFile, a Spool's
// inbox). create makes the file when it does not exist. A file replaced
// between the open and the flock (a prune renames a new file over it) is
// opened again: nothing goes to a file the path no longer names. A file
// that does not end in a newline (an append cut short by a crash) gets one
// first. Its errors do not repeat the path.
func appendShared(path string, b []byte, create bool) error {
	if len(b) == 0 {
		return nil
	}
	for range sharedAttempts {
		done, err := appendOnce(path, b, create)
		if err != nil {
			return unpath(err)
		}
		if done {
			return nil
		}
	}
	return ErrMoved
}

// appendOnce opens the path, takes its flock and appends b unless the path
// no longer names the file it locked (done false: try again).
func appendOnce(path string, b []byte, create bool) (done bool, err error) {
	flags := os.O_RDWR | os.O_APPEND
	if create {
		flags |= os.O_CREATE
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return false, err
	}
	defer func() { _ = f.Close() }()
	if e := fstatNotRegular(f); e != nil {
		e.path = path
		return false, e
	}
	if err := lockExclusive(f); err != nil {
		return false, fmt.Errorf("lock: %w", err)
	}
	defer func() { _ = unlock(f) }()
	open, err := f.Stat()
	if err != nil {
		return false, err
	}
	named, err := os.Stat(path)
	if err != nil || !os.SameFile(open, named) {
		return false, nil // replaced by a prune (or removed): reopen
	}
	size := open.Size()
	if size > 0 {
		var last [1]byte
		if _, err := f.ReadAt(last[:], size-1); err != nil {
			return false, err
		}
		if last[0] != '\n' {
			b = append([]byte{'\n'}, b...)
		}
	}
	if _, err := f.Write(b); err != nil {
		_ = f.Truncate(size)
		return false, err
	}
	if err := f.Sync(); err != nil {
		_ = f.Truncate(size)
		return false, err
	}
	return true, nil
}

// checkPath fails with ErrMoved unless a.path still names the open file.
func (a *appendFile) checkPath() error {
	open, err := a.f.Stat()
	if err != nil {
		return err
	}
	named, err := os.Stat(a.path)
	if err != nil || !os.SameFile(open, named) {
		return ErrMoved
	}
	return nil
}

// truncate empties the file durably.
func (a *appendFile) truncate() error {
	return unpath(a.truncatePathErr())
}

func (a *appendFile) truncatePathErr() error {
	if err := lockExclusive(a.f); err != nil {
		return err
	}
	defer func() { _ = unlock(a.f) }()
	if err := a.f.Truncate(0); err != nil {
		return err
	}
	return a.f.Sync()
}

// regular closes a and fails with an ErrNotRegular naming its path unless
// the open file is a regular file.
func (a *appendFile) regular() error {
	if e := fstatNotRegular(a.f); e != nil {
		_ = a.close()
		e.path = a.path
		return e
	}
	return nil
}

// size returns the current file size.
func (a *appendFile) size() (int64, error) {
	fi, err := a.f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// read streams the file's complete lines under a shared lock.
func (a *appendFile) read(ctx context.Context, fn func(n int64, line []byte, terminated bool) error) error {
	return readLocked(ctx, a.path, fn, nil)
}

func (a *appendFile) close() error {
	err := a.f.Close()
	if lerr := a.lock.Close(); err == nil { // closing releases the lock
		err = lerr
	}
	return err
}

// readLocked opens path, takes a shared flock (so no append is half visible)
// and streams its lines to fn until the end or until ctx is done. Anything
// but a regular file is refused (ErrNotRegular) before it is opened: a
// named pipe would block the open, a device read without end.
// Its own errors do not repeat the path: callers name the file.
func readLocked(ctx context.Context, path string, fn func(n int64, line []byte, terminated bool) error, long func(n int64)) error {
	f, err := openShared(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	return unpathOf(lineproto.ScanLines(ctx, f, fn, long), path)
}

// openShared opens the regular file at path for reading under a shared
// flock: a named pipe would block the open, a device read without end.
// Its errors do not repeat the path: callers name the file.
func openShared(path string) (*os.File, error) {
	if e := notRegular(path); e != nil {
		e.path, e.target = "", "" // the caller names the (resolved) file
		return nil, e
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, unpathOf(err, path)
	}
	if e := fstatNotRegular(f); e != nil {
		_ = f.Close()
		return nil, e
	}
	if err := lockShared(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock: %w", err)
	}
	return f, nil
}

// syncDir fsyncs a folder so that entries created in it are durable. It is
// best effort: some platforms and file systems cannot sync a folder.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}

// unpathOf drops path from err when err itself is a *fs.PathError about
// path ("open: no such file or directory"), for callers that name the file;
// errors.Is still sees the cause. Other errors are returned as they are.
func unpathOf(err error, path string) error {
	if pe, ok := err.(*fs.PathError); ok && pe.Path == path {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}

// unpath drops the path from a *fs.PathError ("write: no space left on
// device"), for callers that name the file themselves; errors.Is still
// sees the cause.
func unpath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}

// resolve returns path absolute with its symlinks followed. For a file that
// does not exist yet, its folder is resolved instead, and a symlink naming
// it (a dangling link, whose target the open creates) is followed too.
func resolve(path string) (string, error) {
	return resolveLinks(path, 0)
}

// maxLinks bounds the symlinks resolve follows by hand (as Linux's ELOOP).
const maxLinks = 40

func resolveLinks(path string, links int) (string, error) {
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
	dir = filepath.Clean(dir)
	if dir == abs { // the root
		return abs, nil
	}
	rdir, err := resolveLinks(dir, links)
	if err != nil {
		return "", err
	}
	p := filepath.Join(rdir, base)
	target, err := os.Readlink(p)
	if err != nil { // not a link: the file is yet to be created
		return p, nil
	}
	if links >= maxLinks {
		return "", fmt.Errorf("resolve %s: too many levels of symbolic links", path)
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(rdir, target)
	}
	return resolveLinks(target, links+1)
}

// corruptLine is what a scan's fn returns for a line it cannot decode: the
// line is skipped, with a warning, and the scan goes on.
type corruptLine struct{ error }

// scanKind streams the file at path and hands fn each complete line of
// measurement want, but for the lines whose timestamp (read cheaply, when
// it can be) is outside m's time range: fn checks the time of the others
// once it has decoded them. Every 64 Ki lines it checks ctx. A line fn
// finds corrupt (corruptLine), of no known measurement, torn (the last
// line, without its newline) or longer than 1 MiB is skipped, with a
// warning when warn is not nil; any other error from fn ends the scan.
func scanKind(ctx context.Context, path string, want pointKind, m *matcher, warn func(string, ...any), fn func(line []byte) error) error {
	return scanKindIndexed(ctx, path, nil, want, m, warn, fn)
}

// scanKindIndexed is scanKind through the index ix (see scanIndexed),
// which it makes or extends; nil reads without one.
func scanKindIndexed(ctx context.Context, path string, ix *indexConf, want pointKind, m *matcher, warn func(string, ...any), fn func(line []byte) error) error {
	if warn == nil {
		warn = func(string, ...any) {}
	}
	lineFn := func(n int64, line []byte, terminated bool) error {
		if n&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if !terminated {
			warn("skipped torn last line (no newline: a write cut short, or one in progress)", "path", path, "line", n)
			return nil
		}
		switch kindOf(line) {
		case want:
		case kindProbe, kindHourly, kindHeartbeat, kindSkip:
			return nil
		default:
			warn("skipped corrupt line: not a probe or queue_hourly point", "path", path, "line", n)
			return nil
		}
		if ns, ok := lineproto.LineTime(line); ok && !m.timeOK(ns) {
			return nil
		}
		if err := fn(line); err != nil {
			var c corruptLine // declared here: taken by address, it costs an allocation
			if !errors.As(err, &c) {
				return err
			}
			warn("skipped corrupt line", "path", path, "line", n, "err", c.Error())
		}
		return nil
	}
	long := func(n int64) {
		warn("skipped corrupt line: longer than 1 MiB", "path", path, "line", n)
	}
	if ix == nil {
		return readLocked(ctx, path, lineFn, long)
	}
	return scanIndexed(ctx, path, ix, want, m, lineFn, long)
}
