package swings

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// The legend's column leaves room for a font legendSlack times as wide as
// the built-in metrics, and the plot and the column fit the image.
func TestLegendLayout(t *testing.T) {
	long := strings.Repeat("w", 60) // wide letters, cut to legendNameW
	for _, tc := range []struct {
		name  string
		lanes []Lane
	}{
		{"short names", []Lane{{Name: "free", Kind: "free"}, {Name: "paid", Kind: "paid"}}},
		{"long names", []Lane{{Name: long, Kind: "free"}, {Name: "W" + long, Kind: "paid"}}},
		{"no lanes", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Compute(nil, Options{Location: time.UTC, Days: 7, Lanes: tc.lanes, Classes: []ClassLine{{Name: long, DeadlineS: 1e6}}})
			for _, logY := range []bool{false, true} {
				_, legend, err := chart(r, logY)
				if err != nil {
					t.Fatal(err)
				}
				lay := layout(legend)
				if lay.measured <= 0 {
					t.Fatalf("legend measured %v wide", lay.measured)
				}
				if room := lay.column - lay.pad; room < 1.4*lay.measured {
					t.Errorf("legend column %v for text %v wide: under 1.4x", room, lay.measured)
				}
				if plotW := chartW - lay.column - lay.pad; plotW < chartW/2 {
					t.Errorf("the legend leaves the plot %v of %v", plotW, chartW)
				}
			}
		})
	}
}

// The log axis carries labelled values at 1, 2, 5 of each decade, all > 0
// and inside the range, whatever the range.
func TestLogTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		labels string
	}{
		{0.1, 39, "0.1 0.2 0.5 1 2 5 10 20"},
		{0.01, 3900, "0.01 0.1 1 10 100 1000"},
		{1, 1.3, "1"},
		{0.001, 0.05, "0.001 0.002 0.005 0.01 0.02 0.05"},
	} {
		ticks := logTicks{}.Ticks(tc.lo, tc.hi)
		var labels []string
		for _, tk := range ticks {
			if !(tk.Value > 0) || tk.Value < tc.lo*(1-1e-9) || tk.Value > tc.hi*(1+1e-9) {
				t.Errorf("[%g, %g]: tick %g outside", tc.lo, tc.hi, tk.Value)
			}
			if tk.Label == "" {
				continue
			}
			if v, err := strconv.ParseFloat(tk.Label, 64); err != nil || v != tk.Value || len(tk.Label) > 6 {
				t.Errorf("[%g, %g]: tick %g labelled %q", tc.lo, tc.hi, tk.Value, tk.Label)
			}
			labels = append(labels, tk.Label)
		}
		if got := strings.Join(labels, " "); got != tc.labels {
			t.Errorf("[%g, %g]: labels %q, want %q", tc.lo, tc.hi, got, tc.labels)
		}
	}
	for _, bad := range [][2]float64{{0, 10}, {-1, 10}, {5, 5}} {
		if ticks := (logTicks{}).Ticks(bad[0], bad[1]); len(ticks) != 1 || !(ticks[0].Value > 0) {
			t.Errorf("range %v: ticks %v", bad, ticks)
		}
	}
}
