// Package store keeps lanewatch's probes, hourly records and heartbeats,
// every hourly record the aggregate of its lane-hour's probes. Store is the
// one storage seam (file, influx and spool implement it; storetest is its
// contract). This package holds the records, their schema and line
// protocol, the aggregate rule, the hour keys, and what keeps the
// invariant: Recorder, Check, Rebuild and Import. The contract is
// docs/schema.md.
package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Store is where points live. Implementations are safe for concurrent use.
type Store interface {
	// Write stores the batch. nil means every point is durable (a Spool
	// counts one in its file); otherwise none counts as stored. A
	// permanent refusal is a *RefusedError.
	Write(ctx context.Context, b Batch) error
	// Read hands the points q selects to r's callbacks: hourly points,
	// probes, then heartbeats, each in time order and within a time by
	// series, replacements applied. A callback's error stops the read and
	// is returned as is. Callbacks must not call the store.
	Read(ctx context.Context, q Query, r Reader) error
	// Prune removes the probes and heartbeats older than cut (the file
	// store; InfluxDB has retention).
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
	// The writer could not read the probes' hours: a Spool keeps a Defer
	// batch for its next replay, and rebuilds a Rebuild batch's hours
	// after its next write that goes through. Stores ignore both.
	Defer, Rebuild bool
}

// Len is the number of points in b.
func (b Batch) Len() int { return len(b.Probes) + len(b.Hourly) + len(b.Heartbeats) }

// Reader receives the points of a Read: one callback per measurement.
type Reader struct {
	Probe     func(Probe) error
	Hourly    func(Hourly) error
	Heartbeat func(Heartbeat) error
	// Local reads only a Spool's own files, not the store.
	Local bool
}

// Status says where a store is and what waits beside it.
type Status struct {
	Where     string // safe to print: a path, or a URL and bucket
	Exclusive bool   // this process holds the store alone (the file's writer)
	Spooled   int    // points waiting for a replay (Beside: left in the inbox)
	// A spool's files; empty without one.
	Spool, Inbox, DeadLetter string
}

// Pruned counts the lines a Prune dropped, kept, and dropped as longer
// than MaxLine.
type Pruned struct {
	Probes, Heartbeats, Kept, Long int64
}

// Defaults of the stores' files (relative to the config's folder) and bounds.
const (
	DefaultFilePath                     = "data/samples.lp"
	DefaultSpoolPath                    = "data/spool.lp"
	DefaultDeadLetterPath               = "data/dead-letter.lp"
	DefaultSpoolMaxBytes  int64         = 64 << 20
	DefaultRequestTimeout time.Duration = 20 * time.Second
	InboxSuffix                         = ".inbox" // a spool's inbox: Path + InboxSuffix
)

// Window is the span of time [From, To).
type Window struct {
	From, To time.Time
}

// Contains reports whether t is in [From, To).
func (w Window) Contains(t time.Time) bool { return !t.Before(w.From) && t.Before(w.To) }

// Query selects the points in one of Windows, of one of Sites (nil: all;
// "" is the untagged site) and of one of Lanes (nil: all; not applied to
// heartbeats). Fields, when set, names the only fields the caller reads:
// a store may leave the others zero. A key no measurement has is an error.
// Newest keeps of each series (a measurement's two tags and site) only its
// newest point in each window: windows that overlap are one, windows that
// only touch are two.
type Query struct {
	Windows []Window
	Sites   []string
	Lanes   []string
	Fields  []string
	Newest  bool
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

// ErrUnavailable marks (errors.Is) a failure that may go away by itself.
var ErrUnavailable = errors.New("store unavailable")

// Unavailable marks err (not nil) as ErrUnavailable, keeping its text.
func Unavailable(err error) error { return unavailable{err} }

type unavailable struct{ error }

func (e unavailable) Unwrap() error        { return e.error }
func (e unavailable) Is(target error) bool { return target == ErrUnavailable }

// ErrReadOnly is the error of a write to a store opened to read.
var ErrReadOnly = errors.New("store is open read-only")

// RefusedError reports points a store refused for good: Status is the HTTP
// status (0: not known), DeadLetter the file a Spool moved them to.
type RefusedError struct {
	Points     int
	Status     int
	DeadLetter string
	Err        error
}

func (e *RefusedError) Error() string {
	if e.DeadLetter == "" {
		return fmt.Sprintf("refused %d points: %v", e.Points, e.Err)
	}
	return fmt.Sprintf("refused %d points: %v; moved to dead-letter file %s", e.Points, e.Err, e.DeadLetter)
}

func (e *RefusedError) Unwrap() error { return e.Err }

// Booked returns nil when a Write that returned err left every point
// durable: stored, spooled, or dead-lettered (which reads merge), and err
// otherwise. A sampler probes only when its reservations are Booked.
func Booked(err error) error {
	var re *RefusedError
	if err == nil || (errors.As(err, &re) && re == err && re.DeadLetter != "") {
		return nil
	}
	return err
}

// JoinErrors is errors.Join on one line ("; " between the errors).
func JoinErrors(errs ...error) error {
	e := multiError(slices.DeleteFunc(slices.Clone(errs), func(err error) bool { return err == nil }))
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
