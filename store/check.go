package store

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Problem is what is wrong with one stored hourly point.
type Problem string

// The problems Check finds.
const (
	ProblemMissing Problem = "missing" // probes, but no hourly point of that kind
	ProblemDiffers Problem = "differs" // the stored point is not the aggregate of its probes
	ProblemOrphan  Problem = "orphan"  // an hourly point without a probe in its lane-hour
)

// Mismatch is one hourly point that breaks the invariant. Want is the
// aggregate of the probes (zero for an orphan); Stored the point in the
// store (zero when missing).
type Mismatch struct {
	Problem Problem
	Want    Hourly
	Stored  Hourly
}

func (m Mismatch) String() string {
	h := m.Want
	if m.Problem == ProblemOrphan {
		h = m.Stored
	}
	site := ""
	if h.Site != "" {
		site = " site " + h.Site
	}
	switch m.Problem {
	case ProblemDiffers:
		return fmt.Sprintf("%s lane %s kind %s%s: stored samples=%d failures=%d worst=%g censored=%g, probes say samples=%d failures=%d worst=%g censored=%g",
			h.Hour.UTC().Format(time.RFC3339), h.Lane, h.Kind, site,
			m.Stored.Samples, m.Stored.Failures, m.Stored.WorstQueueS, m.Stored.WorstCensoredS,
			m.Want.Samples, m.Want.Failures, m.Want.WorstQueueS, m.Want.WorstCensoredS)
	case ProblemMissing:
		return fmt.Sprintf("%s lane %s kind %s%s: no hourly point for %d probes", h.Hour.UTC().Format(time.RFC3339), h.Lane, h.Kind, site, h.Samples)
	}
	return fmt.Sprintf("%s lane %s kind %s%s: hourly point without probes (samples=%d)", h.Hour.UTC().Format(time.RFC3339), h.Lane, h.Kind, site, h.Samples)
}

// HourSpan widens [from, to) to whole hours of loc, so that every lane-hour
// it touches is read whole.
func HourSpan(from, to time.Time, loc *time.Location) Window {
	end := HourStart(to, loc)
	if end.Before(to) {
		end = end.Add(time.Hour)
	}
	return Window{HourStart(from, loc).UTC(), end.UTC()}
}

// Check compares every hourly point of the hours in w (widened to whole
// hours of loc) with the Rollup of the probes of its lane-hour, for the
// sites q selects. It reads, never writes.
func Check(ctx context.Context, st Store, loc *time.Location, w Window, sites []string) ([]Mismatch, error) {
	span := HourSpan(w.From, w.To, loc)
	q := Query{Windows: []Window{span}, Sites: sites}
	probes, err := st.Probes(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	stored, err := st.Hourly(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	want := Rollup(probes, loc)
	byKey := make(map[pointKey]Hourly, len(stored))
	for _, h := range stored {
		byKey[hourlyKey(&h)] = h
	}
	var out []Mismatch
	for _, h := range want {
		k := hourlyKey(&h)
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
		if _, left := byKey[hourlyKey(&h)]; left {
			out = append(out, Mismatch{Problem: ProblemOrphan, Stored: h})
		}
	}
	slices.SortStableFunc(out, func(a, b Mismatch) int {
		x, y := a.Want, b.Want
		if a.Problem == ProblemOrphan {
			x = a.Stored
		}
		if b.Problem == ProblemOrphan {
			y = b.Stored
		}
		return compareLaneHour(LaneHour{x.Lane, x.Site, x.Hour}, LaneHour{y.Lane, y.Site, y.Hour})
	})
	return out, nil
}

// RebuildWindow rebuilds every lane-hour that has probes in w (widened to
// whole hours of loc), for the sites given (nil: all). It is idempotent: run
// twice, it writes the same points. It returns how many hourly points it
// wrote.
func RebuildWindow(ctx context.Context, st Store, loc *time.Location, w Window, sites []string) (int, error) {
	span := HourSpan(w.From, w.To, loc)
	probes, err := st.Probes(ctx, Query{Windows: []Window{span}, Sites: sites})
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
