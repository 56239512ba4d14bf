// Package stalls measures how late this machine wakes a goroutine, for
// tests whose timing bounds are set by sleeps: a loaded machine stalls a
// server's sleeps and a client's reads about as much, so such a test can
// widen its bounds by a few of the stalls seen while it ran and keep them
// as tight as ever on a quiet machine.
package stalls

import "time"

// Watch measures how late a goroutine wakes from 1 ms sleeps until the
// returned function is called; that returns the worst lateness seen.
func Watch() (stop func() time.Duration) {
	done, worst := make(chan struct{}), make(chan time.Duration)
	go func() {
		var most time.Duration
		for {
			t0 := time.Now()
			select {
			case <-done:
				worst <- most
				return
			case <-time.After(time.Millisecond):
				most = max(most, time.Since(t0)-time.Millisecond)
			}
		}
	}()
	return func() time.Duration {
		close(done)
		return <-worst
	}
}
