package store

import (
	"math"
	"slices"
	"time"

	lp "github.com/influxdata/line-protocol/v2/lineprotocol"
)

// Value is one value of a row of a query's answer; Kind 0 is null.
type Value struct {
	Kind lp.ValueKind
	F    float64
	I    int64
	B    bool
	S    []byte // valid until the next row
}

// Columns reads points of T from the rows of an answer.
type Columns[T Point] struct {
	s                *schema[T]
	time, a, b, site int
	fields           []int // per field of the schema; -1: not a column
}

// NewColumns maps the columns of an answer's series.
func NewColumns[T Point](cols []string) *Columns[T] {
	s := schemaOf[T]()
	at := func(key string) int { return slices.Index(cols, key) }
	c := &Columns[T]{s: s, time: at("time"), a: at(s.tags[0]), b: at(s.tags[1]), site: at(TagSite)}
	for _, f := range s.fields {
		c.fields = append(c.fields, at(f.key))
	}
	return c
}

// null is the value of a column a row lacks.
var null Value

// Decode reads *p from one row. A number reads as a float or an integer
// field (JSON writes 3.0 as 3); a field the row lacks, or holds with
// another type, reads as zero (an optional one as absent). A marker counts
// only alone: InfluxDB merges a booking and the point settling it into one
// row, whichever fields a read names.
func (c *Columns[T]) Decode(n Names, vals []Value, p *T) {
	var zero T
	*p = zero
	get := func(i int) *Value {
		if i >= 0 && i < len(vals) {
			return &vals[i]
		}
		return &null
	}
	str := func(i int) string {
		if v := get(i); v.Kind == lp.String {
			return n.Get(v.S)
		}
		return ""
	}
	a, b, site, at := c.s.id(p)
	*a, *b, *site = str(c.a), str(c.b), str(c.site)
	*at = time.Unix(0, get(c.time).I).UTC()
	others := false
	for i := range c.s.fields {
		f := &c.s.fields[i]
		v := *get(c.fields[i])
		if f.alone && others {
			continue
		}
		others = others || v.Kind != 0
		switch {
		case f.kind == lp.Float && v.Kind == lp.Int:
			v = Value{Kind: lp.Float, F: float64(v.I)}
		case f.kind == lp.Int && v.Kind == lp.Float && v.F == math.Trunc(v.F) && v.F >= math.MinInt64 && v.F < math.MaxInt64:
			v = Value{Kind: lp.Int, I: int64(v.F)}
		}
		if v.Kind == f.kind {
			f.set(n, p, v)
		}
	}
}
