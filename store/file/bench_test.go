package file_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
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
		var s *file.Store
		s, yearFile.err = file.Open(yearFile.path, file.Options{})
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
			if err := s.Write(ctx, store.Batch{Probes: ps, Hourly: hs}); err != nil {
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
	s, err := file.Open(path, file.Options{ReadOnly: true, Warn: func(msg string, args ...any) { b.Fatalf("warning: %s %v", msg, args) }})
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
		hs, err := store.ReadHourly(ctx, s, store.Between(from, to))
		if err != nil {
			b.Fatal(err)
		}
		if len(hs) != 8*24*benchLanes {
			b.Fatalf("got %d hourly points, want %d", len(hs), 8*24*benchLanes)
		}
	}
	b.ReportMetric(float64(fi.Size())/(1<<20), "file-MiB")
}

// BenchmarkFileScanProbesYear is the backtest's read: every probe of a
// year-long file of 50 lanes (1,314,000 lines) streamed in time order.
func BenchmarkFileScanProbesYear(b *testing.B) {
	path, err := makeYearFile()
	if err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	s, err := file.Open(path, file.Options{ReadOnly: true, Warn: func(msg string, args ...any) { b.Fatalf("warning: %s %v", msg, args) }})
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
		if err := s.Read(ctx, q, store.Reader{Probe: func(store.Probe) error { n++; return nil }}); err != nil {
			b.Fatalf("Read: %v", err)
		}
		if n != 365*24*3*benchLanes {
			b.Fatalf("got %d probes, want %d", n, 365*24*3*benchLanes)
		}
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	removeBenchFiles()
	os.Exit(code)
}
