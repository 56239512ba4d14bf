package main

import (
	"context"
	"fmt"
	"io"
)

// readInput reads r (stdin) to its end, at most limit bytes, and returns
// as soon as ctx is done (SIGINT, SIGTERM) even while a read blocks: the
// reading goroutine is left behind, as the command is about to exit.
func readInput(ctx context.Context, r io.Reader, limit int64) ([]byte, error) {
	var data []byte
	var err error
	done := make(chan struct{})
	go func() {
		data, err = io.ReadAll(io.LimitReader(r, limit+1))
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		select {
		case <-done: // finished at the same moment: take it
		default:
			return nil, fmt.Errorf("input: interrupted while reading (%w)", context.Cause(ctx))
		}
	}
	switch {
	case err != nil:
		return nil, fmt.Errorf("input: %w", err)
	case int64(len(data)) > limit:
		return nil, fmt.Errorf("input: larger than %d bytes", limit)
	}
	return data, nil
}
