package probe

import (
	"compress/flate"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// stream reads events until a terminal one, an error or the deadline.
func (r *run) stream(ctx context.Context, body io.Reader, dec decoder) error {
	r.streamed = true
	sr := NewSSEReader(body, r.t.MaxLine)
	for {
		ev, err := sr.Next()
		now := time.Now()
		if err != nil {
			return r.streamEnd(ctx, err)
		}
		before := r.tl.deltas
		if err := dec.event(ev, &r.tl); err != nil {
			return err
		}
		if before == 0 && r.tl.deltas > 0 {
			r.s.FirstToken = now
		}
		if r.tl.done {
			r.s.End = now
			return nil
		}
	}
}

// streamEnd classifies the error that stopped the event stream.
func (r *run) streamEnd(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return r.timeout(ctx)
	case err == io.EOF && r.tl.finished:
		return nil
	case err == io.EOF:
		return fail(StreamError, ErrNoTerminal, "stream ended without a terminal event")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fail(StreamError, ErrTruncated, "connection closed mid-stream")
	case errors.Is(err, ErrLineTooLong):
		return fail(StreamError, err, "line or event over %d bytes", r.t.MaxLine)
	case errors.Is(err, ErrTooLarge):
		return fail(StreamError, err, "response over %d bytes", r.t.MaxBytes)
	case isGzipError(err):
		return fail(StreamError, fmt.Errorf("gzip: %w", err), "corrupt gzip stream")
	}
	return fail(StreamError, err, "read: %s", err)
}

func isGzipError(err error) bool {
	var corrupt flate.CorruptInputError
	return errors.Is(err, gzip.ErrHeader) || errors.Is(err, gzip.ErrChecksum) || errors.As(err, &corrupt)
}
