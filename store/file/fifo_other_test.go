//go:build !unix

package file_test

import "testing"

// makeFIFO: no named pipes to make here.
func makeFIFO(*testing.T, string) (string, bool) { return "", false }
