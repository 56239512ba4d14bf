package sampler

import (
	"testing"
	"time"
)

// jitter keeps a booking in its second (so in its hour and day) and never
// on the time it was given.
func TestJitterStaysInItsSecond(t *testing.T) {
	sec := time.Date(2026, 12, 1, 23, 59, 59, 0, time.UTC)
	for _, tc := range []struct {
		name string
		at   time.Time
		d    time.Duration
		want time.Time
	}{
		{"start of a second", sec, time.Nanosecond, sec.Add(time.Nanosecond)},
		{"middle", sec.Add(500 * time.Millisecond), 999_999, sec.Add(500*time.Millisecond + 999_999)},
		{"last nanosecond of the day", sec.Add(time.Second - 1), time.Nanosecond, sec.Add(time.Second - 2)},
		{"near the end of the day", sec.Add(time.Second - 10), time.Millisecond, sec.Add(time.Second - 10 - time.Millisecond)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := jitter(tc.at, tc.d)
			if !got.Equal(tc.want) || got.Equal(tc.at) || !got.Truncate(time.Second).Equal(tc.at.Truncate(time.Second)) {
				t.Fatalf("jitter(%s, %s) = %s, want %s", tc.at.Format(time.RFC3339Nano), tc.d, got.Format(time.RFC3339Nano), tc.want.Format(time.RFC3339Nano))
			}
		})
	}
}
