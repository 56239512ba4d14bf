package store

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/influxdata/influxdb-client-go/v2/api/query"
)

// MeasurementHeartbeat is the measurement of the samplers' heartbeats.
const MeasurementHeartbeat = "sampler_heartbeat"

// Heartbeat is one sampler's sign of life, written each round: measurement
// "sampler_heartbeat", tags instance, shard and (when not empty) site, time
// = the round's start. Of the live instances of one shard and site, the
// rule of package duty picks the one that probes; the sites that share
// account quotas check that they list the same sites.
type Heartbeat struct {
	Instance string // tag instance: unique per process
	Shard    string // tag shard: "I/N" as -shard takes it
	Site     string // "" when the sampler has no site: no tag
	Time     time.Time
	Host     string
	StartNS  int64 // when the instance started, Unix nanoseconds
	Version  string
	// IntervalS is the instance's schedule interval in seconds: its beat
	// is live for two of them.
	IntervalS float64
	// Sites are the sites the instance shares its account quotas with
	// (budget.Group.Sites), sorted and comma-separated: field sites, absent
	// when "" (none, or a sampler older than the field).
	Sites string
}

// Start returns when the instance started.
func (b Heartbeat) Start() time.Time { return time.Unix(0, b.StartNS).UTC() }

func heartbeatKey(b *Heartbeat) pointKey {
	return pointKey{b.Instance, b.Shard, b.Site, b.Time.UnixNano()}
}

// HeartbeatStore is a store that keeps the samplers' heartbeats: File,
// Influx and a Spool around either. Heartbeats are not history: a sampler
// writes them straight to the store (a Spool does not keep them through
// an outage, where they would be stale by the replay), and `sampler
// import` skips them.
type HeartbeatStore interface {
	WriteHeartbeat(ctx context.Context, b Heartbeat) error
	// Heartbeats returns the heartbeats of the sites ("" is the untagged
	// site) stamped in w, sorted by time, shard and instance.
	Heartbeats(ctx context.Context, sites []string, w Window) ([]Heartbeat, error)
}

// Exclusive is a store that one writer holds alone: no other sampler's
// heartbeat can reach it, so a round need not read them.
type Exclusive interface {
	Exclusive() bool
}

// Exclusive reports whether s is open for writing: then it holds the
// file's lock, and two samplers cannot share the file.
func (s *File) Exclusive() bool { return s.w != nil }

var (
	_ Exclusive      = (*File)(nil)
	_ HeartbeatStore = (*File)(nil)
	_ HeartbeatStore = (*Influx)(nil)
	_ HeartbeatStore = (*Spool)(nil)
)

// heartbeat encodes one heartbeat.
func (e *encoder) heartbeat(b *Heartbeat) ([]byte, error) {
	e.enc.Reset()
	if err := encodePoint(e, &heartbeatSchema, b); err != nil {
		return nil, fmt.Errorf("heartbeat (instance %q): %w", b.Instance, err)
	}
	return e.enc.Bytes(), nil
}

// heartbeatQuery selects the points of the sites in w.
func heartbeatQuery(sites []string, w Window) Query {
	return Query{Windows: []Window{w}, Sites: sites}
}

// WriteHeartbeat appends the heartbeat and fsyncs it. (A file has one
// writer, its lock says so; the heartbeat is there for the status of the
// instance, and so that both stores carry the same schema.)
func (s *File) WriteHeartbeat(ctx context.Context, b Heartbeat) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writable("write"); err != nil {
		return err
	}
	line, err := s.enc.heartbeat(&b)
	if err != nil {
		return fmt.Errorf("write %s: %w", s.path, err)
	}
	if err := s.w.checkPath(); err != nil {
		return fmt.Errorf("write %s: %w", s.path, err)
	}
	if err := s.w.append(line); err != nil {
		return fmt.Errorf("write %s: %w", s.path, err)
	}
	return nil
}

// Heartbeats returns the heartbeats of the sites stamped in w.
func (s *File) Heartbeats(ctx context.Context, sites []string, w Window) ([]Heartbeat, error) {
	return readFile(ctx, s, kindHeartbeat, heartbeatQuery(sites, w), &heartbeatSchema, heartbeatKey)
}

// WriteHeartbeat sends the heartbeat in one request.
func (s *Influx) WriteHeartbeat(ctx context.Context, b Heartbeat) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("%s: write heartbeat: %w", s.where, os.ErrClosed)
	}
	body, err := s.enc.heartbeat(&b)
	if err != nil {
		s.mu.Unlock()
		return fmt.Errorf("%s: write heartbeat: %w", s.where, err)
	}
	line := string(bytes.TrimSuffix(body, []byte{'\n'})) // a copy: the encoder's buffer is reused
	s.mu.Unlock()
	if err := s.writeAPI.WriteRecord(ctx, line); err != nil {
		return fmt.Errorf("%s: write heartbeat: %w", s.where, s.classify(err))
	}
	return nil
}

// Heartbeats returns the heartbeats of the sites stamped in w, in one
// query.
func (s *Influx) Heartbeats(ctx context.Context, sites []string, w Window) ([]Heartbeat, error) {
	m := heartbeatQuery(sites, w).matcher()
	l := newLatest(heartbeatKey)
	if m.empty() {
		return l.out, nil
	}
	if err := s.checkOpen(); err != nil {
		return nil, fmt.Errorf("%s: read heartbeats: %w", s.where, err)
	}
	span := m.spans[0]
	put := func(r row) { l.putIn(rowPoint(&heartbeatSchema, r), m) }
	var err error
	if s.influxQL {
		err = s.ql.query(ctx, qlHeartbeats(span, m), put)
	} else {
		err = s.query(ctx, s.fluxHeartbeats(span, m), func(r *query.FluxRecord) error {
			put(fluxRow{r}) // Flux on InfluxDB 1.8 includes points at stop: putIn drops them
			return nil
		})
	}
	if err != nil {
		return nil, fmt.Errorf("%s: read heartbeats: %w", s.where, s.classify(err))
	}
	return l.sorted(), nil
}

// qlHeartbeats is the InfluxQL SELECT of the heartbeats of m's sites in
// span: the fields and the tags as columns.
func qlHeartbeats(span [2]int64, m *matcher) string {
	var b strings.Builder
	b.WriteString("SELECT ")
	for _, f := range heartbeatFields {
		b.WriteString(qlIdent(f) + ", ")
	}
	fmt.Fprintf(&b, "%s, %s, %s FROM %s WHERE time >= %d AND time < %d",
		qlIdent(TagInstance), qlIdent(TagShard), qlIdent(TagSite), qlIdent(MeasurementHeartbeat), span[0], span[1])
	qlSites(&b, m)
	return b.String()
}

// fluxHeartbeats is the Flux query of the heartbeats of m's sites in
// span, one row per heartbeat.
func (s *Influx) fluxHeartbeats(span [2]int64, m *matcher) string {
	var b strings.Builder
	fmt.Fprintf(&b, "from(bucket: %s)\n", fluxString(s.bucket))
	fmt.Fprintf(&b, "  |> range(start: %s, stop: %s)\n", fluxNano(span[0]), fluxNano(span[1]))
	fmt.Fprintf(&b, "  |> filter(fn: (r) => r._measurement == %s)\n", fluxString(MeasurementHeartbeat))
	fluxSites(&b, m)
	fluxFieldsPivot(&b, heartbeatFields)
	return b.String()
}

// WriteHeartbeat writes the heartbeat to the inner store, not to the
// spool: one that cannot be delivered now is stale by the replay.
func (s *Spool) WriteHeartbeat(ctx context.Context, b Heartbeat) error {
	hs, ok := s.inner.(HeartbeatStore)
	if !ok {
		return fmt.Errorf("write heartbeat: the store %T keeps none", s.inner)
	}
	return hs.WriteHeartbeat(ctx, b)
}

// Heartbeats reads the inner store's heartbeats.
func (s *Spool) Heartbeats(ctx context.Context, sites []string, w Window) ([]Heartbeat, error) {
	hs, ok := s.inner.(HeartbeatStore)
	if !ok {
		return nil, fmt.Errorf("read heartbeats: the store %T keeps none", s.inner)
	}
	return hs.Heartbeats(ctx, sites, w)
}
