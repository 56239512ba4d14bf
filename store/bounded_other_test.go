//go:build !unix

package store

import "testing"

// makeFIFO: no named pipes to make here.
func makeFIFO(*testing.T, string) (string, bool) { return "", false }
