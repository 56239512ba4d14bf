//go:build !unix

package file

import "testing"

// makeFIFOIn: no named pipes to make here.
func makeFIFOIn(*testing.T, string) (string, bool) { return "", false }
