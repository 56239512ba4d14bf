package store

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	lp "github.com/influxdata/line-protocol/v2/lineprotocol"
)

// The range of times the stores accept: InfluxDB 1.x's.
var (
	minTime = time.Unix(0, math.MinInt64+2)
	maxTime = time.Unix(0, math.MaxInt64-1)
)

// AppendLines appends b's points to dst as line protocol. A point that
// cannot be stored as is (an empty tag, a float not finite, a time out of
// range, a string not UTF-8) fails the whole batch, naming it, and dst
// comes back as it was.
func AppendLines(dst []byte, b Batch) ([]byte, error) {
	var e lp.Encoder
	e.SetBuffer(dst)
	if err := cmp.Or(encodeAll(&e, "probe", b.Probes), encodeAll(&e, "hourly", b.Hourly), encodeAll(&e, "heartbeat", b.Heartbeats)); err != nil {
		return dst, err
	}
	return e.Bytes(), nil
}

func encodeAll[T Point](e *lp.Encoder, what string, pts []T) error {
	s := schemaOf[T]()
	for i := range pts {
		if err := encode(e, s, &pts[i]); err != nil {
			a, _, _, _ := s.id(&pts[i])
			return fmt.Errorf("%s %d (%s %q): %w", what, i, s.tags[0], *a, err)
		}
	}
	return nil
}

// encode adds one line of p to e.
func encode[T any](e *lp.Encoder, s *schema[T], p *T) error {
	a, b, site, at := s.id(p)
	switch {
	case *a == "":
		return fmt.Errorf("%s is empty", s.tags[0])
	case *b == "":
		return fmt.Errorf("%s is empty", s.tags[1])
	case at.IsZero():
		return errors.New("time is zero")
	case at.Before(minTime) || at.After(maxTime):
		return fmt.Errorf("time %s is outside the range InfluxDB stores", at.Format(time.RFC3339Nano))
	}
	e.StartLine(s.measurement)
	if s.tags[0] < s.tags[1] { // tags in lexical order, as InfluxDB sorts them
		e.AddTag(s.tags[0], *a)
		e.AddTag(s.tags[1], *b)
	} else {
		e.AddTag(s.tags[1], *b)
		e.AddTag(s.tags[0], *a)
	}
	if *site != "" {
		e.AddTag(TagSite, *site)
	}
	for _, f := range s.fields {
		if f.alone && f.has(p) {
			e.AddField(f.key, lp.BoolValue(true))
			e.EndLine(*at)
			return e.Err()
		}
	}
	for _, f := range s.fields {
		if f.alone || (f.has != nil && !f.has(p)) {
			continue
		}
		v, ok := lp.Value{}, true
		switch f.kind {
		case lp.Float:
			if v, ok = lp.FloatValue(*f.f(p)); !ok {
				return fmt.Errorf("%s is %v, want a finite number", f.key, *f.f(p))
			}
		case lp.Int:
			v = lp.IntValue(*f.i(p))
		case lp.Bool:
			v = lp.BoolValue(*f.b(p))
		case lp.String:
			if v, ok = lp.StringValue(*f.s(p)); !ok {
				return fmt.Errorf("%s is not valid UTF-8", f.key)
			}
		}
		e.AddField(f.key, v)
	}
	e.EndLine(*at)
	if err := e.Err(); err != nil {
		e.ClearErr()
		return err
	}
	return nil
}

// Kind is the measurement of a line.
type Kind int

const (
	KindOther Kind = iota // no lanewatch point
	KindProbe
	KindHourly
	KindHeartbeat
	KindBlank // blank, or a comment
)

// KindOf classifies a line by its measurement, without decoding it.
func KindOf(line []byte) Kind {
	has := func(m string) bool {
		return len(line) > len(m) && string(line[:len(m)]) == m && (line[len(m)] == ',' || line[len(m)] == ' ')
	}
	switch {
	case len(bytes.TrimSpace(line)) == 0 || line[0] == '#':
		return KindBlank
	case has(MeasurementHourly):
		return KindHourly
	case has(MeasurementProbe):
		return KindProbe
	case has(MeasurementHeartbeat):
		return KindHeartbeat
	}
	return KindOther
}

// KindFor is the Kind of T's lines.
func KindFor[T Point]() Kind { return schemaOf[T]().kind }

// LineTime reads the timestamp at the end of a line cheaply; ok is false
// when the last word is not an integer.
func LineTime(line []byte) (ns int64, ok bool) {
	b := line[bytes.LastIndexByte(line, ' ')+1:]
	if len(b) < len(line) && number(b, false) {
		if ns, err := strconv.ParseInt(string(b), 10, 64); err == nil {
			return ns, true
		}
	}
	return 0, false
}

// Names interns the strings one read decodes; a nil Names copies each.
type Names map[string]string

// Get returns b as a string, the same string for the same bytes.
func (n Names) Get(b []byte) string {
	if n == nil {
		return string(b)
	}
	if s, ok := n[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(n) < 1<<14 { // past it, strings are copied, not kept
		n[s] = s
	}
	return s
}

// Decode decodes one line of T's measurement into *p, zeroed first. Unknown
// tags and fields are ignored; the two tags, a field and the time are
// required.
func Decode[T Point](n Names, line []byte, p *T) error {
	var zero T
	*p = zero
	s := schemaOf[T]()
	a, b, site, at := s.id(p)
	tag := func(k, v []byte) {
		switch string(k) {
		case s.tags[0]:
			*a = n.Get(v)
		case s.tags[1]:
			*b = n.Get(v)
		case TagSite:
			*site = n.Get(v)
		}
	}
	fields, next := 0, 0
	field := func(k []byte, v Value) error {
		fields++
		i := s.index(k, next)
		if i < 0 {
			return nil
		}
		next = i + 1
		if f := &s.fields[i]; v.Kind != f.kind {
			return fmt.Errorf("field %s is %s, want %s", k, v.Kind, f.kind)
		}
		s.fields[i].set(n, p, v)
		return nil
	}
	ns, ok, err := plain(line, s.measurement, tag, field)
	if !ok && err == nil {
		ns, err = library(line, s.measurement, tag, field)
	}
	switch {
	case err != nil:
		return err
	case fields == 0:
		return errors.New("no fields")
	case ns == noTime:
		return errors.New("no timestamp")
	case *a == "":
		return fmt.Errorf("no %s tag", s.tags[0])
	case *b == "":
		return fmt.Errorf("no %s tag", s.tags[1])
	}
	*at = time.Unix(0, ns).UTC()
	return nil
}

// noTime is library's time of a line without one.
const noTime = math.MinInt64

// library reads a line with the line-protocol library.
func library(line []byte, want string, tag func(k, v []byte), field func(k []byte, v Value) error) (int64, error) {
	d := lp.NewDecoderWithBytes(line)
	if !d.Next() {
		return 0, errors.New("empty line")
	}
	if m, err := d.Measurement(); err != nil || string(m) != want {
		return 0, cmp.Or(err, fmt.Errorf("measurement %q, want %q", m, want))
	}
	for k, v, err := d.NextTag(); k != nil || err != nil; k, v, err = d.NextTag() {
		if err != nil {
			return 0, err
		}
		tag(k, v)
	}
	for k, v, err := d.NextField(); k != nil || err != nil; k, v, err = d.NextField() {
		if err != nil {
			return 0, err
		}
		val := Value{Kind: v.Kind()}
		switch val.Kind {
		case lp.Float:
			val.F = v.FloatV()
		case lp.Int:
			val.I = v.IntV()
		case lp.Bool:
			val.B = v.BoolV()
		case lp.String:
			val.S = v.BytesV()
		}
		if err := field(k, val); err != nil {
			return 0, err
		}
	}
	t, err := d.Time(lp.Nanosecond, time.Time{})
	if err != nil || t.IsZero() {
		return noTime, err
	}
	return t.UnixNano(), nil
}

// plain reads a line of the shape the stores write (names of printable
// ASCII without escapes, plain numbers and strings) at a quarter of the
// library's cost; ok false leaves the line to the library, which
// FuzzDecode holds it to.
func plain(line []byte, want string, tag func(k, v []byte), field func(k []byte, v Value) error) (ns int64, ok bool, err error) {
	if len(line) <= len(want) || string(line[:len(want)]) != want {
		return 0, false, nil
	}
	var tags [8][2][]byte
	var fields [16]struct {
		k []byte
		v Value
	}
	nt, nf, i := 0, 0, len(want)
	for ; i < len(line) && line[i] == ','; nt++ {
		k, j := word(line, i+1)
		v, e := word(line, j+1)
		if k == nil || j >= len(line) || line[j] != '=' || v == nil || nt == len(tags) {
			return 0, false, nil
		}
		tags[nt], i = [2][]byte{k, v}, e
	}
	for sep := byte(' '); i < len(line) && line[i] == sep; nf, sep = nf+1, ',' {
		k, j := word(line, i+1)
		if k == nil || j >= len(line) || line[j] != '=' || nf == len(fields) {
			return 0, false, nil
		}
		j++
		e := j
		for e < len(line) && line[e] != ',' && line[e] != ' ' {
			if line[e] == '"' && (e > j || !quoted(line, &e)) {
				return 0, false, nil
			}
			e++
		}
		v, ok := plainValue(line[j:e])
		if !ok {
			return 0, false, nil
		}
		fields[nf].k, fields[nf].v, i = k, v, e
	}
	if nf == 0 || i >= len(line) || !number(line[i+1:], false) || len(line)-i-1 > 20 {
		return 0, false, nil
	}
	if ns, err = strconv.ParseInt(string(line[i+1:]), 10, 64); err != nil || ns < minTime.UnixNano() || ns > maxTime.UnixNano() {
		return 0, false, nil
	}
	for _, t := range tags[:nt] {
		tag(t[0], t[1])
	}
	for f := range fields[:nf] {
		if err := field(fields[f].k, fields[f].v); err != nil {
			return 0, true, err
		}
	}
	return ns, true, nil
}

// word returns the run of plain name characters at i (nil: none) and its end.
func word(line []byte, i int) ([]byte, int) {
	j := i
	for ; j < len(line); j++ {
		if c := line[j]; c <= ' ' || c >= 0x7f || c == ',' || c == '=' || c == '"' || c == '\\' {
			break
		}
	}
	if j == i {
		return nil, j
	}
	return line[i:j], j
}

// quoted moves *e from the opening quote of a plain string to its closing one.
func quoted(line []byte, e *int) bool {
	for j := *e + 1; j < len(line); j++ {
		switch c := line[j]; {
		case c == '"':
			*e = j
			return true
		case c < ' ' || c >= 0x7f || c == '\\':
			return false
		}
	}
	return false
}

// plainValue reads a plain string, bool, integer or float.
func plainValue(b []byte) (Value, bool) {
	switch {
	case len(b) >= 2 && b[0] == '"':
		return Value{Kind: lp.String, S: b[1 : len(b)-1]}, bytes.IndexByte(b[1:], '"') == len(b)-2
	case string(b) == "true" || string(b) == "false":
		return Value{Kind: lp.Bool, B: b[0] == 't'}, true
	case len(b) > 1 && b[len(b)-1] == 'i' && number(b[:len(b)-1], false):
		x, err := strconv.ParseInt(string(b[:len(b)-1]), 10, 64)
		return Value{Kind: lp.Int, I: x}, err == nil
	}
	if x, ok := decimal(b); ok {
		return Value{Kind: lp.Float, F: x}, true
	}
	if number(b, true) {
		x, err := strconv.ParseFloat(string(b), 64)
		return Value{Kind: lp.Float, F: x}, err == nil // out of range: the library words the error
	}
	return Value{}, false
}

// exact10 are the powers of ten a float64 holds exactly.
var exact10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

// decimal reads -?digits[.digits] of at most 15 digits, what a store
// writes, as strconv.ParseFloat does, bit for bit, at a fraction of its
// cost: the digits and the power of ten are exact float64s, so the one
// division rounds once, correctly (Clinger's fast path). Anything else
// is not ok and goes to ParseFloat.
func decimal(b []byte) (float64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	var m uint64
	digits, frac, dot := 0, 0, -1
	for i, c := range b {
		switch {
		case c >= '0' && c <= '9':
			m = m*10 + uint64(c-'0')
			digits++
		case c == '.' && dot < 0 && i > 0 && i < len(b)-1:
			dot = i
		default:
			return 0, false
		}
	}
	if digits == 0 || digits > 15 {
		return 0, false
	}
	if dot >= 0 {
		frac = len(b) - dot - 1
	}
	x := float64(m) / exact10[frac]
	if neg {
		x = -x
	}
	return x, true
}

// number reports whether b is -?digits, or with float also
// -?digits[.digits][e[+-]digits].
func number(b []byte, float bool) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	digits := func() bool {
		n := 0
		for n < len(b) && b[n] >= '0' && b[n] <= '9' {
			n++
		}
		b = b[n:]
		return n > 0
	}
	if !digits() {
		return false
	}
	if float && len(b) > 0 && b[0] == '.' {
		if b = b[1:]; !digits() {
			return false
		}
	}
	if float && len(b) > 0 && (b[0] == 'e' || b[0] == 'E') {
		if b = b[1:]; len(b) > 0 && (b[0] == '+' || b[0] == '-') {
			b = b[1:]
		}
		if !digits() {
			return false
		}
	}
	return len(b) == 0
}

// MaxLine bounds one line; a longer one is corrupt and skipped.
const MaxLine = 1 << 20

// ScanLines calls fn with each line of r, without its newline (valid
// during the call), and its one-based number; terminated is false for a
// last line without one. A line longer than MaxLine goes to long instead.
// It stops with ctx's error once ctx is done.
func ScanLines(ctx context.Context, r io.Reader, fn func(n int64, line []byte, terminated bool) error, long func(n int64)) error {
	return scanLines(ctx, r, 256<<10, fn, long)
}

func scanLines(ctx context.Context, r io.Reader, size int, fn func(n int64, line []byte, terminated bool) error, long func(n int64)) error {
	br := bufio.NewReaderSize(ctxReader{ctx, r}, size)
	var n int64
	var big []byte // a line longer than the buffer, assembled
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) || len(big) > 0 || tooLong {
			tooLong = tooLong || len(big)+len(chunk) > MaxLine
			if !tooLong {
				big = append(big, chunk...)
			}
			chunk = big
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if len(chunk) == 0 && !tooLong {
			return nil // a clean end
		}
		n++
		line, terminated := chunk, len(chunk) > 0 && chunk[len(chunk)-1] == '\n'
		if terminated {
			line = chunk[:len(chunk)-1]
		}
		if tooLong {
			if long != nil {
				long(n)
			}
		} else if err := fn(n, line, terminated); err != nil {
			return err
		}
		big, tooLong = big[:0], false
		if err != nil { // io.EOF after a last line without a newline
			return nil
		}
	}
}

// ctxReader is a reader that fails with ctx's error once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
