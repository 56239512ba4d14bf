package series

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/influxdata/line-protocol/v2/lineprotocol"
)

// InfluxDB 1.x accepts timestamps in [MinInt64+2, MaxInt64-1] ns; the stores
// accept the same range so that every stored line imports as is.
var (
	minTime = time.Unix(0, math.MinInt64+2)
	maxTime = time.Unix(0, math.MaxInt64-1)
)

// encoder turns points into line protocol, one line per point, ns precision.
type encoder struct {
	enc lineprotocol.Encoder
	bad string // why the line being built cannot be stored
}

// round encodes probes then hourly points and reports how many lines it wrote.
// A point that cannot be stored as is (empty tag, non-finite float, zero or
// out-of-range time, invalid UTF-8) fails the whole round: nothing is returned.
func (e *encoder) round(probes []Probe, hourly []Hourly) ([]byte, error) {
	e.enc.Reset()
	for i := range probes {
		if err := encodePoint(e, &probeSchema, &probes[i]); err != nil {
			return nil, fmt.Errorf("probe %d (lane %q): %w", i, probes[i].Lane, err)
		}
	}
	for i := range hourly {
		if err := encodePoint(e, &hourlySchema, &hourly[i]); err != nil {
			return nil, fmt.Errorf("hourly %d (lane %q): %w", i, hourly[i].Lane, err)
		}
	}
	return e.enc.Bytes(), nil
}

// encodePoint adds one point of measurement s to the encoder.
func encodePoint[T any](e *encoder, s *schema[T], p *T) error {
	lane, kind, site, at := s.id(p)
	if err := checkSeries(*lane, *kind, *at); err != nil {
		return err
	}
	for i := range s.fields {
		if f := &s.fields[i]; f.kind == lineprotocol.String && !utf8.ValidString(*f.s(p)) {
			return fmt.Errorf("%s is not valid UTF-8", f.key)
		}
	}
	e.start(s.measurement, *lane, *kind, *site)
	for i := range s.fields {
		f := &s.fields[i]
		if f.has != nil && !f.has(p) {
			continue
		}
		switch f.kind {
		case lineprotocol.Float:
			e.float(f.key, *f.f(p))
		case lineprotocol.Int:
			e.enc.AddField(f.key, lineprotocol.IntValue(*f.i(p)))
		case lineprotocol.Bool:
			e.enc.AddField(f.key, lineprotocol.BoolValue(*f.b(p)))
		case lineprotocol.String:
			v, _ := lineprotocol.StringValue(*f.s(p)) // UTF-8 checked above
			e.enc.AddField(f.key, v)
		}
	}
	return e.end(*at)
}

func (e *encoder) start(measurement, lane, kind, site string) {
	e.enc.StartLine(measurement)
	e.enc.AddTag(TagKind, kind) // tag keys in lexical order
	e.enc.AddTag(TagLane, lane)
	if site != "" {
		e.enc.AddTag(TagSite, site)
	}
	e.bad = ""
}

// float adds a float field; a value that is not finite fails the line (end
// reports it).
func (e *encoder) float(key string, x float64) {
	v, ok := lineprotocol.FloatValue(x)
	if !ok {
		if e.bad == "" {
			e.bad = fmt.Sprintf("%s is %v, want a finite number", key, x)
		}
		return
	}
	e.enc.AddField(key, v)
}

func (e *encoder) end(t time.Time) error {
	if e.bad != "" {
		// Finish the line so the encoder is in a clean state; the round
		// is discarded by the caller.
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

func checkSeries(lane, kind string, t time.Time) error {
	switch {
	case lane == "":
		return errors.New("lane is empty")
	case kind == "":
		return errors.New("kind is empty")
	case t.IsZero():
		return errors.New("time is zero")
	case t.Before(minTime) || t.After(maxTime):
		return fmt.Errorf("time %s is outside the range InfluxDB stores", t.Format(time.RFC3339Nano))
	}
	return nil
}

// pointKind tells which measurement a line holds.
type pointKind int

const (
	kindOther pointKind = iota
	kindProbe
	kindHourly
	kindSkip // blank line or comment
)

// kindOf classifies a line by its measurement prefix without decoding it.
func kindOf(line []byte) pointKind {
	switch {
	case len(line) == 0 || line[0] == '#' || len(bytes.TrimSpace(line)) == 0:
		return kindSkip
	case hasMeasurement(line, MeasurementHourly):
		return kindHourly
	case hasMeasurement(line, MeasurementProbe):
		return kindProbe
	}
	return kindOther
}

func hasMeasurement(line []byte, m string) bool {
	return len(line) > len(m) && string(line[:len(m)]) == m && (line[len(m)] == ',' || line[len(m)] == ' ')
}

// lineTime reads the timestamp at the end of a line cheaply. ok is false when
// the last word is not an integer; the caller then decodes the line in full.
func lineTime(line []byte) (ns int64, ok bool) {
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

// decodeProbe decodes one probe line (without its newline).
func decodeProbe(line []byte) (Probe, error) { return names(nil).probe(line) }

// decodeHourly decodes one queue_hourly line (without its newline).
func decodeHourly(line []byte) (Hourly, error) { return names(nil).hourly(line) }

// names interns the tag values and strings of the lines one read decodes:
// a year of probes names a few dozen lanes and outcomes, not millions of
// strings. A nil names copies each.
type names map[string]string

// maxNames bounds a names: past it, strings are copied, not kept.
const maxNames = 1 << 14

func (n names) get(b []byte) string {
	if n == nil {
		return string(b)
	}
	if s, ok := n[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(n) < maxNames {
		n[s] = s
	}
	return s
}

// probe decodes one probe line (without its newline).
func (n names) probe(line []byte) (Probe, error) {
	var p Probe
	err := decodeInto(n, &probeSchema, line, &p)
	return p, err
}

// hourly decodes one queue_hourly line (without its newline).
func (n names) hourly(line []byte) (Hourly, error) {
	var h Hourly
	err := decodeInto(n, &hourlySchema, line, &h)
	return h, err
}

// decodeInto decodes one line of measurement s (without its newline) into
// *p, which it zeroes first. Fields that s does not name are ignored. (A
// reader decodes every line into one p and copies it: a point of its own
// per line would cost an allocation, as the table's accessors take its
// address.)
func decodeInto[T any](n names, s *schema[T], line []byte, p *T) error {
	var zero T
	*p = zero
	lane, kind, site, at := s.id(p)
	next := 0 // the field a line written by the stores holds next
	var err error
	*lane, *kind, *site, *at, err = n.decodeLine(line, s.measurement, func(key []byte, v fieldVal) error {
		i := s.index(key, next)
		if i < 0 {
			return nil
		}
		next = i + 1
		f := &s.fields[i]
		if v.kind != f.kind {
			return kindError(key, v, f.kind)
		}
		switch f.kind {
		case lineprotocol.Float:
			*f.f(p) = v.f
		case lineprotocol.Int:
			*f.i(p) = v.i
		case lineprotocol.Bool:
			*f.b(p) = v.b
		case lineprotocol.String:
			*f.s(p) = n.get(v.s)
		}
		if f.seen != nil {
			f.seen(p)
		}
		return nil
	})
	return err
}

// decodeLine decodes one line of measurement want, handing each field to
// field: a plain line (plainLine) directly, any other through the
// line-protocol library. It requires the lane and kind tags and a
// timestamp; the site tag is optional. Unknown tags and fields are
// ignored.
func (n names) decodeLine(line []byte, want string, field func(key []byte, v fieldVal) error) (lane, kind, site string, t time.Time, err error) {
	fail := func(err error) (string, string, string, time.Time, error) {
		return "", "", "", time.Time{}, err
	}
	tag := func(k, v []byte) {
		switch string(k) {
		case TagLane:
			lane = n.get(v)
		case TagKind:
			kind = n.get(v)
		case TagSite:
			site = n.get(v)
		}
	}
	fields := 0
	counted := func(k []byte, v fieldVal) error {
		fields++
		return field(k, v)
	}
	ns, plain, err := plainLine(line, want, tag, counted)
	if err != nil {
		return fail(err)
	}
	if plain {
		t = time.Unix(0, ns)
	} else if t, err = libraryLine(line, want, tag, counted); err != nil {
		return fail(err)
	}
	switch {
	case fields == 0:
		return fail(errors.New("no fields"))
	case t.IsZero():
		return fail(errors.New("no timestamp"))
	case lane == "":
		return fail(errors.New("no lane tag"))
	case kind == "":
		return fail(errors.New("no kind tag"))
	}
	return lane, kind, site, t.UTC(), nil
}

// libraryLine reads a line that is not plain with the line-protocol
// library, handing on tags and fields as plainLine does.
func libraryLine(line []byte, want string, tag func(k, v []byte), field func(k []byte, v fieldVal) error) (time.Time, error) {
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

func kindError(key []byte, v fieldVal, want lineprotocol.ValueKind) error {
	return fmt.Errorf("field %s is %s, want %s", key, v.kind, want)
}
