//go:build !linux

package main

import "time"

// fineSleep falls back to the runtime's timers.
func fineSleep(d time.Duration) { time.Sleep(d) }
