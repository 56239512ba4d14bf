package store_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

// Tests for the survivors of the sixth round's mutation run of each.go and
// spoolread.go's HourlyEach (TESTING.md's history in git, "The streamed reads").

// qlRow is one row of a fake InfluxQL answer of queue_hourly.
type qlRow struct {
	ns               int64
	lane, kind, site string
	wq               float64 // unique per row: tells which copy of a key won
}

// randomAnswerServer answers InfluxQL reads of queue_hourly with the rows
// of rows whose time lies in the span asked for, in rows' order (by time;
// within a time, any order, keys repeated), ignoring the query's lane and
// site filters (the store drops what it did not ask for). It counts the
// queries it answered in queries.
func randomAnswerServer(t *testing.T, rows []qlRow, queries *atomic.Int64) *store.Influx {
	t.Helper()
	return hourlyServer(t, func(w http.ResponseWriter, r *http.Request, from, to int64) {
		queries.Add(1)
		var vals []string
		for _, p := range rows {
			if p.ns >= from && p.ns < to {
				vals = append(vals, fmt.Sprintf(`[%d,%g,%q,%q,%q]`, p.ns, p.wq, p.lane, p.kind, p.site))
			}
		}
		w.Header().Set("Content-Type", "application/json")
		if len(vals) == 0 {
			fmt.Fprint(w, `{"results":[{"statement_id":0}]}`)
			return
		}
		fmt.Fprintf(w, `{"results":[{"statement_id":0,"series":[{"name":"queue_hourly","columns":["time","worst_queue_s","lane","kind","site"],"values":[%s]}]}]}`, strings.Join(vals, ","))
	})
}

// wantOf is what a read of q returns of rows: the rows q selects, sorted
// by time, lane, kind and site, the last row of a key kept.
func wantOf(rows []qlRow, q store.Query) []qlRow {
	in := func(p qlRow) bool {
		if q.Lanes != nil && !slices.Contains(q.Lanes, p.lane) || q.Sites != nil && !slices.Contains(q.Sites, p.site) {
			return false
		}
		for _, w := range q.Windows {
			if p.ns >= w.From.UnixNano() && p.ns < w.To.UnixNano() {
				return true
			}
		}
		return false
	}
	byKey := func(a, b qlRow) int {
		return cmp.Or(cmp.Compare(a.ns, b.ns), cmp.Compare(a.lane, b.lane), cmp.Compare(a.kind, b.kind), cmp.Compare(a.site, b.site))
	}
	var out []qlRow
	for _, p := range rows {
		if in(p) {
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, byKey)
	var uniq []qlRow
	for i, p := range out {
		if i+1 < len(out) && byKey(p, out[i+1]) == 0 {
			continue // a later row of the key follows
		}
		uniq = append(uniq, p)
	}
	return uniq
}

func rowOf(h store.Hourly) qlRow {
	return qlRow{h.Hour.UnixNano(), h.Lane, h.Kind, h.Site, h.WorstQueueS}
}

// A streamed InfluxQL read hands over exactly what Hourly returns, and
// what the answer holds: for random answers (hours with no row, a row, or
// many in any order, keys repeated, series that keep coming) and random
// queries (one to three windows, so random piece boundaries; lanes and
// sites narrowed or not), each run one time's points, sorted and unique,
// the runs in time order, none empty.
func TestEachHourlyIsHourlyForRandomAnswers(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 29))
	first := hour0.Add(-10 * 24 * time.Hour)
	lanes := []string{"a", "b", "c", "d"}
	kinds := []string{"free", "paid"}
	sites := []string{"", "fra1", "iad1"}
	for n := range 60 {
		var rows []qlRow
		pool := 1 + rng.IntN(6)
		for h := range 10 * 24 {
			if rng.IntN(4) == 0 {
				continue // an hour with no row
			}
			pool = min(pool+rng.IntN(2)*rng.IntN(2), len(lanes)*len(kinds)*len(sites))
			ns := first.Add(time.Duration(h) * time.Hour).UnixNano()
			for range rng.IntN(2 * pool) {
				s := rng.IntN(pool)
				rows = append(rows, qlRow{ns, lanes[s%len(lanes)], kinds[s/len(lanes)%len(kinds)], sites[s/len(lanes)/len(kinds)], float64(len(rows))})
			}
		}
		// One to three disjoint windows, anywhere in the 10 days (and
		// past them), on whole hours or not.
		var bounds []time.Duration
		for range 2 * (1 + rng.IntN(3)) {
			bounds = append(bounds, time.Duration(rng.IntN(11*24*60))*time.Minute)
		}
		slices.Sort(bounds)
		var q store.Query
		for i := 0; i < len(bounds); i += 2 {
			if bounds[i] < bounds[i+1] {
				q.Windows = append(q.Windows, store.Window{From: first.Add(bounds[i]), To: first.Add(bounds[i+1])})
			}
		}
		if n%3 == 0 {
			q.Lanes = []string{"a", "c"}
		}
		if n%4 == 1 {
			q.Sites = []string{"", "iad1"}
		}
		var queries atomic.Int64
		st := randomAnswerServer(t, rows, &queries)
		hs, err := st.Hourly(ctx, q)
		if err != nil {
			t.Fatalf("case %d: Hourly: %v", n, err)
		}
		want := wantOf(rows, q)
		var wholeRows []qlRow
		for _, h := range hs {
			wholeRows = append(wholeRows, rowOf(h))
		}
		if !slices.Equal(wholeRows, want) {
			t.Fatalf("case %d: Hourly gave %d points; want the answer's %d, sorted and unique", n, len(hs), len(want))
		}
		queries.Store(0)
		runs, err := eachRuns(t, st, q)
		if err != nil {
			t.Fatalf("case %d: EachHourly: %v", n, err)
		}
		if len(q.Windows) > 0 && queries.Load() == 0 {
			t.Fatalf("case %d: EachHourly asked nothing of the server", n)
		}
		for i, r := range runs {
			if len(r) == 0 {
				t.Fatalf("case %d: run %d is empty", n, i)
			}
			for _, h := range r {
				if !h.Hour.Equal(r[0].Hour) {
					t.Fatalf("case %d: run %d holds %v and %v; want one time per run", n, i, r[0].Hour, h.Hour)
				}
			}
			if i > 0 && !runs[i-1][0].Hour.Before(r[0].Hour) {
				t.Fatalf("case %d: run %d (%v) does not follow run %d (%v)", n, i, r[0].Hour, i-1, runs[i-1][0].Hour)
			}
		}
		if got := slices.Concat(runs...); !slices.Equal(got, hs) {
			t.Fatalf("case %d (%d windows, %d queries): EachHourly handed %d points in %d runs; want Hourly's %d",
				n, len(q.Windows), queries.Load(), len(got), len(runs), len(hs))
		}
	}
}

// failingHourly is a Store without a streaming read whose Hourly fails.
type failingHourly struct {
	store.Store
	err error
}

func (f failingHourly) Hourly(context.Context, store.Query) ([]store.Hourly, error) {
	return nil, f.err
}

// EachHourly over a store without a streaming read (the file store) hands
// over Hourly's answer an hour at a time, for random records written in
// any order; and returns Hourly's error as it is, calling fn never.
func TestEachHourlyOfAWholeRead(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 17))
	for n := range 20 {
		st, err := store.OpenFile(filepath.Join(t.TempDir(), "samples.lp"), store.FileOptions{Warn: failOnWarn(t)})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := any(st).(store.HourlyStreamer); ok {
			t.Fatal("the file store streams: this test needs a store that does not")
		}
		var hs []store.Hourly
		for range rng.IntN(200) {
			hs = append(hs, store.Hourly{Lane: fmt.Sprintf("l%d", rng.IntN(5)), Kind: "free", Site: []string{"", "fra1"}[rng.IntN(2)],
				Hour: hour0.Add(-time.Duration(rng.IntN(48)) * time.Hour), WorstQueueS: float64(rng.IntN(100)), Samples: 1})
		}
		if err := st.Write(ctx, nil, hs); err != nil {
			t.Fatal(err)
		}
		q := store.Between(hour0.Add(-time.Duration(rng.IntN(60))*time.Hour), hour0.Add(time.Hour))
		want, err := st.Hourly(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		runs, err := eachRuns(t, st, q)
		if err != nil {
			t.Fatalf("case %d: EachHourly: %v", n, err)
		}
		if got := slices.Concat(runs...); !slices.Equal(got, want) {
			t.Fatalf("case %d: EachHourly handed %d points; want Hourly's %d", n, len(got), len(want))
		}
		for i, r := range runs {
			if len(r) == 0 || !r[0].Hour.Equal(r[len(r)-1].Hour) || i > 0 && !runs[i-1][0].Hour.Before(r[0].Hour) {
				t.Fatalf("case %d: run %d is not one time's points after the run before", n, i)
			}
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}

	boom := errors.New("disk on fire")
	called := false
	err := store.EachHourly(ctx, failingHourly{err: boom}, store.Between(hour0, hour0.Add(time.Hour)), func([]store.Hourly) error {
		called = true
		return nil
	})
	if err != boom || called {
		t.Errorf("EachHourly of a failing Hourly = %v (fn called: %t); want its error as it is, fn never called", err, called)
	}
}

// hourlyFails is a spool's inner store whose writes fail as an outage (so
// the spool keeps them) and whose hourly reads fail with err when set.
type hourlyFails struct {
	*switchStore
	err error
}

func (h *hourlyFails) Hourly(ctx context.Context, q store.Query) ([]store.Hourly, error) {
	if h.err != nil {
		return nil, h.err
	}
	return h.switchStore.Hourly(ctx, q)
}

// A spool's streamed hourly read fails when it cannot be read whole: the
// inner store's read fails while the spool holds points (merged from a
// whole read), the context ended before a reader's spool files were read,
// or the writer's spool file cannot be read; Hourly fails alike. fn is
// never called: a failed read is no empty answer.
func TestSpoolHourlyEachFails(t *testing.T) {
	boom := errors.New("store on fire")
	spooled := store.Hourly{Lane: "a", Kind: "free", Site: "fra1", Hour: hour0, WorstQueueS: 3, Samples: 1}
	q := store.Between(hour0.Add(-time.Hour), hour0.Add(time.Hour))
	for _, c := range []struct {
		name string
		// open returns the spool to read (with spooled in its file) and
		// the context to read with
		open func(t *testing.T, path string) (*store.Spool, context.Context)
		want error // errors.Is the error, when not nil
	}{
		{"the inner store's read fails", func(t *testing.T, path string) (*store.Spool, context.Context) {
			inner := &hourlyFails{switchStore: newSwitchStore(t, "down", 0)}
			sp := spoolWith(t, inner, path, spooled)
			inner.err = boom
			return sp, ctx
		}, boom},
		{"a reader's, the context ended", func(t *testing.T, path string) (*store.Spool, context.Context) {
			w := spoolWith(t, newSwitchStore(t, "down", 0), path, spooled)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			r, err := store.OpenSpool(newSwitchStore(t, "up", 0), store.SpoolOptions{Path: path, ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = r.Close() })
			done, cancel := context.WithCancel(ctx)
			cancel()
			return r, done
		}, context.Canceled},
		{"the writer's spool file is not readable", func(t *testing.T, path string) (*store.Spool, context.Context) {
			sp := spoolWith(t, newSwitchStore(t, "down", 0), path, spooled)
			if err := os.Rename(path, path+".moved"); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
			return sp, ctx
		}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			sp, rctx := c.open(t, filepath.Join(t.TempDir(), "spool.lp"))
			called := false
			err := store.EachHourly(rctx, sp, q, func([]store.Hourly) error {
				called = true
				return nil
			})
			if err == nil || called || c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("EachHourly = %v (fn called: %t); want an error (%v), fn never called", err, called, c.want)
			}
			if hs, err := sp.Hourly(rctx, q); err == nil || c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("Hourly = %d points, %v; want an error (%v)", len(hs), err, c.want)
			}
		})
	}
}

// spoolWith opens a writing spool at path over inner (down: writes are
// spooled) and writes the points, which it keeps.
func spoolWith(t *testing.T, inner store.Store, path string, hs ...store.Hourly) *store.Spool {
	t.Helper()
	sp, err := store.OpenSpool(inner, store.SpoolOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sp.Close() })
	if err := sp.Write(ctx, nil, hs); err != nil || sp.SpoolDepth() != len(hs) {
		t.Fatalf("Write = %v, depth %d; want nil, %d (spooled)", err, sp.SpoolDepth(), len(hs))
	}
	return sp
}

// gatedServer answers InfluxQL reads of queue_hourly with one point (lane
// "a") for each hour of the span asked for, in two chunks: the first
// half's hours, then, once gate is closed or after 10 s, the rest. late is
// set when it waited the 10 s: the reader handed nothing over until the
// answer was whole.
func gatedServer(t *testing.T, gate <-chan struct{}, late *atomic.Bool) *store.Influx {
	t.Helper()
	return hourlyServer(t, func(w http.ResponseWriter, r *http.Request, from, to int64) {
		chunk := func(from, to int64) {
			var vals []string
			for ns := from; ns < to; ns += int64(time.Hour) {
				vals = append(vals, fmt.Sprintf(`[%d,%d,"a","free",""]`, ns, (ns-from)/int64(time.Hour)))
			}
			fmt.Fprintf(w, `{"results":[{"statement_id":0,"series":[{"name":"queue_hourly","columns":["time","worst_queue_s","lane","kind","site"],"values":[%s]}],"partial":true}]}`+"\n", strings.Join(vals, ","))
			w.(http.Flusher).Flush()
		}
		w.Header().Set("Content-Type", "application/json")
		mid := from + (to-from)/2/int64(time.Hour)*int64(time.Hour)
		chunk(from, mid)
		select {
		case <-gate:
		case <-time.After(10 * time.Second):
			late.Store(true)
		}
		chunk(mid, to)
	})
}

// A streamed read hands over an hour as soon as it has decoded it (and the
// next), not once its piece's answer is whole: the server holds back the
// second half of its answer until fn got a run. Through a spool that adds
// nothing to the read it is the same: a writer's whose dead-letter file
// holds refused points (which hourly reads never merge), a reader's whose
// spool file is empty.
func TestEachHourlyHandsOverWhileItReads(t *testing.T) {
	from := hour0.Add(-12 * time.Hour) // one piece
	q := store.Between(from, hour0)
	for _, c := range []struct {
		name string
		open func(t *testing.T, st *store.Influx) store.Store
	}{
		{"InfluxDB", func(t *testing.T, st *store.Influx) store.Store { return st }},
		{"a writer's spool with a dead letter", func(t *testing.T, st *store.Influx) store.Store {
			path := filepath.Join(t.TempDir(), "spool.lp")
			dead, err := store.OpenFile(path+".dead", store.FileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := dead.Write(ctx, []store.Probe{probeAt("a", -time.Hour, 3)}, nil); err != nil {
				t.Fatal(err)
			}
			if err := dead.Close(); err != nil {
				t.Fatal(err)
			}
			sp, err := store.OpenSpool(st, store.SpoolOptions{Path: path})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = sp.Close() })
			if ps, err := sp.Probes(ctx, store.Between(hour0.Add(-48*time.Hour), hour0.Add(time.Hour))); err != nil || len(ps) != 1 {
				t.Fatalf("Probes = %d, %v; want the dead letter's one (the test's premise)", len(ps), err)
			}
			return sp
		}},
		{"a reader's spool, empty", func(t *testing.T, st *store.Influx) store.Store {
			path := filepath.Join(t.TempDir(), "spool.lp")
			if err := os.WriteFile(path, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			sp, err := store.OpenSpool(st, store.SpoolOptions{Path: path, ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = sp.Close() })
			return sp
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			gate := make(chan struct{})
			var late atomic.Bool
			st := c.open(t, gatedServer(t, gate, &late))
			var got []store.Hourly
			err := store.EachHourly(ctx, st, q, func(hs []store.Hourly) error {
				if len(got) == 0 {
					close(gate)
				}
				got = append(got, hs...)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 12 {
				t.Errorf("EachHourly handed %d points; want the answer's 12", len(got))
			}
			if late.Load() {
				t.Errorf("EachHourly handed nothing over before the server's answer was whole; want the first hours at once")
			}
		})
	}
}

// inStreamSpan returns the stacks of the goroutines now inside a piece's
// read (qlStreamSpan), at once.
func inStreamSpan() string {
	buf := make([]byte, 1<<20)
	all := string(buf[:runtime.Stack(buf, true)])
	var in []string
	for _, g := range strings.Split(all, "\n\n") {
		if strings.Contains(g, "store.qlStreamSpan") {
			in = append(in, g)
		}
	}
	return strings.Join(in, "\n\n")
}

// A streamed read that fn stops returns once its pieces have ended: at
// the moment it returns no piece still reads (a later one hangs until its
// request is canceled), so that a caller that releases what the read used
// (the spool's lock, the store) releases it from a read that is over.
func TestEachHourlyReturnsOnceItsPiecesEnded(t *testing.T) {
	first := hour0.Add(-6 * 24 * time.Hour) // four pieces of 36 hours
	enough := errors.New("enough")
	asked := make(chan struct{}, 1) // the hanging piece's request arrived
	st := pieceServer(t, first, 36*time.Hour, func(w http.ResponseWriter, r *http.Request, p int) bool {
		if p == 1 {
			asked <- struct{}{}
			<-r.Context().Done()
			return false
		}
		return true
	})
	for range 50 {
		var seen string
		err := store.EachHourly(ctx, st, store.Between(first, hour0), func([]store.Hourly) error {
			select { // fn stops the read while the later piece reads
			case <-asked:
			case <-time.After(10 * time.Second):
				return errors.New("the later piece was not asked for within 10 s: are the pieces still read in parallel?")
			}
			seen = inStreamSpan()
			return enough
		})
		if seen == "" {
			t.Fatal("no piece seen reading while fn ran: inStreamSpan no longer finds a piece's reader (renamed?), so this test checks nothing")
		}
		in := inStreamSpan()
		if err != enough {
			t.Fatalf("EachHourly = %v; want fn's error", err)
		}
		if in != "" {
			t.Fatalf("a piece still read when EachHourly returned:\n%s", in)
		}
	}
	if left := readersLeft(); left != "" {
		t.Errorf("goroutines of the read still running:\n%s", left)
	}
}

// A spool's probe reads merge its dead-letter file and its spool file, a
// reader's (another process's spool) as a writer's: the refused probes
// were sent, the spooled ones too. No test saw localMerge read the dead
// letter only for a writer with one (a reader's never); the whole suite
// sees it stop after the dead letter (the spool's probes never merged)
// only through TestFindingReadOnlySpoolBesideWriter.
func TestSpoolProbesMergeTheDeadLetterAndTheSpool(t *testing.T) {
	at := hour0.Add(-2 * time.Hour)
	refused := store.Probe{Lane: "a", Kind: "free", Time: at, Outcome: "rate_limited", Status: 429}
	spooled := store.Probe{Lane: "b", Kind: "free", Time: at.Add(time.Minute), Outcome: "ok", OK: true, QueueS: 2}
	for _, readOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("read-only %t", readOnly), func(t *testing.T) {
			dir := t.TempDir()
			so := store.SpoolOptions{Path: filepath.Join(dir, "spool.lp"), ReadOnly: readOnly}
			for _, f := range []struct {
				path string
				p    store.Probe
			}{{so.Path + ".dead", refused}, {so.Path, spooled}} {
				lp, err := store.OpenFile(f.path, store.FileOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if err := lp.Write(ctx, []store.Probe{f.p}, nil); err != nil {
					t.Fatal(err)
				}
				if err := lp.Close(); err != nil {
					t.Fatal(err)
				}
			}
			inner := newSwitchStore(t, "up", 0)
			sp, err := store.OpenSpool(inner, so)
			if err != nil {
				t.Fatal(err)
			}
			defer sp.Close()
			q := store.Between(at.Add(-time.Hour), at.Add(time.Hour))
			ps, err := sp.Probes(ctx, q)
			if err != nil || len(ps) != 2 || ps[0].Lane != "a" || ps[1].Lane != "b" {
				t.Errorf("Probes = %+v, %v; want the refused probe and the spooled one", ps, err)
			}
			local, err := sp.LocalProbes(ctx, q)
			if err != nil || len(local) != 2 {
				t.Errorf("LocalProbes = %+v, %v; want the refused probe and the spooled one", local, err)
			}
		})
	}
}
