package store

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"time"
)

// Filter is a Query prepared to test many points.
type Filter struct {
	Spans        [][2]int64 // [from, to), sorted, disjoint
	Newest       bool       // Query.Newest: of each series, the newest point of each span
	sites, lanes map[string]bool
}

// Filter prepares q.
func (q Query) Filter() *Filter {
	f := &Filter{Newest: q.Newest, sites: set(q.Sites), lanes: set(q.Lanes)}
	for _, w := range q.Windows {
		if from, to := clampNano(w.From), clampNano(w.To); from < to {
			f.Spans = append(f.Spans, [2]int64{from, to})
		}
	}
	slices.SortFunc(f.Spans, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	merged := f.Spans[:0]
	for _, s := range f.Spans {
		if n := len(merged); n > 0 && (s[0] < merged[n-1][1] || s[0] == merged[n-1][1] && !f.Newest) {
			merged[n-1][1] = max(merged[n-1][1], s[1])
			continue
		}
		merged = append(merged, s)
	}
	f.Spans = merged
	return f
}

func set(keys []string) map[string]bool {
	if keys == nil {
		return nil
	}
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// Empty reports whether the query can select nothing.
func (f *Filter) Empty() bool {
	return len(f.Spans) == 0 || (f.sites != nil && len(f.sites) == 0) || (f.lanes != nil && len(f.lanes) == 0)
}

// Time reports whether ns lies in one of the windows.
func (f *Filter) Time(ns int64) bool { return f.Overlaps(ns, ns) }

// Overlaps reports whether a window holds a time in [lo, hi].
func (f *Filter) Overlaps(lo, hi int64) bool {
	i := f.after(lo)
	return i < len(f.Spans) && f.Spans[i][0] <= hi
}

// after returns the index of the first span that ends after ns.
func (f *Filter) after(ns int64) int {
	i, _ := slices.BinarySearchFunc(f.Spans, ns, func(s [2]int64, t int64) int {
		if s[1] <= t {
			return -1
		}
		return 1
	})
	return i
}

// Selects reports whether the query selects p.
func Selects[T Point](f *Filter, p *T) bool {
	k := KeyOf(p)
	return f.Time(k.NS) && (f.sites == nil || f.sites[k.Site]) &&
		(f.lanes == nil || KindFor[T]() == KindHeartbeat || f.lanes[k.A])
}

// Compare orders keys by time, then series.
func Compare(a, b Key) int {
	if a.NS != b.NS {
		return cmp.Compare(a.NS, b.NS)
	}
	return cmp.Or(strings.Compare(a.A, b.A), strings.Compare(a.B, b.B), strings.Compare(a.Site, b.Site))
}

// Replaces reports whether fresh, written after old with the same key,
// replaces it: always, but that a reservation never replaces a probe
// (docs/schema.md#reservations).
func Replaces[T Point](old, fresh *T) bool {
	o, ok := any(old).(*Probe)
	if !ok {
		return true
	}
	return any(fresh).(*Probe).Outcome != OutcomeReserved || o.Outcome == OutcomeReserved
}

// Latest keeps the last point put per key (Replaces), in Read's order.
type Latest[T Point] struct {
	idx map[Key]int
	pts []T
}

// Put adds p, replacing the point of its key.
func (l *Latest[T]) Put(p T) {
	if l.idx == nil {
		l.idx = map[Key]int{}
	}
	l.pts = append(l.pts, p)
	last := len(l.pts) - 1
	k := KeyOf(&l.pts[last]) // of the copy in place: p does not move to the heap
	if i, ok := l.idx[k]; ok {
		if Replaces(&l.pts[i], &l.pts[last]) {
			l.pts[i] = l.pts[last]
		}
		l.pts = l.pts[:last]
		return
	}
	l.idx[k] = last
}

// Sorted returns the points by time, then series.
func (l *Latest[T]) Sorted() []T {
	keys := slices.SortedFunc(maps.Keys(l.idx), Compare)
	out := make([]T, len(keys))
	for j, k := range keys {
		out[j] = l.pts[l.idx[k]]
	}
	return out
}

// NewestOf returns, for a Query.Newest read, a Reader that keeps of each
// series the newest point r would be handed in each of f's spans, and the
// func that then hands them to r: hourly points, probes, heartbeats, each
// in time order. Without Query.Newest it returns r and a no-op.
func NewestOf(f *Filter, r Reader) (Reader, func() error) {
	if !f.Newest {
		return r, func() error { return nil }
	}
	h, p, b := newest[Hourly]{f: f}, newest[Probe]{f: f}, newest[Heartbeat]{f: f}
	nr := Reader{Local: r.Local}
	if r.Hourly != nil {
		nr.Hourly = h.put
	}
	if r.Probe != nil {
		nr.Probe = p.put
	}
	if r.Heartbeat != nil {
		nr.Heartbeat = b.put
	}
	return nr, func() error {
		err := h.hand(r.Hourly)
		if err == nil {
			err = p.hand(r.Probe)
		}
		if err == nil {
			err = b.hand(r.Heartbeat)
		}
		return err
	}
}

// newest keeps, of each series, the newest point put of each of f's
// spans; of two of one key, the later put is the later write (Replaces).
type newest[T Point] struct {
	f   *Filter
	idx map[Key]int // the series, NS its span
	pts []T
}

func (n *newest[T]) put(p T) error {
	if n.idx == nil {
		n.idx = map[Key]int{}
	}
	k := KeyOf(&p)
	ns := k.NS
	k.NS = int64(n.f.after(ns))
	i, ok := n.idx[k]
	if !ok {
		n.idx[k] = len(n.pts)
		n.pts = append(n.pts, p)
	} else if old := KeyOf(&n.pts[i]).NS; ns > old || ns == old && Replaces(&n.pts[i], &p) {
		n.pts[i] = p
	}
	return nil
}

// hand hands the points to emit by time, then series, once.
func (n *newest[T]) hand(emit func(T) error) error {
	slices.SortFunc(n.pts, func(a, b T) int { return Compare(KeyOf(&a), KeyOf(&b)) })
	for _, p := range n.pts {
		if err := emit(p); err != nil {
			return err
		}
	}
	return nil
}

// clampNano is t in Unix nanoseconds, saturated to the stores' range.
func clampNano(t time.Time) int64 {
	switch {
	case t.Before(minTime):
		return minTime.UnixNano()
	case t.After(maxTime):
		return maxTime.UnixNano() + 1
	}
	return t.UnixNano()
}
