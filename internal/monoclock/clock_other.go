//go:build !linux

package monoclock

import "time"

// Ns is 0: no clock shared with other processes here.
func Ns(time.Time) int64 { return 0 }

// fineSleep falls back to the runtime's timers.
func fineSleep(d time.Duration) { time.Sleep(d) }
