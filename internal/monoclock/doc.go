// Package monoclock maps this process's time.Time readings onto the
// system's CLOCK_MONOTONIC, which every process on the machine shares (and
// which Go's own monotonic clock reads), so that a benchmark can line up a
// server's stamps (cmd/delaylane) with a probe's.
package monoclock
