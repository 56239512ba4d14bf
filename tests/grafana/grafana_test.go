// Package grafana_test checks the Grafana dashboard lanewatch.json: every Flux
// query in it (panels and variables), with Grafana's macros replaced by
// concrete values, runs against a real InfluxDB 1.8 (Flux v0.65) holding
// points in the storage schema (docs/schema.md) and returns the expected rows.
package grafana_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	influxdb2 "github.com/influxdata/influxdb-client-go/v2"

	"github.com/lanewatch/lanewatch/internal/influxtest"
)

func TestMain(m *testing.M) {
	if err := os.Chdir("../../deploy/grafana"); err != nil {
		panic(err)
	}
	influxtest.Main(m)
}

// dashboard is the part of the Grafana JSON the test reads.
type dashboard struct {
	Panels []struct {
		ID         int    `json:"id"`
		Type       string `json:"type"`
		Title      string `json:"title"`
		Repeat     string `json:"repeat"`
		Datasource source `json:"datasource"`
		Targets    []struct {
			RefID      string `json:"refId"`
			Datasource source `json:"datasource"`
			Query      string `json:"query"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name       string  `json:"name"`
			Type       string  `json:"type"`
			Query      string  `json:"query"`
			Datasource *source `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
}

type source struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// query is one Flux query of the dashboard, by where it lives.
type query struct {
	where string // "panel 2" or "variable lane"
	flux  string
}

func load(t *testing.T) (dashboard, map[string]query) {
	t.Helper()
	raw, err := os.ReadFile("lanewatch.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("lanewatch.json: %v", err)
	}
	qs := map[string]query{}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			key := fmt.Sprintf("panel %d %s", p.ID, tg.RefID)
			qs[key] = query{where: key, flux: tg.Query}
		}
	}
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			key := "variable " + v.Name
			qs[key] = query{where: key, flux: v.Query}
		}
	}
	return d, qs
}

// TestDashboardShape checks what Grafana needs before any query runs: the
// InfluxDB data source variable everywhere, the variables the queries use,
// bounded ranges.
func TestDashboardShape(t *testing.T) {
	d, qs := load(t)
	wantKeys := []string{"panel 1 A", "panel 2 A", "panel 3 A", "variable lane", "variable site"}
	var keys []string
	for k := range qs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, wantKeys) {
		t.Fatalf("queries %v, want %v", keys, wantKeys)
	}
	ds := source{Type: "influxdb", UID: "${datasource}"}
	types := map[int]string{}
	for _, p := range d.Panels {
		types[p.ID] = p.Type
		t.Run(fmt.Sprintf("panel %d", p.ID), func(t *testing.T) {
			if p.Datasource != ds {
				t.Errorf("datasource %+v, want %+v", p.Datasource, ds)
			}
			for _, tg := range p.Targets {
				if tg.Datasource != ds {
					t.Errorf("target %s datasource %+v, want %+v", tg.RefID, tg.Datasource, ds)
				}
				if !strings.Contains(tg.Query, "range(start: v.timeRangeStart, stop: v.timeRangeStop)") {
					t.Errorf("target %s: no range over the dashboard's time range", tg.RefID)
				}
				if !strings.Contains(tg.Query, `from(bucket: "${bucket}")`) {
					t.Errorf("target %s: bucket is not the ${bucket} variable", tg.RefID)
				}
			}
		})
	}
	wantTypes := map[int]string{1: "timeseries", 2: "heatmap", 3: "state-timeline"}
	if fmt.Sprint(types) != fmt.Sprint(wantTypes) {
		t.Errorf("panel types %v, want %v", types, wantTypes)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	wantVars := map[string]string{"datasource": "datasource", "bucket": "textbox", "lane": "query", "site": "query", "utc_offset": "custom"}
	if fmt.Sprint(vars) != fmt.Sprint(wantVars) {
		t.Errorf("variables %v, want %v", vars, wantVars)
	}
}

// The test data: three whole UTC days before today, two lanes.
//
//	free: worst_queue_s = 5 + 20·[9 <= hour <= 17] + day; three probes an
//	      hour with queue_s worst-1, worst-0.5, worst; at hour 3 the first
//	      probe timed out after 120 s (ok=false), so the hour is not eligible.
//	paid: worst_queue_s = 2 every hour, always eligible.
const days = 3

func freeWorst(day, hour int) float64 {
	q := 5 + float64(day)
	if hour >= 9 && hour <= 17 {
		q += 20
	}
	return q
}

func lineProtocol(start time.Time) string {
	var b strings.Builder
	for d := range days {
		for h := range 24 {
			hour := start.Add(time.Duration(d*24+h) * time.Hour)
			for _, l := range []struct {
				lane, kind string
				worst      float64
				failAt3    bool
			}{{"free", "free", freeWorst(d, h), true}, {"paid", "paid", 2, false}} {
				failures, eligible := 0, true
				for i, minute := range []int{7, 27, 47} {
					ts := hour.Add(time.Duration(minute) * time.Minute).Unix()
					q, ok, outcome := l.worst-1+0.5*float64(i), true, "ok"
					if l.failAt3 && h == 3 && i == 0 {
						q, ok, outcome = 120, false, "timeout"
						failures, eligible = 1, false
					}
					fmt.Fprintf(&b, "probe,kind=%s,lane=%s queue_s=%g,gen_s=1.5,headers_s=0.2,tokens=12i,ok=%t,outcome=%q,status=200i %d\n",
						l.kind, l.lane, q, ok, outcome, ts)
				}
				fmt.Fprintf(&b, "queue_hourly,kind=%s,lane=%s worst_queue_s=%g,worst_gen_s=1.5,min_tok_per_s=8,samples=3i,failures=%di,eligible=%t %d\n",
					l.kind, l.lane, l.worst, failures, eligible, hour.Unix())
			}
		}
	}
	return b.String()
}

func write(t *testing.T, base, db, body string) {
	t.Helper()
	resp, err := http.Post(base+"/write?precision=s&db="+url.QueryEscape(db), "text/plain", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusNoContent {
		msg, _ := io.ReadAll(resp.Body)
		t.Fatalf("write: %s: %s", resp.Status, msg)
	}
}

// table is one result table: its columns in order and its rows.
type table struct {
	cols []string
	rows []map[string]any
}

// run runs a Flux query. influxd 1.8's Flux 0.65 has a data race in
// filter (a fatal "concurrent map writes" in values.(*object).Set, seen
// once in many runs): when the query fails because the server died, run
// restarts it on the same data and tries once more.
func run(t *testing.T, srv *influxtest.Server, flux string) []table {
	t.Helper()
	out, err := fluxQuery(srv.URL, flux)
	if err != nil && srv.Query("SHOW DATABASES") != nil {
		t.Logf("influxd died under a Flux query (%v); restarted, trying once more", err)
		srv.Restart(t)
		out, err = fluxQuery(srv.URL, flux)
	}
	if err != nil {
		t.Fatalf("query failed on InfluxDB 1.8: %v\n%s", err, flux)
	}
	return out
}

func fluxQuery(base, flux string) ([]table, error) {
	client := influxdb2.NewClient(base, "")
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := client.QueryAPI("").Query(ctx, flux)
	if err != nil {
		return nil, err
	}
	// A new table starts when the annotations change or the "table" column does.
	var out []table
	last := -1
	for res.Next() {
		if res.TableChanged() || len(out) == 0 || res.Record().Table() != last {
			var cols []string
			for _, c := range res.TableMetadata().Columns() {
				cols = append(cols, c.Name())
			}
			out = append(out, table{cols: cols})
			last = res.Record().Table()
		}
		out[len(out)-1].rows = append(out[len(out)-1].rows, res.Record().Values())
	}
	return out, res.Err()
}

var leftover = regexp.MustCompile(`\$\{|\$[a-z_]+|v\.timeRange|v\.windowPeriod`)

// substitute replaces Grafana's macros the way its Flux data source does.
func substitute(t *testing.T, flux string, vars map[string]string) string {
	t.Helper()
	for k, v := range vars {
		flux = strings.ReplaceAll(flux, k, v)
	}
	if m := leftover.FindString(flux); m != "" {
		t.Fatalf("macro %q left after substitution:\n%s", m, flux)
	}
	return flux
}

// byLane splits rows of tables grouped by lane.
func byLane(t *testing.T, tables []table) map[string]table {
	t.Helper()
	out := map[string]table{}
	for _, tb := range tables {
		lane, _ := tb.rows[0]["lane"].(string)
		if _, dup := out[lane]; dup {
			t.Fatalf("two tables for lane %q", lane)
		}
		out[lane] = tb
	}
	return out
}

func TestQueriesOnInflux18(t *testing.T) {
	_, qs := load(t)
	srv := influxtest.Start(t) // its own server: Flux 0.65 in influxd 1.8 may crash it (see run)
	base, db := srv.URL, srv.CreateDB(t, "lanewatch")
	start := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -days)
	stop := start.Add(days * 24 * time.Hour)
	write(t, base, db, lineProtocol(start))

	vars := func(offset string) map[string]string {
		return map[string]string{
			"v.timeRangeStart": start.Format(time.RFC3339),
			"v.timeRangeStop":  stop.Format(time.RFC3339),
			"v.windowPeriod":   "1h",
			"${bucket}":        db + "/autogen",
			"${lane:regex}":    "(free|paid)",
			"${site:regex}":    ".*", // All: also the points of samplers without a site
			"${utc_offset}":    offset,
		}
	}

	t.Run("variable lane lists the lanes", func(t *testing.T) {
		tables := run(t, srv, substitute(t, qs["variable lane"].flux, vars("0h")))
		var lanes []string
		for _, tb := range tables {
			for _, r := range tb.rows {
				lanes = append(lanes, fmt.Sprint(r["_value"]))
			}
		}
		slices.Sort(lanes)
		if !slices.Equal(lanes, []string{"free", "paid"}) {
			t.Errorf("lanes %v, want [free paid]", lanes)
		}
	})

	t.Run("panel 1 queue per lane, ok probes only", func(t *testing.T) {
		lanes := byLane(t, run(t, srv, substitute(t, qs["panel 1 A"].flux, vars("0h"))))
		if len(lanes) != 2 {
			t.Fatalf("got lanes %v, want free and paid", keys(lanes))
		}
		for _, lane := range []string{"free", "paid"} {
			rows := lanes[lane].rows
			if len(rows) != days*24 {
				t.Errorf("%s: %d rows, want %d (one per hour)", lane, len(rows), days*24)
			}
			for _, r := range rows {
				// aggregateWindow stamps a window with its end.
				at := r["_time"].(time.Time).Add(-time.Hour)
				i := int(at.Sub(start) / time.Hour)
				want := 2.0
				if lane == "free" {
					want = freeWorst(i/24, i%24)
				}
				if got := r["_value"].(float64); got != want {
					t.Errorf("%s %s: queue %v, want %v (max of the ok probes)", lane, at.Format("2006-01-02T15"), got, want)
				}
			}
		}
		// Hour 3 held a 120 s timeout; the panel must not show it.
		for _, r := range lanes["free"].rows {
			if v := r["_value"].(float64); v >= 100 {
				t.Errorf("failed probe's queue_s %v shown at %v", v, r["_time"])
			}
		}
	})

	t.Run("panel 2 heatmap, day by hour of day", func(t *testing.T) {
		hours := make([]string, 24)
		for h := range hours {
			hours[h] = fmt.Sprintf("%02d", h)
		}
		for _, tc := range []struct {
			offset string
			shift  int // hours
			rows   int
		}{{"0h", 0, days}, {"1h", 1, days + 1}} {
			t.Run("utc_offset "+tc.offset, func(t *testing.T) {
				lanes := byLane(t, run(t, srv, substitute(t, qs["panel 2 A"].flux, vars(tc.offset))))
				free := lanes["free"]
				var got []string
				for _, c := range free.cols {
					if len(c) == 2 && c[0] >= '0' && c[0] <= '9' {
						got = append(got, c)
					}
				}
				if !slices.Equal(got, hours) {
					t.Fatalf("hour columns %v, want 00..23 in order", got)
				}
				if len(free.rows) != tc.rows {
					t.Fatalf("%d rows (days), want %d", len(free.rows), tc.rows)
				}
				for i, r := range free.rows {
					day := r["_time"].(time.Time)
					if want := start.AddDate(0, 0, i); !day.Equal(want) {
						t.Errorf("row %d is day %v, want %v", i, day, want)
					}
					for h := range 24 {
						at := start.AddDate(0, 0, i).Add(time.Duration(h-tc.shift) * time.Hour)
						v := r[hours[h]]
						if at.Before(start) || !at.Before(stop) {
							if v != nil {
								t.Errorf("day %d hour %s: %v, want empty (no record)", i, hours[h], v)
							}
							continue
						}
						k := int(at.Sub(start) / time.Hour)
						if want := freeWorst(k/24, k%24); v != want {
							t.Errorf("day %d hour %s: %v, want %v", i, hours[h], v, want)
						}
					}
				}
				if n := len(lanes["paid"].rows); n != tc.rows {
					t.Errorf("paid: %d rows, want %d", n, tc.rows)
				}
				if v := lanes["paid"].rows[1]["12"]; v != 2.0 {
					t.Errorf("paid day 1 hour 12: %v, want 2", v)
				}
			})
		}
	})

	t.Run("panel 3 eligibility per hour", func(t *testing.T) {
		lanes := byLane(t, run(t, srv, substitute(t, qs["panel 3 A"].flux, vars("0h"))))
		for _, lane := range []string{"free", "paid"} {
			rows := lanes[lane].rows
			if len(rows) != days*24 {
				t.Fatalf("%s: %d rows, want %d", lane, len(rows), days*24)
			}
			var not []int
			for _, r := range rows {
				at := r["_time"].(time.Time)
				switch r["_value"] {
				case int64(0):
					not = append(not, int(at.Sub(start)/time.Hour))
				case int64(1):
				default:
					t.Errorf("%s %v: value %#v, want 0 or 1", lane, at, r["_value"])
				}
			}
			want := []int{}
			if lane == "free" {
				want = []int{3, 27, 51}
			}
			if !slices.Equal(not, want) {
				t.Errorf("%s: not eligible at hours %v since start, want %v", lane, not, want)
			}
		}
	})
}

// With sites: the site variable lists them, a chosen site shows only its
// points, All shows every site's and the untagged ones, and the heatmap
// counts a failed probe's known wait (worst_censored_s).
func TestSiteVariableOnInflux18(t *testing.T) {
	_, qs := load(t)
	srv := influxtest.Start(t) // its own server: Flux 0.65 in influxd 1.8 may crash it (see run)
	base, db := srv.URL, srv.CreateDB(t, "lanewatch")
	start := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -1)
	var b strings.Builder
	for i, site := range []string{"fra1", "iad1", ""} {
		tag := ""
		if site != "" {
			tag = ",site=" + site
		}
		at := start.Add(time.Duration(10+i) * time.Hour)
		fmt.Fprintf(&b, "probe,kind=free,lane=free%s queue_s=%d,gen_s=1,headers_s=0.1,connect_s=0,tokens=4i,ok=true,outcome=\"ok\",status=200i %d\n", tag, 10+i, at.Add(7*time.Minute).Unix())
		fmt.Fprintf(&b, "queue_hourly,kind=free,lane=free%s worst_queue_s=%d,worst_gen_s=1,min_tok_per_s=4,samples=1i,failures=0i,eligible=true,worst_censored_s=%d %d\n",
			tag, 10+i, 100*i, at.Unix())
	}
	write(t, base, db, b.String())
	vars := func(site string) map[string]string {
		return map[string]string{
			"v.timeRangeStart": start.Format(time.RFC3339),
			"v.timeRangeStop":  start.Add(24 * time.Hour).Format(time.RFC3339),
			"v.windowPeriod":   "1h",
			"${bucket}":        db + "/autogen",
			"${lane:regex}":    "free",
			"${site:regex}":    site,
			"${utc_offset}":    "0h",
		}
	}
	var sites []string
	for _, tb := range run(t, srv, substitute(t, qs["variable site"].flux, vars(".*"))) {
		for _, r := range tb.rows {
			sites = append(sites, fmt.Sprint(r["_value"]))
		}
	}
	slices.Sort(sites)
	if !slices.Equal(sites, []string{"fra1", "iad1"}) {
		t.Errorf("site variable lists %v, want [fra1 iad1]", sites)
	}
	count := func(site string) (series int, values []float64) {
		for _, tb := range run(t, srv, substitute(t, qs["panel 1 A"].flux, vars(site))) {
			series++
			for _, r := range tb.rows {
				values = append(values, r["_value"].(float64))
			}
		}
		slices.Sort(values)
		return series, values
	}
	if n, v := count("fra1"); n != 1 || !slices.Equal(v, []float64{10}) {
		t.Errorf("site fra1: %d series %v, want one series [10]", n, v)
	}
	if n, v := count(".*"); n != 3 || !slices.Equal(v, []float64{10, 11, 12}) {
		t.Errorf("All: %d series %v, want three (fra1, iad1, no site) [10 11 12]", n, v)
	}
	var heat []float64
	for _, tb := range run(t, srv, substitute(t, qs["panel 2 A"].flux, vars("iad1"))) {
		for _, r := range tb.rows {
			if v, ok := r["11"].(float64); ok {
				heat = append(heat, v)
			}
		}
	}
	if !slices.Equal(heat, []float64{100}) {
		t.Errorf("heatmap for iad1 at 11h: %v, want [100] (its censored wait beats its ok worst of 11)", heat)
	}
}

func keys(m map[string]table) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
