package lineproto

import (
	"bufio"
	"context"
	"errors"
	"io"
)

// MaxLine bounds one line of a line-protocol file; a longer line is corrupt
// (lanewatch's are under 300 bytes) and is skipped instead of growing memory.
const MaxLine = 1 << 20

// readBuf is the read buffer of a scan.
const readBuf = 256 << 10

// ScanLines streams r line by line and calls fn for each line, without its
// newline. terminated is false only for a last line that has no newline. n is
// the one-based line number. Lines longer than MaxLine are reported to long
// and not passed to fn. fn's line is only valid during the call. Before each
// read of r it checks ctx, so a source without end (a device, a line that
// never ends) stops when ctx is done, with ctx's error.
func ScanLines(ctx context.Context, r io.Reader, fn func(n int64, line []byte, terminated bool) error, long func(n int64)) error {
	return scanLinesSize(ctx, r, readBuf, fn, long)
}

func scanLinesSize(ctx context.Context, r io.Reader, size int, fn func(n int64, line []byte, terminated bool) error, long func(n int64)) error {
	br := bufio.NewReaderSize(ctxReader{ctx, r}, size)
	var n int64
	var big []byte // a line longer than the buffer, assembled
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if !tooLong {
				if len(big)+len(chunk) > MaxLine {
					tooLong, big = true, big[:0]
				} else {
					big = append(big, chunk...)
				}
			}
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if len(chunk) == 0 && len(big) == 0 && !tooLong {
			return nil // clean EOF
		}
		n++
		line := chunk
		if len(big) > 0 || tooLong {
			if !tooLong {
				if len(big)+len(chunk) > MaxLine {
					tooLong = true
				} else {
					big = append(big, chunk...)
				}
			}
			line = big
		}
		terminated := len(line) > 0 && line[len(line)-1] == '\n'
		if terminated {
			line = line[:len(line)-1]
		}
		if tooLong {
			if long != nil {
				long(n)
			}
		} else if ferr := fn(n, line, terminated); ferr != nil {
			return ferr
		}
		big, tooLong = big[:0], false
		if err != nil { // io.EOF after a last line without newline
			return nil
		}
	}
}

// ctxReader is a reader that fails with ctx's error once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
