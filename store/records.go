package store

import (
	"cmp"
	"fmt"
	"time"

	lp "github.com/influxdata/line-protocol/v2/lineprotocol"
)

// Probe is one probe point (docs/schema.md).
type Probe struct {
	Lane     string
	Kind     string
	Site     string // "": no tag
	Time     time.Time
	QueueS   float64
	GenS     float64
	HeadersS float64
	ConnectS float64
	Tokens   int64
	OK       bool
	Outcome  string
	Status   int64

	QuotaRemaining int64 // valid when QuotaKnown
	QuotaKnown     bool
	QuotaResetS    float64
}

// Hourly is one lane-hour point (docs/schema.md), the Rollup of its probes.
type Hourly struct {
	Lane        string
	Kind        string
	Site        string
	Hour        time.Time
	WorstQueueS float64
	WorstGenS   float64
	MinTokPerS  float64
	Samples     int64
	Failures    int64
	Eligible    bool

	WorstCensoredS float64
}

// Heartbeat is one sampler's sign of life, written each round
// (docs/schema.md). A Spool does not keep heartbeats, nor does Import.
type Heartbeat struct {
	Instance  string
	Shard     string // "I/N" as -shard takes it
	Site      string
	Time      time.Time
	Host      string
	StartNS   int64 // when the instance started, Unix nanoseconds
	Version   string
	IntervalS float64
	Sites     string // sorted, comma-separated; "": field absent
}

// Start returns when the instance started.
func (b Heartbeat) Start() time.Time { return time.Unix(0, b.StartNS).UTC() }

// Measurement names and tag keys of the storage schema (docs/schema.md).
const (
	MeasurementProbe     = "probe"
	MeasurementHourly    = "queue_hourly"
	MeasurementHeartbeat = "sampler_heartbeat"

	TagKind     = "kind"
	TagLane     = "lane"
	TagSite     = "site" // only on points of a sampler with a site
	TagInstance = "instance"
	TagShard    = "shard"
)

// Point is a stored record.
type Point interface{ Probe | Hourly | Heartbeat }

// Key identifies a point; A and B are its two tags (lane and kind, or
// instance and shard).
type Key struct {
	A, B, Site string
	NS         int64
}

// KeyOf is p's key.
func KeyOf[T Point](p *T) Key {
	a, b, site, at := schemaOf[T]().id(p)
	return Key{*a, *b, *site, at.UnixNano()}
}

// The storage schema, spelled once: each measurement's tags and fields in
// the order they are written, bound to the record's fields.
var (
	probeSchema = schema[Probe]{
		measurement: MeasurementProbe,
		kind:        KindProbe,
		tags:        [2]string{TagLane, TagKind},
		id:          func(p *Probe) (*string, *string, *string, *time.Time) { return &p.Lane, &p.Kind, &p.Site, &p.Time },
		fields: []field[Probe]{
			floatField("queue_s", func(p *Probe) *float64 { return &p.QueueS }),
			floatField("gen_s", func(p *Probe) *float64 { return &p.GenS }),
			floatField("headers_s", func(p *Probe) *float64 { return &p.HeadersS }),
			floatField("connect_s", func(p *Probe) *float64 { return &p.ConnectS }),
			intField("tokens", func(p *Probe) *int64 { return &p.Tokens }),
			boolField("ok", func(p *Probe) *bool { return &p.OK }),
			stringField("outcome", func(p *Probe) *string { return &p.Outcome }),
			intField("status", func(p *Probe) *int64 { return &p.Status }),
			intField("quota_remaining", func(p *Probe) *int64 { return &p.QuotaRemaining }).
				optional(func(p *Probe) bool { return p.QuotaKnown }, func(p *Probe) { p.QuotaKnown = true }),
			floatField("quota_reset_s", func(p *Probe) *float64 { return &p.QuotaResetS }).
				optional(func(p *Probe) bool { return p.QuotaResetS != 0 }, nil),
			// A reservation is this field alone (docs/schema.md#reservations);
			// last, so that a row's other fields are read before it.
			{key: "booked", kind: lp.Bool, alone: true,
				has:  func(p *Probe) bool { return p.Outcome == OutcomeReserved },
				seen: func(p *Probe) { p.Outcome = cmp.Or(p.Outcome, OutcomeReserved) }},
		},
	}
	hourlySchema = schema[Hourly]{
		measurement: MeasurementHourly,
		kind:        KindHourly,
		tags:        [2]string{TagLane, TagKind},
		id:          func(h *Hourly) (*string, *string, *string, *time.Time) { return &h.Lane, &h.Kind, &h.Site, &h.Hour },
		fields: []field[Hourly]{
			floatField("worst_queue_s", func(h *Hourly) *float64 { return &h.WorstQueueS }),
			floatField("worst_gen_s", func(h *Hourly) *float64 { return &h.WorstGenS }),
			floatField("min_tok_per_s", func(h *Hourly) *float64 { return &h.MinTokPerS }),
			intField("samples", func(h *Hourly) *int64 { return &h.Samples }),
			intField("failures", func(h *Hourly) *int64 { return &h.Failures }),
			boolField("eligible", func(h *Hourly) *bool { return &h.Eligible }),
			floatField("worst_censored_s", func(h *Hourly) *float64 { return &h.WorstCensoredS }),
		},
	}
	heartbeatSchema = schema[Heartbeat]{
		measurement: MeasurementHeartbeat,
		kind:        KindHeartbeat,
		tags:        [2]string{TagInstance, TagShard},
		id: func(b *Heartbeat) (*string, *string, *string, *time.Time) {
			return &b.Instance, &b.Shard, &b.Site, &b.Time
		},
		fields: []field[Heartbeat]{
			stringField("host", func(b *Heartbeat) *string { return &b.Host }),
			intField("start_ns", func(b *Heartbeat) *int64 { return &b.StartNS }),
			stringField("version", func(b *Heartbeat) *string { return &b.Version }),
			floatField("interval_s", func(b *Heartbeat) *float64 { return &b.IntervalS }),
			stringField("sites", func(b *Heartbeat) *string { return &b.Sites }).
				optional(func(b *Heartbeat) bool { return b.Sites != "" }, nil),
		},
	}
)

// schema is one measurement bound to the type T of its points.
type schema[T any] struct {
	measurement string
	kind        Kind
	tags        [2]string // in the order id returns them; site is optional
	id          func(*T) (a, b, site *string, at *time.Time)
	fields      []field[T]
}

// field is one field: its key, type and the one accessor of its type.
type field[T any] struct {
	key   string
	kind  lp.ValueKind
	f     func(*T) *float64
	i     func(*T) *int64
	b     func(*T) *bool
	s     func(*T) *string
	has   func(*T) bool // optional: written only when has says so
	seen  func(*T)      // records that a point read held the field
	alone bool          // a marker: the points has says are it alone, true
}

func floatField[T any](key string, f func(*T) *float64) field[T] {
	return field[T]{key: key, kind: lp.Float, f: f}
}

func intField[T any](key string, i func(*T) *int64) field[T] {
	return field[T]{key: key, kind: lp.Int, i: i}
}

func boolField[T any](key string, b func(*T) *bool) field[T] {
	return field[T]{key: key, kind: lp.Bool, b: b}
}

func stringField[T any](key string, s func(*T) *string) field[T] {
	return field[T]{key: key, kind: lp.String, s: s}
}

// optional makes f a field that points may lack.
func (f field[T]) optional(has func(*T) bool, seen func(*T)) field[T] {
	f.has, f.seen = has, seen
	return f
}

// set stores v, a value of f's kind, in p's field.
func (f *field[T]) set(n Names, p *T, v Value) {
	switch {
	case f.f != nil:
		*f.f(p) = v.F
	case f.i != nil:
		*f.i(p) = v.I
	case f.b != nil:
		*f.b(p) = v.B
	case f.s != nil:
		*f.s(p) = n.Get(v.S)
	}
	if f.seen != nil {
		f.seen(p)
	}
}

// index returns the position of the field named key, or -1; try first.
func (s *schema[T]) index(key []byte, try int) int {
	if try < len(s.fields) && s.fields[try].key == string(key) {
		return try
	}
	for i := range s.fields {
		if s.fields[i].key == string(key) {
			return i
		}
	}
	return -1
}

// schemaOf is the schema of T.
func schemaOf[T Point]() *schema[T] {
	var p T
	switch any(&p).(type) {
	case *Probe:
		return any(&probeSchema).(*schema[T])
	case *Hourly:
		return any(&hourlySchema).(*schema[T])
	}
	return any(&heartbeatSchema).(*schema[T])
}

// Schema describes one measurement of the storage schema (docs/schema.md).
type Schema struct {
	Measurement string
	Tags        []string      // in the order they are written; the last, site, is optional
	Fields      []SchemaField // in the order they are written
	Marker      string        // the field a point may be written as alone, or ""
}

// SchemaField is one field of a measurement.
type SchemaField struct {
	Key      string
	Type     string // float, int, bool or string
	Optional bool   // not on every point
}

// Schemas returns the storage schema, each measurement as written.
func Schemas() []Schema {
	return []Schema{describe(&probeSchema), describe(&hourlySchema), describe(&heartbeatSchema)}
}

func describe[T any](s *schema[T]) Schema {
	t0, t1 := min(s.tags[0], s.tags[1]), max(s.tags[0], s.tags[1]) // written in lexical order
	d := Schema{Measurement: s.measurement, Tags: []string{t0, t1, TagSite}}
	for _, f := range s.fields {
		d.Fields = append(d.Fields, SchemaField{Key: f.key, Type: f.kind.String(), Optional: f.has != nil})
		if f.alone {
			d.Marker = f.key
		}
	}
	return d
}

// SchemaOf is the schema of p's measurement.
func SchemaOf[T Point](p *T) Schema { return describe(schemaOf[T]()) }

// CheckFields fails naming a key of Query.Fields that no measurement has.
func CheckFields(keys []string) error {
	for _, k := range keys {
		if b := []byte(k); probeSchema.index(b, 0) < 0 && hourlySchema.index(b, 0) < 0 && heartbeatSchema.index(b, 0) < 0 {
			return fmt.Errorf("no measurement has the field %q (see docs/schema.md)", k)
		}
	}
	return nil
}
