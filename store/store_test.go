package store_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

var ctx = context.Background()

// endless is a reader that never ends: its pattern, again and again.
type endless struct{ pattern []byte }

func (e endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = e.pattern[i%len(e.pattern)]
	}
	return len(p), nil
}

// endlessSources are readers without end: one line that never ends (the
// over-long-line path), corrupt lines without end, and /dev/zero where it
// exists.
func endlessSources(t *testing.T) map[string]func() io.Reader {
	srcs := map[string]func() io.Reader{
		"zeros":         func() io.Reader { return endless{[]byte{0}} },
		"corrupt lines": func() io.Reader { return endless{[]byte("not a point\n")} },
		"torn probes": func() io.Reader {
			return endless{[]byte("probe,kind=free,lane=a queue_s=1 1795960800000000000\nprobe,kind=")}
		},
	}
	if f, err := os.Open("/dev/zero"); err == nil {
		t.Cleanup(func() { _ = f.Close() })
		srcs["/dev/zero"] = func() io.Reader { return f }
	}
	return srcs
}

// promptly runs f with a context cancelled after a moment and fails the
// test unless f returns, with the context's error, soon after.
func promptly(t *testing.T, f func(ctx context.Context) error) error {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- f(ctx) }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("returned %v, want context.Canceled", err)
		}
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("still reading 10 s after the context was cancelled")
		return nil
	}
}

// Booked: which results of a Write leave a booking durable.
func TestBooked(t *testing.T) {
	dead := &store.RefusedError{Points: 2, Status: 403, DeadLetter: "dead.lp", Err: errors.New("403")}
	for _, c := range []struct {
		name    string
		err     error
		durable bool
	}{
		{"stored or spooled", nil, true},
		{"refused into the dead-letter file", dead, true},
		{"refused, kept nowhere", &store.RefusedError{Points: 2, Status: 403, Err: errors.New("403")}, false},
		{"a dead letter joined with a loss", errors.Join(dead, errors.New("spool is full")), false},
		{"disk full", fmt.Errorf("write: %w", os.ErrPermission), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := store.Booked(c.err) == nil; got != c.durable {
				t.Errorf("Booked(%v) durable = %v, want %v", c.err, got, c.durable)
			}
		})
	}
}
