// Package file is the embedded store, one line-protocol file appended to a
// round at a time, and the files of a spool (docs/schema.md).
package file

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lanewatch/lanewatch/internal/atomicfile"
	"github.com/lanewatch/lanewatch/store"
)

// Options tune Open.
type Options struct {
	// ReadOnly reads an existing file without a lock; Write fails.
	ReadOnly bool
	// Beside reads as ReadOnly, makes the file if need be, and appends
	// under the file's flock beside the writer that holds its lock.
	Beside bool
	// Warn receives problems that are not fatal (slog-style); nil discards.
	Warn func(msg string, args ...any)
}

// Store is the embedded store; a later line replaces an earlier one of its
// key (store.Replaces). A writer holds the resolved path + ".lock" while
// open and checks before each append that the path still names its file
// (ErrMoved). Reads hold a shared flock, skip torn and corrupt lines with a
// warning, and go through a sparse index (index.go).
type Store struct {
	path   string // resolved
	o      Options
	mu     sync.RWMutex // a write or prune excludes this process's reads
	log    *Log         // a writer's; nil when read-only or beside
	closed bool
	// For tests.
	pruneHook func(stage, tmp string) error
	noIndex   bool
}

var _ store.Store = (*Store)(nil)

// Open opens the file at path; a writer makes it if need be and cuts off a
// torn last line. It fails naming the path when another writer holds it or
// it is not a regular file (ErrNotRegular).
func Open(path string, o Options) (*Store, error) {
	if o.Warn == nil {
		o.Warn = func(string, ...any) {}
	}
	s := &Store{o: o}
	var err error
	if !o.ReadOnly && !o.Beside {
		if s.log, err = OpenLog(path, false, o.Warn); err == nil {
			s.path = s.log.Path()
		}
	} else if err = CheckRegular(path); err == nil {
		s.path, err = Resolve(path)
		flag := os.O_RDONLY
		if err == nil && o.Beside {
			flag |= os.O_CREATE
			err = os.MkdirAll(filepath.Dir(s.path), 0o755)
		}
		var f *os.File
		if err == nil {
			if f, err = openRegular(s.path, flag, s.path); err == nil {
				_ = f.Close()
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("open samples file: %w", err)
	}
	return s, nil
}

// Status names the file; a writer holds it exclusively.
func (s *Store) Status() store.Status {
	return store.Status{Where: s.path, Exclusive: s.log != nil}
}

// Write appends the batch in one write and fsyncs it.
func (s *Store) Write(ctx context.Context, b store.Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writable("write"); err != nil {
		return err
	}
	lines, err := store.AppendLines(nil, b)
	switch {
	case err != nil:
	case s.o.Beside:
		err = AppendShared(s.path, lines, false)
	default:
		err = s.log.Append(lines)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", s.path, err)
	}
	return nil
}

// writable fails op on a store closed or read-only. s.mu must be held.
func (s *Store) writable(op string) error {
	switch {
	case s.closed:
		return fmt.Errorf("%s %s: %w", op, s.path, os.ErrClosed)
	case s.o.ReadOnly:
		return fmt.Errorf("%s %s: %w", op, s.path, store.ErrReadOnly)
	}
	return nil
}

// Read hands over the points q selects, each measurement in one pass over
// the blocks the index says may hold it, under one shared flock: through a
// reorder buffer when the blocks are in order, else collected and sorted.
func (s *Store) Read(ctx context.Context, q store.Query, r store.Reader) error {
	if err := store.CheckFields(q.Fields); err != nil {
		return fmt.Errorf("read %s: %w", s.path, err)
	}
	f := q.Filter()
	if r.Local || f.Empty() || (r.Probe == nil && r.Hourly == nil && r.Heartbeat == nil) {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return fmt.Errorf("read %s: %w", s.path, os.ErrClosed)
	}
	if s.log != nil { // a writer reads what it writes to, or nothing
		if err := s.log.check(); err != nil {
			return fmt.Errorf("read %s: %w", s.path, err)
		}
	}
	r, newest := store.NewestOf(f, r)
	if err := s.read(ctx, f, r); err != nil {
		var he handError
		if errors.As(err, &he) {
			return he.err
		}
		return fmt.Errorf("read %s: %w", s.path, err)
	}
	return newest()
}

// handError is an error of a Reader's callback.
type handError struct{ err error }

func (e handError) Error() string { return e.err.Error() }

func (s *Store) read(ctx context.Context, f *store.Filter, r store.Reader) error {
	file, err := openShared(s.path)
	if err != nil {
		return err
	}
	defer func() { _ = file.Close() }()
	fi, err := file.Stat()
	if err != nil {
		return unpath(err)
	}
	blocks, series, err := describe(ctx, s.path, file, fi, !s.noIndex)
	if err != nil {
		return unpath(err)
	}
	p := &pass{ctx: ctx, path: s.path, file: file, size: fi.Size(), blocks: blocks, series: series, f: f, warn: s.o.Warn}
	err = readKind(p, r.Hourly)
	if err == nil {
		err = readKind(p, r.Probe)
	}
	if err == nil {
		err = readKind(p, r.Heartbeat)
	}
	return err
}

// bytesRead counts the bytes reads went through (tests).
var bytesRead atomic.Int64

// pass is what one Read's pass over each measurement reads.
type pass struct {
	ctx    context.Context
	path   string
	file   *os.File
	size   int64
	blocks []block
	series *lastLines // nil: not known
	f      *store.Filter
	warn   func(string, ...any)
}

// uses returns which blocks a read of kind k (its slot) reads: those that
// may hold lines of f's spans, but with pick, of a newest read's last span
// only those with its series' newest lines when every one lies before its
// end; and whether it picked.
func (p *pass) uses(k int, pick bool) (func(j int) bool, bool) {
	all := func(j int) bool { return p.blocks[j].needed(k, p.f) }
	if !pick || !p.f.Newest || p.series == nil {
		return all, false
	}
	last := p.f.Spans[len(p.f.Spans)-1]
	picked := make([]bool, len(p.blocks))
	for _, e := range p.series[k] {
		if e.ns >= last[1] {
			return all, false
		}
		for _, blk := range e.blocks {
			picked[blk] = picked[blk] || e.ns >= last[0]
		}
	}
	before := &store.Filter{Spans: p.f.Spans[:len(p.f.Spans)-1]}
	return func(j int) bool { return picked[j] || p.blocks[j].needed(k, before) }, true
}

// readKind hands T's points on to hand (nil: none) in time order, reading
// the blocks that may hold them: through a reorder buffer when they are in
// order, else collected and sorted at the end.
func readKind[T store.Point](p *pass, hand func(T) error) error {
	if hand == nil {
		return nil
	}
	picked, err := scanKind(p, hand, true)
	if err == nil && picked {
		// A corrupt line in the blocks of a newest read may hide an older
		// line in one it left out: read them all; the newest stays.
		_, err = scanKind(p, hand, false)
	}
	return err
}

// scanKind is readKind, with pick the blocks of a newest read's series
// alone (pass.uses); it reports whether it did and met a corrupt line.
func scanKind[T store.Point](p *pass, hand func(T) error, pick bool) (bool, error) {
	k := store.KindFor[T]()
	i := slot(k)
	use, picked := p.uses(i, pick)
	corrupt := false
	ordered := true
	for j := range p.blocks {
		ordered = ordered && (!use(j) || !p.blocks[j].disorder[i])
	}
	emit := func(pt T) error {
		if err := hand(pt); err != nil {
			return handError{err}
		}
		return nil
	}
	names := store.Names{}
	var pt T
	var whole store.Latest[T]
	var buf reorder[T]
	newest := int64(-1 << 63)
	lineFn, long := filterLines(p.path, k, p.f, p.warn, func(line []byte) error {
		if err := store.Decode(names, line, &pt); err != nil {
			if _, ok := store.LineTime(line); ok { // it may be its series' newest: the index noted it
				corrupt = true
			}
			return Corrupt{err}
		}
		if !store.Selects(p.f, &pt) {
			return nil
		}
		if !ordered {
			whole.Put(pt)
			return nil
		}
		buf.put(pt)
		newest = max(newest, store.KeyOf(&pt).NS)
		for buf.len() > 0 && buf.oldest() < newest-scanDisorder {
			if err := emit(buf.pop()); err != nil {
				return err
			}
		}
		return nil
	})
	p.warn = nil // the next pass reads the same lines: one warning is enough
	for j := 0; j < len(p.blocks); {
		if !use(j) {
			j++
			continue
		}
		to := p.size
		from := j
		for j++; j < len(p.blocks) && use(j); j++ {
		}
		if j < len(p.blocks) {
			to = p.blocks[j].off
		}
		bytesRead.Add(to - p.blocks[from].off)
		if err := scanSection(p.ctx, p.file, p.blocks[from].off, to, p.blocks[from].line, lineFn, long); err != nil {
			return false, unpath(err)
		}
	}
	for buf.len() > 0 {
		if err := emit(buf.pop()); err != nil {
			return false, err
		}
	}
	for _, pt := range whole.Sorted() {
		if err := emit(pt); err != nil {
			return false, err
		}
	}
	return picked && corrupt, nil
}

// Close releases the writer lock. Further calls fail.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.log != nil {
		if err := s.log.Close(); err != nil {
			return fmt.Errorf("close %s: %w", s.path, err)
		}
	}
	return nil
}

// Prune drops the probe and heartbeat lines timed before cut, writing the
// file anew (docs/schema.md, the file store's retention). Only a writer prunes.
func (s *Store) Prune(ctx context.Context, cut time.Time) (store.Pruned, error) {
	var st store.Pruned
	if err := ctx.Err(); err != nil {
		return st, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writable("prune"); err != nil {
		return st, err
	}
	if s.log == nil {
		return st, fmt.Errorf("prune %s: %w", s.path, errBeside)
	}
	if err := s.log.check(); err != nil {
		return st, fmt.Errorf("prune %s: %w", s.path, err)
	}
	if err := lockExclusive(s.log.f); err != nil {
		return st, fmt.Errorf("prune %s: lock: %w", s.path, err)
	}
	locked := s.log.f
	defer func() { _ = unlock(locked) }()
	var opts []atomicfile.Option
	if s.pruneHook != nil {
		opts = append(opts, atomicfile.Hook(s.pruneHook))
	}
	err := atomicfile.WriteFile(s.path, func(tmp string) error {
		out, err := os.OpenFile(tmp, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		defer func() { _ = out.Close() }()
		bw := bufio.NewWriterSize(out, 1<<20)
		err = store.ScanLines(ctx, io.NewSectionReader(locked, 0, 1<<62), func(n int64, line []byte, terminated bool) error {
			if !terminated {
				return nil
			}
			if k := store.KindOf(line); k == store.KindProbe || k == store.KindHeartbeat {
				if ns, ok := store.LineTime(line); ok && ns < cut.UnixNano() {
					if k == store.KindProbe {
						st.Probes++
					} else {
						st.Heartbeats++
					}
					return nil
				}
			}
			st.Kept++
			_, _ = bw.Write(line)
			return bw.WriteByte('\n')
		}, func(n int64) {
			st.Long++
			s.o.Warn("prune dropped a corrupt line: longer than 1 MiB", "path", s.path, "line", n)
		})
		if err == nil {
			err = bw.Flush()
		}
		if err == nil {
			err = out.Close()
		}
		return err
	}, opts...)
	if err != nil {
		return store.Pruned{}, fmt.Errorf("prune %s: %w", s.path, unpath(err))
	}
	if err := s.log.reopen(); err != nil {
		return st, fmt.Errorf("prune %s: reopen after the rename: %w", s.path, err)
	}
	return st, nil
}

var errBeside = errors.New("only the writer that holds the file prunes it")

// reopen points l at the file its path names now, keeping the writer lock.
func (l *Log) reopen() error {
	f, err := os.OpenFile(l.path, os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return unpath(err)
	}
	_ = l.f.Close()
	l.f = f
	return nil
}

// reorder is a min-heap of points by time, series, then the order they
// were put in, so that pop keeps the one a read keeps (store.Replaces).
type reorder[T store.Point] struct {
	h     []entry
	slots []T
	free  []int32
	seq   int64
}

type entry struct {
	ns, seq int64
	slot    int32
}

func (r *reorder[T]) len() int      { return len(r.h) }
func (r *reorder[T]) oldest() int64 { return r.h[0].ns }

func (r *reorder[T]) less(i, j int) bool {
	a, b := &r.h[i], &r.h[j]
	if a.ns != b.ns {
		return a.ns < b.ns
	}
	if c := store.Compare(store.KeyOf(&r.slots[a.slot]), store.KeyOf(&r.slots[b.slot])); c != 0 {
		return c < 0
	}
	return a.seq < b.seq
}

func (r *reorder[T]) put(p T) {
	r.seq++
	var slot int32
	if n := len(r.free); n > 0 {
		slot, r.free = r.free[n-1], r.free[:n-1]
		r.slots[slot] = p
	} else {
		slot = int32(len(r.slots))
		r.slots = append(r.slots, p)
	}
	r.h = append(r.h, entry{store.KeyOf(&r.slots[slot]).NS, r.seq, slot})
	for i := len(r.h) - 1; i > 0 && r.less(i, (i-1)/2); i = (i - 1) / 2 {
		r.h[i], r.h[(i-1)/2] = r.h[(i-1)/2], r.h[i]
	}
}

// popOne takes the top entry off the heap and returns its slot.
func (r *reorder[T]) popOne() int32 {
	slot := r.h[0].slot
	r.free = append(r.free, slot)
	last := len(r.h) - 1
	r.h[0], r.h = r.h[last], r.h[:last]
	for i := 0; ; {
		small, l := i, 2*i+1
		if l < len(r.h) && r.less(l, small) {
			small = l
		}
		if l+1 < len(r.h) && r.less(l+1, small) {
			small = l + 1
		}
		if small == i {
			return slot
		}
		r.h[i], r.h[small] = r.h[small], r.h[i]
		i = small
	}
}

// pop returns the oldest point, the one a read keeps of its key.
func (r *reorder[T]) pop() T {
	best := r.popOne()
	for len(r.h) > 0 && store.KeyOf(&r.slots[r.h[0].slot]) == store.KeyOf(&r.slots[best]) {
		if next := r.popOne(); store.Replaces(&r.slots[best], &r.slots[next]) {
			best = next
		}
	}
	return r.slots[best]
}
