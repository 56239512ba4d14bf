package series

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestScanLines(t *testing.T) {
	long := strings.Repeat("y", 100)
	for _, c := range []struct {
		name  string
		in    string
		lines []string // with a trailing "!" when not terminated
		longs []int64
	}{
		{"empty", "", nil, nil},
		{"one line", "a\n", []string{"a"}, nil},
		{"unterminated last", "a\nb", []string{"a", "b!"}, nil},
		{"empty lines", "\n\nx\n", []string{"", "", "x"}, nil},
		{"lines longer than the buffer are assembled", "a\n" + long + "\n" + long, []string{"a", long, long + "!"}, nil},
		{"line longer than the cap is skipped", "a\n" + strings.Repeat("z", maxLine+5) + "\nb\n", []string{"a", "b"}, []int64{2}},
		{"unterminated line longer than the cap", "a\n" + strings.Repeat("z", maxLine+5), []string{"a"}, []int64{2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			var longs []int64
			err := scanLinesSize(t.Context(), strings.NewReader(c.in), 16, func(n int64, line []byte, terminated bool) error {
				if int(n) != len(got)+len(longs)+1 {
					t.Errorf("line number %d, want %d", n, len(got)+len(longs)+1)
				}
				s := string(line)
				if !terminated {
					s += "!"
				}
				got = append(got, s)
				return nil
			}, func(n int64) { longs = append(longs, n) })
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "|") != strings.Join(c.lines, "|") {
				t.Errorf("lines %q, want %q", got, c.lines)
			}
			if len(longs) != len(c.longs) || (len(longs) > 0 && longs[0] != c.longs[0]) {
				t.Errorf("long lines %v, want %v", longs, c.longs)
			}
		})
	}
}

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
			ns, ok := lineTime([]byte(c.in))
			if ns != c.ns || ok != c.ok {
				t.Errorf("lineTime(%q) = %d, %v; want %d, %v", c.in, ns, ok, c.ns, c.ok)
			}
		})
	}
}

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
