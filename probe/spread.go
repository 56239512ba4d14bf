package probe

import "time"

// Spread returns when each of n probes of a round should start, as offsets
// from its start: probe i at window*i/n (nil for n <= 0, zeros for window
// <= 0). Probes started at once misread their queue (BENCHMARKS.md).
func Spread(n int, window time.Duration) []time.Duration {
	if n <= 0 {
		return nil
	}
	at := make([]time.Duration, n)
	if window <= 0 {
		return at
	}
	step, rest := window/time.Duration(n), window%time.Duration(n)
	for i := range at {
		// step*i + rest*i/n is window*i/n without overflow: rest*i < n*n.
		at[i] = step*time.Duration(i) + rest*time.Duration(i)/time.Duration(n)
	}
	return at
}
