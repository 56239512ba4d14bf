package spool

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
)

// Read hands over the points q selects, the spool's, its inbox's and the
// dead-lettered probes merged into the inner store's: a probe refused or
// not yet delivered was still sent. The local files are read first; a
// store that cannot be read fails the read (Reader.Local reads the local
// files alone).
func (s *Spool) Read(ctx context.Context, q store.Query, r store.Reader) error {
	if err := store.CheckFields(q.Fields); err != nil {
		return fmt.Errorf("spool: read: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	f := q.Filter()
	r, newest := store.NewestOf(f, r)
	var probes store.Latest[store.Probe]
	var hourly store.Latest[store.Hourly]
	if r.Probe != nil {
		if err := s.local(ctx, f, &probes); err != nil {
			return err
		}
	}
	if r.Hourly != nil && (s.file == nil || s.depth.Load() > 0) {
		if err := merge(ctx, s, s.o.Path, f, &hourly); err != nil {
			return err
		}
	}
	hm, pm := &merger[store.Hourly]{local: hourly.Sorted(), emit: r.Hourly}, &merger[store.Probe]{local: probes.Sorted(), emit: r.Probe}
	if !r.Local {
		// Nothing local to merge (the spool empty, as it mostly is): the
		// inner store's points go straight through.
		inner := store.Reader{Hourly: r.Hourly, Probe: r.Probe}
		if len(hm.local) > 0 {
			inner.Hourly = hm.next
		}
		if r.Probe != nil && (len(hm.local) > 0 || len(pm.local) > 0) {
			inner.Probe = func(p store.Probe) error { return cmp.Or(hm.rest(), pm.next(p)) }
		}
		if r.Heartbeat != nil {
			inner.Heartbeat = func(b store.Heartbeat) error { return cmp.Or(hm.rest(), pm.rest(), r.Heartbeat(b)) }
		}
		if err := s.inner.Read(ctx, q, inner); err != nil {
			return err
		}
	}
	if err := cmp.Or(hm.rest(), pm.rest()); err != nil {
		return err
	}
	return newest()
}

// merger merges sorted local points into a stream in Read's order; of two
// of one key, the local one is the later write.
type merger[T store.Point] struct {
	local []T
	emit  func(T) error
}

func (m *merger[T]) next(p T) error {
	k := store.KeyOf(&p)
	for len(m.local) > 0 {
		q := m.local[0]
		c := store.Compare(store.KeyOf(&q), k)
		if c > 0 {
			break
		}
		m.local = m.local[1:]
		if c == 0 {
			if store.Replaces(&p, &q) {
				p = q
			}
		} else if err := m.emit(q); err != nil {
			return err
		}
	}
	return m.emit(p)
}

// rest hands over the local points left.
func (m *merger[T]) rest() error {
	for len(m.local) > 0 {
		q := m.local[0]
		m.local = m.local[1:]
		if err := m.emit(q); err != nil {
			return err
		}
	}
	return nil
}

// local adds the probes f selects from the dead-letter file, the spool,
// then the inbox, which is read first: an adoption in between shows its
// lines twice, never nowhere. s.mu must be held.
func (s *Spool) local(ctx context.Context, f *store.Filter, l *store.Latest[store.Probe]) error {
	var inbox store.Latest[store.Probe]
	if fi, err := os.Stat(s.inbox); s.file == nil || (err == nil && fi.Size() > 0) {
		if err := merge(ctx, s, s.inbox, f, &inbox); err != nil {
			return err
		}
	}
	if s.file == nil || s.hasDead.Load() {
		if err := merge(ctx, s, s.o.DeadLetter, f, l); err != nil {
			return err
		}
	}
	if s.file == nil || s.depth.Load() > 0 {
		if err := merge(ctx, s, s.o.Path, f, l); err != nil {
			return err
		}
	}
	for _, p := range inbox.Sorted() {
		l.Put(p)
	}
	return nil
}

// merge adds the points of T that f selects in the file at path to l. The
// spool a writer holds must be readable; other files merge nothing when
// missing, and a read-only spool's warn once when unreadable. Lines that
// do not decode are skipped: the replay reports them.
func merge[T store.Point](ctx context.Context, s *Spool, path string, f *store.Filter, l *store.Latest[T]) error {
	if f.Empty() {
		return nil
	}
	var got []T // merged only once the whole file was read
	names := store.Names{}
	err := file.Scan(ctx, path, store.KindFor[T](), f, func(line []byte) error {
		var p T
		if store.Decode(names, line, &p) == nil && store.Selects(f, &p) {
			got = append(got, p)
		}
		return nil
	})
	switch {
	case err == nil:
		for _, p := range got {
			l.Put(p)
		}
	case ctx.Err() != nil || (s.file != nil && path == s.o.Path):
		return fmt.Errorf("spool %s: %w", path, err)
	case errors.Is(err, fs.ErrNotExist): // nothing spooled or refused, or no sampler yet
	case s.file != nil:
		what := "dead-letter file"
		if path == s.inbox {
			what = "inbox"
		}
		return fmt.Errorf("spool: %s %s: %w", what, path, err)
	default:
		if !s.unreadable.Swap(true) {
			s.o.Warn("spool not readable; reads show only what the store holds", "spool", path, "err", err.Error())
		}
	}
	return nil
}

// deadView is the inner store with the dead-lettered probes merged into its
// reads: what hours are rebuilt from. Its user holds s.mu.
type deadView struct {
	store.Store // the inner store
	s           *Spool
}

func (v deadView) Read(ctx context.Context, q store.Query, r store.Reader) error {
	f := q.Filter()
	r, newest := store.NewestOf(f, r)
	var dead store.Latest[store.Probe]
	if r.Probe != nil && v.s.hasDead.Load() {
		if err := merge(ctx, v.s, v.s.o.DeadLetter, f, &dead); err != nil {
			return err
		}
	}
	m := &merger[store.Probe]{local: dead.Sorted(), emit: r.Probe}
	if r.Probe != nil {
		r.Probe = m.next
	}
	if err := v.Store.Read(ctx, q, r); err != nil {
		return err
	}
	if err := m.rest(); err != nil {
		return err
	}
	return newest()
}
