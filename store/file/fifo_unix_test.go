//go:build unix

package file_test

import (
	"path/filepath"
	"syscall"
	"testing"
)

// makeFIFO makes a named pipe in dir.
func makeFIFO(t *testing.T, dir string) (string, bool) {
	path := filepath.Join(dir, "fifo.lp")
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Logf("no named pipe: %v", err)
		return "", false
	}
	return path, true
}
