package series_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/influxtest"
	"github.com/lanewatch/lanewatch/series"
)

// eachRuns reads q through EachHourly and returns the runs it was handed,
// copied.
func eachRuns(t *testing.T, st series.Store, q series.Query) ([][]series.Hourly, error) {
	t.Helper()
	var runs [][]series.Hourly
	err := series.EachHourly(ctx, st, q, func(hs []series.Hourly) error {
		runs = append(runs, slices.Clone(hs))
		return nil
	})
	return runs, err
}

// hoursOf writes lanes × sites hourly records for each hour of [from, from
// + n hours) and returns them.
func hoursOf(from time.Time, n int, lanes int, sites []string) []series.Hourly {
	var hs []series.Hourly
	for h := range n {
		for l := range lanes {
			for s, site := range sites {
				hs = append(hs, series.Hourly{Lane: fmt.Sprintf("lane-%02d", l), Kind: "free", Site: site,
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
	direct := openInflux(t, srv.URL, series.InfluxOptions{Bucket: db + "/autogen"})
	if err := direct.Write(ctx, nil, stored); err != nil {
		t.Fatal(err)
	}

	// A sampler's spool, written while its server refused every write.
	path := filepath.Join(t.TempDir(), "spool.lp")
	down := httptest.NewServer(&fakeInflux{plan: slices.Repeat([]int{http.StatusServiceUnavailable}, 100)})
	defer down.Close()
	w, err := openSpool(series.InfluxOptions{URL: down.URL, Bucket: "b"}, series.SpoolOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	rewrite := stored[7]
	rewrite.WorstQueueS = 999
	added := series.Hourly{Lane: "lane-09", Kind: "paid", Site: "sin1", Hour: first.Add(5 * time.Hour), WorstQueueS: 1, Samples: 1}
	if err := w.Write(ctx, nil, []series.Hourly{rewrite, added}); err != nil || w.SpoolDepth() != 2 {
		t.Fatalf("Write = %v, depth %d; want nil, 2 (spooled)", err, w.SpoolDepth())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	r := openSpooled(t, srv.URL, series.InfluxOptions{Bucket: db + "/autogen"}, series.SpoolOptions{Path: path, ReadOnly: true})
	q := series.Between(first, hour0.Add(time.Hour))
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
	if err := openInflux(t, srv.URL, series.InfluxOptions{Bucket: db + "/autogen"}).Write(ctx, nil, stored); err != nil {
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
			st := openInflux(t, front.URL, series.InfluxOptions{Bucket: db + "/autogen"})
			q := series.Between(first, hour0)
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
	st, err := series.OpenInflux(ctx, series.InfluxOptions{URL: srv.URL, Bucket: "b"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	q := series.Between(hour0, hour0.Add(2*time.Hour))
	if hs, err := st.Hourly(ctx, q); err != nil || len(hs) != 2 || !hs[0].Hour.Equal(hour0) {
		t.Fatalf("Hourly = %+v, %v; want both points, sorted (a whole read sorts them)", hs, err)
	}
	runs, err := eachRuns(t, st, q)
	if err == nil || !strings.Contains(err.Error(), "not in time order") {
		t.Errorf("EachHourly = %d runs, %v; want an error saying the answer is not in time order", len(runs), err)
	}
}
