package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// HourlyStreamer is a Store that can hand over its hourly points an hour at
// a time while it reads them, without holding the whole answer (a month of
// 1,000 lanes at 3 sites: 2.16 M points).
type HourlyStreamer interface {
	// HourlyEach calls fn with the hourly points q selects, one time at a
	// time in time order, each time's points sorted by lane, kind and site
	// and unique: Hourly's answer, cut into runs. fn must not keep the
	// slice. An error of fn stops the read and is returned as it is.
	HourlyEach(ctx context.Context, q Query, fn func(hour []Hourly) error) error
}

// EachHourly calls fn with the hourly points of st that q selects, one
// time at a time, as HourlyStreamer.HourlyEach does: through st's own
// streaming read when it has one, otherwise from Hourly's answer.
func EachHourly(ctx context.Context, st Store, q Query, fn func(hour []Hourly) error) error {
	if s, ok := st.(HourlyStreamer); ok {
		return s.HourlyEach(ctx, q, fn)
	}
	hs, err := st.Hourly(ctx, q)
	if err != nil {
		return err
	}
	return eachRun(hs, hourlyKey, fn)
}

// eachRun calls fn with each run of points of one time of pts, in order.
func eachRun[T any](pts []T, key func(*T) pointKey, fn func([]T) error) error {
	for i := 0; i < len(pts); {
		ns := key(&pts[i]).ns
		j := i + 1
		for j < len(pts) && key(&pts[j]).ns == ns {
			j++
		}
		if err := fn(pts[i:j:j]); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// HourlyEach hands fn the hourly points q selects an hour at a time
// (HourlyStreamer). Over InfluxQL the pieces of the read are handed over
// as they decode: the first piece's hours at once, a later piece's once
// the pieces before it are done (kept until then), so at most about a
// piece's points are held, not the whole answer. A Flux read is read
// whole first.
func (s *Influx) HourlyEach(ctx context.Context, q Query, fn func(hour []Hourly) error) error {
	if !s.influxQL {
		hs, err := s.Hourly(ctx, q)
		if err != nil {
			return err
		}
		return eachRun(hs, hourlyKey, fn)
	}
	return qlEach(ctx, s, "hourly", &hourlySchema, q, hourlyKey, hourlyOf, fn)
}

var _ HourlyStreamer = (*Influx)(nil)

// ErrNotInTimeOrder is the error of a streamed InfluxQL read whose answer
// goes back in time, which InfluxDB's raw selects never do: a streamed
// read cannot sort it once the hours before were handed over. A whole
// read (Hourly) sorts it; a caller that can start again reads that.
var ErrNotInTimeOrder = errors.New("influxql answer not in time order")

// qlEach reads one measurement's points that q selects through InfluxQL,
// in the pieces readPoints reads, and hands emit each time's points, sorted
// by series and unique, in time order. An error of emit is returned as it
// is; the store's are wrapped as readPoints wraps them.
func qlEach[T any](ctx context.Context, s *Influx, what string, sch *schema[T], q Query,
	key func(*T) pointKey, fromRow func(row) T, emit func([]T) error) error {
	m := q.matcher()
	fields, err := selectFields(sch, q.Fields)
	if err != nil {
		return fmt.Errorf("%s: read %s: %w", s.where, what, err)
	}
	if m.empty() {
		return nil
	}
	if err := s.checkOpen(); err != nil {
		return fmt.Errorf("%s: read %s: %w", s.where, what, err)
	}
	parts := splitSpans(m.spans, qlPieces, qlMinPiece)
	queues := make([]*runQueue[T], len(parts))
	for i := range queues {
		queues[i] = newRunQueue[T]()
	}
	ctx, cancel := context.WithCancel(ctx)
	read := make(chan error, 1)
	go func() {
		read <- runPieces(ctx, len(parts), qlParallel, func(ctx context.Context, i int) error {
			err := qlStreamSpan(ctx, s, sch, fields, parts[i], m, key, fromRow, queues[i].push)
			queues[i].finish(err)
			return err
		})
	}()
	stop := func() error { // cancel the pieces still running and wait for them
		cancel()
		return <-read
	}
	defer cancel()
	for _, rq := range queues {
		for {
			runs, done, err := rq.take()
			for _, r := range runs {
				if err := emit(r); err != nil {
					_ = stop()
					return err
				}
			}
			if err != nil { // the first failure is runPieces': the others are its cancellation
				return fmt.Errorf("%s: read %s: %w", s.where, what, s.classify(stop()))
			}
			if done {
				break
			}
		}
	}
	if err := <-read; err != nil { // every piece is done: nothing to cancel
		return fmt.Errorf("%s: read %s: %w", s.where, what, s.classify(err))
	}
	return nil
}

// runPieces calls read for pieces 0 to n-1, parallel of them at a time,
// starting them in order. The first failure cancels the context of the
// others and is returned.
func runPieces(ctx context.Context, n, parallel int, read func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var first error
	var once sync.Once
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(parallel, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				// A piece after a failure still runs, on the canceled
				// context, so that it finishes (its queue is waited on);
				// its error is that cancellation, and the first one wins.
				if err := read(ctx, i); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// runQueue holds the runs of one piece of a streamed read until the
// consumer takes them.
type runQueue[T any] struct {
	mu   sync.Mutex
	cond *sync.Cond
	runs [][]T
	done bool
	err  error
}

func newRunQueue[T any]() *runQueue[T] {
	q := &runQueue[T]{}
	q.cond = sync.NewCond(&q.mu)
	return q
}

func (q *runQueue[T]) push(run []T) {
	q.mu.Lock()
	q.runs = append(q.runs, run)
	q.mu.Unlock()
	q.cond.Signal()
}

func (q *runQueue[T]) finish(err error) {
	q.mu.Lock()
	q.done, q.err = true, err
	q.mu.Unlock()
	q.cond.Signal()
}

// take waits for runs or the end of the piece and returns the runs pushed
// since the last take, whether the piece is done, and its error.
func (q *runQueue[T]) take() ([][]T, bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.runs) == 0 && !q.done {
		q.cond.Wait()
	}
	runs := q.runs
	q.runs = nil
	return runs, q.done, q.err
}

// qlStreamSpan reads the points of one span through InfluxQL and pushes
// each time's points, sorted by series and unique, in time order, dropping
// those m does not select.
func qlStreamSpan[T any](ctx context.Context, s *Influx, sch *schema[T], fields []string, span [2]int64, m *matcher,
	key func(*T) pointKey, fromRow func(row) T, push func([]T)) error {
	sorter := newRunSorter(key)
	var cur []T
	var curNS int64
	var bad error
	keep := func(p T) {
		if bad != nil {
			return
		}
		cur = append(cur, p)
		last := len(cur) - 1
		k := key(&cur[last])
		if !m.timeOK(k.ns) || !m.seriesOK(k.lane, k.site) {
			cur = cur[:last]
			return
		}
		if last > 0 && k.ns != curNS {
			if k.ns < curNS {
				bad = ErrNotInTimeOrder
				return
			}
			next := make([]T, 1, max(64, cap(cur)))
			next[0] = cur[last]
			push(sorter.sort(cur[:last], nil))
			cur = next
		}
		curNS = k.ns
	}
	err := qlQuerySpan(ctx, s, sch, fields, span, m, fromRow, keep)
	if err = cmp.Or(err, bad); err != nil {
		return err
	}
	if len(cur) > 0 {
		push(sorter.sort(cur, nil))
	}
	return nil
}

// seriesOf is a point's series: its lane, kind and site.
type seriesOf struct{ lane, kind, site string }

// runSorter sorts the points of one time by lane, kind and site, keeping
// the last of points with the same key. Within a time, InfluxDB's order is
// its own (the series key's, or scrambled in a chunked MessagePack answer):
// the points are ordered by their series' rank, an integer, kept across
// the runs of a read, not by comparing strings.
type runSorter[T any] struct {
	key    func(*T) pointKey
	ids    map[seriesOf]uint32
	keys   []seriesOf
	rankOf []uint32 // by id: the rank of keys[id] among keys
	rank   []uint32 // scratch: the rank of each point of the run
	packed []uint64 // scratch: rank << 32 | position in the run
}

func newRunSorter[T any](key func(*T) pointKey) *runSorter[T] {
	return &runSorter[T]{key: key, ids: map[seriesOf]uint32{}}
}

// sort returns run sorted and unique: run itself when it already is,
// otherwise buf[:0] with the points appended (nil: a new slice).
func (s *runSorter[T]) sort(run, buf []T) []T {
	if len(run) < 2 {
		return run // a probe read's usual run: nothing to rank
	}
	s.rank = s.rank[:0]
	unranked := false
	for i := range run {
		k := s.key(&run[i])
		sk := seriesOf{k.lane, k.kind, k.site}
		id, ok := s.ids[sk]
		if !ok {
			id = uint32(len(s.keys))
			s.ids[sk] = id
			s.keys = append(s.keys, sk)
		}
		unranked = unranked || int(id) >= len(s.rankOf)
		s.rank = append(s.rank, id)
	}
	if unranked {
		// Ranking every series again costs about a sort of them all: done
		// when the run is as long, or the series have doubled since the
		// last ranking (a few times a read); otherwise the run is sorted by
		// its series' names.
		if n := len(s.keys); n > 2*len(run) && n < 2*len(s.rankOf) {
			return s.sortByName(run, buf)
		}
		s.rerank()
	}
	sorted := true
	for i, id := range s.rank {
		s.rank[i] = s.rankOf[id]
		sorted = sorted && (i == 0 || s.rank[i-1] < s.rank[i])
	}
	if sorted {
		return run
	}
	s.packed = s.packed[:0]
	for i, r := range s.rank {
		s.packed = append(s.packed, uint64(r)<<32|uint64(i))
	}
	slices.Sort(s.packed)
	return s.gather(run, buf)
}

// rerank works out the rank of every series known.
func (s *runSorter[T]) rerank() {
	byKey := make([]uint32, len(s.keys))
	for i := range byKey {
		byKey[i] = uint32(i)
	}
	slices.SortFunc(byKey, func(a, b uint32) int { return compareSeries(s.keys[a], s.keys[b]) })
	s.rankOf = slices.Grow(s.rankOf[:0], len(s.keys))[:len(s.keys)]
	for r, id := range byKey {
		s.rankOf[id] = uint32(r)
	}
}

// sortByName is sort for a run of s.rank's series ids, some not ranked:
// ordered by comparing the series' names.
func (s *runSorter[T]) sortByName(run, buf []T) []T {
	sorted := true
	for i := 1; i < len(s.rank) && sorted; i++ {
		sorted = compareSeries(s.keys[s.rank[i-1]], s.keys[s.rank[i]]) < 0
	}
	if sorted {
		return run
	}
	s.packed = s.packed[:0]
	for i, id := range s.rank {
		s.packed = append(s.packed, uint64(id)<<32|uint64(i))
	}
	slices.SortFunc(s.packed, func(a, b uint64) int {
		return cmp.Or(compareSeries(s.keys[a>>32], s.keys[b>>32]), cmp.Compare(a, b))
	})
	return s.gather(run, buf)
}

// gather returns buf[:0] (nil: a new slice) with the points of run in the
// order of s.packed (a series, rank or id, << 32 | position in the run),
// the last of each series kept.
func (s *runSorter[T]) gather(run, buf []T) []T {
	out := buf[:0]
	if out == nil {
		out = make([]T, 0, len(run))
	}
	for y, p := range s.packed {
		if y+1 < len(s.packed) && s.packed[y+1]>>32 == p>>32 {
			continue // a later row of the same key follows
		}
		out = append(out, run[p&(1<<32-1)])
	}
	return out
}

// compareSeries orders series by lane, kind and site.
func compareSeries(x, y seriesOf) int {
	return cmp.Or(cmp.Compare(x.lane, y.lane), cmp.Compare(x.kind, y.kind), cmp.Compare(x.site, y.site))
}
