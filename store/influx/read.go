package influx

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

// How a read cuts its windows: one of two days or more into at most pieces
// requests of a day or more, parallel at a time; shorter ones share
// parallel requests.
const (
	pieces   = 4
	minPiece = int64(24 * time.Hour)
	parallel = 2
	// maxPushedLanes is the most lanes a statement names; more are picked here.
	maxPushedLanes = 32
)

// statement is one InfluxQL SELECT of a read and what takes its rows.
type statement struct {
	text string
	span int64
	// rows makes the reader of one series; it sends batches to out.
	rows func(cols []string, out func(func() error) error) (func([]store.Value) error, func() error)
}

// Read hands over the points q selects: a statement per measurement and
// window piece, selecting the fields q names (and a marker field) and the
// tags. InfluxDB answers in time order; each time's points are sorted here.
func (s *Store) Read(ctx context.Context, q store.Query, r store.Reader) error {
	if err := store.CheckFields(q.Fields); err != nil {
		return fmt.Errorf("%s: read: %w", s.where, err)
	}
	f := q.Filter()
	if r.Local || f.Empty() {
		return nil
	}
	if s.closed.Load() {
		return fmt.Errorf("%s: read: %w", s.where, os.ErrClosed)
	}
	r, newest := store.NewestOf(f, r)
	stmts := appendStatements(nil, q, f, r.Hourly)
	stmts = appendStatements(stmts, q, f, r.Probe)
	stmts = appendStatements(stmts, q, f, r.Heartbeat)
	// A statement of a day or more is a request; a run of shorter ones is
	// parallel requests.
	var reqs [][]statement
	for i := 0; i < len(stmts); {
		j := i + 1
		for j < len(stmts) && stmts[i].span < minPiece && stmts[j].span < minPiece {
			j++
		}
		for n := (j - i + parallel - 1) / parallel; i < j; i += n {
			reqs = append(reqs, stmts[i:min(i+n, j)])
		}
	}
	if err := s.run(ctx, reqs); err != nil {
		return err
	}
	return newest()
}

// run runs the requests, parallel at a time, and hands over their points
// in order. A callback's error comes back as it is.
func (s *Store) run(ctx context.Context, reqs [][]statement) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	// The first failure cancels the others and is what the read returns.
	var first error
	var once sync.Once
	fail := func(err error) error {
		once.Do(func() { first = err; cancel() })
		return err
	}
	type result struct {
		batches chan func() error
		err     error
	}
	res := make([]*result, len(reqs))
	for i := range res {
		res[i] = &result{batches: make(chan func() error, 64)}
	}
	sem := make(chan struct{}, parallel)
	wg.Go(func() {
		for i, req := range reqs {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				for _, r := range res[i:] {
					r.err = fail(ctx.Err())
					close(r.batches)
				}
				return
			}
			wg.Go(func() {
				defer func() { <-sem }()
				err := s.request(ctx, req, func(b func() error) error {
					select {
					case res[i].batches <- b:
						return nil
					case <-ctx.Done():
						return ctx.Err()
					}
				})
				if err != nil {
					res[i].err = fail(err)
				}
				close(res[i].batches)
			})
		}
	})
	for _, r := range res {
		for b := range r.batches {
			if err := b(); err != nil {
				return err
			}
		}
		if r.err != nil {
			return fmt.Errorf("%s: read: %w", s.where, s.classify(first))
		}
	}
	return nil
}

// request runs one request's statements and hands their points to out.
func (s *Store) request(ctx context.Context, req []statement, out func(func() error) error) error {
	texts := make([]string, len(req))
	for i, st := range req {
		texts[i] = st.text
	}
	cur := -1
	var row func([]store.Value) error
	var end func() error
	err := s.query(ctx, texts, func(stmt int, cols []string) (func([]store.Value) error, error) {
		if stmt == cur { // a chunk of the series read so far
			return row, nil
		}
		if end != nil {
			if err := end(); err != nil {
				return nil, err
			}
		}
		cur = stmt
		row, end = req[stmt].rows(cols, out)
		return row, nil
	})
	if err == nil && end != nil {
		err = end()
	}
	return err
}

// appendStatements adds the statements of T's measurement, when emit is
// set, to stmts.
func appendStatements[T store.Point](stmts []statement, q store.Query, f *store.Filter, emit func(T) error) []statement {
	if emit == nil {
		return stmts
	}
	var zero T
	sch := store.SchemaOf(&zero)
	var fields []string
	always := "" // a field each point has but a marker alone
	for _, fd := range sch.Fields {
		named := slices.Contains(q.Fields, fd.Key)
		if named {
			fields = append(fields, fd.Key)
		}
		if !fd.Optional && (always == "" || named) {
			always = fd.Key
		}
	}
	if fields == nil { // none named: every field
		for _, fd := range sch.Fields {
			fields = append(fields, fd.Key)
		}
	} else {
		// InfluxDB leaves out a row whose fields are all absent: such a
		// field and the marker keep each point's row.
		for _, k := range []string{always, sch.Marker} {
			if k != "" && !slices.Contains(fields, k) {
				fields = append(fields, k)
			}
		}
	}
	var b strings.Builder
	for _, fd := range fields {
		b.WriteString(ident(fd) + ", ")
	}
	cols := b.String() + ident(sch.Tags[0]) + ", " + ident(sch.Tags[1]) + ", " + ident(store.TagSite)
	where := ""
	in := func(tag string, vals []string) {
		var or []string
		for _, v := range slices.Sorted(slices.Values(vals)) {
			or = append(or, ident(tag)+" = "+quote(v)) // '' matches points without the tag
		}
		where += " AND (" + strings.Join(or, " OR ") + ")"
	}
	if q.Sites != nil {
		in(store.TagSite, q.Sites)
	}
	if q.Lanes != nil && len(q.Lanes) <= maxPushedLanes && store.KindFor[T]() != store.KindHeartbeat {
		in(store.TagLane, q.Lanes)
	}
	rows := func(cols []string, out func(func() error) error) (func([]store.Value) error, func() error) {
		return newReader(f, emit, cols, out)
	}
	if f.Newest { // a window each, its series' newest rows from the server
		for _, sp := range f.Spans {
			stmts = append(stmts, statement{span: sp[1] - sp[0], rows: func(cols []string, out func(func() error) error) (func([]store.Value) error, func() error) {
				return newestRows(f, emit, cols, out)
			}, text: fmt.Sprintf("SELECT %s FROM %s WHERE time >= %d AND time < %d%s GROUP BY %s, %s, %s ORDER BY time DESC LIMIT 1",
				cols, ident(sch.Measurement), sp[0], sp[1], where, ident(sch.Tags[0]), ident(sch.Tags[1]), ident(store.TagSite))})
		}
		return stmts
	}
	for _, sp := range f.Spans {
		for _, p := range split(sp) {
			stmts = append(stmts, statement{span: p[1] - p[0], rows: rows,
				text: fmt.Sprintf("SELECT %s FROM %s WHERE time >= %d AND time < %d%s", cols, ident(sch.Measurement), p[0], p[1], where)})
		}
	}
	return stmts
}

// split cuts a span of two days or more into at most pieces parts of a day
// or more, on whole hours from its start.
func split(sp [2]int64) [][2]int64 {
	n := (sp[1] - sp[0]) / minPiece
	if n < 2 { // short, or too long to subtract (the stores' whole range): one piece
		return [][2]int64{sp}
	}
	n = min(n, pieces)
	step := (sp[1] - sp[0]) / n
	step -= step % int64(time.Hour)
	out := make([][2]int64, n)
	for i := range out {
		out[i] = [2]int64{sp[0] + int64(i)*step, sp[0] + int64(i+1)*step}
	}
	out[n-1][1] = sp[1]
	return out
}

// ident quotes an InfluxQL identifier.
func ident(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// quote quotes an InfluxQL string literal.
func quote(s string) string {
	return `'` + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + `'`
}

// newestRows reads the rows of a Newest statement, a row per series
// newest first, and hands on their points (to store.NewestOf's Reader,
// which orders them) at its end.
func newestRows[T store.Point](f *store.Filter, emit func(T) error, cols []string, out func(func() error) error) (func([]store.Value) error, func() error) {
	c, names := store.NewColumns[T](cols), store.Names{}
	var pts []T
	row := func(vals []store.Value) error {
		var p T
		if vals != nil {
			if c.Decode(names, vals, &p); store.Selects(f, &p) {
				pts = append(pts, p)
			}
		}
		return nil
	}
	return row, func() error {
		return out(func() error {
			for _, p := range pts {
				if err := emit(p); err != nil {
					return err
				}
			}
			return nil
		})
	}
}

// batchSize is how many points a reader hands on at once.
const batchSize = 4096

// reader decodes the rows of one series of T's answer into points, sorts
// each time's by series, keeps the last of each key, and hands them on in
// batches.
type reader[T store.Point] struct {
	f     *store.Filter
	emit  func(T) error
	out   func(func() error) error
	cols  *store.Columns[T]
	run   []T
	p     T   // the row being read: here, not on the heap each row
	done  []T // sorted runs not handed on yet
	ns    int64
	names store.Names
	free  chan []T // batches handed on and read, to fill again
	// flush's: the run's series and order, the ranks of the series.
	keys   []store.Key
	order  []uint64 // rank << 32 | index in the run
	ranks  map[store.Key]int
	series []store.Key
}

func newReader[T store.Point](f *store.Filter, emit func(T) error, cols []string, out func(func() error) error) (func([]store.Value) error, func() error) {
	rd := &reader[T]{f: f, emit: emit, out: out, cols: store.NewColumns[T](cols), ns: math.MinInt64, names: store.Names{}, ranks: map[store.Key]int{},
		free: make(chan []T, 2)}
	return rd.row, rd.end
}

func (rd *reader[T]) row(vals []store.Value) error {
	if vals == nil { // a chunk's end: hand on what is sorted, so that a reader gets it while the rest comes
		if len(rd.done) == 0 {
			return nil
		}
		return rd.hand()
	}
	p := &rd.p
	rd.cols.Decode(rd.names, vals, p)
	if !store.Selects(rd.f, p) {
		return nil
	}
	ns := store.KeyOf(p).NS
	switch {
	case ns < rd.ns:
		return errors.New("influxql answer not in time order")
	case ns > rd.ns && len(rd.run) > 0:
		if err := rd.flush(); err != nil {
			return err
		}
	}
	rd.ns = ns
	rd.run = append(rd.run, *p)
	return nil
}

// flush sorts the run by series (by their ranks, re-ranked when a long run
// brings new series; else by name), keeps the last point of each key, and
// hands on a batch of runs once there are enough.
func (rd *reader[T]) flush() error {
	run := rd.run
	rd.keys, rd.order = rd.keys[:0], rd.order[:0]
	known := true
	for i := range run {
		k := store.KeyOf(&run[i])
		k.NS = 0
		rd.keys = append(rd.keys, k)
		r, ok := rd.ranks[k]
		known = known && ok
		rd.order = append(rd.order, uint64(r)<<32|uint64(i))
	}
	if !known && 2*len(run) >= len(rd.ranks) {
		for _, k := range rd.keys {
			if _, ok := rd.ranks[k]; !ok {
				rd.series = append(rd.series, k)
				rd.ranks[k] = 0
			}
		}
		slices.SortFunc(rd.series, store.Compare)
		for r, k := range rd.series {
			rd.ranks[k] = r
		}
		for i, k := range rd.keys {
			rd.order[i] = uint64(rd.ranks[k])<<32 | uint64(i)
		}
		known = true
	}
	if known {
		slices.Sort(rd.order)
	} else {
		slices.SortFunc(rd.order, func(a, b uint64) int {
			return cmp.Or(store.Compare(rd.keys[a&(1<<32-1)], rd.keys[b&(1<<32-1)]), cmp.Compare(a&(1<<32-1), b&(1<<32-1)))
		})
	}
	if rd.done == nil { // a batch's whole size at once: hand gives its array away, and the reader back
		select {
		case b := <-rd.free:
			rd.done = b
		default:
			rd.done = make([]T, 0, max(batchSize, len(run)))
		}
	}
	for j, o := range rd.order {
		i := o & (1<<32 - 1)
		if j+1 < len(rd.order) {
			n := rd.order[j+1] & (1<<32 - 1)
			if known && rd.order[j+1]>>32 == o>>32 || !known && rd.keys[n] == rd.keys[i] { // the later row of the key follows
				if !store.Replaces(&run[i], &run[n]) {
					run[n] = run[i]
				}
				continue
			}
		}
		rd.done = append(rd.done, run[i])
	}
	rd.run = run[:0]
	if len(rd.done) < batchSize {
		return nil
	}
	return rd.hand()
}

func (rd *reader[T]) hand() error {
	batch := rd.done
	rd.done = nil
	return rd.out(func() error {
		for _, p := range batch {
			if err := rd.emit(p); err != nil {
				return err
			}
		}
		select { // emit took copies: the array can be filled again
		case rd.free <- batch[:0]:
		default:
		}
		return nil
	})
}

// end hands on what is left.
func (rd *reader[T]) end() error {
	if len(rd.run) > 0 {
		if err := rd.flush(); err != nil {
			return err
		}
	}
	return rd.hand()
}
