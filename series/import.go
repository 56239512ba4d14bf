package series

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// importBatch is how many points Import hands to one Write.
const importBatch = 5000

// Import copies the points of a line-protocol stream (an embedded store file,
// an Influx spool or dead-letter file) into dst in order, importBatch points
// per Write, so a switch from the file store to InfluxDB keeps its history.
// Later lines keep replacing earlier ones, as both stores apply that rule.
// Torn, corrupt and unknown lines are skipped and reported to warn (nil
// discards). It returns how many probe and hourly points dst accepted; on a
// Write error it stops and says after which line.
func Import(ctx context.Context, dst Store, r io.Reader, warn func(msg string, args ...any)) (probes, hourly int, err error) {
	if warn == nil {
		warn = func(string, ...any) {}
	}
	var ps []Probe
	var hs []Hourly
	var last int64
	flush := func() error {
		if len(ps)+len(hs) == 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return &importError{line: last, err: err}
		}
		if err := dst.Write(ctx, ps, hs); err != nil {
			return &importError{line: last, err: err}
		}
		probes += len(ps)
		hourly += len(hs)
		ps, hs = ps[:0], hs[:0]
		return nil
	}
	err = scanLines(r, func(n int64, line []byte, terminated bool) error {
		last = n
		if !terminated {
			warn("skipped torn last line (no newline)", "line", n)
			return nil
		}
		switch kindOf(line) {
		case kindSkip:
			return nil
		case kindProbe:
			p, err := decodeProbe(line)
			if err != nil {
				warn("skipped corrupt line", "line", n, "err", err.Error())
				return nil
			}
			ps = append(ps, p)
		case kindHourly:
			h, err := decodeHourly(line)
			if err != nil {
				warn("skipped corrupt line", "line", n, "err", err.Error())
				return nil
			}
			hs = append(hs, h)
		default:
			warn("skipped corrupt line: not a probe or queue_hourly point", "line", n)
			return nil
		}
		if len(ps)+len(hs) >= importBatch {
			return flush()
		}
		return nil
	}, func(n int64) {
		warn("skipped corrupt line: longer than 1 MiB", "line", n)
	})
	if err == nil {
		err = flush()
	}
	var described *importError
	if err != nil && !errors.As(err, &described) {
		err = fmt.Errorf("import: read: %w", err)
	}
	return probes, hourly, err
}

// importError is a failed Write (or cancellation) during Import.
type importError struct {
	line int64
	err  error
}

func (e *importError) Error() string { return fmt.Sprintf("import up to line %d: %v", e.line, e.err) }
func (e *importError) Unwrap() error { return e.err }
