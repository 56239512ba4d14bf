package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// InboxSuffix names a spool's inbox beside it (data/spool.lp.inbox): the
// points a process beside the spool's writer (sampler probe next to the
// daemon) could not store, for the writer to replay.
const InboxSuffix = ".inbox"

// hand writes the points of a Beside spool: to the inner store (unless
// try is false), and, when that fails for any reason, to the inbox, where
// they count as stored: the spool's writer moves them into its spool at
// its next write and replays them (refused ones then go to the
// dead-letter file, and AfterReplay rebuilds the hours of the probes).
func (s *Spool) hand(ctx context.Context, probes []Probe, hourly []Hourly, try bool) error {
	cause := errors.New("deferred until the store can be read")
	if try {
		if cause = s.inner.Write(ctx, probes, hourly); cause == nil {
			return nil
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("spool %s: %w", s.o.Path, os.ErrClosed)
	}
	body, err := s.enc.round(probes, hourly)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	if err := appendShared(s.inbox, body, true); err != nil {
		return fmt.Errorf("%d points not stored: %w; inbox %s: %w", len(probes)+len(hourly), cause, s.inbox, err)
	}
	n := s.depth.Add(int64(len(probes) + len(hourly)))
	s.o.Warn("store write failed; points left in the spool's inbox for the sampler that holds the spool",
		"inbox", s.inbox, "points", len(probes)+len(hourly), "waiting", n, "err", cause.Error())
	return nil
}

// adoptLocked moves the inbox's lines into the spool, to be replayed with
// it, and empties the inbox, under the inbox's flock (a process beside
// appends under it too). A crash between the two leaves them in both: the
// replay writes the same points twice, which stores them once. A torn
// last line (an append cut short by a crash) is dropped with a warning.
// s.mu must be held.
func (s *Spool) adoptLocked() error {
	f, err := os.OpenFile(s.inbox, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("inbox %s: %w", s.inbox, unpath(err))
	}
	defer func() { _ = f.Close() }()
	if e := fstatNotRegular(f); e != nil {
		e.path = s.inbox
		return e
	}
	if err := lockExclusive(f); err != nil {
		return fmt.Errorf("inbox %s: lock: %w", s.inbox, err)
	}
	defer func() { _ = unlock(f) }()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("inbox %s: %w", s.inbox, unpath(err))
	}
	if fi.Size() == 0 {
		return nil
	}
	if fi.Size() > s.o.MaxBytes {
		return fmt.Errorf("inbox %s holds %d bytes, more than the spool's cap %d: %w", s.inbox, fi.Size(), s.o.MaxBytes, ErrSpoolFull)
	}
	body, err := io.ReadAll(io.NewSectionReader(f, 0, fi.Size()))
	if err != nil {
		return fmt.Errorf("inbox %s: %w", s.inbox, unpath(err))
	}
	if cut := bytes.LastIndexByte(body, '\n') + 1; cut < len(body) {
		s.o.Warn("inbox: dropped a torn last line (an append cut short by a crash)", "inbox", s.inbox, "bytes", len(body)-cut)
		body = body[:cut]
	}
	points := 0
	for line := range bytes.Lines(body) {
		if kindOf(bytes.TrimSuffix(line, []byte{'\n'})) != kindSkip {
			points++
		}
	}
	if points > 0 {
		if err := s.toSpool(body, points, errors.New("left in the inbox by a sampler beside this one")); err != nil {
			return fmt.Errorf("inbox %s kept: %w", s.inbox, err)
		}
	}
	if err := f.Truncate(0); err != nil {
		return fmt.Errorf("inbox %s: %w", s.inbox, unpath(err))
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("inbox %s: %w", s.inbox, unpath(err))
	}
	return nil
}

// inboxHolds reports whether the inbox may hold points (it is there and
// not empty).
func (s *Spool) inboxHolds() bool {
	fi, err := os.Stat(s.inbox)
	return err == nil && fi.Size() > 0
}
