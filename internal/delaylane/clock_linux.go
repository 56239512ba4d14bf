package main

import (
	"syscall"
	"time"
	"unsafe"
)

// A shared clock: the process's time.Time readings mapped onto the
// system's CLOCK_MONOTONIC, which every process on the machine shares (and
// which Go's own monotonic clock reads), so the benchmark can line up the
// server's stamps with the probe's.
var monoBase, monoBaseNs = calibrate()

// monoNs is t on CLOCK_MONOTONIC, in ns.
func monoNs(t time.Time) int64 { return monoBaseNs + int64(t.Sub(monoBase)) }

func calibrate() (time.Time, int64) {
	var best time.Time
	var bestNs int64
	span := time.Hour
	for range 50 {
		t0 := time.Now()
		ns := clockMonotonic()
		t1 := time.Now()
		if d := t1.Sub(t0); d < span && ns != 0 {
			best, bestNs, span = t0.Add(d/2), ns, d
		}
	}
	return best, bestNs
}

func clockMonotonic() int64 {
	var ts syscall.Timespec
	const clockMonotonic = 1
	if _, _, e := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockMonotonic, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0
	}
	return ts.Nano()
}
