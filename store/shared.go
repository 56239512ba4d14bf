package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// SharedFile is the embedded store opened beside its writer (sampler
// probe next to the daemon): reads as a read-only File, and appends that
// do not take the writer's lock (the ".lock" file the daemon holds for its
// whole life) but the one every append and read of the data file takes:
// an exclusive flock on the data file for the length of one append. The
// writer opened the file O_APPEND and takes the same flock for each of its
// appends, so the two interleave whole rounds and readers (the daemon's
// meter among them) see each append whole from the moment it returns.
//
// A prune renames a new file over the old one while it holds the old
// file's flock, so an append checks, once it holds the flock, that the path
// still names the file it locked, and reopens the path when it does not:
// nothing is appended to a file a prune has replaced.
type SharedFile struct {
	*File

	mu  sync.Mutex
	enc encoder // guarded by mu
}

var _ Store = (*SharedFile)(nil)

// OpenFileShared opens the line-protocol file at path to read it and
// append to it beside the writer holding its lock. It creates the file
// and its folder when they do not exist yet (as a writer would).
func OpenFileShared(path string, opts FileOptions) (*SharedFile, error) {
	if err := checkRegular(path); err != nil {
		return nil, fmt.Errorf("open samples file: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("open samples file: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open samples file: %w", err)
	}
	_ = f.Close()
	opts.ReadOnly = true
	ro, err := OpenFile(path, opts)
	if err != nil {
		return nil, err
	}
	return &SharedFile{File: ro}, nil
}

// Write appends the points (probes, then hourly points) in one write and
// fsyncs them, under the data file's flock. An invalid point fails the
// whole write before anything is written. When the file does not end in a
// newline (a writer's append cut short by a crash, which its next open
// cuts off), the append starts on a line of its own.
func (s *SharedFile) Write(ctx context.Context, probes []Probe, hourly []Hourly) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := s.enc.round(probes, hourly)
	if err != nil {
		return fmt.Errorf("write %s: %w", s.path, err)
	}
	if len(b) == 0 {
		return nil
	}
	if err := appendShared(s.path, b, false); err != nil {
		return fmt.Errorf("write %s: %w", s.path, err)
	}
	return nil
}
