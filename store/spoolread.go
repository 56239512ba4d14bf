package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
)

// Probes returns the probe points q selects, dead-lettered, spooled and
// inbox ones included: a probe the store refused, or has not received yet,
// was still sent, so budgets, back-offs and the hours rebuilt count it.
func (s *Spool) Probes(ctx context.Context, q Query) ([]Probe, error) {
	return spoolRead(ctx, s, q, s.inner.Probes, kindProbe, decodeProbe, probeKey)
}

// Hourly returns the hourly points q selects, spooled ones included.
// Refused hourly points (the dead letter) are not merged: the hours are
// rebuilt from the probes, which are.
func (s *Spool) Hourly(ctx context.Context, q Query) ([]Hourly, error) {
	return spoolRead(ctx, s, q, s.inner.Hourly, kindHourly, decodeHourly, hourlyKey)
}

// LocalProbes returns the probe points q selects that the spool, its inbox
// and the dead-letter file hold, without asking the inner store: what a sampler
// knows of its own recent probes when the store cannot be read (a spooled
// 429 still backs its lane off).
func (s *Spool) LocalProbes(ctx context.Context, q Query) ([]Probe, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	l := newLatest(probeKey)
	if err := localMerge(ctx, s, l, q.matcher(), kindProbe, decodeProbe); err != nil {
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
	local := newLatest(key)
	if err := localMerge(ctx, s, local, q.matcher(), kind, decode); err != nil {
		return nil, err
	}
	pts, err := read(ctx, q)
	if err != nil || len(local.idx) == 0 {
		// The usual case: the local files add nothing, and a month of
		// the store's points need not go through the map.
		return pts, err
	}
	return mergeLocal(pts, local), nil
}

// mergeLocal returns the store's points pts with the local files' points
// put after them, as latest keeps them.
func mergeLocal[T any](pts []T, local *latest[T]) []T {
	l := newLatest(local.key)
	for _, p := range pts {
		l.put(p)
	}
	for _, p := range local.out {
		l.put(p)
	}
	return l.sorted()
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
	local := newLatest(hourlyKey)
	if err := localMerge(ctx, s, local, q.matcher(), kindHourly, decodeHourly); err != nil {
		return err
	}
	if len(local.idx) == 0 {
		return EachHourly(ctx, s.inner, q, fn)
	}
	pts, err := s.inner.Hourly(ctx, q)
	if err != nil {
		return err
	}
	return eachRun(mergeLocal(pts, local), hourlyKey, fn)
}

var _ HourlyStreamer = (*Spool)(nil)

// localMerge adds to l the points of kind that m selects from the spool's
// local files: for probes the dead-letter file, then the spool, then the
// inbox; for hourly points the spool alone (the hours of refused and
// inbox probes are rebuilt from them). The dead letter and the spool
// merge in the order they were written in, as neither file holds a point
// older than one the other got before it. The files are read before the
// caller reads the store, and the inbox before the spool: a writer's
// replay moves points from the spool to the store, its adoption from the
// inbox to the spool, and a read in between then sees them twice (the
// same points), never nowhere. s.mu must be held (shared is enough).
func localMerge[T any](ctx context.Context, s *Spool, l *latest[T], m *matcher, kind pointKind,
	decode func([]byte) (T, error)) error {
	probes := kind == kindProbe
	var inbox *latest[T]
	if probes && (s.file == nil || s.inboxHolds()) {
		inbox = newLatest(l.key)
		if err := fileMerge(ctx, s, s.inbox, inbox, m, kind, decode); err != nil {
			return err
		}
	}
	if probes && (s.file == nil || s.hasDead.Load()) {
		if err := fileMerge(ctx, s, s.o.DeadLetter, l, m, kind, decode); err != nil {
			return err
		}
	}
	if s.file == nil || s.depth.Load() > 0 {
		if err := fileMerge(ctx, s, s.o.Path, l, m, kind, decode); err != nil {
			return err
		}
	}
	if inbox != nil {
		for _, p := range inbox.out {
			l.put(p)
		}
	}
	return nil
}

// fileMerge adds the points of kind want that m selects in the file at
// path (the spool, the dead-letter file or the inbox) to l, a later line
// replacing an earlier one as latest rules. s.mu must be held (shared is
// enough). The spool a writer holds must be readable; a dead-letter file
// or an inbox that does not exist yet, or a read-only spool's files,
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
			what := "dead-letter file"
			if path == s.inbox {
				what = "inbox"
			}
			return fmt.Errorf("spool: %s %s: %w", what, path, err)
		}
		if !s.unreadable.Swap(true) {
			s.o.Warn("spool not readable; reads show only what the store holds", "spool", path, "err", err.Error())
		}
	}
	return nil
}
