package series

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
)

// Probes returns the probe points q selects, dead-lettered and spooled
// ones included: a probe the store refused, or has not received yet, was
// still sent, so budgets, back-offs and the hours rebuilt count it.
func (s *Spool) Probes(ctx context.Context, q Query) ([]Probe, error) {
	return spoolRead(ctx, s, q, s.inner.Probes, kindProbe, decodeProbe, probeKey)
}

// Hourly returns the hourly points q selects, spooled ones included.
// Refused hourly points (the dead letter) are not merged: the hours are
// rebuilt from the probes, which are.
func (s *Spool) Hourly(ctx context.Context, q Query) ([]Hourly, error) {
	return spoolRead(ctx, s, q, s.inner.Hourly, kindHourly, decodeHourly, hourlyKey)
}

// LocalProbes returns the probe points q selects that the spool and the
// dead-letter file hold, without asking the inner store: what a sampler
// knows of its own recent probes when the store cannot be read (a spooled
// 429 still backs its lane off).
func (s *Spool) LocalProbes(ctx context.Context, q Query) ([]Probe, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	l := newLatest(probeKey)
	if err := localMerge(ctx, s, l, q.matcher(), true, kindProbe, decodeProbe); err != nil {
		return nil, err
	}
	return l.sorted(), nil
}

// LocalReader is a layer that keeps points on local disk (a Spool) and can
// read them when the store cannot be.
type LocalReader interface {
	LocalProbes(ctx context.Context, q Query) ([]Probe, error)
}

var _ LocalReader = (*Spool)(nil)

func spoolRead[T any](ctx context.Context, s *Spool, q Query, read func(context.Context, Query) ([]T, error),
	kind pointKind, decode func([]byte) (T, error), key func(*T) pointKey) ([]T, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	pts, err := read(ctx, q)
	if err != nil {
		return nil, err
	}
	m := q.matcher()
	if none, err := spoolAddsNothing(ctx, s, m, kind, decode, key); err != nil {
		return nil, err
	} else if none {
		return pts, nil
	}
	return spoolMerge(ctx, s, pts, m, kind, decode, key)
}

// spoolMerge returns the inner store's points pts merged with those of
// kind that m selects in the dead-letter file (for probes) and the spool,
// a later line replacing an earlier point (as latest does). s.mu
// must be held (shared is enough).
func spoolMerge[T any](ctx context.Context, s *Spool, pts []T, m *matcher, kind pointKind,
	decode func([]byte) (T, error), key func(*T) pointKey) ([]T, error) {
	l := newLatest(key)
	for _, p := range pts {
		l.put(p)
	}
	if err := localMerge(ctx, s, l, m, kind == kindProbe, kind, decode); err != nil {
		return nil, err
	}
	return l.sorted(), nil
}

// spoolAddsNothing reports whether the spool's files (and, for probes,
// the dead letter) hold no point of kind that m selects, so that a read is
// the inner store's alone. s.mu must be held (shared is enough).
func spoolAddsNothing[T any](ctx context.Context, s *Spool, m *matcher, kind pointKind,
	decode func([]byte) (T, error), key func(*T) pointKey) (bool, error) {
	withDead := kind == kindProbe
	if s.file != nil {
		return s.depth.Load() == 0 && (!withDead || !s.hasDead.Load()), nil
	}
	// A reader's spool is another process's: read its files first and
	// leave the store's points as they are when they add nothing (the
	// usual case), rather than put a month of points through the map.
	local := newLatest(key)
	if err := localMerge(ctx, s, local, m, withDead, kind, decode); err != nil {
		return false, err
	}
	return len(local.idx) == 0, nil
}

// HourlyEach hands fn the hourly points q selects an hour at a time
// (HourlyStreamer): through the inner store's streaming read when the
// spool adds nothing to it, otherwise from the merged whole read. fn runs
// under the spool's read lock, so that the read sees the spool and the
// store at one moment: it must not call the spool, not even to read (a
// read waits behind a writer waiting for the lock: deadlock).
func (s *Spool) HourlyEach(ctx context.Context, q Query, fn func(hour []Hourly) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	m := q.matcher()
	none, err := spoolAddsNothing(ctx, s, m, kindHourly, decodeHourly, hourlyKey)
	if err != nil {
		return err
	}
	if none {
		return EachHourly(ctx, s.inner, q, fn)
	}
	pts, err := s.inner.Hourly(ctx, q)
	if err != nil {
		return err
	}
	hs, err := spoolMerge(ctx, s, pts, m, kindHourly, decodeHourly, hourlyKey)
	if err != nil {
		return err
	}
	return eachRun(hs, hourlyKey, fn)
}

var _ HourlyStreamer = (*Spool)(nil)

// localMerge adds to l the points of kind that m selects from the
// dead-letter file (when withDead) and then the spool: the order they were
// written in, as neither file holds a point older than one the other got
// before it. s.mu must be held (shared is enough).
func localMerge[T any](ctx context.Context, s *Spool, l *latest[T], m *matcher, withDead bool, kind pointKind,
	decode func([]byte) (T, error)) error {
	if withDead && (s.file == nil || s.hasDead.Load()) {
		if err := fileMerge(ctx, s, s.o.DeadLetter, l, m, kind, decode); err != nil {
			return err
		}
	}
	if s.file != nil && s.depth.Load() == 0 {
		return nil
	}
	return fileMerge(ctx, s, s.o.Path, l, m, kind, decode)
}

// fileMerge adds the points of kind want that m selects in the file at
// path (the spool or the dead-letter file) to l, a later line replacing an
// earlier one as latest rules. s.mu must be held
// (shared is enough). The spool a writer holds must be readable; a
// dead-letter file that does not exist yet, or a read-only spool's files,
// merge nothing when they are missing, and warn, once per Spool, when they
// cannot be read (another user's file, anything in its way). Lines that do
// not decode are skipped here without a word: the next replay moves the
// spool's to the dead-letter file and reports them.
func fileMerge[T any](ctx context.Context, s *Spool, path string, l *latest[T], m *matcher, want pointKind,
	decode func([]byte) (T, error)) error {
	if m.empty() {
		return nil
	}
	var got []T // merged only once the whole file was read
	err := scanKind(ctx, path, want, m, nil, func(line []byte) error {
		if p, err := decode(line); err == nil {
			got = append(got, p)
		}
		return nil
	})
	switch {
	case err == nil:
		for _, p := range got {
			l.putIn(p, m)
		}
	case ctx.Err() != nil || (s.file != nil && path == s.o.Path):
		return fmt.Errorf("spool %s: %w", path, err)
	case errors.Is(err, fs.ErrNotExist): // nothing spooled or refused, or no sampler yet
	default:
		if s.file != nil {
			return fmt.Errorf("spool: dead-letter file %s: %w", path, err)
		}
		if !s.unreadable.Swap(true) {
			s.o.Warn("spool not readable; reads show only what the store holds", "spool", path, "err", err.Error())
		}
	}
	return nil
}
