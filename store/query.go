package store

import (
	"cmp"
	"slices"
	"time"
)

// matcher is a Query prepared for testing many points: its windows as
// sorted, merged nanosecond spans, its sites and lanes as sets.
type matcher struct {
	spans [][2]int64 // [from, to) in Unix ns, sorted, disjoint
	sites map[string]bool
	lanes map[string]bool
}

func (q Query) matcher() *matcher {
	m := &matcher{}
	for _, w := range q.Windows {
		from, to := clampNano(w.From), clampNano(w.To)
		if from < to {
			m.spans = append(m.spans, [2]int64{from, to})
		}
	}
	slices.SortFunc(m.spans, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	merged := m.spans[:0]
	for _, s := range m.spans {
		if n := len(merged); n > 0 && s[0] <= merged[n-1][1] {
			merged[n-1][1] = max(merged[n-1][1], s[1])
			continue
		}
		merged = append(merged, s)
	}
	m.spans = merged
	if q.Sites != nil {
		m.sites = make(map[string]bool, len(q.Sites))
		for _, s := range q.Sites {
			m.sites[s] = true
		}
	}
	if q.Lanes != nil {
		m.lanes = make(map[string]bool, len(q.Lanes))
		for _, l := range q.Lanes {
			m.lanes[l] = true
		}
	}
	return m
}

// empty reports whether the query can select nothing.
func (m *matcher) empty() bool {
	return len(m.spans) == 0 || (m.sites != nil && len(m.sites) == 0) || (m.lanes != nil && len(m.lanes) == 0)
}

// timeOK reports whether ns lies in one of the windows.
func (m *matcher) timeOK(ns int64) bool {
	i, _ := slices.BinarySearchFunc(m.spans, ns, func(s [2]int64, t int64) int {
		if s[1] <= t {
			return -1
		}
		if s[0] > t {
			return 1
		}
		return 0
	})
	return i < len(m.spans) && m.spans[i][0] <= ns && ns < m.spans[i][1]
}

// seriesOK reports whether the lane and site are selected.
func (m *matcher) seriesOK(lane, site string) bool {
	return (m.sites == nil || m.sites[site]) && (m.lanes == nil || m.lanes[lane])
}

// maxPushedLanes is the most lanes a query names in its filter (Flux or
// InfluxQL); for more, a predicate of hundreds of comparisons costs
// InfluxDB more than reading every lane of the span, and the lanes are
// picked in Go.
const maxPushedLanes = 32

// pointKey identifies a point: same key, same point (the later write wins).
type pointKey struct {
	lane, kind, site string
	ns               int64
}

func probeKey(p *Probe) pointKey   { return pointKey{p.Lane, p.Kind, p.Site, p.Time.UnixNano()} }
func hourlyKey(h *Hourly) pointKey { return pointKey{h.Lane, h.Kind, h.Site, h.Hour.UnixNano()} }

// latest keeps the last point put per key, as a store keeps the last write
// of a series and time, and hands them back sorted by time, lane, kind and
// site; of probes, a reservation never replaces another point
// (settledWins), as InfluxDB merges a booking into the probe it follows.
type latest[T any] struct {
	key     func(*T) pointKey
	replace func(old, fresh *T) bool // nil: always
	idx     map[pointKey]int
	out     []T
}

func newLatest[T any](key func(*T) pointKey) *latest[T] {
	replace, _ := any(settledWins).(func(old, fresh *T) bool) // for probes
	return &latest[T]{key: key, replace: replace, idx: map[pointKey]int{}, out: []T{}}
}

// settledWins keeps a probe point against a reservation of the same key
// put after it: a reservation is written before anything else of its key
// (its probe, or its release), so one that comes later is a booking the
// store applied late, a spool replayed, or the dead letter kept while the
// store took the probe. InfluxDB keeps the probe's fields then (a
// reservation is the marker field alone); every merge does the same.
func settledWins(old, fresh *Probe) bool {
	return fresh.Outcome != OutcomeReserved || old.Outcome == OutcomeReserved
}

// put adds p, replacing the point with the same key.
func (l *latest[T]) put(p T) { l.putIn(p, nil) }

// putIn is put for a point that m selects; others are dropped (m nil:
// every point). p is appended before its key is taken so that it does not
// escape to the heap through the key function: one allocation per point
// otherwise.
func (l *latest[T]) putIn(p T, m *matcher) {
	l.out = append(l.out, p)
	last := len(l.out) - 1
	k := l.key(&l.out[last])
	switch i, ok := l.idx[k]; {
	case m != nil && (!m.timeOK(k.ns) || !m.seriesOK(k.lane, k.site)):
		l.out = l.out[:last]
	case ok:
		if l.replace == nil || l.replace(&l.out[i], &l.out[last]) {
			l.out[i] = l.out[last]
		}
		l.out = l.out[:last]
	default:
		l.idx[k] = last
	}
}

// sorted returns the points by time, lane, kind and site. It sorts the keys
// (the map already holds them) rather than the points, whose addresses taken
// in a comparator would cost an allocation per comparison.
func (l *latest[T]) sorted() []T {
	type entry struct {
		k pointKey
		i int
	}
	order := make([]entry, 0, len(l.idx))
	for k, i := range l.idx {
		order = append(order, entry{k, i})
	}
	slices.SortFunc(order, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.k.ns, b.k.ns), cmp.Compare(a.k.lane, b.k.lane),
			cmp.Compare(a.k.kind, b.k.kind), cmp.Compare(a.k.site, b.k.site))
	})
	out := make([]T, len(order))
	for j, e := range order {
		out[j] = l.out[e.i]
	}
	return out
}

// clampNano converts t to Unix nanoseconds, saturating outside the range
// the stores keep.
func clampNano(t time.Time) int64 {
	switch {
	case t.Before(minTime):
		return minTime.UnixNano()
	case t.After(maxTime):
		return maxTime.UnixNano() + 1
	}
	return t.UnixNano()
}
