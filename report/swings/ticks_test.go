package swings

import (
	"strconv"
	"testing"
)

// The y axis carries enough labelled values to read a queue off the chart.
func TestSecondsTicks(t *testing.T) {
	cases := []struct {
		name         string
		lo, hi, step float64
	}{
		{"half a second", 0, 0.6, 0.1},
		{"thirty seconds", 0, 29.16, 5},
		{"two minutes", 0, 130, 15},
		{"an hour", 0, 3900, 600},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ticks := secondsTicks{}.Ticks(c.lo, c.hi)
			if len(ticks) < 4 || len(ticks) > 11 {
				t.Fatalf("%d ticks for [%g, %g], want 4..11", len(ticks), c.lo, c.hi)
			}
			for _, tk := range ticks {
				if tk.Label == "" {
					t.Errorf("tick %g has no label", tk.Value)
				}
				if v, err := strconv.ParseFloat(tk.Label, 64); err != nil || len(tk.Label) > 6 || abs(v-tk.Value) > c.step/100 {
					t.Errorf("tick %g labelled %q", tk.Value, tk.Label)
				}
			}
			if got := ticks[1].Value - ticks[0].Value; abs(got-c.step) > c.step/1000 {
				t.Errorf("step %g, want %g", got, c.step)
			}
		})
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
