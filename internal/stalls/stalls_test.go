package stalls

import (
	"runtime"
	"testing"
	"time"
)

// On one processor, a goroutine that spins for 100 ms holds the watcher
// back until the scheduler preempts it (about every 10 ms): the watcher
// sees a stall of milliseconds, where an idle one sees well under that.
func TestWatchSeesAStall(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	stop := Watch()
	time.Sleep(5 * time.Millisecond) // the watcher is ticking
	for t0 := time.Now(); time.Since(t0) < 100*time.Millisecond; {
	}
	if d := stop(); d < 2*time.Millisecond {
		t.Fatalf("worst stall %v while a goroutine spun 100 ms on the only processor, want at least 2 ms", d)
	}
}
