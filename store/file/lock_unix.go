//go:build linux || darwin || freebsd || openbsd || netbsd || dragonfly

package file

import (
	"errors"
	"os"
	"syscall"
)

// errLocked reports that another open file description holds the lock.
var errLocked = errors.New("locked")

// lockExclusiveNB takes an exclusive flock on f without waiting; it returns
// errLocked when someone else holds it.
func lockExclusiveNB(f *os.File) error {
	err := flockRetry(f, syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errLocked
	}
	return err
}

// lockExclusive waits for an exclusive flock on f.
func lockExclusive(f *os.File) error { return flockRetry(f, syscall.LOCK_EX) }

// lockShared waits for a shared flock on f.
func lockShared(f *os.File) error { return flockRetry(f, syscall.LOCK_SH) }

// unlock releases a flock on f.
func unlock(f *os.File) error { return flockRetry(f, syscall.LOCK_UN) }

func flockRetry(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
