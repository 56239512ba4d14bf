// Package store keeps lanewatch's probes, hourly records and heartbeats,
// every hourly record the aggregate of its lane-hour's probes.
//
// Store is the one storage seam. file.Store (an embedded line-protocol
// file), influx.Store (InfluxDB 1.8+ and 2.x, read through InfluxQL) and
// spool.Spool (a layer that keeps points through an outage) implement it
// and pass one contract suite, storetest. This package holds the records
// and their schema (docs/schema.md) in line protocol, the aggregate rule
// (Aggregate, Rollup), the hour keys, and what keeps the invariant:
// Recorder, Check, Rebuild and Import.
package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Store is where points live. Implementations are safe for concurrent use.
type Store interface {
	// Write stores the batch: probes, then hourly points, then heartbeats.
	// nil means every point is durable (a Spool counts one waiting in its
	// file); any other error means the caller must treat the points as
	// not stored. A permanent refusal is a *RefusedError. Write does not
	// keep the hourly invariant by itself: Recorder does.
	Write(ctx context.Context, b Batch) error
	// Read hands the points q selects to r's callbacks, hourly points, then
	// probes, then heartbeats (a nil callback's measurement is not read),
	// each measurement in time order and within a time by series (lane,
	// kind, site; a heartbeat's instance, shard, site), replacements
	// applied. An error of a callback stops the read and is returned as it
	// is. The callbacks must not call the store (a read may hold a lock a
	// write waits for).
	Read(ctx context.Context, q Query, r Reader) error
	// Prune removes the probes and heartbeats older than cut: the file
	// store; InfluxDB says to use its retention instead.
	Prune(ctx context.Context, cut time.Time) (Pruned, error)
	// Status says where the store is and what waits beside it.
	Status() Status
	Close() error
}

// Batch is what one Write stores.
type Batch struct {
	Probes     []Probe
	Hourly     []Hourly
	Heartbeats []Heartbeat
	// The writer could not read what it needs to rebuild the hours of the
	// probes. Defer: the store could not be reached, so a Spool keeps the
	// batch for its next replay without trying the store. Rebuild: the
	// read was refused; the batch is written, and a Spool rebuilds the
	// probes' hours after its next write that goes through. A store
	// without a spool writes the batch as any other.
	Defer, Rebuild bool
}

// Len is the number of points in b.
func (b Batch) Len() int { return len(b.Probes) + len(b.Hourly) + len(b.Heartbeats) }

// Reader receives the points of a Read: one callback per measurement.
type Reader struct {
	Probe     func(Probe) error
	Hourly    func(Hourly) error
	Heartbeat func(Heartbeat) error
	// Local reads only what this process keeps beside the store (a
	// Spool's spool, inbox and dead-letter file): what a sampler knows of
	// its own probes when the store cannot be read. Stores keep nothing
	// beside themselves: they read nothing then.
	Local bool
}

// Status says where a store is and what waits beside it.
type Status struct {
	Where string // the store, safe to print: a path, or a URL and bucket
	// Exclusive: this process holds the store alone (the file's writer),
	// so no other sampler's points or heartbeats reach it.
	Exclusive bool
	// Spooled is how many points wait in the spool for a replay (a Beside
	// spool: how many it left in the inbox).
	Spooled int
	// A spool's files; empty without one.
	Spool, Inbox, DeadLetter string
}

// Pruned says what a Prune did: the probe and heartbeat lines it dropped,
// the lines it kept (hourly records, newer probes and heartbeats, comments
// and lines it could not classify), and the lines longer than 1 MiB, which
// no read returns, dropped with a warning.
type Pruned struct {
	Probes, Heartbeats, Kept, Long int64
}

// Defaults of the stores' files, relative to the config file's folder, and
// of their bounds.
const (
	DefaultFilePath                     = "data/samples.lp"
	DefaultSpoolPath                    = "data/spool.lp"
	DefaultDeadLetterPath               = "data/dead-letter.lp"
	DefaultSpoolMaxBytes  int64         = 64 << 20
	DefaultRequestTimeout time.Duration = 20 * time.Second
	// InboxSuffix names a spool's inbox beside it: the points a process
	// beside the spool's writer (sampler probe next to the daemon) could
	// not store, for the writer to replay.
	InboxSuffix = ".inbox"
)

// Window is the span of time [From, To).
type Window struct {
	From, To time.Time
}

// Contains reports whether t is in [From, To).
func (w Window) Contains(t time.Time) bool { return !t.Before(w.From) && t.Before(w.To) }

// Query selects stored points: those whose time lies in one of Windows, of
// one of Sites (nil: every site; "" is the untagged site) and of one of
// Lanes (nil: every lane; heartbeats have none and are not selected by it).
//
// Fields, when not empty, names the only fields the caller reads (their
// keys, e.g. "worst_queue_s"; see Schemas) of each measurement that has
// any of them: a store may then leave the others zero (InfluxDB reads only
// these) or fill them (the file). A key no measurement has is an error.
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

// ReadProbes returns the probes of st that q selects, in Read's order.
func ReadProbes(ctx context.Context, st Store, q Query) ([]Probe, error) {
	out := []Probe{}
	err := st.Read(ctx, q, Reader{Probe: func(p Probe) error { out = append(out, p); return nil }})
	return out, err
}

// ReadHourly returns the hourly points of st that q selects, in Read's order.
func ReadHourly(ctx context.Context, st Store, q Query) ([]Hourly, error) {
	out := []Hourly{}
	err := st.Read(ctx, q, Reader{Hourly: func(h Hourly) error { out = append(out, h); return nil }})
	return out, err
}

// ReadHeartbeats returns the heartbeats of st that q selects, in Read's order.
func ReadHeartbeats(ctx context.Context, st Store, q Query) ([]Heartbeat, error) {
	out := []Heartbeat{}
	err := st.Read(ctx, q, Reader{Heartbeat: func(b Heartbeat) error { out = append(out, b); return nil }})
	return out, err
}

// Newest returns, for each lane and site, the newest probe of st that q
// selects, sorted by lane and site. (A last() over every series is several
// times slower on InfluxDB than reading the points: callers keep the
// windows short, widening them only for the lanes not found.)
func Newest(ctx context.Context, st Store, q Query) ([]Probe, error) {
	type ls struct{ lane, site string }
	idx := map[ls]int{}
	out := []Probe{}
	err := st.Read(ctx, q, Reader{Probe: func(p Probe) error {
		if i, ok := idx[ls{p.Lane, p.Site}]; ok {
			out[i] = p // time order: the later one
			return nil
		}
		idx[ls{p.Lane, p.Site}] = len(out)
		out = append(out, p)
		return nil
	}})
	slices.SortFunc(out, func(a, b Probe) int { return cmp.Or(cmp.Compare(a.Lane, b.Lane), cmp.Compare(a.Site, b.Site)) })
	return out, err
}

// ErrUnavailable marks a failure that may go away by itself: the store could
// not be reached, or answered with a passing error (errors.Is). A Recorder
// defers to the spool only on such a read failure.
var ErrUnavailable = errors.New("store unavailable")

// Unavailable marks err (not nil) as ErrUnavailable, keeping its text.
func Unavailable(err error) error { return unavailable{err} }

type unavailable struct{ err error }

func (e unavailable) Error() string        { return e.err.Error() }
func (e unavailable) Unwrap() error        { return e.err }
func (e unavailable) Is(target error) bool { return target == ErrUnavailable }

// ErrReadOnly is the error of a write to a store opened to read.
var ErrReadOnly = errors.New("store is open read-only")

// RefusedError reports points a store refused for good. Status is the
// HTTP status (0 when not known). A Spool moves them to its dead-letter file
// and says so in DeadLetter; its refusal carries the store's Status.
type RefusedError struct {
	Points     int
	Status     int
	DeadLetter string // where the points went; empty when nowhere, or when a Spool kept them (its error says so)
	Err        error
}

func (e *RefusedError) Error() string {
	if e.DeadLetter == "" {
		return fmt.Sprintf("refused %d points: %v", e.Points, e.Err)
	}
	return fmt.Sprintf("refused %d points: %v; moved to dead-letter file %s", e.Points, e.Err, e.DeadLetter)
}

func (e *RefusedError) Unwrap() error { return e.Err }

// Booked returns nil when a Write that returned err left every point it
// was given durable: stored, spooled, or (a Spool's *RefusedError naming
// its dead-letter file) refused and kept in the dead-letter file, which
// reads merge. A sampler writes its reservations so and probes only when
// Booked is nil: a request counts from the moment it was booked, wherever
// the booking is kept. Any other error is returned as is.
func Booked(err error) error {
	var re *RefusedError
	if err == nil || (errors.As(err, &re) && re == err && re.DeadLetter != "") {
		return nil
	}
	return err
}

// JoinErrors is errors.Join on one line ("; " between the errors), so that
// a caller can print it as one line. It returns nil when all errs are nil.
func JoinErrors(errs ...error) error {
	var e multiError
	for _, err := range errs {
		if err != nil {
			e = append(e, err)
		}
	}
	switch len(e) {
	case 0:
		return nil
	case 1:
		return e[0]
	}
	return e
}

type multiError []error

func (e multiError) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (e multiError) Unwrap() []error { return e }
