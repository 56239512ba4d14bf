// Package monoclock maps this process's time.Time readings onto the
// system's CLOCK_MONOTONIC, which every process on the machine shares (and
// which Go's own monotonic clock reads), so that a benchmark can line up a
// server's stamps (lanesim -exact) with a probe's, and sleeps to the
// microsecond.
package monoclock

import "time"

// SleepUntil sleeps until t. Go's timers wake up to a millisecond late on
// Linux (epoll waits whole milliseconds), so the last 2 ms are slept with
// nanosleep where the system has it.
func SleepUntil(t time.Time) {
	if d := time.Until(t) - 2*time.Millisecond; d > 0 {
		time.Sleep(d)
	}
	for d := time.Until(t); d > 0; d = time.Until(t) {
		fineSleep(d)
	}
}
