//go:build !(linux || darwin || freebsd || openbsd || netbsd || dragonfly)

package file

import (
	"errors"
	"os"
)

// On platforms without flock the store does not lock: running two writers
// on one file there is the operator's mistake to avoid.

var errLocked = errors.New("locked")

func lockExclusiveNB(*os.File) error { return nil }
func lockExclusive(*os.File) error   { return nil }
func lockShared(*os.File) error      { return nil }
func unlock(*os.File) error          { return nil }
