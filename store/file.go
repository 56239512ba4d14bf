package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"time"
)

// DefaultFilePath is where the embedded store lives unless the config says
// otherwise (relative to the config file's folder).
const DefaultFilePath = "data/samples.lp"

// FileOptions tune OpenFile.
type FileOptions struct {
	// ReadOnly opens the file for reading only (policygen): no writer lock
	// is taken, so it works while a sampler appends, and Write fails. The
	// file must exist (fs.ErrNotExist otherwise: a fresh install). Its
	// reads keep a sparse index of the file beside it (path + IndexSuffix;
	// best effort: none where the folder cannot be written to), so that a
	// read of a few days of a year skips the rest.
	ReadOnly bool
	// Warn receives non-fatal problems (torn or corrupt lines that were
	// skipped); msg is lowercase, args are slog-style key/value pairs. The
	// store never logs by itself. Nil discards them.
	Warn func(msg string, args ...any)
}

// File is the embedded store: one InfluxDB line-protocol file that rounds are
// appended to (each in one write and fsync). Later lines replace earlier ones
// with the same measurement, tags and time. Any of its lines imports into
// InfluxDB as is.
//
// A writer holds an exclusive lock on the resolved path (symlinks followed)
// plus ".lock" while open, so two samplers cannot append to one file however
// they name it. Before each append it checks that the path still names the
// file it opened, and refuses with ErrMoved otherwise. Reads stream the file
// under a shared flock, so they never see half a round; they skip a torn last
// line or a corrupt line with a warning instead of failing. A read-only
// File's reads go through a sparse index of the file's time spans (see
// lpindex.go), which changes what they read, never what they return.
type File struct {
	path string // resolved
	warn func(string, ...any)
	enc  encoder // guarded by mu (write lock)

	mu     sync.RWMutex
	w      *appendFile // nil when read-only
	closed bool
	index  *indexConf // a read-only store's sparse index (IndexSuffix); nil for a writer
}

var _ Store = (*File)(nil)

// OpenFile opens the line-protocol file at path. For writing it creates the
// file and its folder if needed and cuts off a torn last line left by a
// crash; it fails, naming the path, when another writer holds the file, and
// when path names anything but a regular file (ErrNotRegular: a device such
// as /dev/zero, a named pipe, a directory), also through a link.
func OpenFile(path string, opts FileOptions) (*File, error) {
	s := &File{warn: opts.Warn}
	if s.warn == nil {
		s.warn = func(string, ...any) {}
	}
	if err := checkRegular(path); err != nil { // before a writer creates its lock beside it
		return nil, fmt.Errorf("open samples file: %w", err)
	}
	resolved, err := resolve(path)
	if err != nil {
		return nil, fmt.Errorf("open samples file: %w", err)
	}
	s.path = resolved
	if opts.ReadOnly {
		f, err := os.Open(resolved)
		if err != nil {
			return nil, fmt.Errorf("open samples file: %w", err)
		}
		e := fstatNotRegular(f)
		_ = f.Close()
		if e != nil {
			e.path = resolved
			return nil, fmt.Errorf("open samples file: %w", e)
		}
		s.index = newIndexConf(resolved)
		return s, nil
	}
	w, err := openAppend(resolved, s.warn)
	if err == nil {
		err = w.regular()
	}
	if err != nil {
		return nil, fmt.Errorf("open samples file: %w", err)
	}
	s.w = w
	return s, nil
}

// writable returns the error of op (a write or a prune) on a store that
// is closed or read-only, nil on a writer's. s.mu must be held.
func (s *File) writable(op string) error {
	switch {
	case s.closed:
		return fmt.Errorf("%s %s: %w", op, s.path, os.ErrClosed)
	case s.w == nil:
		return fmt.Errorf("%s %s: %w", op, s.path, errReadOnly)
	}
	return nil
}

// Path returns the file's resolved path.
func (s *File) Path() string { return s.path }

// Write appends the points (probes, then hourly points) in one write and
// fsyncs them. An invalid point fails the whole write before anything is
// written.
func (s *File) Write(ctx context.Context, probes []Probe, hourly []Hourly) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writable("write"); err != nil {
		return err
	}
	b, err := s.enc.round(probes, hourly)
	if err != nil {
		return fmt.Errorf("write %s: %w", s.path, err)
	}
	if err := s.w.checkPath(); err != nil {
		return fmt.Errorf("write %s: %w", s.path, err)
	}
	if err := s.w.append(b); err != nil {
		return fmt.Errorf("write %s: %w", s.path, err)
	}
	return nil
}

// Probes returns the probe points q selects.
func (s *File) Probes(ctx context.Context, q Query) ([]Probe, error) {
	return readFile(ctx, s, kindProbe, q, &probeSchema, probeKey)
}

// Hourly returns the hourly points q selects. Probe lines are skipped by
// their measurement prefix and lines out of range by their timestamp,
// without decoding either.
func (s *File) Hourly(ctx context.Context, q Query) ([]Hourly, error) {
	return readFile(ctx, s, kindHourly, q, &hourlySchema, hourlyKey)
}

// readFile decodes the file's points of one measurement that q selects, the
// later line winning per series and time.
func readFile[T any](ctx context.Context, s *File, kind pointKind, q Query,
	sch *schema[T], key func(*T) pointKey) ([]T, error) {
	m := q.matcher()
	l := newLatest(key)
	if m.empty() {
		return l.out, nil
	}
	nm := names{}
	var p T
	err := s.scan(ctx, kind, m, func(line []byte) error {
		if err := decodeInto(nm, sch, line, &p); err != nil {
			return corruptLine{err}
		}
		l.putIn(p, m)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return l.sorted(), nil
}

// scan streams the file and hands each complete line of measurement want
// that m's time range may hold to fn (see scanKind), under the read lock.
func (s *File) scan(ctx context.Context, want pointKind, m *matcher, fn func(line []byte) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return fmt.Errorf("read %s: %w", s.path, os.ErrClosed)
	}
	if s.w != nil { // a writer reads what it writes to, or nothing
		if err := s.w.checkPath(); err != nil {
			return fmt.Errorf("read %s: %w", s.path, err)
		}
	}
	if err := scanKindIndexed(ctx, s.path, s.index, want, m, s.warn, fn); err != nil {
		return fmt.Errorf("read %s: %w", s.path, unpath(err))
	}
	return nil
}

// Close releases the writer lock. Further calls fail.
func (s *File) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.w == nil {
		return nil
	}
	if err := s.w.close(); err != nil {
		return fmt.Errorf("close %s: %w", s.path, err)
	}
	return nil
}

// ProbeScanner is a store that can stream its probe points in time order
// without holding them: File, when its lines are in time order give or
// take a round (as a sampler writes them).
type ProbeScanner interface {
	// ScanProbes calls fn for each probe point q selects, in time order,
	// each point once (the later line of a rewritten point). It returns
	// false when it cannot keep that order (lines appended out of order,
	// as an import of older history does), having perhaps called fn for
	// the points before the first such line: discard them and read with
	// Probes then.
	ScanProbes(ctx context.Context, q Query, fn func(Probe) error) (bool, error)
}

var _ ProbeScanner = (*File)(nil)

// scanDisorder is how far back in time a probe line may be from the newest
// line before it for ScanProbes to stream: a sampler appends a round's
// probes in lane order, their start times a little apart.
const scanDisorder = time.Hour

// ScanProbes streams the probe lines q selects in one pass over the file,
// decoding them and handing them to fn through a small reorder buffer
// (the points of the last scanDisorder). It stops, returning false, at the
// first line more than scanDisorder older than a line before it. A year of
// 50 lanes is one read of the file instead of a read per span.
func (s *File) ScanProbes(ctx context.Context, q Query, fn func(Probe) error) (bool, error) {
	m := q.matcher()
	if m.empty() {
		return true, nil
	}
	window := int64(scanDisorder)
	var newest int64 = math.MinInt64
	errUnordered := errors.New("out of order")
	buf := &reorder{}
	nm := names{}
	var p Probe
	err := s.scan(ctx, kindProbe, m, func(line []byte) error {
		if err := decodeInto(nm, &probeSchema, line, &p); err != nil {
			return corruptLine{err}
		}
		ns := p.Time.UnixNano()
		if !m.seriesOK(p.Lane, p.Site) || !m.timeOK(ns) {
			return nil
		}
		if newest != math.MinInt64 && ns < newest-window {
			return errUnordered
		}
		buf.put(p)
		newest = max(newest, ns)
		for buf.len() > 0 && buf.oldest() < newest-window {
			if err := fn(buf.pop()); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, errUnordered) {
		return false, nil
	}
	for err == nil && buf.len() > 0 {
		err = fn(buf.pop())
	}
	return true, err
}

// reorder is a min-heap of probes by time (then lane, kind, site, then the
// order they were put in). Equal points pop one after the other, the later
// put last, so pop skips a point the next one rewrites. The heap moves
// small entries (the time, the order, a slot); the probes stay in their
// slots until popped.
type reorder struct {
	h     []reorderEntry
	slots []Probe
	free  []int32
	seq   int64
}

type reorderEntry struct {
	ns, seq int64
	slot    int32
}

func (r *reorder) len() int      { return len(r.h) }
func (r *reorder) oldest() int64 { return r.h[0].ns }

func (r *reorder) less(i, j int) bool {
	a, b := &r.h[i], &r.h[j]
	if a.ns != b.ns {
		return a.ns < b.ns
	}
	pa, pb := &r.slots[a.slot], &r.slots[b.slot]
	if c := cmp.Or(cmp.Compare(pa.Lane, pb.Lane), cmp.Compare(pa.Kind, pb.Kind), cmp.Compare(pa.Site, pb.Site)); c != 0 {
		return c < 0
	}
	return a.seq < b.seq
}

func (r *reorder) put(p Probe) {
	r.seq++
	var slot int32
	if n := len(r.free); n > 0 {
		slot, r.free = r.free[n-1], r.free[:n-1]
		r.slots[slot] = p
	} else {
		slot = int32(len(r.slots))
		r.slots = append(r.slots, p)
	}
	r.h = append(r.h, reorderEntry{p.Time.UnixNano(), r.seq, slot})
	for i := len(r.h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !r.less(i, parent) {
			break
		}
		r.h[i], r.h[parent] = r.h[parent], r.h[i]
		i = parent
	}
}

func (r *reorder) popOne() Probe {
	slot := r.h[0].slot
	top := r.slots[slot]
	r.slots[slot] = Probe{}
	r.free = append(r.free, slot)
	last := len(r.h) - 1
	r.h[0] = r.h[last]
	r.h = r.h[:last]
	for i := 0; ; {
		l, rt, small := 2*i+1, 2*i+2, i
		if l < len(r.h) && r.less(l, small) {
			small = l
		}
		if rt < len(r.h) && r.less(rt, small) {
			small = rt
		}
		if small == i {
			break
		}
		r.h[i], r.h[small] = r.h[small], r.h[i]
		i = small
	}
	return top
}

// pop returns the oldest point, the last written of its key as a read
// keeps it (a reservation written after its probe does not replace it:
// settledWins).
func (r *reorder) pop() Probe {
	p := r.popOne()
	for len(r.h) > 0 && probeKey(&r.slots[r.h[0].slot]) == probeKey(&p) {
		if q := r.popOne(); settledWins(&p, &q) {
			p = q
		}
	}
	return p
}
