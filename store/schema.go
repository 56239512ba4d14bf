package store

import (
	"time"

	"github.com/lanewatch/lanewatch/store/lineproto"
)

// Tag keys of the storage schema (docs/schema.md): kind and lane on the
// probe and queue_hourly points, instance and shard on the heartbeats, site
// on every point of a sampler with a site.
const (
	TagKind     = "kind"
	TagLane     = "lane"
	TagSite     = "site" // only on points of a sampler with a site
	TagInstance = "instance"
	TagShard    = "shard"
)

// fieldOK is the probe field the Influx store's read check selects.
const fieldOK = "ok"

// fieldBooked is the probe field a reservation is written as, alone.
const fieldBooked = "booked"

// markReserved makes a point read with the booked field and no outcome a
// reservation. One that has an outcome too is what settled the booking
// (InfluxDB merged the two writes): its outcome stands.
func markReserved(p *Probe) {
	if p.Outcome == "" {
		p.Outcome = OutcomeReserved
	}
}

// The storage schema, spelled once: each measurement's tags and its fields
// in the order they are written, each bound to the Probe, Hourly or
// Heartbeat field it holds. The encoder, both decoders (line protocol,
// InfluxDB rows), the InfluxDB queries and the docs test (Schemas) are
// driven by these tables.
var (
	probeSchema = schema[Probe]{
		measurement: MeasurementProbe,
		tags:        laneTags,
		id:          func(p *Probe) (*string, *string, *string, *time.Time) { return &p.Lane, &p.Kind, &p.Site, &p.Time },
		fields: []field[Probe]{
			floatField("queue_s", func(p *Probe) *float64 { return &p.QueueS }),
			floatField("gen_s", func(p *Probe) *float64 { return &p.GenS }),
			floatField("headers_s", func(p *Probe) *float64 { return &p.HeadersS }),
			floatField("connect_s", func(p *Probe) *float64 { return &p.ConnectS }),
			intField("tokens", func(p *Probe) *int64 { return &p.Tokens }),
			boolField(fieldOK, func(p *Probe) *bool { return &p.OK }),
			stringField("outcome", func(p *Probe) *string { return &p.Outcome }),
			intField("status", func(p *Probe) *int64 { return &p.Status }),
			// Written when the lane's headers said; a point that has it
			// is one whose quota is known.
			intField("quota_remaining", func(p *Probe) *int64 { return &p.QuotaRemaining }).
				optional(func(p *Probe) bool { return p.QuotaKnown }, func(p *Probe) { p.QuotaKnown = true }),
			floatField("quota_reset_s", func(p *Probe) *float64 { return &p.QuotaResetS }).
				optional(func(p *Probe) bool { return p.QuotaResetS != 0 }, nil),
			// A reservation is written as this field alone: InfluxDB
			// merges the fields of points of one series and time, so a
			// booking it applies after the probe that settled it (it
			// answered late, or a spool replayed it) adds this field and
			// leaves the probe's. Last, so that a row's outcome is read
			// before it.
			markerField(fieldBooked, func(p *Probe) bool { return p.Outcome == OutcomeReserved }, markReserved),
		},
	}
	hourlySchema = schema[Hourly]{
		measurement: MeasurementHourly,
		tags:        laneTags,
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

// laneTags are the required tags of probe and queue_hourly points.
var laneTags = [2]string{TagLane, TagKind}

// probeFields, hourlyFields and heartbeatFields list the field keys in the
// order they are written.
var (
	probeFields     = probeSchema.fieldKeys()
	hourlyFields    = hourlySchema.fieldKeys()
	heartbeatFields = heartbeatSchema.fieldKeys()
)

// schema is one measurement bound to the type T of its points.
type schema[T any] struct {
	measurement string
	// tags are the keys of the two tags every point has, in the order id
	// returns their values (lane and kind for probes and hours); site is
	// the third, written only when not empty.
	tags [2]string
	// id returns the point's series and time: its two tags, site, time.
	id     func(*T) (lane, kind, site *string, at *time.Time)
	fields []field[T]
}

// tagOrder is the order in which the point's tags are written (lexical,
// as InfluxDB sorts them): the indexes of s.tags, then site.
func (s *schema[T]) tagOrder() [2]int {
	if s.tags[0] < s.tags[1] {
		return [2]int{0, 1}
	}
	return [2]int{1, 0}
}

// field is one field of a measurement: its key and type, and where in a T
// its value lives (the one pointer accessor of its type).
type field[T any] struct {
	key  string
	kind lineproto.Kind
	f    func(*T) *float64
	i    func(*T) *int64
	b    func(*T) *bool
	s    func(*T) *string

	// An optional field is written only when has says so; seen, when set,
	// records that a decoded point held the field.
	has  func(*T) bool
	seen func(*T)
	// alone marks a marker field (markerField): it has no accessor; the
	// points has says are written as it alone, true, and none other is.
	alone bool
}

func floatField[T any](key string, f func(*T) *float64) field[T] {
	return field[T]{key: key, kind: lineproto.Float, f: f}
}

func intField[T any](key string, i func(*T) *int64) field[T] {
	return field[T]{key: key, kind: lineproto.Int, i: i}
}

func boolField[T any](key string, b func(*T) *bool) field[T] {
	return field[T]{key: key, kind: lineproto.Bool, b: b}
}

func stringField[T any](key string, s func(*T) *string) field[T] {
	return field[T]{key: key, kind: lineproto.String, s: s}
}

// markerField is a field that stands for a whole point: the points is
// says are written as it alone, with the value true, and a point read with
// it (whatever its value) is passed to mark. Other points never hold it.
func markerField[T any](key string, is func(*T) bool, mark func(*T)) field[T] {
	return field[T]{key: key, kind: lineproto.Bool, has: is, seen: mark, alone: true}
}

// setBool stores a decoded bool in p's field (a marker field keeps none).
func (f *field[T]) setBool(p *T, v bool) {
	if f.b != nil {
		*f.b(p) = v
	}
}

// aloneIn returns the marker field that p is written as, or nil.
func (s *schema[T]) aloneIn(p *T) *field[T] {
	for i := range s.fields {
		if f := &s.fields[i]; f.alone && f.has(p) {
			return f
		}
	}
	return nil
}

// optional makes f a field that points may lack.
func (f field[T]) optional(has func(*T) bool, seen func(*T)) field[T] {
	f.has, f.seen = has, seen
	return f
}

// index returns the position of the field named key, or -1. A line written
// by the stores holds its fields in table order, so try is tried first.
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

func (s *schema[T]) fieldKeys() []string {
	keys := make([]string, len(s.fields))
	for i, f := range s.fields {
		keys[i] = f.key
	}
	return keys
}

// Schema describes one measurement of the storage schema (docs/schema.md).
type Schema struct {
	Measurement string
	Tags        []SchemaTag   // in the order they are written
	Fields      []SchemaField // in the order they are written
}

// SchemaTag is one tag key of a measurement.
type SchemaTag struct {
	Key      string
	Optional bool // not on every point
}

// SchemaField is one field of a measurement.
type SchemaField struct {
	Key      string
	Type     string // float, int, bool or string
	Optional bool   // not on every point
}

// Schemas returns the storage schema: probe, queue_hourly, then
// sampler_heartbeat.
func Schemas() []Schema {
	return []Schema{probeSchema.describe(), hourlySchema.describe(), heartbeatSchema.describe()}
}

func (s *schema[T]) describe() Schema {
	o := s.tagOrder()
	d := Schema{Measurement: s.measurement, Tags: []SchemaTag{{Key: s.tags[o[0]]}, {Key: s.tags[o[1]]}, {Key: TagSite, Optional: true}}}
	for _, f := range s.fields {
		d.Fields = append(d.Fields, SchemaField{Key: f.key, Type: f.kind.String(), Optional: f.has != nil})
	}
	return d
}
