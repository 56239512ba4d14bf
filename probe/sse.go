package probe

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"io"
)

// ErrLineTooLong is the SSE reader's error for a line, or an event's data,
// over its cap.
var ErrLineTooLong = errors.New("sse line over the cap")

// Event is one dispatched server-sent event. Data is only valid until the
// next call to Next.
type Event struct {
	Type string // the "event:" field, "message" when absent
	Data []byte // the "data:" lines joined with "\n"
}

// SSEReader reads server-sent events (the WHATWG event-stream format),
// holding no more than its cap; fields other than event and data are ignored.
type SSEReader struct {
	br      *bufio.Reader
	max     int
	line    []byte
	data    []byte
	typ     string
	hasData bool
	afterCR bool // last line ended in CR: a following LF belongs to it
}

// NewSSEReader returns a reader over r, past a byte order mark, that fails
// with ErrLineTooLong once a line or an event's data exceeds maxLine bytes.
func NewSSEReader(r io.Reader, maxLine int) *SSEReader {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	br := bufio.NewReaderSize(r, readBuf)
	if b, _ := br.Peek(3); bytes.Equal(b, []byte("\xef\xbb\xbf")) {
		_, _ = br.Discard(3)
	}
	return &SSEReader{br: br, max: maxLine}
}

// Next returns the next event: io.EOF at the end of input between events,
// io.ErrUnexpectedEOF inside one.
func (r *SSEReader) Next() (Event, error) {
	r.data, r.typ, r.hasData = r.data[:0], "", false
	for {
		line, err := r.readLine()
		if err != nil {
			if err == io.EOF && (len(r.line) > 0 || r.hasData || r.typ != "") {
				err = io.ErrUnexpectedEOF
			}
			return Event{}, err
		}
		if len(line) == 0 { // the event ends; one without data is not dispatched
			if r.hasData {
				return Event{Type: cmp.Or(r.typ, "message"), Data: bytes.TrimSuffix(r.data, []byte("\n"))}, nil
			}
			r.data, r.typ = r.data[:0], ""
			continue
		}
		if err := r.field(line); err != nil {
			return Event{}, err
		}
	}
}

// field applies one non-empty line to the event being built.
func (r *SSEReader) field(line []byte) error {
	if line[0] == ':' {
		return nil // comment
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		value = bytes.TrimPrefix(value, []byte(" "))
	}
	switch string(name) {
	case "data":
		if len(r.data)+len(value)+1 > r.max+1 {
			return ErrLineTooLong
		}
		r.data = append(r.data, value...)
		r.data = append(r.data, '\n')
		r.hasData = true
	case "event":
		r.typ = string(value)
	}
	return nil
}

// readLine returns the next line without its terminator. The returned slice
// is reused by the next call. At most max bytes are ever held.
func (r *SSEReader) readLine() ([]byte, error) {
	r.line = r.line[:0]
	for {
		if _, err := r.br.Peek(1); err != nil {
			return nil, err
		}
		buf, _ := r.br.Peek(r.br.Buffered())
		if r.afterCR {
			r.afterCR = false
			if buf[0] == '\n' {
				_, _ = r.br.Discard(1)
				continue
			}
		}
		i := bytes.IndexAny(buf, "\r\n")
		n := i
		if i < 0 {
			n = len(buf)
		}
		if len(r.line)+n > r.max {
			return nil, ErrLineTooLong
		}
		r.line = append(r.line, buf[:n]...)
		if i < 0 {
			_, _ = r.br.Discard(n)
			continue
		}
		r.afterCR = buf[i] == '\r'
		_, _ = r.br.Discard(i + 1)
		return r.line, nil
	}
}

// readBuf is the read buffer size; longer lines are assembled across reads.
const readBuf = 4 << 10
