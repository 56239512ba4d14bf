package main

import (
	"syscall"
	"time"
)

// fineSleep blocks the thread in nanosleep: microsecond wake-ups.
func fineSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	_ = syscall.Nanosleep(&ts, nil)
}
