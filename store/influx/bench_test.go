package influx_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/influxtest"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/influx"
)

var yearStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const benchLanes = 50

// BenchmarkInfluxWriteRound50 writes one sampler round of 50 lanes
// (50 probe and 50 hourly points) to a real InfluxDB 1.8.
func BenchmarkInfluxWriteRound50(b *testing.B) {
	s := openInflux(b, influxtest.URL(b), influx.Options{})
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		at := yearStart.Add(time.Duration(i) * 20 * time.Minute)
		hour := store.HourStart(at, time.UTC)
		var bt store.Batch
		for l := range benchLanes {
			lane := fmt.Sprintf("lane-%02d", l)
			p := store.Probe{Lane: lane, Kind: "free", Time: at.Add(time.Duration(l) * time.Millisecond), QueueS: float64(l), GenS: 2, HeadersS: 0.3, Tokens: 16, OK: true, Outcome: "ok", Status: 200}
			bt.Probes = append(bt.Probes, p)
			bt.Hourly = append(bt.Hourly, store.Aggregate(lane, "free", "", hour, []store.Probe{p}))
		}
		if err := s.Write(ctx, bt); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkInfluxHourly30d50 reads 30 days of hourly points of 50 lanes
// (36,000 points) from a real InfluxDB 1.8.
func BenchmarkInfluxHourly30d50(b *testing.B) {
	s := openInflux(b, influxtest.URL(b), influx.Options{})
	for day := range 30 {
		var hs []store.Hourly
		for h := range 24 {
			hour := yearStart.Add(time.Duration(day*24+h) * time.Hour)
			for l := range benchLanes {
				hs = append(hs, store.Hourly{Lane: fmt.Sprintf("lane-%02d", l), Kind: "free", Hour: hour,
					WorstQueueS: float64(l + h), WorstGenS: 2, MinTokPerS: 8, Samples: 3, Eligible: true})
			}
		}
		if err := s.Write(ctx, store.Batch{Hourly: hs}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		hs, err := store.ReadHourly(ctx, s, store.Between(yearStart, yearStart.Add(30*24*time.Hour)))
		if err != nil {
			b.Fatal(err)
		}
		if len(hs) != 36000 {
			b.Fatalf("got %d hourly points, want 36000", len(hs))
		}
	}
}
