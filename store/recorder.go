package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Recorder writes probe points and keeps the invariant
// (docs/schema.md#the-invariant); when the store cannot be read, it writes
// the probes alone (Batch.Defer, Rebuild) and a Spool rebuilds their hours.
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
	Hourly   []Hourly // written with the probes
	Deferred bool     // the probes wait in the spool, their hours with them
}

// Record stores the probes and the refreshed hourly points of their
// lane-hours. nil means every point is durable. When the store cannot be
// read for good, the probes are written alone and the error wraps
// ErrHoursNotRebuilt.
func (r *Recorder) Record(ctx context.Context, probes []Probe) (Recorded, error) {
	return r.RecordWith(ctx, probes, Prior{})
}

// Prior is what a caller read before it records: the probes Query selected.
type Prior struct {
	Query   Query
	Probes  []Probe
	Rebuild []LaneHour // to rewrite beside the probes' own
}

// RecordWith is Record for a caller that read the store already: when
// prior's query covers every lane-hour touched whole, the stored probes
// come from prior.Probes and the store is only written.
func (r *Recorder) RecordWith(ctx context.Context, probes []Probe, prior Prior) (Recorded, error) {
	touched := Touched(probes, r.loc)
	for _, t := range prior.Rebuild {
		if t.Hour = hourOf(t.Hour, r.loc); !slices.Contains(touched, t) {
			touched = append(touched, t)
		}
	}
	slices.SortFunc(touched, compareLaneHour)
	if len(touched) == 0 {
		return Recorded{}, nil
	}
	stored := prior.Probes
	if !prior.covers(touched) {
		var err error
		if stored, err = ReadProbes(ctx, r.store, queryOf(touched)); err != nil {
			return r.unread(ctx, probes, err)
		}
	}
	hourly := rollupOf(touched, stored, probes, r.loc)
	if err := r.store.Write(ctx, Batch{Probes: probes, Hourly: hourly}); err != nil {
		return Recorded{}, err
	}
	r.recheck(ctx, pendingOthers(touched, stored, probes, r.loc), hourly)
	return Recorded{Hourly: hourly}, nil
}

// pendingOthers is the touched lane-hours where stored holds a reservation
// the fresh probes do not settle: another writer's, settled or released
// later.
func pendingOthers(touched []LaneHour, stored, fresh []Probe, loc *time.Location) []LaneHour {
	own := make(map[Key]bool, len(fresh))
	for i := range fresh {
		own[KeyOf(&fresh[i])] = true
	}
	var out []LaneHour
	for i := range stored {
		p := &stored[i]
		if t := (LaneHour{p.Lane, p.Site, hourOf(p.Time, loc)}); p.Outcome == OutcomeReserved && !own[KeyOf(p)] && slices.Contains(touched, t) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, compareLaneHour)
	return slices.Compact(out)
}

// recheck reads the lane-hours again after wrote was written and rewrites
// those whose probes moved meanwhile. Another writer may settle or release
// a reservation counted in wrote and rebuild its hour before wrote lands;
// whichever writer looks last then sees the settled probes. An hour that
// still reads as written is left alone, so a stale read never overwrites a
// newer rebuild. Best effort: on a failed read the hour waits for rollup.
func (r *Recorder) recheck(ctx context.Context, touched []LaneHour, wrote []Hourly) {
	if len(touched) == 0 {
		return
	}
	stored, err := ReadProbes(ctx, r.store, queryOf(touched))
	if err != nil {
		return
	}
	var moved []Hourly
	for _, h := range rollupOf(touched, stored, nil, r.loc) {
		if !slices.ContainsFunc(wrote, func(w Hourly) bool { return SameHourly(w, h) }) {
			moved = append(moved, h)
		}
	}
	_, _ = writeHourly(ctx, r.store, moved)
}

// ErrHoursNotRebuilt is returned (wrapped) by a Recorder that stored the
// probes but could not read what it needs to rebuild their hours.
var ErrHoursNotRebuilt = errors.New("probes stored, their hours not rebuilt")

// unread stores probes whose hours cannot be read: deferred to the spool on
// a passing failure, else written without their hours, and says so.
func (r *Recorder) unread(ctx context.Context, probes []Probe, err error) (Recorded, error) {
	rerr := fmt.Errorf("read the probes of the hour: %w", err)
	if len(probes) == 0 {
		return Recorded{}, rerr
	}
	spooled := r.store.Status().Spool != ""
	if spooled && errors.Is(err, ErrUnavailable) {
		if derr := r.store.Write(ctx, Batch{Probes: probes, Defer: true}); derr != nil {
			return Recorded{}, fmt.Errorf("%w; %w", rerr, derr)
		}
		return Recorded{Deferred: true}, nil
	}
	if werr := r.store.Write(ctx, Batch{Probes: probes, Rebuild: true}); werr != nil {
		return Recorded{}, fmt.Errorf("%w; write the probes: %w", rerr, werr)
	}
	if spooled {
		return Recorded{}, fmt.Errorf("%w (they are rebuilt at the first write after the store can be read again, or by sampler rollup): %w", ErrHoursNotRebuilt, rerr)
	}
	return Recorded{}, fmt.Errorf("%w (run sampler rollup once the store can be read): %w", ErrHoursNotRebuilt, rerr)
}

// covers reports whether p's query selects every probe of the lane-hours.
func (p Prior) covers(touched []LaneHour) bool {
	f := p.Query.Filter()
	if f.Empty() || f.Newest {
		return false
	}
	for _, t := range touched {
		if (f.sites != nil && !f.sites[t.Site]) || (f.lanes != nil && !f.lanes[t.Lane]) {
			return false
		}
		from, to := clampNano(t.Hour), clampNano(t.Hour.Add(time.Hour))
		if !slices.ContainsFunc(f.Spans, func(s [2]int64) bool { return s[0] <= from && to <= s[1] }) {
			return false
		}
	}
	return true
}

// rollupOf aggregates the touched lane-hours from the stored probes and the
// fresh ones, which replace stored ones of their key.
func rollupOf(touched []LaneHour, stored, fresh []Probe, loc *time.Location) []Hourly {
	in := make(map[LaneHour]bool, len(touched))
	for _, t := range touched {
		in[t] = true
	}
	var l Latest[Probe]
	for _, p := range stored {
		if in[LaneHour{p.Lane, p.Site, hourOf(p.Time, loc)}] {
			l.Put(p)
		}
	}
	for _, p := range fresh {
		l.Put(p)
	}
	return Rollup(l.Sorted(), loc)
}

// Rebuild recomputes and writes the hourly points of the lane-hours from
// their stored probes, and returns the points it wrote; it leaves alone a
// lane-hour whose only requests are reservations (docs/schema.md#the-invariant).
func Rebuild(ctx context.Context, st Store, loc *time.Location, touched []LaneHour) ([]Hourly, error) {
	if len(touched) == 0 {
		return nil, nil
	}
	loc = OrUTC(loc)
	stored, err := ReadProbes(ctx, st, queryOf(touched))
	if err != nil {
		return nil, fmt.Errorf("rebuild hours: %w", err)
	}
	settled := map[LaneHour]bool{}
	for _, p := range stored {
		if Sent(p) && p.Outcome != OutcomeReserved {
			settled[LaneHour{p.Lane, p.Site, hourOf(p.Time, loc)}] = true
		}
	}
	hourly := slices.DeleteFunc(rollupOf(touched, stored, nil, loc), func(h Hourly) bool { return !settled[LaneHour{h.Lane, h.Site, h.Hour}] })
	if n, err := writeHourly(ctx, st, hourly); err != nil {
		return hourly[:n], fmt.Errorf("rebuild hours: %w", err)
	}
	return hourly, nil
}

// writeHourly writes in batches of 5,000 and returns how many it wrote.
func writeHourly(ctx context.Context, st Store, hourly []Hourly) (int, error) {
	n := 0
	for n < len(hourly) {
		chunk := hourly[n:min(len(hourly), n+5000)]
		if err := st.Write(ctx, Batch{Hourly: chunk}); err != nil {
			return n, err
		}
		n += len(chunk)
	}
	return n, nil
}

// queryOf selects the probes of the lane-hours (Filter joins the windows).
func queryOf(touched []LaneHour) Query {
	var q Query
	for _, t := range touched {
		q.Windows = append(q.Windows, Window{t.Hour, t.Hour.Add(time.Hour)})
		q.Lanes = append(q.Lanes, t.Lane)
		q.Sites = append(q.Sites, t.Site)
	}
	slices.Sort(q.Lanes)
	slices.Sort(q.Sites)
	q.Lanes, q.Sites = slices.Compact(q.Lanes), slices.Compact(q.Sites)
	return q
}

// Problem is what is wrong with one stored hourly point.
type Problem string

// The problems Check finds.
const (
	ProblemMissing Problem = "missing" // probes, but no hourly point of that kind
	ProblemDiffers Problem = "differs" // the stored point is not the aggregate of its probes
	ProblemOrphan  Problem = "orphan"  // an hourly point without a probe in its lane-hour
)

// Mismatch is one hourly point that breaks the invariant: Want the
// aggregate (zero for an orphan), Stored the store's (zero when missing).
type Mismatch struct {
	Problem Problem
	Want    Hourly
	Stored  Hourly
}

func (m Mismatch) point() Hourly {
	if m.Problem == ProblemOrphan {
		return m.Stored
	}
	return m.Want
}

func (m Mismatch) String() string {
	h := m.point()
	at := fmt.Sprintf("%s lane %s kind %s", h.Hour.UTC().Format(time.RFC3339), h.Lane, h.Kind)
	if h.Site != "" {
		at += " site " + h.Site
	}
	switch m.Problem {
	case ProblemDiffers:
		return fmt.Sprintf("%s: stored samples=%d failures=%d worst=%g censored=%g, probes say samples=%d failures=%d worst=%g censored=%g", at,
			m.Stored.Samples, m.Stored.Failures, m.Stored.WorstQueueS, m.Stored.WorstCensoredS,
			m.Want.Samples, m.Want.Failures, m.Want.WorstQueueS, m.Want.WorstCensoredS)
	case ProblemMissing:
		return fmt.Sprintf("%s: no hourly point for %d probes", at, h.Samples)
	}
	return fmt.Sprintf("%s: hourly point without probes (samples=%d)", at, h.Samples)
}

// HourSpan widens [from, to) to whole hours of loc.
func HourSpan(from, to time.Time, loc *time.Location) Window {
	end := HourStart(to, loc)
	if end.Before(to) {
		end = end.Add(time.Hour)
	}
	return Window{HourStart(from, loc).UTC(), end.UTC()}
}

// Check compares every hourly point of the hours in w (HourSpan) with the
// Rollup of its probes, for the sites given (nil: all).
func Check(ctx context.Context, st Store, loc *time.Location, w Window, sites []string) ([]Mismatch, error) {
	var probes []Probe
	byKey := map[Key]Hourly{}
	var stored []Hourly
	err := st.Read(ctx, Query{Windows: []Window{HourSpan(w.From, w.To, loc)}, Sites: sites}, Reader{
		Probe:  func(p Probe) error { probes = append(probes, p); return nil },
		Hourly: func(h Hourly) error { stored = append(stored, h); byKey[KeyOf(&h)] = h; return nil },
	})
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	var out []Mismatch
	for _, h := range Rollup(probes, loc) {
		k := KeyOf(&h)
		got, ok := byKey[k]
		delete(byKey, k)
		switch {
		case !ok:
			out = append(out, Mismatch{Problem: ProblemMissing, Want: h})
		case !SameHourly(got, h):
			out = append(out, Mismatch{Problem: ProblemDiffers, Want: h, Stored: got})
		}
	}
	for _, h := range stored {
		if _, left := byKey[KeyOf(&h)]; left {
			out = append(out, Mismatch{Problem: ProblemOrphan, Stored: h})
		}
	}
	slices.SortStableFunc(out, func(a, b Mismatch) int {
		x, y := a.point(), b.point()
		return compareLaneHour(LaneHour{x.Lane, x.Site, x.Hour}, LaneHour{y.Lane, y.Site, y.Hour})
	})
	return out, nil
}

// RebuildWindow rebuilds every lane-hour with probes in w (HourSpan), for
// the sites given (nil: all), and returns how many points it wrote.
func RebuildWindow(ctx context.Context, st Store, loc *time.Location, w Window, sites []string) (int, error) {
	probes, err := ReadProbes(ctx, st, Query{Windows: []Window{HourSpan(w.From, w.To, loc)}, Sites: sites})
	if err != nil {
		return 0, fmt.Errorf("rebuild: %w", err)
	}
	n, err := writeHourly(ctx, st, Rollup(probes, loc))
	if err != nil {
		return n, fmt.Errorf("rebuild: %w", err)
	}
	return n, nil
}

// SameHourly reports whether a and b are the same point with the same values.
func SameHourly(a, b Hourly) bool {
	ah, bh := a.Hour, b.Hour
	a.Hour, b.Hour = time.Time{}, time.Time{}
	return ah.Equal(bh) && a == b
}
