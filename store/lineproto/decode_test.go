package lineproto

import (
	"math"
	"testing"
)

func TestLineTime(t *testing.T) {
	for _, c := range []struct {
		in string
		ns int64
		ok bool
	}{
		{"m f=1 123", 123, true},
		{"m f=1 -5", -5, true},
		{"m f=1 9223372036854775807", math.MaxInt64, true},
		{"m f=1 9223372036854775808", 0, false},
		{"m f=1 99999999999999999999", 0, false},
		{"m f=1", 0, false},
		{"m f=1 ", 0, false},
		{"m f=1 12a", 0, false},
		{"m f=1 -", 0, false},
		{"nospace", 0, false},
	} {
		t.Run(c.in, func(t *testing.T) {
			ns, ok := LineTime([]byte(c.in))
			if ns != c.ns || ok != c.ok {
				t.Errorf("LineTime(%q) = %d, %v; want %d, %v", c.in, ns, ok, c.ns, c.ok)
			}
		})
	}
}
