// Package series stores lanewatch's probe and hourly points and keeps
// every hourly point the aggregate of its probes.
//
// Store is the one storage seam; File (an embedded line-protocol file) and
// Influx (InfluxDB 1.8+/2.x) implement it and pass one contract suite
// (series/storetest). Recorder is the writer that keeps the invariant,
// Spool keeps points while a store is unreachable, Check and Rebuild
// repair hours that disagree. The schema (schema.go) and the rules are
// described in docs/schema.md; series/lineproto is the line-protocol codec.
package store

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"
)

// Measurement names of the storage schema.
const (
	MeasurementProbe  = "probe"
	MeasurementHourly = "queue_hourly"
)

// Probe is one probe point: measurement "probe", tags lane, kind and (when
// not empty) site, time = probe start.
//
// QueueS is the wait from the request written to the first generated token.
// For a failed probe it is the wait the probe is known to have sat through:
// exact when a first token came, a lower bound (request written → the probe
// gave up) when it timed out before one, 0 when nothing is known.
type Probe struct {
	Lane     string
	Kind     string
	Site     string // "" when the sampler has no site: no tag
	Time     time.Time
	QueueS   float64
	GenS     float64
	HeadersS float64
	ConnectS float64 // DNS + connect + TLS of the probe's connection
	Tokens   int64
	OK       bool
	Outcome  string
	Status   int64

	// The rate-limit state the lane's answer announced, when it did:
	// QuotaRemaining requests left (valid when QuotaKnown), and
	// QuotaResetS, the seconds from the probe's start until the later of
	// the quota's reset and Retry-After (0: the server said neither).
	QuotaRemaining int64
	QuotaKnown     bool
	QuotaResetS    float64
}

// Hourly is one lane-hour point: measurement "queue_hourly", tags lane, kind
// and (when not empty) site, time = start of the hour in the sampler's zone.
// A later write with the same series and hour replaces an earlier one.
//
// A lane whose kind changed within the hour has one point per kind, each
// the aggregate of all the lane's probes of that hour (see Rollup).
type Hourly struct {
	Lane        string
	Kind        string
	Site        string
	Hour        time.Time
	WorstQueueS float64 // max queue_s of ok probes
	WorstGenS   float64 // max gen_s of ok probes
	MinTokPerS  float64 // min tokens/gen_s of ok probes
	Samples     int64   // probes in the hour (ok or not)
	Failures    int64   // probes that were not ok
	Eligible    bool    // ≥1 ok probe and no failure

	// WorstCensoredS is the longest wait a failed probe of the hour is known
	// to have sat through: a lower bound of the queue the next attempt may
	// meet (0: none). See Aggregate.
	WorstCensoredS float64
}

// Window is the span of time [From, To).
type Window struct {
	From, To time.Time
}

// Contains reports whether t is in [From, To).
func (w Window) Contains(t time.Time) bool { return !t.Before(w.From) && t.Before(w.To) }

// Query selects stored points: those whose time lies in one of Windows, of
// one of Sites (nil: every site; "" is the untagged site) and of one of
// Lanes (nil: every lane).
//
// Fields, when not empty, names the only fields of the measurement the
// caller reads (their keys, e.g. "worst_queue_s"; see Schemas): a store
// may then leave the others zero (InfluxDB reads only these, and reports a
// key the measurement lacks as an error) or fill them (the file).
type Query struct {
	Windows []Window
	Sites   []string
	Lanes   []string
	Fields  []string
}

// Between is the query for every point with from <= time < to.
func Between(from, to time.Time) Query {
	return Query{Windows: []Window{{from, to}}}
}

// Site narrows q to one site ("" is the untagged site).
func (q Query) Site(site string) Query {
	q.Sites = []string{site}
	return q
}

// OfLanes narrows q to the named lanes.
func (q Query) OfLanes(lanes ...string) Query {
	q.Lanes = lanes
	return q
}

// Store is where samples live. Implementations are safe for concurrent use.
//
// Write stores points as given, probes then hourly points. It returns nil
// only when every point is durable (a Spool counts a point that waits in its
// file as durable); a non-nil error means the caller must treat the points
// as not stored. A permanent refusal is a *RefusedError. Write does not
// keep the hourly invariant by itself: Recorder does.
//
// Probes and Hourly return the points that q selects, sorted by time, lane,
// kind and site, with replacements already applied.
type Store interface {
	Write(ctx context.Context, probes []Probe, hourly []Hourly) error
	Probes(ctx context.Context, q Query) ([]Probe, error)
	Hourly(ctx context.Context, q Query) ([]Hourly, error)
	Close() error
}

// Latest returns, for each lane and site, the newest probe point of st that
// q selects, sorted by lane and site: the probes of q's windows, reduced.
// (A last() over every series and field is several times slower on
// InfluxDB 1.8 than reading the points: callers keep the windows short,
// widening them only for the lanes not found.)
func Latest(ctx context.Context, st Store, q Query) ([]Probe, error) {
	ps, err := st.Probes(ctx, q)
	if err != nil {
		return nil, err
	}
	return newestPerSeries(ps), nil
}

// newestPerSeries reduces probes to the newest one per lane and site,
// sorted by lane and site.
func newestPerSeries(ps []Probe) []Probe {
	type ls struct{ lane, site string }
	idx := map[ls]int{}
	out := []Probe{}
	for _, p := range ps {
		k := ls{p.Lane, p.Site}
		if i, ok := idx[k]; ok {
			if !p.Time.Before(out[i].Time) {
				out[i] = p
			}
			continue
		}
		idx[k] = len(out)
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Probe) int { return cmp.Or(cmp.Compare(a.Lane, b.Lane), cmp.Compare(a.Site, b.Site)) })
	return out
}

// ErrUnavailable marks a failure that may go away by itself: the store could
// not be reached, or answered with a passing error (errors.Is). A Recorder
// defers to the spool only on such a read failure.
var ErrUnavailable = errors.New("store unavailable")

// unavailable wraps a passing failure so that errors.Is(err, ErrUnavailable).
type unavailable struct{ err error }

func (e unavailable) Error() string        { return e.err.Error() }
func (e unavailable) Unwrap() error        { return e.err }
func (e unavailable) Is(target error) bool { return target == ErrUnavailable }

// Depther is a layer that holds points for later: a Spool.
type Depther interface {
	// SpoolDepth returns how many points wait for replay.
	SpoolDepth() int
}

// SpoolDepth returns how many points wait in s's spool (0 without one).
func SpoolDepth(s Store) int {
	if d, ok := s.(Depther); ok {
		return d.SpoolDepth()
	}
	return 0
}
