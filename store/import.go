package store

import (
	"context"
	"fmt"
	"io"
)

// Imported counts what Import did.
type Imported struct {
	Probes   int // probe points recorded
	Hourly   int // queue_hourly points rebuilt from them
	Skipped  int // queue_hourly lines of the input
	Deferred int // probes whose hours wait in the spool
}

// Import records the probe points of a line-protocol stream through rec,
// 5,000 at a time; rec rebuilds their hours, so queue_hourly lines are not
// copied, nor are heartbeats. Torn, corrupt and unknown lines are skipped
// and reported to warn (nil discards). A write error stops it, naming the
// line.
func Import(ctx context.Context, rec *Recorder, r io.Reader, warn func(msg string, args ...any)) (Imported, error) {
	if warn == nil {
		warn = func(string, ...any) {}
	}
	var res Imported
	var ps []Probe
	var last int64
	var failed error // flush's, which names the line
	flush := func() error {
		if len(ps) == 0 {
			return nil
		}
		err := ctx.Err()
		var done Recorded
		if err == nil {
			done, err = rec.Record(ctx, ps)
		}
		if err != nil {
			failed = fmt.Errorf("import up to line %d: %w", last, err)
			return failed
		}
		res.Probes += len(ps)
		res.Hourly += len(done.Hourly)
		if done.Deferred {
			res.Deferred += len(ps)
		}
		ps = ps[:0]
		return nil
	}
	names := Names{}
	err := ScanLines(ctx, r, func(n int64, line []byte, terminated bool) error {
		last = n
		if !terminated {
			warn("skipped torn last line (no newline)", "line", n)
			return nil
		}
		switch KindOf(line) {
		case KindBlank, KindHeartbeat:
			return nil
		case KindHourly:
			res.Skipped++
			return nil
		case KindProbe:
			var p Probe
			if err := Decode(names, line, &p); err != nil {
				warn("skipped corrupt line", "line", n, "err", err.Error())
				return nil
			}
			ps = append(ps, p)
		default:
			warn("skipped corrupt line: not a probe or queue_hourly point", "line", n)
			return nil
		}
		if len(ps) >= 5000 {
			return flush()
		}
		return nil
	}, func(n int64) {
		warn("skipped corrupt line: longer than 1 MiB", "line", n)
	})
	if err == nil {
		err = flush()
	}
	if err != nil && err != failed {
		err = fmt.Errorf("import: read: %w", err)
	}
	return res, err
}
