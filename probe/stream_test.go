package probe

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// streamEnd names each way a stream can stop, and keeps its cause for
// errors.Is. Kills the removal of any of its cases (ErrLineTooLong, gzip
// errors and the rest fall to the generic "read: ..." failure) and each
// part of isGzipError.
func TestStreamEndClassifies(t *testing.T) {
	boom := errors.New("connection reset by peer")
	for _, c := range []struct {
		name     string
		err      error
		finished bool
		outcome  Outcome // "" for a clean end
		cause    error
		detail   string
	}{
		{"clean end after a stop reason", io.EOF, true, "", nil, ""},
		{"end without a terminal event", io.EOF, false, StreamError, ErrNoTerminal, "stream ended without a terminal event"},
		{"closed mid-event", io.ErrUnexpectedEOF, true, StreamError, ErrTruncated, "connection closed mid-stream"},
		{"line over the cap", ErrLineTooLong, false, StreamError, ErrLineTooLong, "line or event over 64 bytes"},
		{"line over the cap, wrapped", fmt.Errorf("sse: %w", ErrLineTooLong), false, StreamError, ErrLineTooLong, "line or event over 64 bytes"},
		{"response over the cap", ErrTooLarge, false, StreamError, ErrTooLarge, "response over 4096 bytes"},
		{"gzip header", gzip.ErrHeader, false, StreamError, gzip.ErrHeader, "corrupt gzip stream"},
		{"gzip checksum", gzip.ErrChecksum, false, StreamError, gzip.ErrChecksum, "corrupt gzip stream"},
		{"corrupt deflate", flate.CorruptInputError(7), false, StreamError, flate.CorruptInputError(7), "corrupt gzip stream"},
		{"other read error", boom, false, StreamError, boom, "read: connection reset by peer"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &run{t: Target{MaxLine: 64, MaxBytes: 4096}}
			r.tl.finished = c.finished
			err := r.streamEnd(context.Background(), c.err)
			if c.outcome == "" {
				if err != nil {
					t.Fatalf("streamEnd = %v, want nil", err)
				}
				return
			}
			var f *Error
			if !errors.As(err, &f) {
				t.Fatalf("streamEnd = %v (%T), want a *Error", err, err)
			}
			if f.Outcome != c.outcome || f.Detail != c.detail || !errors.Is(err, c.cause) {
				t.Fatalf("streamEnd = %s %q (cause %v), want %s %q wrapping %v", f.Outcome, f.Detail, f.Err, c.outcome, c.detail, c.cause)
			}
		})
	}
	// A context that ended is a timeout, whatever the read said.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := &run{t: Target{MaxLine: 64}}
	var f *Error
	if err := r.streamEnd(ctx, ErrLineTooLong); !errors.As(err, &f) || f.Outcome != Timeout || !errors.Is(err, context.Canceled) {
		t.Fatalf("streamEnd after cancel = %v, want a timeout wrapping context.Canceled", err)
	}
}

// gzipped returns body gzipped, and the same with its CRC-32 trailer broken
// or its deflate data cut by garbage.
func gzipped(body string) (ok, badCRC, badDeflate []byte) {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write([]byte(body))
	_ = zw.Close()
	ok = b.Bytes()
	badCRC = bytes.Clone(ok)
	badCRC[len(badCRC)-8] ^= 0xff                                     // first byte of the CRC-32
	badDeflate = append(bytes.Clone(ok[:10]), 0xff, 0xff, 0xff, 0xff) // header, then a reserved block type
	return ok, badCRC, badDeflate
}

// A probe of a lane that sends a broken gzip stream says so, for each way
// the stream can be broken.
func TestCorruptGzipStream(t *testing.T) {
	_, badCRC, badDeflate := gzipped(oaText(genText) + oaFinish() + oaUsage(3)) // no [DONE]: read to the end
	for _, c := range []struct {
		name  string
		body  []byte
		cause error
	}{
		{"not gzip at all", []byte(oaText(genText) + oaDone), gzip.ErrHeader},
		{"checksum", badCRC, gzip.ErrChecksum},
		{"deflate data", badDeflate, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.Header().Set("Content-Encoding", "gzip")
				_, _ = w.Write(c.body)
			}))
			s, err := Run(context.Background(), target(OpenAI, url))
			if s.Outcome != StreamError || s.Detail != "corrupt gzip stream" {
				t.Fatalf("outcome %s %q, want stream_error \"corrupt gzip stream\"", s.Outcome, s.Detail)
			}
			var corrupt flate.CorruptInputError
			if c.cause != nil && !errors.Is(err, c.cause) || c.cause == nil && !errors.As(err, &corrupt) {
				t.Fatalf("error %v does not wrap the gzip error", err)
			}
		})
	}
}

// A probe of a lane that sends a line over the cap names the cap.
func TestLineOverTheCapNamesTheCap(t *testing.T) {
	url := serve(t, script{steps: []step{{0, "data: " + strings.Repeat("x", 100) + "\n\n"}}})
	tg := target(OpenAI, url)
	tg.MaxLine = 64
	s, err := Run(context.Background(), tg)
	if s.Outcome != StreamError || s.Detail != "line or event over 64 bytes" || !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("outcome %s %q (%v), want stream_error \"line or event over 64 bytes\"", s.Outcome, s.Detail, err)
	}
}

// chunks is a reader that returns its chunks one per Read.
type chunks [][]byte

func (c *chunks) Read(p []byte) (int, error) {
	if len(*c) == 0 {
		return 0, io.EOF
	}
	n := copy(p, (*c)[0])
	if n == len((*c)[0]) {
		*c = (*c)[1:]
	} else {
		(*c)[0] = (*c)[0][n:]
	}
	return n, nil
}

// readAllCapped reads r to its end or error, at most 100 reads (a reader
// that makes no progress must not hang the test).
func readAllCapped(r io.Reader, buf int) ([]byte, error) {
	var out []byte
	p := make([]byte, buf)
	for range 100 {
		n, err := r.Read(p)
		out = append(out, p[:n]...)
		if err != nil {
			return out, err
		}
	}
	return out, errors.New("no progress in 100 reads")
}

// capReader passes exactly max bytes; the byte after them is ErrTooLarge,
// and the error sticks. Worked with max 10.
func TestCapReader(t *testing.T) {
	const limit = 10
	digits := []byte("0123456789abcdef")
	for _, c := range []struct {
		name string
		src  [][]byte
		buf  int
		want string
		err  error
	}{
		{"exactly the cap", [][]byte{digits[:10]}, 64, "0123456789", io.EOF},
		{"exactly the cap in small reads", [][]byte{digits[:4], digits[4:8], digits[8:10]}, 64, "0123456789", io.EOF},
		{"one over in one read", [][]byte{digits[:11]}, 64, "0123456789", ErrTooLarge},
		{"six over in one read", [][]byte{digits[:16]}, 64, "0123456789", ErrTooLarge},
		{"over across reads", [][]byte{digits[:6], digits[6:16]}, 64, "0123456789", ErrTooLarge},
		{"small buffer", [][]byte{digits[:16]}, 3, "0123456789", ErrTooLarge},
		{"under the cap", [][]byte{digits[:9]}, 64, "012345678", io.EOF},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := chunks(c.src)
			cr := &capReader{r: &src, max: limit}
			got, err := readAllCapped(cr, c.buf)
			if string(got) != c.want || !errors.Is(err, c.err) {
				t.Fatalf("read %q, %v; want %q, %v", got, err, c.want, c.err)
			}
			if n, again := cr.Read(make([]byte, 8)); n != 0 || !errors.Is(again, c.err) {
				t.Fatalf("read after the end: %d, %v; want 0, %v (sticky)", n, again, c.err)
			}
		})
	}
}

// counting is a reader that counts the bytes it hands out.
type counting struct {
	r io.Reader
	n int
}

func (c *counting) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// capReader never pulls more than max+1 bytes from its source, however the
// source splits them: 6, then 10 ready, cap 10, so 6 + 5 = 11.
func TestCapReaderPullsAtMostOnePastTheCap(t *testing.T) {
	src := chunks{[]byte("012345"), []byte("6789abcdef")}
	cnt := &counting{r: &src}
	got, err := readAllCapped(&capReader{r: cnt, max: 10}, 64)
	if string(got) != "0123456789" || !errors.Is(err, ErrTooLarge) || cnt.n != 11 {
		t.Fatalf("read %q, %v, pulling %d bytes; want 0123456789, ErrTooLarge, 11", got, err, cnt.n)
	}
}
