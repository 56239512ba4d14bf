package probe

import (
	"math"
	"slices"
	"testing"
	"time"
)

func TestSpread(t *testing.T) {
	tests := []struct {
		n      int
		window time.Duration
		want   []time.Duration
	}{
		{0, time.Second, nil},
		{-1, time.Second, nil},
		{1, time.Second, []time.Duration{0}},
		{3, 0, []time.Duration{0, 0, 0}},
		{2, -time.Second, []time.Duration{0, 0}},
		{4, time.Second, []time.Duration{0, 250 * time.Millisecond, 500 * time.Millisecond, 750 * time.Millisecond}},
		{3, 10, []time.Duration{0, 3, 6}},
		{3, 11, []time.Duration{0, 3, 7}},
	}
	for _, tt := range tests {
		if got := Spread(tt.n, tt.window); !slices.Equal(got, tt.want) || (got == nil) != (tt.want == nil) {
			t.Errorf("Spread(%d, %v) = %v, want %v", tt.n, tt.window, got, tt.want)
		}
	}
}

// TestSpreadLarge checks that offsets stay exact and in order where
// window*i would overflow.
func TestSpreadLarge(t *testing.T) {
	const n = 100_000
	window := time.Duration(math.MaxInt64 / 2)
	at := Spread(n, window)
	for i := 1; i < n; i++ {
		if at[i] <= at[i-1] || at[i] >= window {
			t.Fatalf("offset %d = %v after %v, window %v", i, at[i], at[i-1], window)
		}
	}
	if want := window / n * (n - 1); at[n-1] < want {
		t.Errorf("last offset %v, want at least %v", at[n-1], want)
	}
}
