// Package lineproto reads and writes InfluxDB line protocol, one line at a
// time, for lanewatch's stores.
//
// Decode hands a line's tags and fields to callbacks: Plain reads the
// lines the stores write without the line-protocol library's general
// machinery, Library reads any other line with it. Encoder builds lines
// and refuses values InfluxDB would not store. ScanLines streams a file's
// lines with a bound on a line's length, watching a context. The package
// knows no measurement: the schema is series'.
package lineproto

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/influxdata/line-protocol/v2/lineprotocol"
)

// InfluxDB 1.x accepts timestamps in [MinInt64+2, MaxInt64-1] ns; the stores
// accept the same range so that every stored line imports as is.
const (
	MinNano int64 = math.MinInt64 + 2
	MaxNano int64 = math.MaxInt64 - 1
)

// Kind is the type of a field value.
type Kind = lineprotocol.ValueKind

// The kinds of field values.
const (
	Float  = lineprotocol.Float
	Int    = lineprotocol.Int
	Uint   = lineprotocol.Uint
	Bool   = lineprotocol.Bool
	String = lineprotocol.String
)

// Value is one decoded field value: the member of its Kind is set.
type Value struct {
	Kind Kind
	F    float64
	I    int64
	B    bool
	S    []byte // String: valid until the next line is read
}

func valueOf(v lineprotocol.Value) Value {
	fv := Value{Kind: v.Kind()}
	switch fv.Kind {
	case Float:
		fv.F = v.FloatV()
	case Int:
		fv.I = v.IntV()
	case Bool:
		fv.B = v.BoolV()
	case String:
		fv.S = v.BytesV()
	}
	return fv
}

// Decode reads one line (without its newline) of measurement want, handing
// each tag to tag and each field to field, in the order of the line: a
// plain line through Plain, any other through Library. t is the zero time
// when the line has no timestamp. An error from field ends the read.
func Decode(line []byte, want string, tag func(k, v []byte), field func(k []byte, v Value) error) (t time.Time, err error) {
	ns, plain, err := Plain(line, want, tag, field)
	if err != nil {
		return time.Time{}, err
	}
	if plain {
		return time.Unix(0, ns), nil
	}
	return Library(line, want, tag, field)
}

// Library reads a line with the line-protocol library, handing on tags
// and fields as Plain does. t is the zero time when the line has no
// timestamp.
func Library(line []byte, want string, tag func(k, v []byte), field func(k []byte, v Value) error) (time.Time, error) {
	d := lineprotocol.NewDecoderWithBytes(line)
	if !d.Next() {
		return time.Time{}, errors.New("empty line")
	}
	m, err := d.Measurement()
	if err != nil {
		return time.Time{}, err
	}
	if string(m) != want {
		return time.Time{}, fmt.Errorf("measurement %q, want %q", m, want)
	}
	for {
		k, v, err := d.NextTag()
		if err != nil {
			return time.Time{}, err
		}
		if k == nil {
			break
		}
		tag(k, v)
	}
	for {
		k, v, err := d.NextField()
		if err != nil {
			return time.Time{}, err
		}
		if k == nil {
			break
		}
		if err := field(k, valueOf(v)); err != nil {
			return time.Time{}, err
		}
	}
	return d.Time(lineprotocol.Nanosecond, time.Time{})
}

// HasMeasurement reports whether line starts with measurement m (unescaped)
// followed by its tags or fields.
func HasMeasurement(line []byte, m string) bool {
	return len(line) > len(m) && string(line[:len(m)]) == m && (line[len(m)] == ',' || line[len(m)] == ' ')
}

// LineTime reads the timestamp at the end of a line cheaply. ok is false when
// the last word is not an integer; the caller then decodes the line in full.
func LineTime(line []byte) (ns int64, ok bool) {
	i := bytes.LastIndexByte(line, ' ')
	if i < 0 {
		return 0, false
	}
	b := line[i+1:]
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var u uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	if u > math.MaxInt64 {
		return 0, false
	}
	if neg {
		return -int64(u), true
	}
	return int64(u), true
}
