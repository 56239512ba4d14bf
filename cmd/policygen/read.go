package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// maxPolicyFile bounds the bytes of a policy file policygen reads (book
// -policy, lane). The bounds on the ledger input (its bytes, attempts and
// numbers) are policy's (policy.MaxBookInput, policy.DecodeBookInput).
const maxPolicyFile = 1 << 20

// readCapped reads what open returns to its end, at most limit bytes, and
// closes it. More than limit bytes is an error, "<what>: larger than N
// bytes"; other errors are "<what>: err" (a *fs.PathError shown without its
// path, which what already names). It returns as soon as ctx is done, even
// while open or a read blocks (stdin that never closes, a FIFO without a
// writer): the reading goroutine is then left behind until its read returns,
// which is fine for a command that is about to exit.
func readCapped(ctx context.Context, what string, limit int64, open func() (io.ReadCloser, error)) ([]byte, error) {
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		rc, err := open()
		if err != nil {
			done <- result{nil, err}
			return
		}
		data, err := io.ReadAll(io.LimitReader(rc, limit+1))
		_ = rc.Close() // read-only: nothing to lose
		done <- result{data, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		select {
		case r = <-done: // finished at the same moment: take it
		default:
			return nil, fmt.Errorf("%s: interrupted while reading (%w)", what, context.Cause(ctx))
		}
	}
	if r.err != nil {
		var pe *fs.PathError
		if errors.As(r.err, &pe) {
			r.err = pe.Err
		}
		return nil, fmt.Errorf("%s: %w", what, r.err)
	}
	if int64(len(r.data)) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", what, limit)
	}
	return r.data, nil
}

// readFileCapped is readCapped on a file; the open happens in the reading
// goroutine too, since opening a FIFO blocks.
func readFileCapped(ctx context.Context, what, path string, limit int64) ([]byte, error) {
	return readCapped(ctx, what, limit, func() (io.ReadCloser, error) { return os.Open(path) })
}
