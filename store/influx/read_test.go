package influx_test

// A read (read.go): in pieces, parallel, handed over while it reads, in
// order, and stopped cleanly.

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/influxtest"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
	"github.com/lanewatch/lanewatch/store/influx"
	"github.com/lanewatch/lanewatch/store/spool"
	"github.com/lanewatch/lanewatch/store/storetest"
)

// hourlyServer is an InfluxDB whose reads of queue_hourly are answered by
// answer, as JSON, for each statement of a request (its index and the span
// it asks for, in ns); its read check and writes are answered as a real
// server's with nothing stored.
func hourlyServer(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, stmt int, from, to int64)) *influx.Store {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/api/v2/write":
			w.WriteHeader(http.StatusNoContent)
		case r.URL.Path != "/query":
			http.NotFound(w, r)
		case !strings.Contains(r.FormValue("q"), "queue_hourly"):
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"results":[{"statement_id":0}]}`)
		default:
			w.Header().Set("Content-Type", "application/json")
			for i, q := range strings.Split(r.FormValue("q"), "; ") {
				var from, to int64
				if _, err := fmt.Sscanf(q[strings.Index(q, "time >= "):], "time >= %d AND time < %d", &from, &to); err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				answer(w, r, i, from, to)
			}
		}
	}))
	t.Cleanup(srv.Close)
	st, err := influx.Open(ctx, influx.Options{URL: srv.URL, Bucket: "b"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// answerRows writes one statement's answer: rows of time, worst_queue_s,
// lane, kind and site.
func answerRows(w io.Writer, stmt int, vals []string) {
	if len(vals) == 0 {
		fmt.Fprintf(w, `{"results":[{"statement_id":%d}]}`+"\n", stmt)
		return
	}
	fmt.Fprintf(w, `{"results":[{"statement_id":%d,"series":[{"name":"queue_hourly","columns":["time","worst_queue_s","lane","kind","site"],"values":[%s]}]}]}`+"\n", stmt, strings.Join(vals, ","))
}

// pieceServer answers reads of queue_hourly with one point per hour of the
// span asked for (lane "a", no site); act, when not nil, is called first
// with the piece's index (its span's start from first, in pieces of step)
// and may hang or fail the answer.
func pieceServer(t *testing.T, first time.Time, step time.Duration, act func(w http.ResponseWriter, r *http.Request, piece int) bool) *influx.Store {
	t.Helper()
	return hourlyServer(t, func(w http.ResponseWriter, r *http.Request, stmt int, from, to int64) {
		if act != nil && !act(w, r, int(time.Duration(from-first.UnixNano())/step)) {
			return
		}
		var vals []string
		for ns := from; ns < to; ns += int64(time.Hour) {
			vals = append(vals, fmt.Sprintf(`[%d,%d,"a","free",""]`, ns, (ns-from)/int64(time.Hour)))
		}
		answerRows(w, stmt, vals)
	})
}

// readersLeft returns the stacks of the goroutines of a read still
// running, once they had 5 s to end.
func readersLeft() string {
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := inRequest()
		if left == "" || time.Now().After(deadline) {
			return left
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// inRequest returns the stacks of the goroutines now inside a read's
// request, at once.
func inRequest() string {
	buf := make([]byte, 1<<20)
	all := string(buf[:runtime.Stack(buf, true)])
	var in []string
	for _, g := range strings.Split(all, "\n\n") {
		if strings.Contains(g, "influx.(*Store).request") || strings.Contains(g, "influx.(*Store).run") {
			in = append(in, g)
		}
	}
	return strings.Join(in, "\n\n")
}

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
func randomAnswerServer(t *testing.T, rows []qlRow, queries *atomic.Int64) *influx.Store {
	t.Helper()
	return hourlyServer(t, func(w http.ResponseWriter, r *http.Request, stmt int, from, to int64) {
		queries.Add(1)
		var vals []string
		for _, p := range rows {
			if p.ns >= from && p.ns < to {
				vals = append(vals, fmt.Sprintf(`[%d,%g,%q,%q,%q]`, p.ns, p.wq, p.lane, p.kind, p.site))
			}
		}
		answerRows(w, stmt, vals)
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

// A read hands over what the answer holds, sorted and unique: for random answers (hours with no row, a row, or
// many in any order, keys repeated, series that keep coming) and random
// queries (one to three windows, so random piece boundaries; lanes and
// sites narrowed or not), each run one time's points, sorted and unique,
// the runs in time order, none empty.
func TestReadRandomAnswers(t *testing.T) {
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
		hs, err := store.ReadHourly(ctx, st, q)
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
		runs, err := storetest.HourlyRuns(st, q)
		if err != nil {
			t.Fatalf("case %d: read: %v", n, err)
		}
		if len(q.Windows) > 0 && queries.Load() == 0 {
			t.Fatalf("case %d: the read asked nothing of the server", n)
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
			t.Fatalf("case %d (%d windows, %d queries): runs of %d points in %d runs; want the read's %d",
				n, len(q.Windows), queries.Load(), len(got), len(runs), len(hs))
		}
	}
}

// gatedServer answers InfluxQL reads of queue_hourly with one point (lane
// "a") for each hour of the span asked for, in two chunks: the first
// half's hours, then, once gate is closed or after 10 s, the rest. late is
// set when it waited the 10 s: the reader handed nothing over until the
// answer was whole.
func gatedServer(t *testing.T, gate <-chan struct{}, late *atomic.Bool) *influx.Store {
	t.Helper()
	return hourlyServer(t, func(w http.ResponseWriter, r *http.Request, stmt int, from, to int64) {
		chunk := func(from, to int64) {
			var vals []string
			for ns := from; ns < to; ns += int64(time.Hour) {
				vals = append(vals, fmt.Sprintf(`[%d,%d,"a","free",""]`, ns, (ns-from)/int64(time.Hour)))
			}
			answerRows(w, stmt, vals)
			w.(http.Flusher).Flush()
		}
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

// A read hands over an hour as soon as it has decoded it (and the next),
// not once its piece's answer is whole: the server holds back the
// second half of its answer until fn got a run. Through a spool that adds
// nothing to the read it is the same: a writer's whose dead-letter file
// holds refused points (which hourly reads never merge), a reader's whose
// spool file is empty.
func TestReadHandsOverWhileItReads(t *testing.T) {
	from := hour0.Add(-12 * time.Hour) // one piece
	q := store.Between(from, hour0)
	for _, c := range []struct {
		name string
		open func(t *testing.T, st *influx.Store) store.Store
	}{
		{"InfluxDB", func(t *testing.T, st *influx.Store) store.Store { return st }},
		{"a writer's spool with a dead letter", func(t *testing.T, st *influx.Store) store.Store {
			path := filepath.Join(t.TempDir(), "spool.lp")
			dead, err := file.Open(path+".dead", file.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := dead.Write(ctx, store.Batch{Probes: []store.Probe{probeAt("a", -time.Hour, 3)}}); err != nil {
				t.Fatal(err)
			}
			if err := dead.Close(); err != nil {
				t.Fatal(err)
			}
			sp, err := spool.Open(st, spool.Options{Path: path})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = sp.Close() })
			if ps, err := store.ReadProbes(ctx, sp, store.Between(hour0.Add(-48*time.Hour), hour0.Add(time.Hour))); err != nil || len(ps) != 1 {
				t.Fatalf("Probes = %d, %v; want the dead letter's one (the test's premise)", len(ps), err)
			}
			return sp
		}},
		{"a reader's spool, empty", func(t *testing.T, st *influx.Store) store.Store {
			path := filepath.Join(t.TempDir(), "spool.lp")
			if err := os.WriteFile(path, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			sp, err := spool.Open(st, spool.Options{Path: path, ReadOnly: true})
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
			err := storetest.EachHour(ctx, st, q, func(hs []store.Hourly) error {
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
				t.Errorf("the read handed %d points; want the answer's 12", len(got))
			}
			if late.Load() {
				t.Errorf("the read handed nothing over before the server's answer was whole; want the first hours at once")
			}
		})
	}
}

// A read that fn stops returns once its pieces have ended: at
// the moment it returns no piece still reads (a later one hangs until its
// request is canceled), so that a caller that releases what the read used
// (the spool's lock, the store) releases it from a read that is over.
func TestReadReturnsOnceItsPiecesEnded(t *testing.T) {
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
		err := storetest.EachHour(ctx, st, store.Between(first, hour0), func([]store.Hourly) error {
			select { // fn stops the read while the later piece reads
			case <-asked:
			case <-time.After(10 * time.Second):
				return errors.New("the later piece was not asked for within 10 s: are the pieces still read in parallel?")
			}
			seen = inRequest()
			return enough
		})
		if seen == "" {
			t.Fatal("no piece seen reading while fn ran: inRequest no longer finds a piece's reader (renamed?), so this test checks nothing")
		}
		in := inRequest()
		if err != enough {
			t.Fatalf("read = %v; want fn's error", err)
		}
		if in != "" {
			t.Fatalf("a piece still read when the read returned:\n%s", in)
		}
	}
	if left := readersLeft(); left != "" {
		t.Errorf("goroutines of the read still running:\n%s", left)
	}
}

// A piece of a read that fails fails the read, with the store's
// error; fn has by then been handed only a prefix of the answer, in order:
// never a later piece's hours before an earlier one's.
func TestReadPieceFails(t *testing.T) {
	srv := influxtest.Start(t)
	db := srv.CreateDB(t, "eachfail")
	first := hour0.Add(-6 * 24 * time.Hour) // four pieces
	stored := hoursOf(first, 6*24, 4, []string{"fra1", "iad1"})
	if err := openInflux(t, srv.URL, influx.Options{Bucket: db + "/autogen"}).Write(ctx, store.Batch{Hourly: stored}); err != nil {
		t.Fatal(err)
	}
	target, _ := url.Parse(srv.URL)
	for _, failing := range []int64{1, 2, 3, 4} { // the piece's query that answers 500
		t.Run(fmt.Sprintf("query %d of 4 fails", failing), func(t *testing.T) {
			var queries atomic.Int64
			proxy := httputil.NewSingleHostReverseProxy(target)
			front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(body))
				if r.URL.Path == "/query" && strings.Contains(string(body), "queue_hourly") && queries.Add(1) == failing {
					http.Error(w, `{"error":"engine on fire"}`, http.StatusInternalServerError)
					return
				}
				proxy.ServeHTTP(w, r)
			}))
			defer front.Close()
			st := openInflux(t, front.URL, influx.Options{Bucket: db + "/autogen"})
			q := store.Between(first, hour0)
			runs, err := storetest.HourlyRuns(st, q)
			if err == nil || !strings.Contains(err.Error(), ": read: ") || !strings.Contains(err.Error(), "engine on fire") {
				t.Fatalf("read with query %d failing = %v; want the read's error with the server's message", failing, err)
			}
			got := slices.Concat(runs...)
			if len(got) >= len(stored) || !slices.Equal(got, stored[:len(got)]) {
				t.Errorf("fn was handed %d points; want a strict prefix of the %d, in order", len(got), len(stored))
			}
		})
	}
}

// An answer whose rows go back in time (InfluxDB's raw selects never do
// that) is an error, not points handed over out of order.
func TestReadRefusesDisorder(t *testing.T) {
	t1, t2 := hour0.UnixNano(), hour0.Add(time.Hour).UnixNano()
	st := hourlyServer(t, func(w http.ResponseWriter, r *http.Request, stmt int, from, to int64) {
		answerRows(w, stmt, []string{fmt.Sprintf(`[%d,1,"a","free",""]`, t2), fmt.Sprintf(`[%d,2,"a","free",""]`, t1)})
	})
	hs, err := store.ReadHourly(ctx, st, store.Between(hour0, hour0.Add(2*time.Hour)))
	if err == nil || !strings.Contains(err.Error(), "not in time order") {
		t.Errorf("read = %+v, %v; want an error saying the answer is not in time order", hs, err)
	}
}

// A read that stops early, because fn fails, the caller's
// context ends (before the read, between two pieces, during one) or a
// piece fails while an earlier one still streams, returns the first real
// failure (fn's as it is, the server's, or the context's when nothing else
// failed), within seconds, and leaves no goroutine of it running.
func TestReadStopsCleanly(t *testing.T) {
	first := hour0.Add(-6 * 24 * time.Hour) // four pieces of 36 hours
	const step = 36 * time.Hour
	q := store.Between(first, hour0)
	enough := errors.New("enough")
	failOn := func(run int, err error) func(int, context.CancelFunc) error {
		return func(n int, _ context.CancelFunc) error {
			if n == run {
				return err
			}
			return nil
		}
	}
	hang := func(piece int) func(http.ResponseWriter, *http.Request, int) bool {
		return func(w http.ResponseWriter, r *http.Request, p int) bool {
			if p == piece {
				<-r.Context().Done()
				return false
			}
			return true
		}
	}
	for _, c := range []struct {
		name string
		act  func(w http.ResponseWriter, r *http.Request, piece int) bool
		// fn's answer for the n-th run (from 0), given the cancel of the
		// read's context
		fn    func(n int, cancel context.CancelFunc) error
		pre   bool          // the context ends before the read
		after time.Duration // or this long after the read starts
		want  error         // errors.Is the error
		text  string        // the error says
		runs  int           // runs handed over, -1: any
	}{
		{name: "fn fails on the first run", fn: failOn(0, enough),
			act: hang(1), want: enough, runs: 1},
		{name: "fn fails on the last run of the first piece", fn: failOn(35, enough),
			want: enough, runs: 36},
		{name: "fn fails in the last piece", fn: failOn(140, enough),
			want: enough, runs: 141},
		{name: "canceled before", pre: true, want: context.Canceled, runs: 0},
		{name: "canceled between two pieces", act: hang(2), fn: func(n int, cancel context.CancelFunc) error {
			if n == 35 {
				cancel()
			}
			return nil
		}, want: context.Canceled, runs: -1},
		{name: "canceled during a piece", act: hang(0), after: 200 * time.Millisecond, want: context.Canceled, runs: 0},
		{name: "a later piece fails while the first hangs", act: func(w http.ResponseWriter, r *http.Request, p int) bool {
			switch p {
			case 0:
				<-r.Context().Done()
				return false
			case 1:
				http.Error(w, `{"error":"engine on fire"}`, http.StatusInternalServerError)
				return false
			}
			return true
		}, text: "engine on fire", runs: 0},
		{name: "the last piece fails", act: func(w http.ResponseWriter, r *http.Request, p int) bool {
			if p == 3 {
				http.Error(w, `{"error":"engine on fire"}`, http.StatusInternalServerError)
				return false
			}
			return true
		}, text: "engine on fire", runs: -1}, // the third piece may be canceled before it is handed over
	} {
		t.Run(c.name, func(t *testing.T) {
			st := pieceServer(t, first, step, c.act)
			rctx, cancel := context.WithCancel(ctx)
			defer cancel()
			if c.pre {
				cancel()
			}
			if c.after > 0 {
				time.AfterFunc(c.after, cancel)
			}
			type result struct {
				runs int
				err  error
			}
			done := make(chan result, 1)
			go func() {
				n := 0
				err := storetest.EachHour(rctx, st, q, func([]store.Hourly) error {
					defer func() { n++ }()
					if c.fn == nil {
						return nil
					}
					return c.fn(n, cancel)
				})
				done <- result{n, err}
			}()
			var got result
			select {
			case got = <-done:
			case <-time.After(20 * time.Second):
				buf := make([]byte, 1<<20)
				t.Fatalf("EachHourly still running after 20 s:\n%s", buf[:runtime.Stack(buf, true)])
			}
			switch {
			case got.err == nil:
				t.Errorf("EachHourly = nil after %d runs; want an error", got.runs)
			case c.want != nil && !errors.Is(got.err, c.want):
				t.Errorf("EachHourly = %v; want %v", got.err, c.want)
			case c.want == enough && got.err != enough:
				t.Errorf("EachHourly = %v; want fn's error as it is", got.err)
			case c.text != "" && (!strings.Contains(got.err.Error(), c.text) || errors.Is(got.err, context.Canceled)):
				t.Errorf("EachHourly = %v; want the server's error, not the cancellation of the other pieces", got.err)
			case strings.Contains(got.err.Error(), "%!w"):
				t.Errorf("EachHourly = %v: a nil wrapped", got.err)
			}
			if c.runs >= 0 && got.runs != c.runs {
				t.Errorf("fn ran %d times; want %d", got.runs, c.runs)
			}
			if left := readersLeft(); left != "" {
				t.Errorf("goroutines of the read still running:\n%s", left)
			}
		})
	}
}

// Rows that an InfluxQL answer repeats for one key within a time (points
// of one lane, kind and site with a tag beyond the schema's) come through
// the streamed read as through Hourly: one point, the answer's last, with
// MessagePack and with JSON answers, over a span read in pieces.
func TestReadRepeatedKey(t *testing.T) {
	base := influxtest.URL(t)
	db := influxtest.NewDB(t, base)
	first := hour0.Add(-4 * 24 * time.Hour)
	var lines []string
	for h := range 4 * 24 {
		ns := first.Add(time.Duration(h) * time.Hour).UnixNano()
		for i, host := range []string{"h2", "h1", "h3"}[:1+h%3] {
			lines = append(lines,
				fmt.Sprintf("queue_hourly,host=%s,kind=free,lane=a,site=fra1 worst_queue_s=%d,samples=%di %d", host, h*10+i, i+1, ns),
				fmt.Sprintf("queue_hourly,host=%s,kind=paid,lane=b worst_queue_s=%d,samples=1i %d", host, h*10+i, ns))
		}
	}
	resp, err := http.Post(base+"/write?db="+db, "text/plain", strings.NewReader(strings.Join(lines, "\n")))
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("write: %v %v", resp, err)
	}
	resp.Body.Close()
	target, _ := url.Parse(base)
	jsonOnly := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		pr.Out.Header.Set("Accept", "application/json")
	}})
	defer jsonOnly.Close()
	q := store.Between(first, hour0)
	for _, via := range []struct{ name, url string }{{"MessagePack", base}, {"JSON", jsonOnly.URL}} {
		st := openInflux(t, via.url, influx.Options{Bucket: db + "/autogen"})
		want, err := store.ReadHourly(ctx, st, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) != 2*4*24 {
			t.Fatalf("%s: Hourly = %d points; want one per lane and hour: %d", via.name, len(want), 2*4*24)
		}
		runs, err := storetest.HourlyRuns(st, q)
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.Concat(runs...); !slices.Equal(got, want) || len(runs) != 4*24 {
			t.Errorf("%s: EachHourly gave %d points in %d runs; want Hourly's %d in %d", via.name, len(got), len(runs), len(want), 4*24)
		}
	}
}

// hoursOf returns lanes × sites hourly records for each hour of [from,
// from + n hours).
func hoursOf(from time.Time, n int, lanes int, sites []string) []store.Hourly {
	var hs []store.Hourly
	for h := range n {
		for l := range lanes {
			for s, site := range sites {
				hs = append(hs, store.Hourly{Lane: fmt.Sprintf("lane-%02d", l), Kind: "free", Site: site,
					Hour: from.Add(time.Duration(h) * time.Hour), WorstQueueS: float64(h*100 + l*10 + s), Samples: 3})
			}
		}
	}
	return hs
}
