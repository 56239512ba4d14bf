package probe

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

type ev struct{ typ, data string }

// readAll drains an SSEReader: the events, then the error that stopped it.
func readAll(r *SSEReader) ([]ev, error) {
	var out []ev
	for {
		e, err := r.Next()
		if err != nil {
			return out, err
		}
		out = append(out, ev{e.Type, string(e.Data)})
	}
}

func TestSSEReader(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		max     int
		want    []ev
		wantErr error
	}{
		{"one event", "data: a\n\n", 0, []ev{{"message", "a"}}, io.EOF},
		{"no space after colon", "data:a\n\n", 0, []ev{{"message", "a"}}, io.EOF},
		{"only one space stripped", "data:  a\n\n", 0, []ev{{"message", " a"}}, io.EOF},
		{"data lines joined", "data: a\ndata: b\n\n", 0, []ev{{"message", "a\nb"}}, io.EOF},
		{"event type", "event: ping\ndata: {}\n\n", 0, []ev{{"ping", "{}"}}, io.EOF},
		{"type resets after dispatch", "event: x\ndata: 1\n\ndata: 2\n\n", 0,
			[]ev{{"x", "1"}, {"message", "2"}}, io.EOF},
		{"comments skipped", ": keep-alive\n\n:\ndata: a\n: mid\n\n", 0, []ev{{"message", "a"}}, io.EOF},
		{"CRLF", "data: a\r\n\r\ndata: b\r\n\r\n", 0, []ev{{"message", "a"}, {"message", "b"}}, io.EOF},
		{"CR only", "data: a\r\rdata: b\r\r", 0, []ev{{"message", "a"}, {"message", "b"}}, io.EOF},
		{"mixed endings", "data: a\r\ndata: b\n\r\n", 0, []ev{{"message", "a\nb"}}, io.EOF},
		{"byte order mark", "\xef\xbb\xbfdata: a\n\n", 0, []ev{{"message", "a"}}, io.EOF},
		{"event without data not dispatched", "event: x\n\ndata: a\n\n", 0, []ev{{"message", "a"}}, io.EOF},
		{"empty data dispatched", "data\n\n", 0, []ev{{"message", ""}}, io.EOF},
		{"id retry and unknown fields ignored", "id: 1\nretry: 5\nfoo: bar\nbaz\ndata: a\n\n", 0,
			[]ev{{"message", "a"}}, io.EOF},
		{"blank lines alone", "\n\n\n", 0, nil, io.EOF},
		{"empty input", "", 0, nil, io.EOF},
		{"partial line at EOF", "data: a", 0, nil, io.ErrUnexpectedEOF},
		{"undispatched event at EOF", "data: a\n", 0, nil, io.ErrUnexpectedEOF},
		{"event after good one cut", "data: a\n\ndata: b", 0, []ev{{"message", "a"}}, io.ErrUnexpectedEOF},
		{"line at the cap", "data:12\n\n", 7, []ev{{"message", "12"}}, io.EOF},
		{"line over the cap", "data: 123456789\n\n", 8, nil, ErrLineTooLong},
		{"comment over the cap", ": 123456789\n\n", 8, nil, ErrLineTooLong},
		{"event data over the cap", "data:12345\ndata:12345\n\n", 8, nil, ErrLineTooLong},
	}
	readers := map[string]func(string) io.Reader{
		"whole":    func(s string) io.Reader { return strings.NewReader(s) },
		"one byte": func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
	}
	for _, tt := range tests {
		for rname, mk := range readers {
			t.Run(tt.name+"/"+rname, func(t *testing.T) {
				got, err := readAll(NewSSEReader(mk(tt.in), tt.max))
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("err = %v, want %v", err, tt.wantErr)
				}
				if len(got) != len(tt.want) {
					t.Fatalf("events = %q, want %q", got, tt.want)
				}
				for i := range got {
					if got[i] != tt.want[i] {
						t.Errorf("event %d = %q, want %q", i, got[i], tt.want[i])
					}
				}
			})
		}
	}
}

// endless yields "data: " and then 'a' forever, counting what was read.
type endless struct{ n int64 }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		if e.n < 6 {
			p[i] = "data: "[e.n]
		} else {
			p[i] = 'a'
		}
		e.n++
	}
	return len(p), nil
}

// TestSSEReaderBounded proves a line with no end is never buffered whole:
// the reader gives up after reading about the cap, not the line.
func TestSSEReaderBounded(t *testing.T) {
	for _, max := range []int{1 << 10, DefaultMaxLine} {
		t.Run(fmt.Sprintf("max=%d", max), func(t *testing.T) {
			src := &endless{}
			_, err := NewSSEReader(src, max).Next()
			if !errors.Is(err, ErrLineTooLong) {
				t.Fatalf("err = %v, want ErrLineTooLong", err)
			}
			if limit := int64(max + 2*readBuf); src.n > limit {
				t.Errorf("read %d bytes for a cap of %d, want <= %d", src.n, max, limit)
			}
		})
	}
}

// FuzzSSE checks that the reader never panics, never returns data over the
// cap, ends with one of its documented errors, and is independent of how
// the input is split into reads. Each event also goes through both
// dialect decoders, which must fail only with classified failures.
func FuzzSSE(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\r\n\r\n"))
	const max = 64
	f.Fuzz(func(t *testing.T, in []byte) {
		a, errA := readAll(NewSSEReader(bytes.NewReader(in), max))
		b, errB := readAll(NewSSEReader(iotest.OneByteReader(bytes.NewReader(in)), max))
		if errA != errB || len(a) != len(b) {
			t.Fatalf("split-dependent: %q %v vs %q %v", a, errA, b, errB)
		}
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("split-dependent event %d: %q vs %q", i, a[i], b[i])
			}
			if len(a[i].data) > max {
				t.Fatalf("event %d data is %d bytes, cap %d", i, len(a[i].data), max)
			}
		}
		if errA != io.EOF && errA != io.ErrUnexpectedEOF && errA != ErrLineTooLong {
			t.Fatalf("unexpected error %v", errA)
		}
		for _, e := range a {
			for _, d := range []decoder{openaiEvent, anthropicEvent} {
				var tl tally
				var f *Error
				if err := d(Event{Type: e.typ, Data: []byte(e.data)}, &tl); err != nil && !errors.As(err, &f) {
					t.Fatalf("decoder error %v is not a classified failure", err)
				}
			}
		}
	})
}

// An event's data (its data lines joined with "\n") may be exactly the cap,
// not a byte more, however its lines split it. With a cap of 12 a line
// "data:" + 7 bytes is 12 bytes, so each line is within the cap. Kills
// sse.go field's `len(r.data)+len(value)+1 > r.max+1` moved by 1 or 2 bytes.
func TestSSEDataCapIsExact(t *testing.T) {
	const limit = 12
	for _, c := range []struct {
		name  string
		lines string
		data  string // "" with tooLong
		over  bool
	}{
		{"one line at the cap", "data:abcdefg\n", "abcdefg", false},
		{"7 + 1 + 4 = 12", "data:abcdefg\ndata:hijk\n", "abcdefg\nhijk", false},
		{"7 + 1 + 5 = 13", "data:abcdefg\ndata:hijkl\n", "", true},
		{"7 + 1 + 6 = 14", "data:abcdefg\ndata:hijklm\n", "", true},
		{"5 + 1 + 5 + 1 = 12 (an empty last line)", "data:abcde\ndata:fghij\ndata:\n", "abcde\nfghij\n", false},
		{"5 + 1 + 5 + 1 + 0 + 1 = 13", "data:abcde\ndata:fghij\ndata:\ndata:\n", "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ev, err := NewSSEReader(strings.NewReader(c.lines+"\n"), limit).Next()
			if c.over {
				if !errors.Is(err, ErrLineTooLong) {
					t.Fatalf("Next = %q, %v; want ErrLineTooLong", ev.Data, err)
				}
				return
			}
			if err != nil || string(ev.Data) != c.data {
				t.Fatalf("Next = %q, %v; want %q", ev.Data, err, c.data)
			}
		})
	}
}
