package store

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/lanewatch/lanewatch/internal/atomicfile"
	"github.com/lanewatch/lanewatch/store/lineproto"
)

// PruneStats says what a Prune did: the probe and heartbeat lines it
// dropped and the lines it kept (hourly records, newer probes and
// heartbeats, comments and lines it could not classify).
type PruneStats struct {
	DroppedProbes int64
	// DroppedHeartbeats counts the sampler_heartbeat lines older than the
	// cut: a daemon writes one each round, and a heartbeat is read only
	// for a few intervals after it (package duty).
	DroppedHeartbeats int64
	KeptLines         int64
	// DroppedLong counts the lines longer than 1 MiB, which no read
	// returns (they are skipped as corrupt), dropped with a warning.
	DroppedLong int64
}

// PruneOptions tune Prune.
type PruneOptions struct {
	// Hook runs at the atomic write's stages (atomicfile.Hook: "synced",
	// before the rename); an error from it aborts the prune with the old
	// file intact. For tests of a prune cut short.
	Hook func(stage, tmp string) error
}

// Prune drops the probe and heartbeat lines older than cut (their
// timestamp strictly before it) and keeps everything else: every hourly
// record, every probe and heartbeat at or after cut, comments and lines it
// cannot classify (a probe or heartbeat among them whose timestamp it
// cannot read), in their order.
// It writes the kept lines to a temp file beside the store, fsyncs it,
// renames it over the store and fsyncs the folder (internal/atomicfile),
// holding the store's write lock and an exclusive flock on the old file:
// a reader (which opens by path under a shared flock) sees the old file or
// the new one, whole; a crash or an error at any step leaves the old file
// as it was. A torn last line (a write in progress cannot be: the lock is
// held) and lines longer than 1 MiB, which no read returns, are dropped
// with a warning.
// Only a writer may prune; after the rename it appends to the new file.
func (s *File) Prune(ctx context.Context, cut time.Time, opts PruneOptions) (PruneStats, error) {
	var st PruneStats
	if err := ctx.Err(); err != nil {
		return st, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writable("prune"); err != nil {
		return st, err
	}
	if err := s.w.checkPath(); err != nil {
		return st, fmt.Errorf("prune %s: %w", s.path, err)
	}
	if err := lockExclusive(s.w.f); err != nil {
		return st, fmt.Errorf("prune %s: lock: %w", s.path, err)
	}
	locked := s.w.f
	defer func() { _ = unlock(locked) }()
	cutNS := cut.UnixNano()
	var aopts []atomicfile.Option
	if opts.Hook != nil {
		aopts = append(aopts, atomicfile.Hook(opts.Hook))
	}
	err := atomicfile.WriteFile(s.path, func(tmp string) error {
		out, err := os.OpenFile(tmp, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		defer func() { _ = out.Close() }()
		bw := bufio.NewWriterSize(out, 1<<20)
		// The old file is read through its open descriptor's path, which
		// names it until the rename; no one else writes to it (the lock).
		in, err := os.Open(s.path)
		if err != nil {
			return err
		}
		defer func() { _ = in.Close() }()
		err = lineproto.ScanLines(ctx, in, func(n int64, line []byte, terminated bool) error {
			if n&0xffff == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			if !terminated {
				return nil
			}
			switch kindOf(line) {
			case kindProbe:
				if ns, ok := lineproto.LineTime(line); ok && ns < cutNS {
					st.DroppedProbes++
					return nil
				}
			case kindHeartbeat:
				if ns, ok := lineproto.LineTime(line); ok && ns < cutNS {
					st.DroppedHeartbeats++
					return nil
				}
			}
			st.KeptLines++
			if _, err := bw.Write(line); err != nil {
				return err
			}
			return bw.WriteByte('\n')
		}, func(n int64) {
			st.DroppedLong++
			s.warn("prune dropped a corrupt line: longer than 1 MiB", "path", s.path, "line", n)
		})
		if err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		return out.Close()
	}, aopts...)
	if err != nil {
		return PruneStats{}, fmt.Errorf("prune %s: %w", s.path, unpath(err))
	}
	if err := s.w.reopen(); err != nil {
		return st, fmt.Errorf("prune %s: reopen after the rename: %w", s.path, err)
	}
	return st, nil
}

// reopen points a at the file its path names now (after a rename over
// it), keeping the writer lock on path+".lock".
func (a *appendFile) reopen() error {
	f, err := os.OpenFile(a.path, os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return unpath(err)
	}
	old := a.f
	a.f = f
	_ = old.Close()
	return nil
}

// Pruner is a store that can drop old probes and heartbeats: File. On
// InfluxDB old probe and heartbeat points are deleted on the server
// (docs/schema.md, Retention).
type Pruner interface {
	Prune(ctx context.Context, cut time.Time, opts PruneOptions) (PruneStats, error)
}

var _ Pruner = (*File)(nil)

// RetentionCut is the cut that keeps days days of probes at now: the
// start of the hour (in loc) days×24 h before now, so that no hour keeps
// part of its probes (a rollup of a kept hour sees all of them).
func RetentionCut(now time.Time, days int, loc *time.Location) time.Time {
	return HourStart(now.Add(-time.Duration(days)*24*time.Hour), loc)
}
