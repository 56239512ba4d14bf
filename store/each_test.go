package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/influxtest"
	"github.com/lanewatch/lanewatch/store"
)

// eachRuns reads q through EachHourly and returns the runs it was handed,
// copied.
func eachRuns(t *testing.T, st store.Store, q store.Query) ([][]store.Hourly, error) {
	t.Helper()
	var runs [][]store.Hourly
	err := store.EachHourly(ctx, st, q, func(hs []store.Hourly) error {
		runs = append(runs, slices.Clone(hs))
		return nil
	})
	return runs, err
}

// hoursOf writes lanes × sites hourly records for each hour of [from, from
// + n hours) and returns them.
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

// A reader whose spool (another process's) holds hourly points the server
// does not have gets them through EachHourly as through Hourly: the read
// merges the spool, a later spooled line replacing the server's point.
func TestEachHourlyMergesTheSpool(t *testing.T) {
	srv := influxtest.Start(t)
	db := srv.CreateDB(t, "eachspool")
	first := hour0.Add(-72 * time.Hour)
	stored := hoursOf(first, 73, 3, []string{"fra1", "iad1"})
	direct := openInflux(t, srv.URL, store.InfluxOptions{Bucket: db + "/autogen"})
	if err := direct.Write(ctx, nil, stored); err != nil {
		t.Fatal(err)
	}

	// A sampler's spool, written while its server refused every write.
	path := filepath.Join(t.TempDir(), "spool.lp")
	down := httptest.NewServer(&fakeInflux{plan: slices.Repeat([]int{http.StatusServiceUnavailable}, 100)})
	defer down.Close()
	w, err := openSpool(store.InfluxOptions{URL: down.URL, Bucket: "b"}, store.SpoolOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	rewrite := stored[7]
	rewrite.WorstQueueS = 999
	added := store.Hourly{Lane: "lane-09", Kind: "paid", Site: "sin1", Hour: first.Add(5 * time.Hour), WorstQueueS: 1, Samples: 1}
	if err := w.Write(ctx, nil, []store.Hourly{rewrite, added}); err != nil || w.SpoolDepth() != 2 {
		t.Fatalf("Write = %v, depth %d; want nil, 2 (spooled)", err, w.SpoolDepth())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	r := openSpooled(t, srv.URL, store.InfluxOptions{Bucket: db + "/autogen"}, store.SpoolOptions{Path: path, ReadOnly: true})
	q := store.Between(first, hour0.Add(time.Hour))
	want, err := r.Hourly(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != len(stored)+1 || !slices.Contains(want, rewrite) || !slices.Contains(want, added) {
		t.Fatalf("Hourly = %d points; want the %d stored with one rewritten and one added from the spool", len(want), len(stored))
	}
	runs, err := eachRuns(t, r, q)
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Concat(runs...); !slices.Equal(got, want) {
		t.Errorf("EachHourly through the reader's spool: %d points, not Hourly's %d", len(got), len(want))
	}
	if len(runs) != 73 {
		t.Errorf("EachHourly handed %d runs, want one per hour: 73", len(runs))
	}
}

// A piece of a streamed read that fails fails the read, with the store's
// error; fn has by then been handed only a prefix of the answer, in order:
// never a later piece's hours before an earlier one's.
func TestEachHourlyPieceFails(t *testing.T) {
	srv := influxtest.Start(t)
	db := srv.CreateDB(t, "eachfail")
	first := hour0.Add(-6 * 24 * time.Hour) // four pieces
	stored := hoursOf(first, 6*24, 4, []string{"fra1", "iad1"})
	if err := openInflux(t, srv.URL, store.InfluxOptions{Bucket: db + "/autogen"}).Write(ctx, nil, stored); err != nil {
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
			st := openInflux(t, front.URL, store.InfluxOptions{Bucket: db + "/autogen"})
			q := store.Between(first, hour0)
			runs, err := eachRuns(t, st, q)
			if err == nil || !strings.Contains(err.Error(), "read hourly") || !strings.Contains(err.Error(), "engine on fire") {
				t.Fatalf("EachHourly with query %d failing = %v; want the read's error with the server's message", failing, err)
			}
			got := slices.Concat(runs...)
			if len(got) >= len(stored) || !slices.Equal(got, stored[:len(got)]) {
				t.Errorf("fn was handed %d points; want a strict prefix of the %d, in order", len(got), len(stored))
			}
		})
	}
}

// A streamed answer whose rows go back in time (InfluxDB's raw selects
// never do that) is an error, not hours handed over twice.
func TestEachHourlyRefusesDisorder(t *testing.T) {
	t1, t2 := hour0.UnixNano(), hour0.Add(time.Hour).UnixNano()
	fake := &fakeInflux{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/query" {
			fake.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"results":[{"statement_id":0,"series":[{"name":"queue_hourly","columns":["time","worst_queue_s","lane","kind","site"],"values":[[%d,1,"a","free",""],[%d,2,"a","free",""]]}]}]}`, t2, t1)
	}))
	defer srv.Close()
	st, err := store.OpenInflux(ctx, store.InfluxOptions{URL: srv.URL, Bucket: "b"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	q := store.Between(hour0, hour0.Add(2*time.Hour))
	if hs, err := st.Hourly(ctx, q); err != nil || len(hs) != 2 || !hs[0].Hour.Equal(hour0) {
		t.Fatalf("Hourly = %+v, %v; want both points, sorted (a whole read sorts them)", hs, err)
	}
	runs, err := eachRuns(t, st, q)
	if !errors.Is(err, store.ErrNotInTimeOrder) || !strings.Contains(err.Error(), "not in time order") {
		t.Errorf("EachHourly = %d runs, %v; want an error saying the answer is not in time order", len(runs), err)
	}
}

// hourlyServer is an InfluxDB whose InfluxQL reads of queue_hourly answer
// is given the span asked for (from, to in ns) to write; every other
// request goes to a fakeInflux.
func hourlyServer(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, from, to int64)) *store.Influx {
	t.Helper()
	fake := &fakeInflux{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/query" || !strings.Contains(r.FormValue("q"), "queue_hourly") {
			fake.ServeHTTP(w, r)
			return
		}
		q := r.FormValue("q")
		var from, to int64
		if _, err := fmt.Sscanf(q[strings.Index(q, "time >= "):], "time >= %d AND time < %d", &from, &to); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		answer(w, r, from, to)
	}))
	t.Cleanup(srv.Close)
	st, err := store.OpenInflux(ctx, store.InfluxOptions{URL: srv.URL, Bucket: "b"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// pieceServer answers InfluxQL reads of queue_hourly with one point per
// hour of the span asked for (lane "a", no site), as JSON; act, when not
// nil, is called first with the piece's index (its span's start from
// first, in pieces of step) and may hang or fail the answer.
func pieceServer(t *testing.T, first time.Time, step time.Duration, act func(w http.ResponseWriter, r *http.Request, piece int) bool) *store.Influx {
	t.Helper()
	return hourlyServer(t, func(w http.ResponseWriter, r *http.Request, from, to int64) {
		if act != nil && !act(w, r, int(time.Duration(from-first.UnixNano())/step)) {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		var vals []string
		for ns := from; ns < to; ns += int64(time.Hour) {
			vals = append(vals, fmt.Sprintf(`[%d,%d,"a","free",""]`, ns, (ns-from)/int64(time.Hour)))
		}
		fmt.Fprintf(w, `{"results":[{"statement_id":0,"series":[{"name":"queue_hourly","columns":["time","worst_queue_s","lane","kind","site"],"values":[%s]}]}]}`, strings.Join(vals, ","))
	})
}

// readersLeft returns the stacks of the goroutines of a streamed read still
// running, once they had 5 s to end.
func readersLeft() string {
	deadline := time.Now().Add(5 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		all := string(buf[:runtime.Stack(buf, true)])
		var left []string
		for _, g := range strings.Split(all, "\n\n") {
			if strings.Contains(g, "store.runPieces") || strings.Contains(g, "store.qlEach") || strings.Contains(g, "store.qlStreamSpan") {
				left = append(left, g)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return strings.Join(left, "\n\n")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A streamed read that stops early, because fn fails, the caller's
// context ends (before the read, between two pieces, during one) or a
// piece fails while an earlier one still streams, returns the first real
// failure (fn's as it is, the server's, or the context's when nothing else
// failed), within seconds, and leaves no goroutine of it running.
func TestEachHourlyStopsCleanly(t *testing.T) {
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
				err := store.EachHourly(rctx, st, q, func([]store.Hourly) error {
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
func TestEachHourlyRepeatedKey(t *testing.T) {
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
		st := openInflux(t, via.url, store.InfluxOptions{Bucket: db + "/autogen"})
		want, err := st.Hourly(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) != 2*4*24 {
			t.Fatalf("%s: Hourly = %d points; want one per lane and hour: %d", via.name, len(want), 2*4*24)
		}
		runs, err := eachRuns(t, st, q)
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.Concat(runs...); !slices.Equal(got, want) || len(runs) != 4*24 {
			t.Errorf("%s: EachHourly gave %d points in %d runs; want Hourly's %d in %d", via.name, len(got), len(runs), len(want), 4*24)
		}
	}
}

// A sampler's spool read an hour at a time (its status page) while the
// sampler writes: the write waits for the read, which sees the store at
// one moment (none of the write's points, though its hour is read after
// the write began), and neither deadlocks. fn runs under the spool's read
// lock and does not call the spool (see Spool.HourlyEach).
func TestEachHourlyWhileTheSpoolWrites(t *testing.T) {
	base := influxtest.URL(t)
	first := hour0.Add(-4 * 24 * time.Hour) // four pieces
	sp := openSpooled(t, base, store.InfluxOptions{}, store.SpoolOptions{Path: filepath.Join(t.TempDir(), "spool.lp")})
	stored := hoursOf(first, 4*24-1, 2, []string{"fra1"})
	if err := sp.Write(ctx, nil, stored); err != nil {
		t.Fatal(err)
	}
	late := store.Hourly{Lane: "lane-00", Kind: "free", Site: "fra1", Hour: hour0.Add(-time.Hour), WorstQueueS: 7, Samples: 1}
	wrote := make(chan error, 1)
	var got []store.Hourly
	read := make(chan error, 1)
	go func() {
		read <- store.EachHourly(ctx, sp, store.Between(first, hour0), func(hs []store.Hourly) error {
			if len(got) == 0 {
				go func() { wrote <- sp.Write(ctx, nil, []store.Hourly{late}) }()
				time.Sleep(100 * time.Millisecond) // the write waits for the lock meanwhile
			}
			got = append(got, hs...)
			return nil
		})
	}()
	for _, c := range []struct {
		name string
		ch   chan error
	}{{"EachHourly", read}, {"Write", wrote}} {
		select {
		case err := <-c.ch:
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
		case <-time.After(20 * time.Second):
			buf := make([]byte, 1<<20)
			t.Fatalf("%s still running after 20 s:\n%s", c.name, buf[:runtime.Stack(buf, true)])
		}
	}
	if !slices.Equal(got, stored) {
		t.Errorf("EachHourly during a write gave %d points; want the %d stored before it", len(got), len(stored))
	}
	after, err := sp.Hourly(ctx, store.Between(first, hour0))
	if err != nil || len(after) != len(stored)+1 {
		t.Errorf("Hourly after the write = %d points, %v; want %d", len(after), err, len(stored)+1)
	}
}
