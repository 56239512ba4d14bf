package store

import (
	"bytes"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/lanewatch/lanewatch/store/lineproto"
)

// The range of times the stores accept: InfluxDB 1.x's, so that every
// stored line imports as is.
var (
	minTime = time.Unix(0, lineproto.MinNano)
	maxTime = time.Unix(0, lineproto.MaxNano)
)

// encoder turns points into line protocol, one line per point, ns precision.
type encoder struct {
	enc lineproto.Encoder
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
	if err := checkSeries(s.tags, *lane, *kind, *at); err != nil {
		return err
	}
	for i := range s.fields {
		if f := &s.fields[i]; f.kind == lineproto.String && !utf8.ValidString(*f.s(p)) {
			return fmt.Errorf("%s is not valid UTF-8", f.key)
		}
	}
	e.enc.StartLine(s.measurement)
	vals := [2]string{*lane, *kind}
	for _, i := range s.tagOrder() {
		e.enc.AddTag(s.tags[i], vals[i])
	}
	if *site != "" {
		e.enc.AddTag(TagSite, *site)
	}
	if f := s.aloneIn(p); f != nil {
		e.enc.AddBool(f.key, true)
		return e.enc.EndLine(*at)
	}
	for i := range s.fields {
		f := &s.fields[i]
		if f.alone || (f.has != nil && !f.has(p)) {
			continue
		}
		switch f.kind {
		case lineproto.Float:
			e.enc.AddFloat(f.key, *f.f(p))
		case lineproto.Int:
			e.enc.AddInt(f.key, *f.i(p))
		case lineproto.Bool:
			e.enc.AddBool(f.key, *f.b(p))
		case lineproto.String:
			e.enc.AddString(f.key, *f.s(p)) // UTF-8 checked above, before any float
		}
	}
	return e.enc.EndLine(*at)
}

// checkSeries checks a point's two tags (keyed by keys) and its time.
func checkSeries(keys [2]string, lane, kind string, t time.Time) error {
	switch {
	case lane == "":
		return fmt.Errorf("%s is empty", keys[0])
	case kind == "":
		return fmt.Errorf("%s is empty", keys[1])
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
	kindHeartbeat
	kindSkip // blank line or comment
)

// kindOf classifies a line by its measurement prefix without decoding it.
func kindOf(line []byte) pointKind {
	switch {
	case len(line) == 0 || line[0] == '#' || len(bytes.TrimSpace(line)) == 0:
		return kindSkip
	case lineproto.HasMeasurement(line, MeasurementHourly):
		return kindHourly
	case lineproto.HasMeasurement(line, MeasurementProbe):
		return kindProbe
	case lineproto.HasMeasurement(line, MeasurementHeartbeat):
		return kindHeartbeat
	}
	return kindOther
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
	*lane, *kind, *site, *at, err = n.decodeLine(line, s.measurement, s.tags, func(key []byte, v lineproto.Value) error {
		i := s.index(key, next)
		if i < 0 {
			return nil
		}
		next = i + 1
		f := &s.fields[i]
		if v.Kind != f.kind {
			return kindError(key, v, f.kind)
		}
		switch f.kind {
		case lineproto.Float:
			*f.f(p) = v.F
		case lineproto.Int:
			*f.i(p) = v.I
		case lineproto.Bool:
			f.setBool(p, v.B)
		case lineproto.String:
			*f.s(p) = n.get(v.S)
		}
		if f.seen != nil {
			f.seen(p)
		}
		return nil
	})
	return err
}

// decodeLine decodes one line of measurement want, handing each field to
// field (lineproto.Decode: a plain line directly, any other through the
// line-protocol library). It requires the two tags keys names (lane and
// kind for probes and hours, returned as lane and kind) and a timestamp;
// the site tag is optional. Unknown tags and fields are ignored.
func (n names) decodeLine(line []byte, want string, keys [2]string, field func(key []byte, v lineproto.Value) error) (lane, kind, site string, t time.Time, err error) {
	fail := func(err error) (string, string, string, time.Time, error) {
		return "", "", "", time.Time{}, err
	}
	tag := func(k, v []byte) {
		switch string(k) {
		case keys[0]:
			lane = n.get(v)
		case keys[1]:
			kind = n.get(v)
		case TagSite:
			site = n.get(v)
		}
	}
	fields := 0
	counted := func(k []byte, v lineproto.Value) error {
		fields++
		return field(k, v)
	}
	if t, err = lineproto.Decode(line, want, tag, counted); err != nil {
		return fail(err)
	}
	switch {
	case fields == 0:
		return fail(errors.New("no fields"))
	case t.IsZero():
		return fail(errors.New("no timestamp"))
	case lane == "":
		return fail(fmt.Errorf("no %s tag", keys[0]))
	case kind == "":
		return fail(fmt.Errorf("no %s tag", keys[1]))
	}
	return lane, kind, site, t.UTC(), nil
}

func kindError(key []byte, v lineproto.Value, want lineproto.Kind) error {
	return fmt.Errorf("field %s is %s, want %s", key, v.Kind, want)
}
