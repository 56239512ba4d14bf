// Package spool is a layer around any store.Store that loses nothing while
// the store is unreachable (docs/schema.md, the spool and the dead-letter
// file).
package spool

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
)

// ErrSpoolFull is returned (wrapped) by Write when the inner store cannot
// take the points and the spool is at its cap: those points are not stored.
var ErrSpoolFull = errors.New("spool is full")

// Options configure Open.
type Options struct {
	Path       string // a regular file (file.ErrNotRegular)
	DeadLetter string // refused points and foreign lines; "": Path+".dead"
	MaxBytes   int64  // the spool's cap; 0: store.DefaultSpoolMaxBytes
	// ReadOnly reads only, without a lock: reads merge the spool's points.
	ReadOnly bool
	// Beside reads as ReadOnly and writes to the inner store; what that
	// fails goes to the inbox (Path + store.InboxSuffix), counted as
	// stored, for the spool's writer to replay.
	Beside bool
	// Hours, when set, keeps the hourly invariant through the spool (hours
	// keyed in this zone): the hours of replayed, dead-lettered and
	// Batch.Rebuild probes are rebuilt once they reach the store.
	Hours *time.Location
	// Warn receives problems that are not fatal (slog-style); nil discards.
	Warn func(msg string, args ...any)
}

// Spool wraps a store (docs/schema.md#the-spool-and-the-dead-letter-file).
// The spool is emptied only when every point in it is in the store or the
// dead-letter file and its hours were rebuilt. Heartbeats are not spooled.
type Spool struct {
	inner store.Store
	o     Options

	mu     sync.RWMutex // writes and replays; reads hold it shared
	file   *file.Log    // nil when read-only or beside
	dead   *file.Log    // opened on first use
	closed bool

	inbox      string        // Path + InboxSuffix, resolved
	depth      atomic.Int64  // points in the spool (Beside: those this spool left in the inbox)
	hasDead    atomic.Bool   // the dead-letter file may hold points (a writer's reads merge it)
	pending    []store.Probe // probes whose hours wait for the next write that goes through (under mu)
	unreadable atomic.Bool   // a read-only spool warned that it cannot read the file
}

var _ store.Store = (*Spool)(nil)

// Open wraps inner. A writer takes the spool's lock and counts its points.
func Open(inner store.Store, o Options) (*Spool, error) {
	if o.Path == "" {
		return nil, errors.New("spool: no path")
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = store.DefaultSpoolMaxBytes
	}
	o.DeadLetter = cmp.Or(o.DeadLetter, o.Path+".dead")
	if o.Warn == nil {
		o.Warn = func(string, ...any) {}
	}
	if o.ReadOnly && o.Beside {
		return nil, errors.New("spool: ReadOnly and Beside: choose one")
	}
	s := &Spool{inner: inner, o: o, inbox: o.Path + store.InboxSuffix}
	if o.ReadOnly || o.Beside {
		if resolved, err := file.Resolve(o.Path); err == nil {
			s.inbox = resolved + store.InboxSuffix // the writer's, whatever link names the spool
		}
		return s, nil
	}
	f, err := file.OpenLog(o.Path, false, o.Warn)
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err) // names the path
	}
	s.o.Path, s.inbox = f.Path(), f.Path()+store.InboxSuffix
	var lines int64
	err = f.Lines(context.Background(), func(_ int64, line []byte, _ bool) error {
		if store.KindOf(line) != store.KindBlank {
			lines++
		}
		return nil
	})
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("spool %s: %w", s.o.Path, err)
	}
	s.file = f
	s.depth.Store(lines)
	if fi, err := os.Stat(s.o.DeadLetter); err == nil && fi.Size() > 0 {
		s.hasDead.Store(true) // reads merge it: its probes were sent
		if o.Hours != nil {
			// Their hours may not count them yet (a crash before the rebuild).
			all := store.Between(time.Unix(0, -1<<63), time.Unix(0, 1<<63-1)).Filter()
			err := file.Scan(context.Background(), s.o.DeadLetter, store.KindProbe, all, func(line []byte) error {
				var p store.Probe
				if store.Decode(nil, line, &p) == nil {
					s.pending = append(s.pending, p)
				}
				return nil
			})
			if err != nil {
				o.Warn("dead-letter file not readable; the hours of its probes are not rebuilt", "dead_letter", s.o.DeadLetter, "err", err.Error())
			}
		}
	}
	if lines > 0 {
		o.Warn("spool holds lines from an earlier run; they are replayed at the next write", "spool", s.o.Path, "lines", lines)
	}
	return s, nil
}

// Status is the inner store's, with the spool's files and depth.
func (s *Spool) Status() store.Status {
	st := s.inner.Status()
	st.Spooled, st.Spool, st.Inbox, st.DeadLetter = int(s.depth.Load()), s.o.Path, s.inbox, s.o.DeadLetter
	return st
}

// Prune prunes the inner store.
func (s *Spool) Prune(ctx context.Context, cut time.Time) (store.Pruned, error) {
	return s.inner.Prune(ctx, cut)
}

// Write writes the heartbeats to the inner store, then replays the spool
// and writes the other points. A *store.RefusedError (wrapped) names points
// that went to the dead-letter file. A Defer batch is spooled at once.
func (s *Spool) Write(ctx context.Context, b store.Batch) error {
	if _, err := store.AppendLines(nil, b); err != nil { // an invalid point fails the whole batch
		return fmt.Errorf("spool: %w", err)
	}
	var beats error
	if len(b.Heartbeats) > 0 {
		beats = s.inner.Write(ctx, store.Batch{Heartbeats: b.Heartbeats})
		if b.Heartbeats = nil; b.Len() == 0 {
			return beats
		}
	}
	if s.o.Beside {
		return store.JoinErrors(beats, s.hand(ctx, b))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writableLocked(); err != nil {
		return store.JoinErrors(beats, err)
	}
	body, _ := store.AppendLines(nil, b) // checked above
	s.adoptOrWarn()
	if b.Defer {
		return store.JoinErrors(beats, s.toSpool(body, b.Len(), errors.New("deferred until the store can be read")))
	}
	errs := []error{beats}
	if s.depth.Load() > 0 {
		if err := s.drainLocked(ctx); err != nil {
			var re *store.RefusedError
			var de deadLetterError
			switch {
			case errors.As(err, &de): // refused points wait in the spool: queue behind them
				return store.JoinErrors(beats, err, s.toSpool(body, b.Len(), err))
			case !errors.As(err, &re): // still unreachable: queue behind the older points
				return store.JoinErrors(beats, s.toSpool(body, b.Len(), err))
			}
			errs = append(errs, err)
		}
	}
	if b.Len() == 0 {
		return store.JoinErrors(errs...)
	}
	refused, cause, err := s.deliver(ctx, b)
	switch {
	case err != nil:
		errs = append(errs, s.toSpool(body, b.Len(), err))
	case refused.Len() > 0:
		errs = append(errs, s.deadLetter(refused, b.Len(), cause))
	default:
		if err := s.rebuildPendingLocked(ctx); err != nil {
			s.o.Warn("hours of dead-lettered probes not rebuilt; tried again at the next write", "err", err.Error())
		}
	}
	err = store.JoinErrors(errs...)
	if err == nil && b.Rebuild && s.o.Hours != nil {
		s.pending = append(s.pending, b.Probes...)
	}
	return err
}

// writableLocked fails on a spool closed or read-only.
func (s *Spool) writableLocked() error {
	switch {
	case s.closed:
		return fmt.Errorf("spool %s: %w", s.o.Path, os.ErrClosed)
	case s.file == nil:
		return fmt.Errorf("spool %s: %w", s.o.Path, store.ErrReadOnly)
	}
	return nil
}

// Drain replays the spool now: nil when it is empty afterwards, else the
// failure that stopped it or a *store.RefusedError.
func (s *Spool) Drain(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writableLocked(); err != nil {
		return err
	}
	s.adoptOrWarn()
	if s.depth.Load() == 0 {
		return s.rebuildPendingLocked(ctx)
	}
	return s.drainLocked(ctx)
}

// deliver writes b to the inner store and returns the points it refused for
// good (a 400 or 413 batch split in halves) with the first cause, or the
// passing failure that stopped it (then none of b counts as delivered).
func (s *Spool) deliver(ctx context.Context, b store.Batch) (refused store.Batch, cause, err error) {
	err = s.inner.Write(ctx, store.Batch{Probes: b.Probes, Hourly: b.Hourly})
	var re *store.RefusedError
	if err == nil || !errors.As(err, &re) {
		return store.Batch{}, nil, err
	}
	if b.Len() < 2 || (re.Status != 400 && re.Status != 413) {
		return b, refusal{status: re.Status, err: re.Err}, nil
	}
	n := b.Len() / 2 // two halves, each not empty
	l, r := store.Batch{Probes: b.Probes[:min(n, len(b.Probes))]}, store.Batch{Probes: b.Probes[min(n, len(b.Probes)):], Hourly: b.Hourly}
	if n > len(b.Probes) {
		k := n - len(b.Probes)
		l.Hourly, r.Hourly = b.Hourly[:k], b.Hourly[k:]
	}
	refL, causeL, err := s.deliver(ctx, l)
	if err != nil {
		return store.Batch{}, nil, err
	}
	refR, causeR, err := s.deliver(ctx, r)
	if err != nil {
		return store.Batch{}, nil, err
	}
	refL.Probes, refL.Hourly = append(refL.Probes, refR.Probes...), append(refL.Hourly, refR.Hourly...)
	return refL, cmp.Or(causeL, causeR), nil
}

// deadLetter appends refused points to the dead-letter file, or when it
// cannot, to the spool, and says so.
func (s *Spool) deadLetter(refused store.Batch, of int, cause error) error {
	body, err := store.AppendLines(nil, refused)
	if err != nil {
		return fmt.Errorf("spool: dead-letter: %w", err)
	}
	n := refused.Len()
	re := &store.RefusedError{Points: n, Status: refusedStatus(cause), Err: fmt.Errorf("%d of %d points: %w", n, of, cause)}
	if err := s.appendDead(body); err != nil {
		if serr := s.toSpool(body, n, err); serr != nil {
			return fmt.Errorf("spool: %d refused points lost: dead-letter file %s: %w; %w", n, s.o.DeadLetter, err, serr)
		}
		re.Err = fmt.Errorf("%d of %d points: %w; kept in spool %s: the dead-letter file %s cannot be written: %w",
			n, of, cause, s.o.Path, s.o.DeadLetter, err)
		return re
	}
	re.DeadLetter = s.o.DeadLetter
	if s.o.Hours != nil {
		s.pending = append(s.pending, refused.Probes...)
	}
	return re
}

// rebuildPendingLocked rebuilds the hours of the pending probes; a failure
// keeps them pending.
func (s *Spool) rebuildPendingLocked(ctx context.Context) error {
	if len(s.pending) == 0 || s.o.Hours == nil {
		return nil
	}
	if _, err := store.Rebuild(ctx, deadView{s.inner, s}, s.o.Hours, store.Touched(s.pending, s.o.Hours)); err != nil {
		return fmt.Errorf("spool: the hours of %d dead-lettered probes not rebuilt: %w", len(s.pending), err)
	}
	s.pending = nil
	return nil
}

// deadLetterError is a failure to write the dead-letter file.
type deadLetterError struct{ err error }

func (e deadLetterError) Error() string { return e.err.Error() }
func (e deadLetterError) Unwrap() error { return e.err }

func (s *Spool) appendDead(body []byte) error {
	if s.dead == nil {
		d, err := file.OpenLog(s.o.DeadLetter, true, s.o.Warn)
		if err != nil {
			return deadLetterError{err}
		}
		s.dead = d
	}
	s.hasDead.Store(true) // even a failed append may have left a line
	if err := s.dead.Append(body); err != nil {
		return deadLetterError{err}
	}
	return nil
}

// toSpool queues points that could not be written because of cause.
func (s *Spool) toSpool(body []byte, points int, cause error) error {
	fi, err := os.Stat(s.o.Path)
	if err != nil {
		return fmt.Errorf("spool %s: %w", s.o.Path, err)
	}
	if size := fi.Size(); size+int64(len(body)) > s.o.MaxBytes {
		return fmt.Errorf("%d points not stored: %w (%s holds %d bytes, cap %d) while the store fails: %w",
			points, ErrSpoolFull, s.o.Path, size, s.o.MaxBytes, cause)
	}
	if err := s.file.Append(body); err != nil {
		return fmt.Errorf("%d points not stored: spool %s: %w", points, s.o.Path, err)
	}
	depth := s.depth.Add(int64(points))
	s.o.Warn("store write failed; points spooled for replay", "points", points, "spooled", depth, "err", cause.Error())
	if used := fi.Size() + int64(len(body)); used*10 >= s.o.MaxBytes*8 {
		s.o.Warn("SPOOL NEARLY FULL: new points will be refused at the cap; fix the store or raise store.spool_max_bytes",
			"spool", s.o.Path, "bytes", used, "cap", s.o.MaxBytes)
	}
	return nil
}

// drainLocked replays the spool in order, 5,000 points a write.
func (s *Spool) drainLocked(ctx context.Context) error {
	var (
		cur        store.Batch
		replayed   []store.Probe
		dead       []byte // refused points and foreign lines, in spool order
		accepted   int
		refusedN   int
		foreign    int
		firstCause error
	)
	flush := func() error {
		if cur.Len() == 0 {
			return nil
		}
		refused, cause, err := s.deliver(ctx, cur)
		if err != nil {
			return err
		}
		firstCause = cmp.Or(firstCause, cause)
		if dead, err = store.AppendLines(dead, refused); err != nil {
			return err
		}
		refusedN += refused.Len()
		accepted += cur.Len() - refused.Len()
		replayed = append(replayed, cur.Probes...)
		cur = store.Batch{}
		return nil
	}
	names := store.Names{}
	err := s.file.Lines(ctx, func(_ int64, line []byte, terminated bool) error {
		if !terminated {
			return nil
		}
		var err error
		switch store.KindOf(line) {
		case store.KindBlank:
			return nil
		case store.KindProbe:
			var p store.Probe
			if err = store.Decode(names, line, &p); err == nil {
				cur.Probes = append(cur.Probes, p)
			}
		case store.KindHourly:
			var h store.Hourly
			if err = store.Decode(names, line, &h); err == nil {
				cur.Hourly = append(cur.Hourly, h)
			}
		default:
			err = errors.New("not a lanewatch point")
		}
		if err != nil {
			dead, foreign = append(append(dead, line...), '\n'), foreign+1
			return nil
		}
		if cur.Len() >= 5000 {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return fmt.Errorf("spool %s: replay: %w", s.o.Path, err)
	}
	if len(dead) > 0 {
		if err := s.appendDead(dead); err != nil {
			return fmt.Errorf("spool %s kept: %d refused points and %d lines that are not lanewatch points could not go to the dead-letter file %s: %w",
				s.o.Path, refusedN, foreign, s.o.DeadLetter, err)
		}
	}
	if s.o.Hours != nil {
		all := append(replayed, s.pending...)
		if _, err := store.Rebuild(ctx, deadView{s.inner, s}, s.o.Hours, store.Touched(all, s.o.Hours)); err != nil {
			return fmt.Errorf("spool %s kept: after replay: %w", s.o.Path, err)
		}
	}
	if err := s.file.Truncate(); err != nil {
		s.o.Warn("spool replayed but could not be emptied", "spool", s.o.Path, "err", err.Error())
		return nil
	}
	s.depth.Store(0)
	s.pending = nil
	if refusedN+foreign == 0 {
		s.o.Warn("spool replayed", "spool", s.o.Path, "stored", accepted)
		return nil
	}
	s.o.Warn("spool emptied: points the store took are stored; those it refused and lines that are not lanewatch points went to the dead-letter file",
		"spool", s.o.Path, "stored", accepted, "refused", refusedN, "not_lanewatch_lines", foreign, "dead_letter", s.o.DeadLetter)
	err = fmt.Errorf("replaying spool: %d points refused, %d lines not lanewatch points", refusedN, foreign)
	if firstCause != nil {
		err = fmt.Errorf("replaying spool: %d points refused (%w), %d lines not lanewatch points", refusedN, firstCause, foreign)
	}
	return &store.RefusedError{Points: refusedN + foreign, Status: refusedStatus(firstCause), DeadLetter: s.o.DeadLetter, Err: err}
}

// refusal is the cause of a store's refusal (never nil: every
// RefusedError carries its Err), with its HTTP status.
type refusal struct {
	status int
	err    error
}

func (r refusal) Error() string { return r.err.Error() }
func (r refusal) Unwrap() error { return r.err }

// refusedStatus is the HTTP status of the refusal within err, or 0.
func refusedStatus(err error) int {
	var r refusal
	if errors.As(err, &r) {
		return r.status
	}
	return 0
}

// Close closes the spool, its dead-letter file and the inner store.
func (s *Spool) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	if s.file != nil {
		errs = append(errs, s.file.Close())
	}
	if s.dead != nil {
		errs = append(errs, s.dead.Close())
	}
	errs = append(errs, s.inner.Close())
	if err := store.JoinErrors(errs...); err != nil {
		return fmt.Errorf("spool %s: close: %w", s.o.Path, err)
	}
	return nil
}

// hand writes the points of a Beside spool: to the inner store (unless
// deferred), and when that fails, to the inbox.
func (s *Spool) hand(ctx context.Context, b store.Batch) error {
	cause := errors.New("deferred until the store can be read")
	if !b.Defer {
		if cause = s.inner.Write(ctx, b); cause == nil {
			return nil
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("spool %s: %w", s.o.Path, os.ErrClosed)
	}
	body, _ := store.AppendLines(nil, b) // Write checked the points
	if err := file.AppendShared(s.inbox, body, true); err != nil {
		return fmt.Errorf("%d points not stored: %w; inbox %s: %w", b.Len(), cause, s.inbox, err)
	}
	n := s.depth.Add(int64(b.Len()))
	s.o.Warn("store write failed; points left in the spool's inbox for the sampler that holds the spool",
		"inbox", s.inbox, "points", b.Len(), "waiting", n, "err", cause.Error())
	return nil
}

// adoptOrWarn moves the inbox's lines into the spool under the inbox's
// flock, or warns and leaves them for the next write. s.mu must be held.
func (s *Spool) adoptOrWarn() {
	err := file.Take(s.inbox, s.o.MaxBytes, s.o.Warn, func(body []byte) error {
		points := 0
		for line := range bytes.Lines(body) {
			if store.KindOf(bytes.TrimSuffix(line, []byte{'\n'})) != store.KindBlank {
				points++
			}
		}
		if points == 0 {
			return nil
		}
		return s.toSpool(body, points, errors.New("left in the inbox by a sampler beside this one"))
	})
	if err != nil {
		s.o.Warn("the spool's inbox not replayed; tried again at the next write", "err",
			fmt.Errorf("inbox %s kept: %w", s.inbox, err).Error())
	}
}
