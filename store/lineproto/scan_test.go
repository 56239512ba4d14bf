package lineproto

import (
	"context"
	"errors"
	"io"
	"os"
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
		{"line longer than the cap is skipped", "a\n" + strings.Repeat("z", MaxLine+5) + "\nb\n", []string{"a", "b"}, []int64{2}},
		{"unterminated line longer than the cap", "a\n" + strings.Repeat("z", MaxLine+5), []string{"a"}, []int64{2}},
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

// endless is a reader that never ends: its pattern, again and again.
type endless struct{ pattern []byte }

func (e endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = e.pattern[i%len(e.pattern)]
	}
	return len(p), nil
}

// A scan of a source without end (one line that never ends, the
// over-long-line path; short lines without end; /dev/zero where it exists)
// stops with the context's error soon after the context is cancelled.
func TestScanLinesEndlessStopsOnCancel(t *testing.T) {
	srcs := map[string]io.Reader{
		"zeros":       endless{[]byte{0}},
		"lines":       endless{[]byte("not a point\n")},
		"a torn line": endless{[]byte("probe,kind=free,lane=a queue_s=1 1795960800000000000\nprobe,kind=")},
	}
	if f, err := os.Open("/dev/zero"); err == nil {
		defer f.Close()
		srcs["/dev/zero"] = f
	}
	for name, src := range srcs {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() {
				done <- ScanLines(ctx, src, func(int64, []byte, bool) error { return nil }, func(int64) {})
			}()
			time.Sleep(20 * time.Millisecond)
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("returned %v, want context.Canceled", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("still reading 10 s after the context was cancelled")
			}
		})
	}
}
