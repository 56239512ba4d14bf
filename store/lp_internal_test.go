package store

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzDecode: any line decodes or fails cleanly, and what decodes re-encodes
// to a line that decodes to the same point.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		"probe,kind=free,lane=a queue_s=1.5,gen_s=2,headers_s=0.5,tokens=16i,ok=true,outcome=\"ok\",status=200i 1795960800000000000",
		"queue_hourly,kind=paid,lane=a\\ b worst_queue_s=1,worst_gen_s=0,min_tok_per_s=41.5,samples=3i,failures=1i,eligible=false 1795960800000000000",
		"probe,kind=free,lane=a outcome=\"a \\\"q\\\" \\\\ ü\" -1",
		"queue_hourly,lane=x worst_queue_s=1 1",
		"probe,kind=free,lane=a queue_s=1e400 1",
		"probe queue_s=1 1",
		"queue_hourly,kind=k,lane=l samples=1u 5",
		"\xff\x00",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var e encoder
		if p, err := decodeProbe(line); err == nil {
			b, err := e.round([]Probe{p}, nil)
			if err != nil {
				return // e.g. out of InfluxDB's time range
			}
			q, err := decodeProbe(bytes.TrimSuffix(b, []byte{'\n'}))
			if err != nil || !q.Time.Equal(p.Time) || q.Lane != p.Lane || q.Outcome != p.Outcome || q.QueueS != p.QueueS {
				t.Fatalf("round trip of %q: %+v, %v; want %+v", line, q, err, p)
			}
		}
		if h, err := decodeHourly(line); err == nil {
			b, err := e.round(nil, []Hourly{h})
			if err != nil {
				return
			}
			g, err := decodeHourly(bytes.TrimSuffix(b, []byte{'\n'}))
			g.Hour, h.Hour = g.Hour.UTC(), h.Hour.UTC()
			if err != nil || !g.Hour.Equal(h.Hour) || g.Lane != h.Lane || g.Samples != h.Samples {
				t.Fatalf("round trip of %q: %+v, %v; want %+v", line, g, err, h)
			}
		}
	})
}

// FuzzFileRead: no file content makes a read fail or panic.
func FuzzFileRead(f *testing.F) {
	good := "queue_hourly,kind=free,lane=a worst_queue_s=1,worst_gen_s=2,min_tok_per_s=3,samples=1i,failures=0i,eligible=true 1795960800000000000\n"
	f.Add([]byte(good))
	f.Add([]byte(good + "probe,kind=free,lane=a queue_s=1 1795960800000000001\nqueue_hourly,kind="))
	f.Add([]byte("\n#x\n\x00\r\n" + good))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "s.lp")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := OpenFile(path, FileOptions{ReadOnly: true, Warn: func(string, ...any) {}})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		from, to := time.Unix(0, math.MinInt64), time.Unix(0, math.MaxInt64)
		if _, err := s.Hourly(t.Context(), Between(from, to)); err != nil {
			t.Fatalf("Hourly: %v", err)
		}
		if _, err := s.Probes(t.Context(), Between(from, to)); err != nil {
			t.Fatalf("Probes: %v", err)
		}
	})
}
