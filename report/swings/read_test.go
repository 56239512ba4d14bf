package swings_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/internal/influxtest"
	"github.com/lanewatch/lanewatch/report/swings"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
	"github.com/lanewatch/lanewatch/store/influx"
	"github.com/lanewatch/lanewatch/store/spool"
)

// swingsConfig is a config in zone with the lanes given as name and kind
// (each an openai lane at a base URL nothing answers).
func swingsConfig(t *testing.T, zone string, lanes [][2]string) *config.Config {
	t.Helper()
	text := "timezone: " + zone + "\nlanes:\n"
	for _, l := range lanes {
		text += fmt.Sprintf("  - {name: %s, kind: %s, api: openai, base_url: \"http://x/v1\", model: m}\n", l[0], l[1])
	}
	cfg, err := config.Parse(strings.NewReader(text), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Swings, which builds the report while the store hands its records
// over, gives what swings.Build gives for the records the
// store returns whole: for random records of several sites, of more sites
// than one pass takes (64), and of lanes named like a lane@site column
// (both read whole again), on the embedded file store and on InfluxDB
// (through the spool, a span read in pieces, each streamed).
func TestSwingsIsBuildOfTheRecords(t *testing.T) {
	cfg := swingsConfig(t, "Asia/Kathmandu", [][2]string{{"a", "free"}, {"b", "paid"}})
	ctx := context.Background()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	from, to := t0.Add(5*time.Hour), t0.Add(3*24*time.Hour)
	for _, c := range []struct {
		name  string
		cases int
		// start returns how to open a fresh store of the kind
		start func(t *testing.T) func() store.Store
	}{
		{"file", 60, func(t *testing.T) func() store.Store {
			return func() store.Store {
				st, err := file.Open(filepath.Join(t.TempDir(), "samples.lp"), file.Options{})
				if err != nil {
					t.Fatal(err)
				}
				return st
			}
		}},
		{"influx", 10, func(t *testing.T) func() store.Store {
			srv := influxtest.Start(t)
			n := 0
			return func() store.Store {
				n++
				db, err := influx.Open(ctx, influx.Options{URL: srv.URL, Bucket: srv.CreateDB(t, fmt.Sprintf("swingsof%d", n)) + "/autogen"})
				if err != nil {
					t.Fatal(err)
				}
				sp, err := spool.Open(db, spool.Options{Path: filepath.Join(t.TempDir(), "spool.lp")})
				if err != nil {
					t.Fatal(err)
				}
				return sp
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			open := c.start(t)
			rng := rand.New(rand.NewPCG(5, 19))
			for n := range c.cases {
				names := []string{"a", "b", "c"}
				if n%4 == 0 {
					names = append(names, "a@fra1")
				}
				sites := []string{"", "fra1", "iad1"}
				if n%5 == 0 {
					for i := range 70 {
						sites = append(sites, fmt.Sprintf("s%02d", i))
					}
				}
				var recs []store.Hourly
				for range rng.IntN(300) {
					samples := rng.Int64N(4)
					recs = append(recs, store.Hourly{
						Lane: names[rng.IntN(len(names))], Kind: []string{"free", "paid"}[rng.IntN(2)],
						Site: sites[rng.IntN(len(sites))], Hour: t0.Add(time.Duration(rng.IntN(80)) * time.Hour),
						WorstQueueS: float64(rng.IntN(600)) / 10, WorstCensoredS: float64(rng.IntN(3)) * 15,
						Samples: samples, Failures: rng.Int64N(samples + 1),
					})
				}
				st := open()
				if err := st.Write(ctx, store.Batch{Hourly: recs}); err != nil {
					t.Fatal(err)
				}
				q := store.Between(from, to)
				q.Fields = swings.Fields()
				whole, err := store.ReadHourly(ctx, st, q)
				if err != nil {
					t.Fatal(err)
				}
				for _, perSite := range []bool{true, false} {
					got, err := swings.Read(ctx, st, q, cfg.SwingsOptions(from, to, 3), perSite)
					if err != nil {
						t.Fatalf("case %d: Swings: %v", n, err)
					}
					if want := swings.Build(whole, cfg.SwingsOptions(from, to, 3), perSite); !reflect.DeepEqual(got, want) {
						t.Fatalf("case %d (perSite %v, %d sites): Swings differs from Swings of the records read whole", n, perSite, len(sites))
					}
				}
				if err := st.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// Swings reads a store that streams an answer in time order once, and
// builds swings.Build's report from it; when the read fails (a 500, or an
// answer that goes back in time, which InfluxDB's raw selects never do) it
// returns the store's error, not a report of nothing. answers says how the
// fake InfluxDB answers each read of queue_hourly in turn: "ok" (in time
// order), "back" (going back in time), "fail" (a 500).
func TestSwingsReadsOnceAndFails(t *testing.T) {
	cfg := swingsConfig(t, "UTC", [][2]string{{"a", "free"}})
	ctx := context.Background()
	h0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	from, to := h0, h0.Add(2*time.Hour) // one piece
	for _, c := range []struct {
		name    string
		answers []string
		reads   int  // reads of queue_hourly Swings sends
		fails   bool // Swings returns the store's error
	}{
		{"in time order: one read", []string{"ok"}, 1, false},
		{"the streamed read fails", []string{"fail"}, 1, true},
		{"back in time", []string{"back"}, 1, true},
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
			got, err := swings.Read(ctx, st, q, cfg.SwingsOptions(from, to, 1), true)
			if n := reads.Load(); n != int64(c.reads) {
				t.Errorf("Swings sent %d reads of queue_hourly; want %d", n, c.reads)
			}
			if c.fails {
				if err == nil || !strings.Contains(err.Error(), map[bool]string{true: "not in time order", false: "engine on fire"}[c.answers[0] == "back"]) || got != nil {
					t.Errorf("Swings = %v, %v; want no report and the store's error", got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Swings: %v", err)
			}
			recs := []store.Hourly{
				{Lane: "a", Kind: "free", Hour: h0, WorstQueueS: 40, Samples: 3},
				{Lane: "a", Kind: "free", Hour: h0.Add(time.Hour), WorstQueueS: 2, Samples: 3},
			}
			if want := swings.Build(recs, cfg.SwingsOptions(from, to, 1), true); !reflect.DeepEqual(got, want) {
				t.Errorf("Swings = %+v; want Build of the records %+v", got, want)
			}
			if got.Records != 2 {
				t.Errorf("Swings' report counts %d records; want 2", got.Records)
			}
		})
	}
}
