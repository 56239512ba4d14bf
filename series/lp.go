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

// Tag and field keys of the storage schema (docs/schema.md).
const (
	TagKind = "kind"
	TagLane = "lane"
	TagSite = "site" // only on points of a sampler with a site

	fieldQueueS         = "queue_s"
	fieldGenS           = "gen_s"
	fieldHeadersS       = "headers_s"
	fieldConnectS       = "connect_s"
	fieldTokens         = "tokens"
	fieldOK             = "ok"
	fieldOutcome        = "outcome"
	fieldStatus         = "status"
	fieldQuotaRemaining = "quota_remaining" // optional
	fieldQuotaResetS    = "quota_reset_s"   // optional

	fieldWorstQueueS    = "worst_queue_s"
	fieldWorstGenS      = "worst_gen_s"
	fieldMinTokPerS     = "min_tok_per_s"
	fieldSamples        = "samples"
	fieldFailures       = "failures"
	fieldEligible       = "eligible"
	fieldWorstCensoredS = "worst_censored_s"
)

// probeFields and hourlyFields list the field keys in the order they are written.
var (
	probeFields = []string{fieldQueueS, fieldGenS, fieldHeadersS, fieldConnectS, fieldTokens, fieldOK, fieldOutcome,
		fieldStatus, fieldQuotaRemaining, fieldQuotaResetS}
	hourlyFields = []string{fieldWorstQueueS, fieldWorstGenS, fieldMinTokPerS, fieldSamples, fieldFailures, fieldEligible,
		fieldWorstCensoredS}
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
	e.start(MeasurementProbe, p.Lane, p.Kind, p.Site)
	e.float(fieldQueueS, p.QueueS)
	e.float(fieldGenS, p.GenS)
	e.float(fieldHeadersS, p.HeadersS)
	e.float(fieldConnectS, p.ConnectS)
	e.enc.AddField(fieldTokens, lineprotocol.IntValue(p.Tokens))
	e.enc.AddField(fieldOK, lineprotocol.BoolValue(p.OK))
	v, _ := lineprotocol.StringValue(p.Outcome) // UTF-8 checked above
	e.enc.AddField(fieldOutcome, v)
	e.enc.AddField(fieldStatus, lineprotocol.IntValue(p.Status))
	if p.QuotaKnown {
		e.enc.AddField(fieldQuotaRemaining, lineprotocol.IntValue(p.QuotaRemaining))
	}
	if p.QuotaResetS != 0 {
		e.float(fieldQuotaResetS, p.QuotaResetS)
	}
	return e.end(p.Time)
}

func (e *encoder) hourly(h *Hourly) error {
	if err := checkSeries(h.Lane, h.Kind, h.Hour); err != nil {
		return err
	}
	e.start(MeasurementHourly, h.Lane, h.Kind, h.Site)
	e.float(fieldWorstQueueS, h.WorstQueueS)
	e.float(fieldWorstGenS, h.WorstGenS)
	e.float(fieldMinTokPerS, h.MinTokPerS)
	e.enc.AddField(fieldSamples, lineprotocol.IntValue(h.Samples))
	e.enc.AddField(fieldFailures, lineprotocol.IntValue(h.Failures))
	e.enc.AddField(fieldEligible, lineprotocol.BoolValue(h.Eligible))
	e.float(fieldWorstCensoredS, h.WorstCensoredS)
	return e.end(h.Hour)
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
	var err error
	p.Lane, p.Kind, p.Site, p.Time, err = n.decodeLine(line, MeasurementProbe, func(key []byte, v fieldVal) error {
		switch string(key) {
		case fieldQueueS:
			return floatField(&p.QueueS, key, v)
		case fieldGenS:
			return floatField(&p.GenS, key, v)
		case fieldHeadersS:
			return floatField(&p.HeadersS, key, v)
		case fieldConnectS:
			return floatField(&p.ConnectS, key, v)
		case fieldQuotaRemaining:
			p.QuotaKnown = true
			return intField(&p.QuotaRemaining, key, v)
		case fieldQuotaResetS:
			return floatField(&p.QuotaResetS, key, v)
		case fieldTokens:
			return intField(&p.Tokens, key, v)
		case fieldOK:
			return boolField(&p.OK, key, v)
		case fieldOutcome:
			if v.kind != lineprotocol.String {
				return kindError(key, v, lineprotocol.String)
			}
			p.Outcome = n.get(v.s)
		case fieldStatus:
			return intField(&p.Status, key, v)
		}
		return nil
	})
	return p, err
}

// hourly decodes one queue_hourly line (without its newline).
func (n names) hourly(line []byte) (Hourly, error) {
	var h Hourly
	var err error
	h.Lane, h.Kind, h.Site, h.Hour, err = n.decodeLine(line, MeasurementHourly, func(key []byte, v fieldVal) error {
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
		case fieldWorstCensoredS:
			return floatField(&h.WorstCensoredS, key, v)
		}
		return nil
	})
	return h, err
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

func floatField(dst *float64, key []byte, v fieldVal) error {
	if v.kind != lineprotocol.Float {
		return kindError(key, v, lineprotocol.Float)
	}
	*dst = v.f
	return nil
}

func intField(dst *int64, key []byte, v fieldVal) error {
	if v.kind != lineprotocol.Int {
		return kindError(key, v, lineprotocol.Int)
	}
	*dst = v.i
	return nil
}

func boolField(dst *bool, key []byte, v fieldVal) error {
	if v.kind != lineprotocol.Bool {
		return kindError(key, v, lineprotocol.Bool)
	}
	*dst = v.b
	return nil
}

func kindError(key []byte, v fieldVal, want lineprotocol.ValueKind) error {
	return fmt.Errorf("field %s is %s, want %s", key, v.kind, want)
}
