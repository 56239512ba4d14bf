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
// take the points and the spool has reached its cap: those points are not
// stored. The points already spooled are kept.
var ErrSpoolFull = errors.New("spool is full")

// Options configure Open.
type Options struct {
	// Path is the spool file (line protocol). Anything but a regular
	// file is refused (file.ErrNotRegular).
	Path string
	// DeadLetter receives the points the inner store refused for good, and
	// lines of the spool that are not lanewatch points. Empty: Path+".dead".
	// It is only appended to and read by reads, so it may be any file that
	// takes writes.
	DeadLetter string
	// MaxBytes caps the spool; 0 means store.DefaultSpoolMaxBytes.
	MaxBytes int64
	// ReadOnly opens the spool to read only (policygen, reports): no lock
	// is taken, nothing is replayed or written, and reads merge the
	// spool's points when the file exists and can be read.
	ReadOnly bool
	// Beside opens the spool beside the process that holds it (sampler
	// probe next to the daemon): it reads as ReadOnly does, and writes go
	// to the inner store; a write the store fails, for any reason, is
	// appended to the spool's inbox (Path + store.InboxSuffix) and counts
	// as stored. The spool's writer moves the inbox into its spool at its
	// next write and replays it.
	Beside bool
	// Hours, when set, keeps the hourly invariant through the spool: once
	// every spooled point has reached the inner store, and before the
	// spool is emptied, the hours (keyed in this zone) of the replayed
	// probes are rebuilt (a failure keeps the spool whole, to be replayed
	// again), as are those of dead-lettered probes and of a Batch.Rebuild
	// after the next write that goes through.
	Hours *time.Location
	// Warn receives problems that are not fatal; msg is lowercase, args
	// slog-style key/value pairs. Nil discards.
	Warn func(msg string, args ...any)
}

// Spool wraps a store. A write the inner store fails for a passing reason
// is appended to the spool file (fsynced) and counts as stored; every later
// write first replays the spool in order, so points reach the store in the
// order they were written. Points carry fixed timestamps, so a replay that
// is cut short and done again rewrites the same points. Heartbeats are not
// spooled: one that cannot be delivered now is stale by the replay.
//
// Points the inner store refuses for good (a *store.RefusedError) go to the
// dead-letter file: for a 400 (InfluxDB's partial write) or a 413 the batch
// is split until the refused points are found, so the accepted ones are not
// dead-lettered with them. The spool is emptied only when every point in it
// is in the inner store or in the dead-letter file, and its hours were
// rebuilt: when the dead-letter file cannot be written, the spool is kept,
// refused points wait in it with the later ones, and Write says so. The
// spool holds only lanewatch points; any other line found in it goes to
// the dead-letter file at the next replay.
//
// Its inbox (Path + store.InboxSuffix) takes the points a process beside
// the writer could not store (a Beside spool); the writer moves them into
// the spool at each write, and replays them with it.
//
// Reads merge the inner store's points with the dead-lettered probes, the
// spooled points and the inbox's probes, in that order (a later one is
// newer; a reservation never replaces a settled probe, store.Replaces).
// The local files are read first and the store after (a replay in between
// moves points from the one to the other: a read may see them twice, the
// same points, never nowhere), and a store that cannot be read fails the
// read rather than return the spool alone (Reader.Local reads the local
// files alone).
type Spool struct {
	inner store.Store
	o     Options

	// mu serialises writes and replays, so the spool keeps its order; reads
	// hold it shared so that they see the store and the spool at one moment.
	mu     sync.RWMutex
	file   *file.Log // nil when read-only or beside
	dead   *file.Log // opened on first use
	closed bool

	inbox      string        // Path + InboxSuffix, resolved
	depth      atomic.Int64  // points in the spool (Beside: those this spool left in the inbox)
	hasDead    atomic.Bool   // the dead-letter file may hold points (a writer's reads merge it)
	pending    []store.Probe // probes whose hours wait for the next write that goes through (under mu)
	unreadable atomic.Bool   // a read-only spool warned that it cannot read the file
}

var _ store.Store = (*Spool)(nil)

// Open wraps inner. A writer takes the spool's lock (two samplers cannot
// share one spool) and counts the points waiting in it.
func Open(inner store.Store, o Options) (*Spool, error) {
	if o.Path == "" {
		return nil, errors.New("spool: no path")
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = store.DefaultSpoolMaxBytes
	}
	if o.DeadLetter == "" {
		o.DeadLetter = o.Path + ".dead"
	}
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
	// Lines are counted, not decoded: the replay sorts out the ones that
	// are not lanewatch points and reports them, once.
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
			// Their hours may not count them yet (a crash before the
			// rebuild): rebuilt at the first write that goes through.
			all := store.Between(time.Unix(0, -1<<63), time.Unix(0, 1<<63-1)).Filter()
			err := file.Scan(context.Background(), s.o.DeadLetter, store.KindProbe, all, nil, func(line []byte) error {
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

// Status is the inner store's, with the spool's files and the points
// that wait in it: lines, when it was opened with lines of an earlier run
// (the replay sorts out those that are not lanewatch points); for a Beside
// spool, the points it left in the inbox.
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
// and writes the other points to the inner store (see the type's doc). nil
// means every point is in the inner store or durably spooled; a
// *store.RefusedError (wrapped) names points that went to the dead-letter
// file instead. A Defer batch is spooled without trying the store.
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
	body, err := s.encodeLocked(b)
	if err != nil {
		return store.JoinErrors(beats, err)
	}
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
			case errors.As(err, &de):
				// Refused points wait in the spool for want of a dead-letter
				// file: queue behind them, and say so.
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
		// The points are stored; hours of older refusals not rebuilt yet
		// are tried again at the next write.
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

// encodeLocked checks the spool takes writes and returns the points' lines.
func (s *Spool) encodeLocked(b store.Batch) ([]byte, error) {
	switch {
	case s.closed:
		return nil, fmt.Errorf("spool %s: %w", s.o.Path, os.ErrClosed)
	case s.file == nil:
		return nil, fmt.Errorf("spool %s: %w", s.o.Path, store.ErrReadOnly)
	}
	body, err := store.AppendLines(nil, b)
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	return body, nil
}

// Drain replays the spool now. It returns nil when the spool is empty
// afterwards (or was), the passing failure that stopped the replay, or a
// *store.RefusedError for points that went to the dead-letter file.
func (s *Spool) Drain(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.encodeLocked(store.Batch{}); err != nil {
		return err
	}
	s.adoptOrWarn()
	if s.depth.Load() == 0 {
		return s.rebuildPendingLocked(ctx)
	}
	return s.drainLocked(ctx)
}

// deliver writes b to the inner store. It returns the points the store
// refused for good (found by splitting a 400 or 413 batch) with the first
// refusal's cause, or the passing failure that stopped it, in which case
// none of b counts as delivered.
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
	if causeL == nil {
		causeL = causeR
	}
	return refL, causeL, nil
}

// deadLetter appends refused points to the dead-letter file. When it cannot,
// they are spooled instead (the next replay tries again), so nothing is lost,
// and the refusal says so.
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

// rebuildPendingLocked rebuilds the hours of the pending probes
// (dead-lettered ones: reads count a refused probe in its hour; at open,
// every probe of the dead-letter file) now that a write went through. A
// failure keeps them pending and is returned.
func (s *Spool) rebuildPendingLocked(ctx context.Context) error {
	if len(s.pending) == 0 || s.o.Hours == nil {
		return nil
	}
	if _, err := store.Rebuild(ctx, deadView{s}, s.o.Hours, store.Touched(s.pending, s.o.Hours)); err != nil {
		return fmt.Errorf("spool: the hours of %d dead-lettered probes not rebuilt: %w", len(s.pending), err)
	}
	s.pending = nil
	return nil
}

// deadLetterError is a failure to write the dead-letter file. Its text does
// not name the file: callers do.
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
	s.hasDead.Store(true) // a torn append may have left a line or part of one
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

// drainLocked replays the spool in order, 5,000 points a write. A passing
// failure stops it and keeps the spool whole; refused points and foreign
// lines go to the dead-letter file; the spool is emptied only when all of
// that succeeded and the hours were rebuilt.
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
		if _, err := store.Rebuild(ctx, deadView{s}, s.o.Hours, store.Touched(all, s.o.Hours)); err != nil {
			return fmt.Errorf("spool %s kept: after replay: %w", s.o.Path, err)
		}
	}
	if err := s.file.Truncate(); err != nil {
		// Everything went through; an untruncated spool is replayed again
		// later, which rewrites the same points.
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

// refusal is the cause of a store's refusal as deliver returns it: the
// store's error text, with its HTTP status kept for the Spool's own
// RefusedError.
type refusal struct {
	status int
	err    error
}

func (r refusal) Error() string {
	if r.err == nil {
		return fmt.Sprintf("status %d", r.status)
	}
	return r.err.Error()
}
func (r refusal) Unwrap() error { return r.err }

// refusedStatus is the HTTP status of the store's refusal within err (0 when
// there is none, as for lines that are not lanewatch points), so that a
// Spool's refusal reports the store's status as the bare store's does.
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
// the batch is deferred), and, when that fails for any reason, to the
// inbox, where they count as stored: the spool's writer moves them into
// its spool at its next write and replays them.
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
	body, err := store.AppendLines(nil, b)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	if err := file.AppendShared(s.inbox, body, true); err != nil {
		return fmt.Errorf("%d points not stored: %w; inbox %s: %w", b.Len(), cause, s.inbox, err)
	}
	n := s.depth.Add(int64(b.Len()))
	s.o.Warn("store write failed; points left in the spool's inbox for the sampler that holds the spool",
		"inbox", s.inbox, "points", b.Len(), "waiting", n, "err", cause.Error())
	return nil
}

// adoptOrWarn moves the inbox's lines into the spool, to be replayed with
// it, and empties the inbox, under the inbox's flock (a process beside
// appends under it too); when it cannot, it warns and the inbox waits for
// the next write. A crash between the two leaves the lines in both: the
// replay writes the same points twice, which stores them once. s.mu must
// be held.
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
