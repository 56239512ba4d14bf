// Package series stores probe samples and the per-hour worst queue of each lane.
// Store is the one storage seam; File (an embedded line-protocol file) and
// Influx (InfluxDB 1.8+/2.x) implement it and pass the same contract tests.
package series

import (
	"context"
	"time"
)

// Measurement names of the storage schema (DESIGN.md).
const (
	MeasurementProbe  = "probe"
	MeasurementHourly = "queue_hourly"
)

// Probe is one probe point: measurement "probe", tags lane and kind, time = probe start.
type Probe struct {
	Lane     string
	Kind     string
	Time     time.Time
	QueueS   float64
	GenS     float64
	HeadersS float64
	Tokens   int64
	OK       bool
	Outcome  string
	Status   int64
}

// Hourly is one lane-hour point: measurement "queue_hourly", tags lane and
// kind, time = start of the hour. A later write with the same lane and hour
// replaces an earlier one.
type Hourly struct {
	Lane        string
	Kind        string
	Hour        time.Time
	WorstQueueS float64 // max queue_s of ok probes
	WorstGenS   float64 // max gen_s of ok probes
	MinTokPerS  float64 // min tokens/gen_s of ok probes
	Samples     int64   // probes in the hour (ok or not)
	Failures    int64   // probes that were not ok
	Eligible    bool    // ≥1 ok probe and no failure
}

// Store is where samples live. Implementations are safe for concurrent use.
//
// Write stores the probe and hourly points of one round. It returns nil only
// when every point is durable (or, for stores with a spool, durably queued for
// replay); a non-nil error means the caller must treat the points as not stored.
// Probes and Hourly return the points whose time t satisfies from <= t < to,
// sorted by time then lane, with replacements already applied.
type Store interface {
	Write(ctx context.Context, probes []Probe, hourly []Hourly) error
	Probes(ctx context.Context, from, to time.Time) ([]Probe, error)
	Hourly(ctx context.Context, from, to time.Time) ([]Hourly, error)
	Close() error
}
