package monoclock

import (
	"syscall"
	"time"
	"unsafe"
)

var monoBase, monoBaseNs = calibrate()

// Ns is t on CLOCK_MONOTONIC, in ns.
func Ns(t time.Time) int64 { return monoBaseNs + int64(t.Sub(monoBase)) }

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

// fineSleep blocks the thread in nanosleep: microsecond wake-ups.
func fineSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	_ = syscall.Nanosleep(&ts, nil)
}
