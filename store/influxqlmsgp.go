package store

// This file reads an InfluxQL answer sent as MessagePack (InfluxDB 1.x
// answers "Accept: application/x-msgpack"): straight into the points, each
// value typed as the server sent it, without the []any of json.Number the
// JSON answer decodes to. On the data set of BENCHMARKS.md ("At scale:
// 1,000 lanes × 3 sites × 30 days on InfluxDB") it costs influxd a third less CPU than JSON and the
// client a fraction.

import (
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/lanewatch/lanewatch/store/lineproto"
	"github.com/tinylib/msgp/msgp"
)

// qlMsgpack is the media type of a MessagePack answer.
const qlMsgpack = "application/x-msgpack"

// qlKind is the type of one value of a row.
type qlKind uint8

const (
	qlNil qlKind = iota
	qlFloat
	qlInt
	qlBool
	qlStr
)

// qlValue is one value of a row, typed: the tags and string fields as
// interned strings, numbers unboxed.
type qlValue struct {
	kind qlKind
	b    bool
	f    float64
	i    int64
	s    string
}

// float reads v as a float field reads a JSON number: a float, or an
// integer.
func (v *qlValue) float() (float64, bool) {
	switch v.kind {
	case qlFloat:
		return v.f, true
	case qlInt:
		return float64(v.i), true
	}
	return 0, false
}

// int reads v as an integer field reads a JSON number: an integer, or a
// float with an integral value (JSON writes 3.0 as 3).
func (v *qlValue) int() (int64, bool) {
	switch v.kind {
	case qlInt:
		return v.i, true
	case qlFloat:
		if v.f == math.Trunc(v.f) && v.f >= math.MinInt64 && v.f < math.MaxInt64 {
			return int64(v.f), true
		}
	}
	return 0, false
}

// qlNone is the value of a column a row lacks.
var qlNone qlValue

// qlPlan maps the columns of a series to a schema: where the time, the tags
// and each field of the schema are (-1: not among the columns).
type qlPlan struct {
	time, lane, kind, site int
	fields                 []int // per schema field
}

func newQLPlan[T any](s *schema[T], columns []string) qlPlan {
	at := func(key string) int {
		for i, c := range columns {
			if c == key {
				return i
			}
		}
		return -1
	}
	p := qlPlan{time: at("time"), lane: at(TagLane), kind: at(TagKind), site: at(TagSite), fields: make([]int, len(s.fields))}
	for i := range s.fields {
		p.fields[i] = at(s.fields[i].key)
	}
	return p
}

// qlPoint builds a point of s from one row's values, as rowPoint does from a
// JSON row: a field the row lacks, or holds with another type, reads as
// zero (an optional one as absent).
func qlPoint[T any](s *schema[T], p *qlPlan, vals []qlValue) T {
	var pt T
	get := func(i int) *qlValue {
		if i >= 0 && i < len(vals) {
			return &vals[i]
		}
		return &qlNone
	}
	str := func(i int) string {
		if v := get(i); v.kind == qlStr {
			return v.s
		}
		return ""
	}
	lane, kind, site, at := s.id(&pt)
	*lane, *kind, *site = str(p.lane), str(p.kind), str(p.site)
	ns, _ := get(p.time).int()
	*at = time.Unix(0, ns).UTC()
	for i := range s.fields {
		f := &s.fields[i]
		v := get(p.fields[i])
		ok := false
		switch f.kind {
		case lineproto.Float:
			*f.f(&pt), ok = v.float()
		case lineproto.Int:
			*f.i(&pt), ok = v.int()
		case lineproto.Bool:
			if ok = v.kind == qlBool; ok {
				f.setBool(&pt, v.b)
			}
		case lineproto.String:
			if ok = v.kind == qlStr; ok {
				*f.s(&pt) = v.s
			}
		}
		if ok && f.seen != nil {
			f.seen(&pt)
		}
	}
	return pt
}

// interner hands out one string per distinct byte sequence: the lane, kind
// and site of millions of rows are a few thousand strings.
type interner map[string]string

func (in interner) get(b []byte) string {
	if s, ok := in[string(b)]; ok {
		return s
	}
	if len(in) > 1<<16 { // a column of distinct strings: stop keeping them
		return string(b)
	}
	s := string(b)
	in[s] = s
	return s
}

// qlMsgpackReader decodes a chunked MessagePack answer: one map per chunk,
// {"results": [{"statement_id", "series": [{"name", "tags", "columns",
// "values", "partial"}], "messages", "partial", "error"}]} or {"error"}.
type qlMsgpackReader struct {
	r       *msgp.Reader
	strs    interner
	scratch []byte
	cols    []string
	vals    []qlValue
}

// qlReadMsgpack reads every row of the answer in body, handing each series'
// columns to plan once and each row's values to put.
func qlReadMsgpack(body io.Reader, plan func(columns []string), put func(vals []qlValue)) error {
	d := &qlMsgpackReader{r: msgp.NewReaderSize(body, 64<<10), strs: interner{}}
	for {
		if _, err := d.r.R.Peek(1); errors.Is(err, io.EOF) {
			return nil
		}
		if err := d.chunk(plan, put); err != nil {
			if ae := (*qlAnswerError)(nil); errors.As(err, &ae) {
				return err
			}
			return fmt.Errorf("influxql response: %w", err)
		}
	}
}

func (d *qlMsgpackReader) key() (string, error) {
	b, err := d.r.ReadMapKey(d.scratch[:0])
	if err != nil {
		return "", err
	}
	d.scratch = b
	return string(b), nil
}

// chunk reads one chunk of the answer: {"results": [...]} or {"error": ...}.
func (d *qlMsgpackReader) chunk(plan func([]string), put func([]qlValue)) error {
	return d.object("results", func() error { return d.result(plan, put) })
}

// result reads one statement's result: {"series": [...]} or {"error": ...}.
func (d *qlMsgpackReader) result(plan func([]string), put func([]qlValue)) error {
	return d.object("series", func() error { return d.series(plan, put) })
}

// object reads a map whose key list holds an array, each element read by
// each, and whose key "error" is the server's error for it; other keys
// (statement_id, messages, partial: more follows) are skipped.
func (d *qlMsgpackReader) object(list string, each func() error) error {
	n, err := d.r.ReadMapHeader()
	if err != nil {
		return err
	}
	for range n {
		k, err := d.key()
		if err != nil {
			return err
		}
		switch k {
		case "error":
			msg, err := d.r.ReadString()
			if err != nil {
				return err
			}
			return &qlAnswerError{msg}
		case list:
			m, err := d.r.ReadArrayHeader()
			if err != nil {
				return err
			}
			for range m {
				if err := each(); err != nil {
					return err
				}
			}
		default:
			if err := d.r.Skip(); err != nil {
				return err
			}
		}
	}
	return nil
}

// series reads one series: its columns before its values, as InfluxDB
// writes them (tags, when grouped, become columns of their own).
func (d *qlMsgpackReader) series(plan func([]string), put func([]qlValue)) error {
	n, err := d.r.ReadMapHeader()
	if err != nil {
		return err
	}
	var tags [][2]string
	d.cols = d.cols[:0]
	planned := false
	for range n {
		k, err := d.key()
		if err != nil {
			return err
		}
		switch k {
		case "tags":
			nt, err := d.r.ReadMapHeader()
			if err != nil {
				return err
			}
			for range nt {
				tk, err := d.key()
				if err != nil {
					return err
				}
				b, err := d.r.ReadStringAsBytes(d.scratch[:0])
				if err != nil {
					return err
				}
				d.scratch = b
				tags = append(tags, [2]string{tk, d.strs.get(b)})
			}
		case "columns":
			nc, err := d.r.ReadArrayHeader()
			if err != nil {
				return err
			}
			for range nc {
				c, err := d.r.ReadString()
				if err != nil {
					return err
				}
				d.cols = append(d.cols, c)
			}
		case "values":
			if !planned {
				cols := d.cols
				for _, t := range tags {
					cols = append(cols, t[0])
				}
				plan(cols)
				planned = true
			}
			nv, err := d.r.ReadArrayHeader()
			if err != nil {
				return err
			}
			for range nv {
				if err := d.row(len(d.cols), tags); err != nil {
					return err
				}
				put(d.vals)
			}
		default: // name, partial
			if err := d.r.Skip(); err != nil {
				return err
			}
		}
	}
	return nil
}

// row reads one row into d.vals: ncols values, then the series' tags.
func (d *qlMsgpackReader) row(ncols int, tags [][2]string) error {
	nv, err := d.r.ReadArrayHeader()
	if err != nil {
		return err
	}
	d.vals = d.vals[:0]
	for range nv {
		var v qlValue
		t, err := d.r.NextType()
		if err != nil {
			return err
		}
		switch t {
		case msgp.NilType:
			err = d.r.ReadNil()
		case msgp.Float64Type, msgp.Float32Type:
			v.kind = qlFloat
			v.f, err = d.r.ReadFloat64()
		case msgp.IntType:
			v.kind = qlInt
			v.i, err = d.r.ReadInt64()
		case msgp.UintType:
			var u uint64
			if u, err = d.r.ReadUint64(); err == nil {
				if u <= math.MaxInt64 {
					v.kind, v.i = qlInt, int64(u)
				} else {
					v.kind, v.f = qlFloat, float64(u)
				}
			}
		case msgp.BoolType:
			v.kind = qlBool
			v.b, err = d.r.ReadBool()
		case msgp.StrType:
			var b []byte
			if b, err = d.r.ReadStringAsBytes(d.scratch[:0]); err == nil {
				d.scratch = b
				v.kind, v.s = qlStr, d.strs.get(b)
			}
		default: // a type InfluxQL does not answer with: no value
			err = d.r.Skip()
		}
		if err != nil {
			return err
		}
		d.vals = append(d.vals, v)
	}
	for len(d.vals) < ncols {
		d.vals = append(d.vals, qlValue{})
	}
	for _, t := range tags {
		d.vals = append(d.vals, qlValue{kind: qlStr, s: t[1]})
	}
	return nil
}

// qlAnswerError is an error the server put in the answer (a 200 whose
// statement failed).
type qlAnswerError struct{ msg string }

func (e *qlAnswerError) Error() string { return e.msg }

// qlMsgpackErrorText is the error of a MessagePack error body ({"error":
// "..."}), or "".
func qlMsgpackErrorText(body []byte) string {
	n, rest, err := msgp.ReadMapHeaderBytes(body)
	if err != nil {
		return ""
	}
	for range n {
		var k []byte
		if k, rest, err = msgp.ReadMapKeyZC(rest); err != nil {
			return ""
		}
		if string(k) == "error" {
			s, _, err := msgp.ReadStringBytes(rest)
			if err != nil {
				return ""
			}
			return s
		}
		if rest, err = msgp.Skip(rest); err != nil {
			return ""
		}
	}
	return ""
}
