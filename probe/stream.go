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
		if err := dec(ev, &r.tl); err != nil {
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

// capReader fails with ErrTooLarge once more than max bytes went through;
// its errors are sticky, so that a peek cannot swallow one.
type capReader struct {
	r   io.Reader
	n   int64
	max int64
	err error
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if room := c.max - c.n + 1; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > c.max {
		n, err = n-int(c.n-c.max), ErrTooLarge
	}
	c.err = err
	return n, err
}

// gunzip opens the gzip stream on first Read, within the stream's timeout.
type gunzip struct {
	r io.Reader
	z *gzip.Reader
}

func (g *gunzip) Read(p []byte) (int, error) {
	if g.z == nil {
		z, err := gzip.NewReader(g.r)
		if err != nil {
			return 0, err
		}
		g.z = z
	}
	return g.z.Read(p)
}
