package store

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store/lineproto"
)

// TestWrittenLinesArePlain: every line the stores write takes the plain
// path, so that reads never fall back to the library for their own data.
func TestWrittenLinesArePlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	num := func() float64 {
		switch rng.IntN(4) {
		case 0:
			return 0
		case 1:
			return math.Round(rng.Float64()*1e4) / 100
		case 2:
			return rng.ExpFloat64() * math.Pow(10, float64(rng.IntN(40)-20))
		}
		return rng.Float64() * 1e6
	}
	name := func() string {
		return strings.Repeat(string("abz09-_.:/"[rng.IntN(10)]), 1+rng.IntN(12))
	}
	var e encoder
	for i := range 2000 {
		p := Probe{Lane: name(), Kind: []string{"free", "paid"}[rng.IntN(2)], Site: []string{"", name()}[rng.IntN(2)],
			Time: time.Unix(0, rng.Int64N(4e18)-2e18), QueueS: num(), GenS: num(), HeadersS: num(), ConnectS: num(),
			Tokens: rng.Int64N(1e6), OK: rng.IntN(2) == 0, Outcome: []string{"ok", "timeout", "http_error", "rate_limited"}[rng.IntN(4)],
			Status: int64(rng.IntN(600)), QuotaKnown: rng.IntN(2) == 0, QuotaRemaining: rng.Int64N(1000), QuotaResetS: num()}
		if !p.QuotaKnown {
			p.QuotaRemaining = 0 // not written
		}
		p.Time = p.Time.UTC()
		h := Hourly{Lane: p.Lane, Kind: p.Kind, Site: p.Site, Hour: p.Time.Truncate(time.Hour), WorstQueueS: num(), WorstGenS: num(),
			MinTokPerS: num(), Samples: rng.Int64N(10), Failures: rng.Int64N(10), Eligible: rng.IntN(2) == 0, WorstCensoredS: num()}
		b, err := e.round([]Probe{p}, []Hourly{h})
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.Split(bytes.TrimSuffix(b, []byte{'\n'}), []byte{'\n'})
		for j, want := range []string{MeasurementProbe, MeasurementHourly} {
			if _, ok, _ := lineproto.Plain(lines[j], want, func(k, v []byte) {}, func([]byte, lineproto.Value) error { return nil }); !ok {
				t.Fatalf("line %d: written, but not plain: %q", i, lines[j])
			}
		}
		got, err := decodeProbe(lines[0])
		if err != nil || fmt.Sprint(got) != fmt.Sprint(p) {
			t.Fatalf("line %d: %q reads as %+v, %v; want %+v", i, lines[0], got, err, p)
		}
	}
}
