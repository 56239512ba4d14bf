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

// Tag and field keys of the storage schema (DESIGN.md).
const (
	tagKind = "kind"
	tagLane = "lane"

	fieldQueueS   = "queue_s"
	fieldGenS     = "gen_s"
	fieldHeadersS = "headers_s"
	fieldTokens   = "tokens"
	fieldOK       = "ok"
	fieldOutcome  = "outcome"
	fieldStatus   = "status"

	fieldWorstQueueS = "worst_queue_s"
	fieldWorstGenS   = "worst_gen_s"
	fieldMinTokPerS  = "min_tok_per_s"
	fieldSamples     = "samples"
	fieldFailures    = "failures"
	fieldEligible    = "eligible"
)

// probeFields and hourlyFields list the field keys in the order they are written.
var (
	probeFields  = []string{fieldQueueS, fieldGenS, fieldHeadersS, fieldTokens, fieldOK, fieldOutcome, fieldStatus}
	hourlyFields = []string{fieldWorstQueueS, fieldWorstGenS, fieldMinTokPerS, fieldSamples, fieldFailures, fieldEligible}
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
}

// round encodes probes then hourly points and reports how many lines it wrote.
// A point that cannot be stored as is (empty tag, non-finite float, zero or
// out-of-range time, invalid UTF-8) fails the whole round: nothing is returned.
func (e *encoder) round(probes []Probe, hourly []Hourly) ([]byte, error) {
	e.enc.Reset()
	for i := range probes {
		if err := e.probe(&probes[i]); err != nil {
			return nil, fmt.Errorf("probe %d (lane %q): %w", i, probes[i].Lane, err)
		}
	}
	for i := range hourly {
		if err := e.hourly(&hourly[i]); err != nil {
			return nil, fmt.Errorf("hourly %d (lane %q): %w", i, hourly[i].Lane, err)
		}
	}
	return e.enc.Bytes(), nil
}

func (e *encoder) probe(p *Probe) error {
	if err := checkSeries(p.Lane, p.Kind, p.Time); err != nil {
		return err
	}
	if !utf8.ValidString(p.Outcome) {
		return errors.New("outcome is not valid UTF-8")
	}
	e.start(MeasurementProbe, p.Lane, p.Kind)
	if err := e.floats(fieldQueueS, p.QueueS, fieldGenS, p.GenS, fieldHeadersS, p.HeadersS); err != nil {
		return err
	}
	e.enc.AddField(fieldTokens, lineprotocol.IntValue(p.Tokens))
	e.enc.AddField(fieldOK, lineprotocol.BoolValue(p.OK))
	v, _ := lineprotocol.StringValue(p.Outcome) // UTF-8 checked above
	e.enc.AddField(fieldOutcome, v)
	e.enc.AddField(fieldStatus, lineprotocol.IntValue(p.Status))
	return e.end(p.Time)
}

func (e *encoder) hourly(h *Hourly) error {
	if err := checkSeries(h.Lane, h.Kind, h.Hour); err != nil {
		return err
	}
	e.start(MeasurementHourly, h.Lane, h.Kind)
	if err := e.floats(fieldWorstQueueS, h.WorstQueueS, fieldWorstGenS, h.WorstGenS, fieldMinTokPerS, h.MinTokPerS); err != nil {
		return err
	}
	e.enc.AddField(fieldSamples, lineprotocol.IntValue(h.Samples))
	e.enc.AddField(fieldFailures, lineprotocol.IntValue(h.Failures))
	e.enc.AddField(fieldEligible, lineprotocol.BoolValue(h.Eligible))
	return e.end(h.Hour)
}

func (e *encoder) start(measurement, lane, kind string) {
	e.enc.StartLine(measurement)
	e.enc.AddTag(tagKind, kind) // tag keys in lexical order
	e.enc.AddTag(tagLane, lane)
}

// floats adds three float fields given as key, value pairs.
func (e *encoder) floats(k1 string, v1 float64, k2 string, v2 float64, k3 string, v3 float64) error {
	for _, kv := range [...]struct {
		k string
		v float64
	}{{k1, v1}, {k2, v2}, {k3, v3}} {
		v, ok := lineprotocol.FloatValue(kv.v)
		if !ok {
			return fmt.Errorf("%s is %v, want a finite number", kv.k, kv.v)
		}
		e.enc.AddField(kv.k, v)
	}
	return nil
}

func (e *encoder) end(t time.Time) error {
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
func decodeProbe(line []byte) (Probe, error) {
	var p Probe
	var err error
	p.Lane, p.Kind, p.Time, err = decodeLine(line, MeasurementProbe, func(key []byte, v lineprotocol.Value) error {
		switch string(key) {
		case fieldQueueS:
			return floatField(&p.QueueS, key, v)
		case fieldGenS:
			return floatField(&p.GenS, key, v)
		case fieldHeadersS:
			return floatField(&p.HeadersS, key, v)
		case fieldTokens:
			return intField(&p.Tokens, key, v)
		case fieldOK:
			return boolField(&p.OK, key, v)
		case fieldOutcome:
			if v.Kind() != lineprotocol.String {
				return kindError(key, v, lineprotocol.String)
			}
			p.Outcome = v.StringV()
		case fieldStatus:
			return intField(&p.Status, key, v)
		}
		return nil
	})
	return p, err
}

// decodeHourly decodes one queue_hourly line (without its newline).
func decodeHourly(line []byte) (Hourly, error) {
	var h Hourly
	var err error
	h.Lane, h.Kind, h.Hour, err = decodeLine(line, MeasurementHourly, func(key []byte, v lineprotocol.Value) error {
		switch string(key) {
		case fieldWorstQueueS:
			return floatField(&h.WorstQueueS, key, v)
		case fieldWorstGenS:
			return floatField(&h.WorstGenS, key, v)
		case fieldMinTokPerS:
			return floatField(&h.MinTokPerS, key, v)
		case fieldSamples:
			return intField(&h.Samples, key, v)
		case fieldFailures:
			return intField(&h.Failures, key, v)
		case fieldEligible:
			return boolField(&h.Eligible, key, v)
		}
		return nil
	})
	return h, err
}

// decodeLine decodes one line of measurement want, handing each field to
// field. It requires the lane and kind tags and a timestamp. Unknown tags and
// fields are ignored.
func decodeLine(line []byte, want string, field func(key []byte, v lineprotocol.Value) error) (lane, kind string, t time.Time, err error) {
	d := lineprotocol.NewDecoderWithBytes(line)
	if !d.Next() {
		return "", "", time.Time{}, errors.New("empty line")
	}
	m, err := d.Measurement()
	if err != nil {
		return "", "", time.Time{}, err
	}
	if string(m) != want {
		return "", "", time.Time{}, fmt.Errorf("measurement %q, want %q", m, want)
	}
	for {
		k, v, err := d.NextTag()
		if err != nil {
			return "", "", time.Time{}, err
		}
		if k == nil {
			break
		}
		switch string(k) {
		case tagLane:
			lane = string(v)
		case tagKind:
			kind = string(v)
		}
	}
	fields := 0
	for {
		k, v, err := d.NextField()
		if err != nil {
			return "", "", time.Time{}, err
		}
		if k == nil {
			break
		}
		fields++
		if err := field(k, v); err != nil {
			return "", "", time.Time{}, err
		}
	}
	t, err = d.Time(lineprotocol.Nanosecond, time.Time{})
	if err != nil {
		return "", "", time.Time{}, err
	}
	switch {
	case fields == 0:
		return "", "", time.Time{}, errors.New("no fields")
	case t.IsZero():
		return "", "", time.Time{}, errors.New("no timestamp")
	case lane == "":
		return "", "", time.Time{}, errors.New("no lane tag")
	case kind == "":
		return "", "", time.Time{}, errors.New("no kind tag")
	}
	return lane, kind, t.UTC(), nil
}

func floatField(dst *float64, key []byte, v lineprotocol.Value) error {
	if v.Kind() != lineprotocol.Float {
		return kindError(key, v, lineprotocol.Float)
	}
	*dst = v.FloatV()
	return nil
}

func intField(dst *int64, key []byte, v lineprotocol.Value) error {
	if v.Kind() != lineprotocol.Int {
		return kindError(key, v, lineprotocol.Int)
	}
	*dst = v.IntV()
	return nil
}

func boolField(dst *bool, key []byte, v lineprotocol.Value) error {
	if v.Kind() != lineprotocol.Bool {
		return kindError(key, v, lineprotocol.Bool)
	}
	*dst = v.BoolV()
	return nil
}

func kindError(key []byte, v lineprotocol.Value, want lineprotocol.ValueKind) error {
	return fmt.Errorf("field %s is %s, want %s", key, v.Kind(), want)
}
