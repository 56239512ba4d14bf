package series

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sync"
	"time"
)

// DefaultFilePath is where the embedded store lives unless the config says
// otherwise (relative to the config file's folder).
const DefaultFilePath = "data/samples.lp"

// FileOptions tune OpenFile.
type FileOptions struct {
	// ReadOnly opens an existing file for reading only (policygen): no
	// writer lock is taken, so it works while a sampler appends, and Write
	// fails.
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
// A writer holds an exclusive lock on path+".lock" while open, so two
// samplers cannot append to one file. Reads stream the file under a shared
// flock, so they never see half a round; they skip a torn last line or a
// corrupt line with a warning instead of failing.
type File struct {
	path string
	warn func(string, ...any)
	enc  encoder // guarded by mu (write lock)

	mu     sync.RWMutex
	w      *appendFile // nil when read-only
	closed bool
}

var _ Store = (*File)(nil)

// OpenFile opens the line-protocol file at path. For writing it creates the
// file and its folder if needed and cuts off a torn last line left by a
// crash; it fails, naming the path, when another writer holds the file. A
// read-only open needs the file to exist.
func OpenFile(path string, opts FileOptions) (*File, error) {
	s := &File{path: path, warn: opts.Warn}
	if s.warn == nil {
		s.warn = func(string, ...any) {}
	}
	if opts.ReadOnly {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("open samples file: %w", err)
		}
		_ = f.Close()
		return s, nil
	}
	w, err := openAppend(path, s.warn)
	if err != nil {
		return nil, fmt.Errorf("open samples file: %w", err)
	}
	s.w = w
	return s, nil
}

// Path returns the file's path.
func (s *File) Path() string { return s.path }

// Write appends the round (probes, then hourly points) in one write and
// fsyncs it. An invalid point fails the whole round before anything is
// written.
func (s *File) Write(ctx context.Context, probes []Probe, hourly []Hourly) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return fmt.Errorf("write %s: %w", s.path, os.ErrClosed)
	case s.w == nil:
		return fmt.Errorf("write %s: %w", s.path, errReadOnly)
	}
	b, err := s.enc.round(probes, hourly)
	if err != nil {
		return fmt.Errorf("write %s: %w", s.path, err)
	}
	if err := s.w.append(b); err != nil {
		return fmt.Errorf("write %s: %w", s.path, err)
	}
	return nil
}

// Probes returns the probe points with from <= time < to, sorted by time
// then lane.
func (s *File) Probes(ctx context.Context, from, to time.Time) ([]Probe, error) {
	return readFile(ctx, s, kindProbe, from, to, decodeProbe, probeKey)
}

// Hourly returns the hourly points with from <= hour < to, sorted by hour
// then lane. Probe lines are skipped by their measurement prefix and lines
// out of range by their timestamp, without decoding either.
func (s *File) Hourly(ctx context.Context, from, to time.Time) ([]Hourly, error) {
	return readFile(ctx, s, kindHourly, from, to, decodeHourly, hourlyKey)
}

// readFile decodes the file's points of one measurement in [from, to), the
// later line winning per series and time.
func readFile[T any](ctx context.Context, s *File, kind pointKind, from, to time.Time,
	decode func([]byte) (T, error), key func(*T) pointKey) ([]T, error) {
	l := newLatest(key)
	err := s.scan(ctx, kind, from, to, func(line []byte) error {
		p, err := decode(line)
		if err != nil {
			return err
		}
		l.put(p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return l.sorted(), nil
}

// pointKey identifies a point: same key, same point (the later line wins).
type pointKey struct {
	lane, kind string
	ns         int64
}

func probeKey(p *Probe) pointKey   { return pointKey{p.Lane, p.Kind, p.Time.UnixNano()} }
func hourlyKey(h *Hourly) pointKey { return pointKey{h.Lane, h.Kind, h.Hour.UnixNano()} }

// latest keeps the last point put per key, as a store keeps the last write
// of a series and time, and hands them back sorted by time, lane and kind.
type latest[T any] struct {
	key func(*T) pointKey
	idx map[pointKey]int
	out []T
}

func newLatest[T any](key func(*T) pointKey) *latest[T] {
	return &latest[T]{key: key, idx: map[pointKey]int{}, out: []T{}}
}

// put adds p, replacing the point with the same key.
func (l *latest[T]) put(p T) { l.putIn(p, math.MinInt64, math.MaxInt64) }

// putIn is put for a point whose time is in [fromNs, toNs); others are
// dropped. p is appended before its key is taken so that it does not escape
// to the heap through the key function: one allocation per point otherwise.
func (l *latest[T]) putIn(p T, fromNs, toNs int64) {
	l.out = append(l.out, p)
	last := len(l.out) - 1
	k := l.key(&l.out[last])
	switch i, ok := l.idx[k]; {
	case k.ns < fromNs || k.ns >= toNs:
		l.out = l.out[:last]
	case ok:
		l.out[i] = l.out[last]
		l.out = l.out[:last]
	default:
		l.idx[k] = last
	}
}

// sorted returns the points by time, lane and kind. It sorts the keys (the
// map already holds them) rather than the points, whose addresses taken in a
// comparator would cost an allocation per comparison.
func (l *latest[T]) sorted() []T {
	type entry struct {
		k pointKey
		i int
	}
	order := make([]entry, 0, len(l.idx))
	for k, i := range l.idx {
		order = append(order, entry{k, i})
	}
	slices.SortFunc(order, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.k.ns, b.k.ns), cmp.Compare(a.k.lane, b.k.lane), cmp.Compare(a.k.kind, b.k.kind))
	})
	out := make([]T, len(order))
	for j, e := range order {
		out[j] = l.out[e.i]
	}
	return out
}

// scan streams the file and hands each complete line of measurement want
// whose timestamp lies in [from, to) to decode. Bad lines are skipped with a
// warning: decode errors, lines of no known measurement, a torn last line.
func (s *File) scan(ctx context.Context, want pointKind, from, to time.Time, decode func(line []byte) error) error {
	if !from.Before(to) {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return fmt.Errorf("read %s: %w", s.path, os.ErrClosed)
	}
	fromNs, toNs := clampNano(from), clampNano(to)
	err := readLocked(s.path, func(n int64, line []byte, terminated bool) error {
		if n&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if !terminated {
			s.warn("skipped torn last line (no newline: a write cut short, or one in progress)", "path", s.path, "line", n)
			return nil
		}
		switch kindOf(line) {
		case want:
		case kindProbe, kindHourly, kindSkip:
			return nil
		default:
			s.warn("skipped corrupt line: not a probe or queue_hourly point", "path", s.path, "line", n)
			return nil
		}
		if ns, ok := lineTime(line); ok && (ns < fromNs || ns >= toNs) {
			return nil
		}
		if err := decode(line); err != nil {
			s.warn("skipped corrupt line", "path", s.path, "line", n, "err", err.Error())
		}
		return nil
	}, func(n int64) {
		s.warn("skipped corrupt line: longer than 1 MiB", "path", s.path, "line", n)
	})
	if err != nil {
		return fmt.Errorf("read %s: %w", s.path, err)
	}
	return nil
}

// clampNano converts t to Unix nanoseconds, saturating outside int64's range.
func clampNano(t time.Time) int64 {
	switch {
	case t.Before(minTime):
		return minTime.UnixNano()
	case t.After(maxTime):
		return maxTime.UnixNano() + 1
	}
	return t.UnixNano()
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

// errReadOnly is returned by writes to a read-only store.
var errReadOnly = errors.New("store is open read-only")
