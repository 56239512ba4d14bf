package store_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/influxtest"
	"github.com/lanewatch/lanewatch/store"
)

// yearFile is a year-long embedded store of 50 lanes (three probes an hour
// each, one hourly point per lane-hour): 1,314,000 probe lines and 438,000
// hourly lines, made once per test binary.
var yearFile struct {
	once sync.Once
	dir  string
	path string
	err  error
}

var yearStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const benchLanes = 50

func makeYearFile() (string, error) {
	yearFile.once.Do(func() {
		yearFile.dir, yearFile.err = os.MkdirTemp("", "lanewatch-bench-")
		if yearFile.err != nil {
			return
		}
		yearFile.path = filepath.Join(yearFile.dir, "samples.lp")
		var s *store.File
		s, yearFile.err = store.OpenFile(yearFile.path, store.FileOptions{})
		if yearFile.err != nil {
			return
		}
		defer s.Close()
		for day := range 365 {
			var ps []store.Probe
			var hs []store.Hourly
			for h := range 24 {
				hour := yearStart.Add(time.Duration(day*24+h) * time.Hour)
				for l := range benchLanes {
					lane := fmt.Sprintf("lane-%02d", l)
					var lp []store.Probe
					for r, minute := range []int{7, 27, 47} {
						q := float64((day*7+h*13+l*3+r)%97) + 0.25
						lp = append(lp, store.Probe{Lane: lane, Kind: "free", Time: hour.Add(time.Duration(minute)*time.Minute + time.Duration(l)*time.Millisecond*37),
							QueueS: q, GenS: 1.5 + float64(r), HeadersS: 0.3, Tokens: 16, OK: (day+h+l+r)%41 != 0, Outcome: "ok", Status: 200})
					}
					ps = append(ps, lp...)
					hs = append(hs, store.Aggregate(lane, "free", "", hour, lp))
				}
			}
			if err := s.Write(ctx, ps, hs); err != nil {
				yearFile.err = err
				return
			}
		}
	})
	return yearFile.path, yearFile.err
}

func removeBenchFiles() {
	if yearFile.dir != "" {
		_ = os.RemoveAll(yearFile.dir)
	}
}

// BenchmarkFileHourlyYear is policygen's read: 8 days of hourly points out
// of a year-long file of 50 lanes.
func BenchmarkFileHourlyYear(b *testing.B) {
	path, err := makeYearFile()
	if err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	s, err := store.OpenFile(path, store.FileOptions{ReadOnly: true, Warn: func(msg string, args ...any) { b.Fatalf("warning: %s %v", msg, args) }})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	to := yearStart.Add(365 * 24 * time.Hour)
	from := to.Add(-8 * 24 * time.Hour)
	b.SetBytes(fi.Size())
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		hs, err := s.Hourly(ctx, store.Between(from, to))
		if err != nil {
			b.Fatal(err)
		}
		if len(hs) != 8*24*benchLanes {
			b.Fatalf("got %d hourly points, want %d", len(hs), 8*24*benchLanes)
		}
	}
	b.ReportMetric(float64(fi.Size())/(1<<20), "file-MiB")
}

// BenchmarkInfluxWriteRound50 writes one sampler round of 50 lanes
// (50 probe and 50 hourly points) to a real InfluxDB 1.8.
func BenchmarkInfluxWriteRound50(b *testing.B) {
	s := openSpooled(b, influxtest.URL(b), store.InfluxOptions{}, store.SpoolOptions{Path: filepath.Join(b.TempDir(), "spool.lp")})
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		at := yearStart.Add(time.Duration(i) * 20 * time.Minute)
		hour := store.HourStart(at, time.UTC)
		ps := make([]store.Probe, 0, benchLanes)
		hs := make([]store.Hourly, 0, benchLanes)
		for l := range benchLanes {
			lane := fmt.Sprintf("lane-%02d", l)
			p := store.Probe{Lane: lane, Kind: "free", Time: at.Add(time.Duration(l) * time.Millisecond), QueueS: float64(l), GenS: 2, HeadersS: 0.3, Tokens: 16, OK: true, Outcome: "ok", Status: 200}
			ps = append(ps, p)
			hs = append(hs, store.Aggregate(lane, "free", "", hour, []store.Probe{p}))
		}
		if err := s.Write(ctx, ps, hs); err != nil {
			b.Fatal(err)
		}
		i++
	}
	if d := s.SpoolDepth(); d != 0 {
		b.Fatalf("%d points spooled: the server did not take them", d)
	}
}

// BenchmarkInfluxHourly30d50 reads 30 days of hourly points of 50 lanes
// (36,000 points) from a real InfluxDB 1.8.
func BenchmarkInfluxHourly30d50(b *testing.B) {
	s := openInflux(b, influxtest.URL(b), store.InfluxOptions{})
	for day := range 30 {
		var hs []store.Hourly
		for h := range 24 {
			hour := yearStart.Add(time.Duration(day*24+h) * time.Hour)
			for l := range benchLanes {
				hs = append(hs, store.Hourly{Lane: fmt.Sprintf("lane-%02d", l), Kind: "free", Hour: hour,
					WorstQueueS: float64(l + h), WorstGenS: 2, MinTokPerS: 8, Samples: 3, Eligible: true})
			}
		}
		if err := s.Write(ctx, nil, hs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		hs, err := s.Hourly(ctx, store.Between(yearStart, yearStart.Add(30*24*time.Hour)))
		if err != nil {
			b.Fatal(err)
		}
		if len(hs) != 36000 {
			b.Fatalf("got %d hourly points, want 36000", len(hs))
		}
	}
}

// BenchmarkFileScanProbesYear is the backtest's read: every probe of a
// year-long file of 50 lanes (1,314,000 lines) streamed in time order, the
// decode path that the plain-line reader serves.
func BenchmarkFileScanProbesYear(b *testing.B) {
	path, err := makeYearFile()
	if err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	s, err := store.OpenFile(path, store.FileOptions{ReadOnly: true, Warn: func(msg string, args ...any) { b.Fatalf("warning: %s %v", msg, args) }})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	q := store.Between(yearStart, yearStart.Add(365*24*time.Hour))
	b.SetBytes(fi.Size())
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		n := 0
		ordered, err := s.ScanProbes(ctx, q, func(store.Probe) error { n++; return nil })
		if err != nil || !ordered {
			b.Fatalf("ScanProbes: ordered %v, %v", ordered, err)
		}
		if n != 365*24*3*benchLanes {
			b.Fatalf("got %d probes, want %d", n, 365*24*3*benchLanes)
		}
	}
}
