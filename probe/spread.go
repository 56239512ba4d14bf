package probe

import "time"

// Spread returns when each of n probes of a round should start, as offsets
// from the start of the round: probe i starts window*i/n in, so starts are
// window/n apart and the last one begins one step before the window ends.
// It returns nil for n <= 0 and all zeros for window <= 0.
//
// Probes started in the same instant share the CPU in one burst of dials,
// TLS handshakes and request writes, and the server's reads and the
// client's reads of first tokens queue behind it: on a 2-core host 200
// probes at once misread their queue by several ms (median) to tens of ms
// (max). A start every few milliseconds keeps every probe near the error of
// a probe alone; BENCHMARKS.md has the figures. A caller that also bounds
// the probes in flight starts probe i at its offset or when a slot frees,
// whichever is later.
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
