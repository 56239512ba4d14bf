package lineproto

import (
	"errors"
	"fmt"
	"time"

	"github.com/influxdata/line-protocol/v2/lineprotocol"
)

// Encoder builds lines of line protocol, nanosecond precision, one after
// the other in one buffer. A value that InfluxDB would not store (a float
// that is not finite, a string that is not UTF-8) fails its line: EndLine
// reports the first.
type Encoder struct {
	enc lineprotocol.Encoder
	bad string // why the line being built cannot be stored
}

// Reset empties the buffer.
func (e *Encoder) Reset() { e.enc.Reset() }

// Bytes returns the lines built since Reset; the buffer is reused after it.
func (e *Encoder) Bytes() []byte { return e.enc.Bytes() }

// StartLine starts a line of measurement m. Tags must follow in lexical
// order of their keys, then the fields.
func (e *Encoder) StartLine(m string) {
	e.enc.StartLine(m)
	e.bad = ""
}

// AddTag adds a tag.
func (e *Encoder) AddTag(key, value string) { e.enc.AddTag(key, value) }

// AddFloat adds a float field; a value that is not finite fails the line.
func (e *Encoder) AddFloat(key string, x float64) {
	v, ok := lineprotocol.FloatValue(x)
	if !ok {
		e.fail(fmt.Sprintf("%s is %v, want a finite number", key, x))
		return
	}
	e.enc.AddField(key, v)
}

// AddInt adds an integer field.
func (e *Encoder) AddInt(key string, x int64) { e.enc.AddField(key, lineprotocol.IntValue(x)) }

// AddBool adds a boolean field.
func (e *Encoder) AddBool(key string, b bool) { e.enc.AddField(key, lineprotocol.BoolValue(b)) }

// AddString adds a string field; one that is not valid UTF-8 fails the
// line.
func (e *Encoder) AddString(key, s string) {
	v, ok := lineprotocol.StringValue(s)
	if !ok {
		e.fail(key + " is not valid UTF-8")
		return
	}
	e.enc.AddField(key, v)
}

func (e *Encoder) fail(why string) {
	if e.bad == "" {
		e.bad = why
	}
}

// EndLine ends the line with timestamp t. It reports why the line cannot
// be stored, if it cannot; the caller then discards the buffer (the line
// is in it).
func (e *Encoder) EndLine(t time.Time) error {
	if e.bad != "" {
		// Finish the line so the encoder is in a clean state; the lines
		// are discarded by the caller.
		e.enc.EndLine(t)
		e.enc.ClearErr()
		return errors.New(e.bad)
	}
	e.enc.EndLine(t)
	if err := e.enc.Err(); err != nil {
		e.enc.ClearErr()
		return err
	}
	return nil
}
