package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
)

// Defaults of a spool, relative to the config file's folder.
const (
	DefaultSpoolPath            = "data/spool.lp"
	DefaultDeadLetterPath       = "data/dead-letter.lp"
	DefaultSpoolMaxBytes  int64 = 64 << 20
)

// replayBatch is how many spooled points go into one write of the inner store.
const replayBatch = 5000

// ErrSpoolFull is returned (wrapped) by Spool.Write when the inner store
// cannot take the points and the spool has reached its cap: those points
// are not stored. The points already spooled are kept.
var ErrSpoolFull = errors.New("spool is full")

// SpoolOptions configure OpenSpool.
type SpoolOptions struct {
	// Path is the spool file (line protocol). Anything but a regular
	// file is refused (ErrNotRegular).
	Path string
	// DeadLetter receives the points the inner store refused for good, and
	// lines of the spool that are not lanewatch points. Empty: Path+".dead".
	// It is only appended to, never read, so it may be any file that takes
	// writes.
	DeadLetter string
	// MaxBytes caps the spool; 0 means DefaultSpoolMaxBytes.
	MaxBytes int64
	// ReadOnly opens the spool for reading only (policygen, reports): no
	// lock is taken, nothing is replayed or written, and reads merge the
	// spool's points when the file exists and can be read.
	ReadOnly bool
	// Beside opens the spool beside the process that holds it (sampler
	// probe next to the daemon): it reads as ReadOnly does, and writes go
	// to the inner store; a write the store fails, for any reason, is
	// appended to the spool's inbox (Path + InboxSuffix) and counts as
	// stored. The spool's writer moves the inbox into its spool at its
	// next write and replays it.
	Beside bool
	// Warn receives non-fatal problems; msg is lowercase, args are
	// slog-style key/value pairs. Nil discards.
	Warn func(msg string, args ...any)
	// AfterReplay, when set, runs once every spooled point has reached the
	// inner store and before the spool is emptied, with the probe points
	// that were replayed (Recorder rebuilds their hours here). An error
	// keeps the spool whole, to be replayed again.
	AfterReplay func(ctx context.Context, inner Store, replayed []Probe) error
}

// Spool is a layer around any Store that loses nothing while the store is
// unreachable. A write the inner store fails for a passing reason is
// appended to the spool file (fsynced) and counts as stored; every later
// write first replays the spool in order, so points reach the store in the
// order they were written. Points carry fixed timestamps, so a replay that
// is cut short and done again rewrites the same points.
//
// Points the inner store refuses for good (a *RefusedError) go to the
// dead-letter file: for a 400 (InfluxDB's partial write) or a 413 the batch
// is split until the refused points are found, so the accepted ones are not
// dead-lettered with them. The spool is emptied only when every point in it
// is in the inner store or in the dead-letter file, and AfterReplay agreed:
// when the dead-letter file cannot be written, the spool is kept, refused
// points wait in it with the later ones, and Write says so.
//
// The spool holds only lanewatch points (probe and queue_hourly); any other
// line found in it goes to the dead-letter file at the next replay.
//
// Its inbox (Path + InboxSuffix) takes the points a process beside the
// writer could not store (a Beside spool: sampler probe next to the
// daemon), appended under the inbox's flock; the writer moves them into
// the spool at each write, and replays them with it.
//
// Reads merge the inner store's points with the dead-lettered probes, the
// spooled points and the inbox's probes (in that order: a later one is
// newer). The local files are read first and the store after (a replay in
// between moves points from the one to the other), and a store that
// cannot be read fails the read rather than return the spool alone
// (LocalProbes reads the local files alone). A
// dead-lettered or spooled reservation never replaces a settled probe
// (settledWins, as in every read).
type Spool struct {
	inner Store
	o     SpoolOptions

	// mu serialises writes and replays, so the spool keeps its order; reads
	// hold it shared so that they see the store and the spool at one moment.
	mu     sync.RWMutex
	enc    encoder
	file   *appendFile // nil when read-only
	dead   *appendFile // opened on first use
	closed bool

	inbox      string       // Path + InboxSuffix, resolved
	depth      atomic.Int64 // points in the spool (Beside: those this spool left in the inbox)
	hasDead    atomic.Bool  // the dead-letter file may hold points (a writer's reads merge it)
	pending    []Probe      // dead-lettered probes whose hours wait for AfterReplay (under mu)
	unreadable atomic.Bool  // a read-only spool warned that it cannot read the file
}

var (
	_ Store   = (*Spool)(nil)
	_ Depther = (*Spool)(nil)
)

// OpenSpool wraps inner. A writer takes the spool's lock (two samplers
// cannot share one spool) and counts the points waiting in it.
func OpenSpool(inner Store, o SpoolOptions) (*Spool, error) {
	if o.Path == "" {
		return nil, errors.New("spool: no path")
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultSpoolMaxBytes
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
	s := &Spool{inner: inner, o: o, inbox: o.Path + InboxSuffix}
	if resolved, err := resolve(o.Path); err == nil {
		s.inbox = resolved + InboxSuffix // the writer's, whatever link names the spool
	}
	if o.ReadOnly || o.Beside {
		return s, nil
	}
	if err := checkRegular(o.Path); err != nil {
		return nil, fmt.Errorf("spool: %w", err) // names the path
	}
	path, err := resolve(o.Path)
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err) // names the path
	}
	s.o.Path = path
	f, err := openAppend(path, o.Warn)
	if err == nil {
		err = f.regular()
	}
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err) // names the path
	}
	// Lines are counted, not decoded: the replay sorts out the ones that
	// are not lanewatch points and reports them, once.
	var lines int64
	err = f.read(context.Background(), func(_ int64, line []byte, terminated bool) error {
		if kindOf(line) != kindSkip {
			lines++
		}
		return nil
	})
	if err != nil {
		_ = f.close()
		return nil, fmt.Errorf("spool %s: %w", path, err)
	}
	s.file = f
	s.depth.Store(lines)
	if fi, err := os.Stat(s.o.DeadLetter); err == nil && fi.Size() > 0 {
		s.hasDead.Store(true) // reads merge it: its probes were sent
		if o.AfterReplay != nil {
			// Their hours may not count them yet (a crash before the
			// rebuild): rebuild them at the first write that goes through.
			err := scanKind(context.Background(), s.o.DeadLetter, kindProbe, Between(minTime, maxTime).matcher(), nil, func(line []byte) error {
				if p, err := decodeProbe(line); err == nil {
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
		o.Warn("spool holds lines from an earlier run; they are replayed at the next write", "spool", path, "lines", lines)
	}
	return s, nil
}

// SpoolDepth returns how many points wait in the spool (lines, when the
// spool was opened with lines of an earlier run: the replay sorts out those
// that are not lanewatch points); for a Beside spool, how many points it
// left in the inbox.
func (s *Spool) SpoolDepth() int { return int(s.depth.Load()) }

// Path returns the spool file's path.
func (s *Spool) Path() string { return s.o.Path }

// Inbox returns the path of the spool's inbox.
func (s *Spool) Inbox() string { return s.inbox }

// Write replays the spool, then writes the points to the inner store; see
// the type's doc. nil means every point is in the inner store or durably
// spooled; a *RefusedError (wrapped) names points that went to the
// dead-letter file instead.
func (s *Spool) Write(ctx context.Context, probes []Probe, hourly []Hourly) error {
	if s.o.Beside {
		return s.hand(ctx, probes, hourly, true)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	body, err := s.encodeLocked(probes, hourly)
	if err != nil {
		return err
	}
	s.adoptOrWarn()
	var errs []error
	if s.depth.Load() > 0 {
		if err := s.drainLocked(ctx); err != nil {
			var re *RefusedError
			var de deadLetterError
			switch {
			case errors.As(err, &de):
				// Refused points wait in the spool for want of a dead-letter
				// file: queue behind them, and say so.
				return joinErrors([]error{err, s.toSpool(body, len(probes)+len(hourly), err)})
			case !errors.As(err, &re): // still unreachable: queue behind the older points
				return joinErrors([]error{s.toSpool(body, len(probes)+len(hourly), err)})
			}
			errs = append(errs, err)
		}
	}
	if len(body) == 0 {
		return joinErrors(errs)
	}
	refused, cause, err := s.deliver(ctx, batch{probes, hourly})
	switch {
	case err != nil:
		errs = append(errs, s.toSpool(body, len(probes)+len(hourly), err))
	case refused.len() > 0:
		errs = append(errs, s.deadLetter(refused, len(probes)+len(hourly), cause))
	default:
		// The points are stored; hours of older refusals not rebuilt yet
		// are tried again at the next write.
		if err := s.rebuildPendingLocked(ctx); err != nil {
			s.o.Warn("hours of dead-lettered probes not rebuilt; tried again at the next write", "err", err.Error())
		}
	}
	return joinErrors(errs)
}

// Defer appends the points to the spool without trying the inner store:
// they reach it, and AfterReplay sees them, at the next replay. Recorder
// uses it when it cannot read what it needs to rebuild their
func (s *Spool) Defer(ctx context.Context, probes []Probe, hourly []Hourly) error {
	if s.o.Beside {
		return s.hand(ctx, probes, hourly, false)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	body, err := s.encodeLocked(probes, hourly)
	if err != nil || len(body) == 0 {
		return err
	}
	s.adoptOrWarn()
	return s.toSpool(body, len(probes)+len(hourly), errors.New("deferred until the store can be read"))
}

// adoptOrWarn moves the inbox into the spool (adoptLocked), warning when
// it cannot: the inbox is kept, and tried again at the next write. s.mu
// must be held.
func (s *Spool) adoptOrWarn() {
	if err := s.adoptLocked(); err != nil {
		s.o.Warn("the spool's inbox not replayed; tried again at the next write", "err", err.Error())
	}
}

// encodeLocked checks the spool takes writes and returns the points' lines
// (a copy: the encoder's buffer is reused).
func (s *Spool) encodeLocked(probes []Probe, hourly []Hourly) ([]byte, error) {
	if err := s.writable(); err != nil {
		return nil, err
	}
	body, err := s.enc.round(probes, hourly)
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	return bytes.Clone(body), nil
}

// Drain replays the spool now. It returns nil when the spool is empty
// afterwards (or was), the passing failure that stopped the replay, or a
// *RefusedError for points that went to the dead-letter file.
func (s *Spool) Drain(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writable(); err != nil {
		return err
	}
	s.adoptOrWarn()
	if s.depth.Load() == 0 {
		return s.rebuildPendingLocked(ctx)
	}
	return s.drainLocked(ctx)
}

func (s *Spool) writable() error {
	switch {
	case s.closed:
		return fmt.Errorf("spool %s: %w", s.o.Path, os.ErrClosed)
	case s.file == nil:
		return fmt.Errorf("spool %s: %w", s.o.Path, errReadOnly)
	}
	return nil
}

// batch is points of both measurements, in write order.
type batch struct {
	probes []Probe
	hourly []Hourly
}

func (b batch) len() int { return len(b.probes) + len(b.hourly) }

func (b *batch) add(o batch) {
	b.probes = append(b.probes, o.probes...)
	b.hourly = append(b.hourly, o.hourly...)
}

// halves splits b into two non-empty batches (b must hold two points or more).
func (b batch) halves() (batch, batch) {
	n := b.len() / 2
	if n <= len(b.probes) {
		return batch{b.probes[:n], nil}, batch{b.probes[n:], b.hourly}
	}
	k := n - len(b.probes)
	return batch{b.probes, b.hourly[:k]}, batch{nil, b.hourly[k:]}
}

// deliver writes b to the inner store. It returns the points the store
// refused for good (found by splitting a 400 or 413 batch) with the first
// refusal's cause, or the passing failure that stopped it, in which case
// none of b counts as delivered.
func (s *Spool) deliver(ctx context.Context, b batch) (refused batch, cause, err error) {
	err = s.inner.Write(ctx, b.probes, b.hourly)
	if err == nil {
		return batch{}, nil, nil
	}
	var re *RefusedError
	if !errors.As(err, &re) {
		return batch{}, nil, err
	}
	if b.len() < 2 || (re.Status != 400 && re.Status != 413) {
		return b, refusal{status: re.Status, err: re.Err}, nil
	}
	l, r := b.halves()
	refL, causeL, err := s.deliver(ctx, l)
	if err != nil {
		return batch{}, nil, err
	}
	refR, causeR, err := s.deliver(ctx, r)
	if err != nil {
		return batch{}, nil, err
	}
	refL.add(refR)
	if causeL == nil {
		causeL = causeR
	}
	return refL, causeL, nil
}

// deadLetter appends refused points to the dead-letter file. When it cannot,
// they are spooled instead (the next replay tries again), so nothing is lost,
// and the refusal says so.
func (s *Spool) deadLetter(refused batch, of int, cause error) error {
	body, err := s.enc.round(refused.probes, refused.hourly)
	if err != nil {
		return fmt.Errorf("spool: dead-letter: %w", err)
	}
	body = bytes.Clone(body)
	re := &RefusedError{Points: refused.len(), Status: refusedStatus(cause), Err: fmt.Errorf("%d of %d points: %w", refused.len(), of, cause)}
	if err := s.appendDead(body); err != nil {
		if serr := s.toSpool(body, refused.len(), err); serr != nil {
			return fmt.Errorf("spool: %d refused points lost: dead-letter file %s: %w; %w", refused.len(), s.o.DeadLetter, err, serr)
		}
		re.Err = fmt.Errorf("%d of %d points: %w; kept in spool %s: the dead-letter file %s cannot be written: %w",
			refused.len(), of, cause, s.o.Path, s.o.DeadLetter, err)
		return re
	}
	re.DeadLetter = s.o.DeadLetter
	s.pending = append(s.pending, refused.probes...)
	return re
}

// RebuildLater has AfterReplay run for the probes after the next write that
// goes through, as for dead-lettered ones: a Recorder that wrote them but
// could not read their hours calls it. The probes are kept in memory only:
// after a restart, sampler rollup rebuilds their
func (s *Spool) RebuildLater(probes []Probe) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.o.AfterReplay != nil {
		s.pending = append(s.pending, probes...)
	}
}

// rebuildPendingLocked runs AfterReplay for the probes dead-lettered by
// direct writes since it last succeeded (at open: every probe of the
// dead-letter file), now that a write went through: reads count a refused
// probe in its hour, so its hour is rebuilt with it. A failure keeps them
// pending and is reported.
func (s *Spool) rebuildPendingLocked(ctx context.Context) error {
	if len(s.pending) == 0 || s.o.AfterReplay == nil {
		return nil
	}
	if err := s.o.AfterReplay(ctx, deadView{s}, s.pending); err != nil {
		return fmt.Errorf("spool: the hours of %d dead-lettered probes not rebuilt: %w", len(s.pending), err)
	}
	s.pending = nil
	return nil
}

// deadView is the inner store with the dead-lettered probes merged into its
// reads: what AfterReplay rebuilds hours from once the spool's points are
// all in the inner store or the dead-letter file. Its user holds s.mu.
type deadView struct{ s *Spool }

func (v deadView) Write(ctx context.Context, probes []Probe, hourly []Hourly) error {
	return v.s.inner.Write(ctx, probes, hourly)
}

func (v deadView) Probes(ctx context.Context, q Query) ([]Probe, error) {
	pts, err := v.s.inner.Probes(ctx, q)
	if err != nil || !v.s.hasDead.Load() {
		return pts, err
	}
	l := newLatest(probeKey)
	for _, p := range pts {
		l.put(p)
	}
	if err := fileMerge(ctx, v.s, v.s.o.DeadLetter, l, q.matcher(), kindProbe, decodeProbe); err != nil {
		return nil, err
	}
	return l.sorted(), nil
}

func (v deadView) Hourly(ctx context.Context, q Query) ([]Hourly, error) {
	return v.s.inner.Hourly(ctx, q)
}

func (v deadView) Close() error { return nil }

// deadLetterError is a failure to write the dead-letter file. Its text does
// not name the file: callers do.
type deadLetterError struct{ err error }

func (e deadLetterError) Error() string { return e.err.Error() }
func (e deadLetterError) Unwrap() error { return e.err }

func (s *Spool) appendDead(body []byte) error {
	if s.dead == nil {
		d, err := openAppend(s.o.DeadLetter, s.o.Warn)
		if err != nil {
			return deadLetterError{unpathOf(err, s.o.DeadLetter)}
		}
		s.dead = d
	}
	s.hasDead.Store(true) // a torn append may have left a line or part of one
	if err := s.dead.append(body); err != nil {
		return deadLetterError{err}
	}
	return nil
}

// toSpool queues points that could not be written because of cause.
func (s *Spool) toSpool(body []byte, points int, cause error) error {
	size, err := s.file.size()
	if err != nil {
		return fmt.Errorf("spool %s: %w", s.o.Path, err)
	}
	if size+int64(len(body)) > s.o.MaxBytes {
		return fmt.Errorf("%d points not stored: %w (%s holds %d bytes, cap %d) while the store fails: %w",
			points, ErrSpoolFull, s.o.Path, size, s.o.MaxBytes, cause)
	}
	if err := s.file.append(body); err != nil {
		return fmt.Errorf("%d points not stored: spool %s: %w", points, s.o.Path, err)
	}
	depth := s.depth.Add(int64(points))
	s.o.Warn("store write failed; points spooled for replay", "points", points, "spooled", depth, "err", cause.Error())
	if used := size + int64(len(body)); used*10 >= s.o.MaxBytes*8 {
		s.o.Warn("SPOOL NEARLY FULL: new points will be refused at the cap; fix the store or raise store.spool_max_bytes",
			"spool", s.o.Path, "bytes", used, "cap", s.o.MaxBytes)
	}
	return nil
}

// drainLocked replays the spool in order. A passing failure stops it and
// keeps the spool whole; refused points and foreign lines go to the
// dead-letter file; the spool is emptied only when all of that succeeded and
// AfterReplay agreed.
func (s *Spool) drainLocked(ctx context.Context) error {
	var (
		cur        batch
		replayed   []Probe
		dead       []byte // refused points and foreign lines, in spool order
		accepted   int
		refusedN   int
		foreign    int
		firstCause error
	)
	flush := func() error {
		if cur.len() == 0 {
			return nil
		}
		refused, cause, err := s.deliver(ctx, cur)
		if err != nil {
			return err
		}
		if firstCause == nil {
			firstCause = cause
		}
		if refused.len() > 0 {
			b, err := s.enc.round(refused.probes, refused.hourly)
			if err != nil {
				return err
			}
			dead = append(dead, b...)
			refusedN += refused.len()
		}
		accepted += cur.len() - refused.len()
		replayed = append(replayed, cur.probes...)
		cur = batch{}
		return nil
	}
	err := s.file.read(ctx, func(_ int64, line []byte, terminated bool) error {
		if !terminated {
			return nil
		}
		switch kindOf(line) {
		case kindSkip:
			return nil
		case kindProbe:
			p, err := decodeProbe(line)
			if err != nil {
				dead, foreign = append(append(dead, line...), '\n'), foreign+1
				return nil
			}
			cur.probes = append(cur.probes, p)
		case kindHourly:
			h, err := decodeHourly(line)
			if err != nil {
				dead, foreign = append(append(dead, line...), '\n'), foreign+1
				return nil
			}
			cur.hourly = append(cur.hourly, h)
		default:
			dead, foreign = append(append(dead, line...), '\n'), foreign+1
			return nil
		}
		if cur.len() >= replayBatch {
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
	if s.o.AfterReplay != nil {
		if err := s.o.AfterReplay(ctx, deadView{s}, append(replayed, s.pending...)); err != nil {
			return fmt.Errorf("spool %s kept: after replay: %w", s.o.Path, err)
		}
	}
	if err := s.file.truncate(); err != nil {
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
	return &RefusedError{Points: refusedN + foreign, Status: refusedStatus(firstCause), DeadLetter: s.o.DeadLetter, Err: err}
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
		errs = append(errs, s.file.close())
	}
	if s.dead != nil {
		errs = append(errs, s.dead.close())
	}
	errs = append(errs, s.inner.Close())
	if err := joinErrors(errs); err != nil {
		return fmt.Errorf("spool %s: close: %w", s.o.Path, err)
	}
	return nil
}
