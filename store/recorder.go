package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Deferrer is a layer that can hold points for a later replay without trying
// the store first: a Spool.
type Deferrer interface {
	Defer(ctx context.Context, probes []Probe, hourly []Hourly) error
}

// Recorder writes probe points and keeps the invariant of the schema: every
// stored queue_hourly point is the Rollup of all stored probe points of its
// lane, site and hour (hours keyed in Location).
//
// Record reads the probes already stored for the lane-hours a round
// touches, adds the new ones, and writes the new probes with the refreshed
// hourly points in one Write (RecordWith takes them from a read the caller
// made already). When the store cannot be read (InfluxDB down)
// and it is a Deferrer, the probes go to the spool alone and their hours are
// rebuilt once they are readable: a Spool opened with AfterReplay set to
// RebuildAfterReplay(loc) does that before it lets go of them. So rounds,
// replays after an outage, restarts in the middle of one, imports and
// refused-then-imported batches all leave the invariant true.
type Recorder struct {
	store Store
	loc   *time.Location
}

// NewRecorder returns a Recorder writing to st, hours keyed in loc (nil: UTC).
func NewRecorder(st Store, loc *time.Location) *Recorder {
	return &Recorder{store: st, loc: OrUTC(loc)}
}

// Recorded says what Record did.
type Recorded struct {
	// Hourly are the hourly points written with the probes.
	Hourly []Hourly
	// Deferred is true when the store could not be read: the probes wait
	// in the spool and their hours are rebuilt when it is replayed.
	Deferred bool
}

// Record stores the probes and the refreshed hourly point of every lane-hour
// they fall in. A nil error means every point is durable (in the store, or
// in a spool). When the store cannot be read for a reason that is not
// passing, the probes are still written, without their hours, and the
// error wraps ErrHoursNotRebuilt.
func (r *Recorder) Record(ctx context.Context, probes []Probe) (Recorded, error) {
	return r.RecordWith(ctx, probes, Prior{})
}

// Prior is what a caller read from the store before it records: the probes
// Query selected, as Store.Probes returned them.
type Prior struct {
	Query  Query
	Probes []Probe
	// Rebuild names lane-hours to rewrite beside those the probes fall in
	// (a sampler's reservations that were never settled: their hours must
	// count them).
	Rebuild []LaneHour
}

// RecordWith is Record for a caller that read the store already, so that a
// round reads it once: when prior's query covers every lane-hour the probes
// touch (its windows span the whole hour, its sites and lanes include the
// lane-hour's), the stored probes of those hours come from prior.Probes and
// the store is only written. Otherwise (a zero Prior, or one that misses an
// hour) it reads them as Record does. Points stored after prior was read
// are not seen; Record's read narrows that gap to the write.
func (r *Recorder) RecordWith(ctx context.Context, probes []Probe, prior Prior) (Recorded, error) {
	touched := touchedWith(probes, prior.Rebuild, r.loc)
	if len(touched) == 0 {
		return Recorded{}, nil
	}
	stored := prior.Probes
	if !prior.covers(touched) {
		var err error
		if stored, err = r.store.Probes(ctx, queryOf(touched)); err != nil {
			return r.unread(ctx, probes, err)
		}
	}
	hourly := rollupOf(touched, stored, probes, r.loc)
	if err := r.store.Write(ctx, probes, hourly); err != nil {
		return Recorded{}, err
	}
	return Recorded{Hourly: hourly}, nil
}

// ErrHoursNotRebuilt is returned (wrapped) by a Recorder that stored the
// probes (in the store, its spool or its dead-letter file) but could not
// read what it needs to rebuild their hours: `sampler rollup` rebuilds
// them once the store can be read.
var ErrHoursNotRebuilt = errors.New("probes stored, their hours not rebuilt")

// unread stores probes whose hours cannot be read: a passing failure sends
// them to the spool alone, and the replay rebuilds their hours; any other
// (a 401, 403 or 404 while the sampler runs) writes them without their
// hours, so that the round is never dropped, and says so.
func (r *Recorder) unread(ctx context.Context, probes []Probe, err error) (Recorded, error) {
	rerr := fmt.Errorf("read the probes of the hour: %w", err)
	if len(probes) == 0 {
		return Recorded{}, rerr
	}
	if d, ok := r.store.(Deferrer); ok && errors.Is(err, ErrUnavailable) {
		if derr := d.Defer(ctx, probes, nil); derr != nil {
			return Recorded{}, fmt.Errorf("%w; %w", rerr, derr)
		}
		return Recorded{Deferred: true}, nil
	}
	if werr := r.store.Write(ctx, probes, nil); werr != nil {
		return Recorded{}, fmt.Errorf("%w; write the probes: %w", rerr, werr)
	}
	if l, ok := r.store.(laterRebuilder); ok {
		l.RebuildLater(probes)
		return Recorded{}, fmt.Errorf("%w (they are rebuilt at the first write after the store can be read again, or by sampler rollup): %w", ErrHoursNotRebuilt, rerr)
	}
	return Recorded{}, fmt.Errorf("%w (run sampler rollup once the store can be read): %w", ErrHoursNotRebuilt, rerr)
}

// laterRebuilder is a layer that rebuilds the hours of probes after a later
// write that goes through (a Spool with AfterReplay).
type laterRebuilder interface{ RebuildLater(probes []Probe) }

// touchedWith is the lane-hours the probes fall in and the extra ones,
// sorted and without repeats.
func touchedWith(probes []Probe, extra []LaneHour, loc *time.Location) []LaneHour {
	touched := Touched(probes, loc)
	if len(extra) == 0 {
		return touched
	}
	seen := laneHourSet(touched)
	for _, t := range extra {
		t.Hour = hourOf(t.Hour, loc)
		if !seen[t] {
			seen[t] = true
			touched = append(touched, t)
		}
	}
	slices.SortFunc(touched, compareLaneHour)
	return touched
}

// covers reports whether p's query selects every probe of the lane-hours:
// their lanes and sites, and each hour whole within one of its windows.
func (p Prior) covers(touched []LaneHour) bool {
	m := p.Query.matcher()
	if m.empty() {
		return false
	}
	for _, t := range touched {
		if !m.seriesOK(t.Lane, t.Site) {
			return false
		}
		from, to := clampNano(t.Hour), clampNano(t.Hour.Add(time.Hour))
		i := slices.IndexFunc(m.spans, func(s [2]int64) bool { return s[0] <= from && to <= s[1] })
		if i < 0 {
			return false
		}
	}
	return true
}

// rollupOf aggregates the touched lane-hours from the stored probes (a
// read may return more) and the fresh ones, which replace a stored one of
// the same key.
func rollupOf(touched []LaneHour, stored, fresh []Probe, loc *time.Location) []Hourly {
	in := laneHourSet(touched)
	l := newLatest(probeKey)
	for _, p := range stored {
		if in[LaneHour{p.Lane, p.Site, hourOf(p.Time, loc)}] {
			l.put(p)
		}
	}
	for _, p := range fresh {
		l.put(p)
	}
	return Rollup(l.sorted(), loc)
}

// Rebuild recomputes the hourly points of the lane-hours from the probes
// stored for them and writes them: the repair after an outage or an import.
// It returns the points it wrote. Lane-hours without probes write nothing.
func Rebuild(ctx context.Context, st Store, loc *time.Location, touched []LaneHour) ([]Hourly, error) {
	if len(touched) == 0 {
		return nil, nil
	}
	loc = OrUTC(loc)
	stored, err := st.Probes(ctx, queryOf(touched))
	if err != nil {
		return nil, fmt.Errorf("rebuild hours: %w", err)
	}
	hourly := rollupOf(touched, stored, nil, loc)
	if n, err := writeHourly(ctx, st, hourly); err != nil {
		return hourly[:n], fmt.Errorf("rebuild hours: %w", err)
	}
	return hourly, nil
}

// writeHourly writes hourly points in batches of replayBatch and returns
// how many it wrote.
func writeHourly(ctx context.Context, st Store, hourly []Hourly) (int, error) {
	n := 0
	for n < len(hourly) {
		chunk := hourly[n:min(len(hourly), n+replayBatch)]
		if err := st.Write(ctx, nil, chunk); err != nil {
			return n, err
		}
		n += len(chunk)
	}
	return n, nil
}

// RebuildAfterReplay is the SpoolOptions.AfterReplay that keeps the
// invariant: it rebuilds the hours of the replayed probes.
func RebuildAfterReplay(loc *time.Location) func(context.Context, Store, []Probe) error {
	return func(ctx context.Context, inner Store, replayed []Probe) error {
		_, err := Rebuild(ctx, inner, loc, Touched(replayed, loc))
		return err
	}
}

// queryOf selects the probes of the lane-hours: one window per hour, the
// lanes and sites they name.
func queryOf(touched []LaneHour) Query {
	var q Query
	hoursSeen := map[time.Time]bool{}
	lanes, sites := map[string]bool{}, map[string]bool{}
	for _, t := range touched {
		if !hoursSeen[t.Hour] {
			hoursSeen[t.Hour] = true
			q.Windows = append(q.Windows, Window{t.Hour, t.Hour.Add(time.Hour)})
		}
		if !lanes[t.Lane] {
			lanes[t.Lane] = true
			q.Lanes = append(q.Lanes, t.Lane)
		}
		if !sites[t.Site] {
			sites[t.Site] = true
			q.Sites = append(q.Sites, t.Site)
		}
	}
	return q
}

func laneHourSet(touched []LaneHour) map[LaneHour]bool {
	in := make(map[LaneHour]bool, len(touched))
	for _, t := range touched {
		in[t] = true
	}
	return in
}
