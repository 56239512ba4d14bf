package app_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/app"
	"github.com/lanewatch/lanewatch/report/swings"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/influx"
)

// Tests for the survivors of the sixth round's hand-made mutants of
// SwingsOf (TESTING.md, "app: SwingsOf").

// SwingsOf reads a store that streams an answer in time order once, and
// builds Swings' report from it; when the read fails (the server's error,
// an answer out of time order) it returns the store's error, not a report
// of nothing. answers says how the fake
// InfluxDB answers each read of queue_hourly in turn: "ok" (in time
// order), "back" (going back in time), "fail" (a 500).
func TestSwingsOfReadsOnceAndFails(t *testing.T) {
	cfg := swingsConfig(t, "UTC", [][2]string{{"a", "free"}})
	ctx := context.Background()
	h0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	from, to := h0, h0.Add(2*time.Hour) // one piece
	for _, c := range []struct {
		name    string
		answers []string
		reads   int    // reads of queue_hourly SwingsOf sends
		fails   string // SwingsOf returns the store's error, which says this
	}{
		{"in time order: one read", []string{"ok"}, 1, ""},
		{"the read fails", []string{"fail"}, 1, "engine on fire"},
		{"back in time", []string{"back"}, 1, "not in time order"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var reads atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/query" || !strings.Contains(r.FormValue("q"), "queue_hourly") {
					w.WriteHeader(http.StatusNoContent)
					return
				}
				n := int(reads.Add(1)) - 1
				answer := "fail"
				if n < len(c.answers) {
					answer = c.answers[n]
				}
				w.Header().Set("Content-Type", "application/json")
				first, second := h0, h0.Add(time.Hour)
				switch answer {
				case "fail":
					w.WriteHeader(http.StatusInternalServerError)
					fmt.Fprint(w, `{"error":"engine on fire"}`)
					return
				case "back":
					first, second = second, first
				}
				fmt.Fprintf(w, `{"results":[{"statement_id":0,"series":[{"name":"queue_hourly","columns":["time","worst_queue_s","worst_censored_s","samples","failures","lane","kind","site"],"values":[[%d,40,0,3,0,"a","free",""],[%d,2,0,3,0,"a","free",""]]}]}]}`,
					first.UnixNano(), second.UnixNano())
			}))
			defer srv.Close()
			st, err := influx.Open(ctx, influx.Options{URL: srv.URL, Bucket: "b"})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			q := store.Between(from, to)
			q.Fields = swings.Fields()
			got, err := app.SwingsOf(ctx, cfg, st, q, from, to, 1, true)
			if n := reads.Load(); n != int64(c.reads) {
				t.Errorf("SwingsOf sent %d reads of queue_hourly; want %d", n, c.reads)
			}
			if c.fails != "" {
				if err == nil || !strings.Contains(err.Error(), c.fails) || got != nil {
					t.Errorf("SwingsOf = %v, %v; want no report and the store's error", got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("SwingsOf: %v", err)
			}
			recs := []store.Hourly{
				{Lane: "a", Kind: "free", Hour: h0, WorstQueueS: 40, Samples: 3},
				{Lane: "a", Kind: "free", Hour: h0.Add(time.Hour), WorstQueueS: 2, Samples: 3},
			}
			if want := app.Swings(cfg, recs, from, to, 1, true); !reflect.DeepEqual(got, want) {
				t.Errorf("SwingsOf = %+v; want Swings of the records %+v", got, want)
			}
			if got.Records != 2 {
				t.Errorf("SwingsOf's report counts %d records; want 2", got.Records)
			}
		})
	}
}
