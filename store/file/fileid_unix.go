//go:build linux || darwin || freebsd || openbsd || netbsd || dragonfly

package file

import (
	"os"
	"syscall"
)

// fileID is the device and inode of an open file, so that an index made
// for one file is not used for another put at its path (a prune renames a
// new file over the store). ok is false when the platform does not say.
func fileID(fi os.FileInfo) (dev, ino uint64, ok bool) {
	st, isStat := fi.Sys().(*syscall.Stat_t)
	if !isStat {
		return 0, 0, false
	}
	return uint64(st.Dev), uint64(st.Ino), true // Dev is int32 on darwin
}
