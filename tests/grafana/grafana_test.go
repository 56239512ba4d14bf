// Package grafana_test checks the Grafana dashboard lanewatch.json: every
// InfluxQL query in it (panels and variables), with Grafana's macros and
// variables filled in as its InfluxDB data source fills them, runs against
// real InfluxDB 1.8 and 1.13 servers holding points in the storage schema
// (docs/schema.md) and returns the expected series.
package grafana_test

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

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
		Repeat     string `json:"repeat"`
		Datasource source `json:"datasource"`
		Targets    []struct {
			RefID      string `json:"refId"`
			Datasource source `json:"datasource"`
			RawQuery   bool   `json:"rawQuery"`
			Query      string `json:"query"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name       string  `json:"name"`
			Type       string  `json:"type"`
			Query      string  `json:"query"`
			AllValue   string  `json:"allValue"`
			Datasource *source `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
}

type source struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// load returns the dashboard and its queries by where they live ("panel 2 A",
// "variable lane").
func load(t *testing.T) (dashboard, map[string]string) {
	t.Helper()
	raw, err := os.ReadFile("lanewatch.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("lanewatch.json: %v", err)
	}
	qs := map[string]string{}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			qs[fmt.Sprintf("panel %d %s", p.ID, tg.RefID)] = tg.Query
		}
	}
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			qs["variable "+v.Name] = v.Query
		}
	}
	return d, qs
}

// TestDashboardShape checks what Grafana needs before any query runs: the
// InfluxDB data source variable everywhere, raw InfluxQL bounded by the
// dashboard's time range, on the retention policy and in the time zone the
// variables name.
func TestDashboardShape(t *testing.T) {
	d, qs := load(t)
	wantKeys := []string{"panel 1 A", "panel 2 A", "panel 3 A", "variable lane", "variable site"}
	if keys := slices.Sorted(maps.Keys(qs)); !slices.Equal(keys, wantKeys) {
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
				if !tg.RawQuery {
					t.Errorf("target %s: rawQuery is false: Grafana would show its query builder, not the query", tg.RefID)
				}
				for _, want := range []string{"$timeFilter", `"$rp".`, "tz('$tz')", `"lane" =~ /^$lane$/`, `"site" =~ /^$site$/`} {
					if !strings.Contains(tg.Query, want) {
						t.Errorf("target %s: no %s in %s", tg.RefID, want, tg.Query)
					}
				}
			}
		})
	}
	wantTypes := map[int]string{1: "timeseries", 2: "timeseries", 3: "state-timeline"}
	if fmt.Sprint(types) != fmt.Sprint(wantTypes) {
		t.Errorf("panel types %v, want %v", types, wantTypes)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	wantVars := map[string]string{"datasource": "datasource", "rp": "textbox", "lane": "query", "site": "query", "tz": "textbox"}
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
				failures, eligible, censored := 0, true, ""
				for i, minute := range []int{7, 27, 47} {
					ts := hour.Add(time.Duration(minute) * time.Minute).Unix()
					q, ok, outcome := l.worst-1+0.5*float64(i), true, "ok"
					if l.failAt3 && h == 3 && i == 0 {
						q, ok, outcome = 120, false, "timeout"
						failures, eligible, censored = 1, false, ",worst_censored_s=120"
					}
					fmt.Fprintf(&b, "probe,kind=%s,lane=%s queue_s=%g,gen_s=1.5,headers_s=0.2,tokens=12i,ok=%t,outcome=%q,status=200i %d\n",
						l.kind, l.lane, q, ok, outcome, ts)
				}
				fmt.Fprintf(&b, "queue_hourly,kind=%s,lane=%s worst_queue_s=%g,worst_gen_s=1.5,min_tok_per_s=8,samples=3i,failures=%di,eligible=%t%s %d\n",
					l.kind, l.lane, l.worst, failures, eligible, censored, hour.Unix())
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

// series is one series of an answer: its tags and its rows, [time, value].
type series struct {
	Tags   map[string]string `json:"tags"`
	Values [][]any           `json:"values"`
}

// run runs one InfluxQL statement on database db, as Grafana's data source
// does (GET /query, epoch=ms), and returns its series.
func run(t *testing.T, base, db, q string) []series {
	t.Helper()
	resp, err := http.Get(base + "/query?" + url.Values{"db": {db}, "q": {q}, "epoch": {"ms"}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var out struct {
		Results []struct {
			Series []series `json:"series"`
			Error  string   `json:"error"`
		} `json:"results"`
		Error string `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s: %v", resp.Status, err)
	}
	if out.Error != "" || len(out.Results) != 1 || out.Results[0].Error != "" {
		t.Fatalf("query failed: %s %+v\n%s", out.Error, out.Results, q)
	}
	return out.Results[0].Series
}

// fill fills Grafana's macros and variables in as its InfluxDB (InfluxQL)
// data source does: a multi-value variable in a regex as (a|b), All as the
// variable's allValue or all its values.
func fill(t *testing.T, q string, start, stop time.Time, vars map[string]string) string {
	t.Helper()
	r := []string{"$timeFilter", fmt.Sprintf("time >= %dms and time <= %dms", start.UnixMilli(), stop.UnixMilli()-1), "$__interval", "1h"}
	for k, v := range vars {
		r = append(r, "$"+k, v)
	}
	q = strings.NewReplacer(r...).Replace(q)
	if strings.Contains(strings.NewReplacer("/^", "", "$/", "").Replace(q), "$") { // a regex's anchors stay
		t.Fatalf("a variable left after filling in:\n%s", q)
	}
	return q
}

// point is one row of a series as time and value.
func point(t *testing.T, row []any) (time.Time, any) {
	t.Helper()
	ms, ok := row[0].(float64)
	if !ok {
		t.Fatalf("row %v: time is not epoch ms", row)
	}
	return time.UnixMilli(int64(ms)).UTC(), row[1]
}

// byLane indexes series by lane, failing on two of one lane.
func byLane(t *testing.T, ss []series) map[string]series {
	t.Helper()
	out := map[string]series{}
	for _, s := range ss {
		if _, dup := out[s.Tags["lane"]]; dup {
			t.Fatalf("two series for lane %q", s.Tags["lane"])
		}
		out[s.Tags["lane"]] = s
	}
	return out
}

// servers are the InfluxDB 1.x servers the queries must run on: 1.8 (the
// one the tests build) and the newer 1.13.
func servers(t *testing.T) map[string]string {
	return map[string]string{"1.8": influxtest.URL(t), "1.13": influxtest.StartNewer(t, influxtest.Options{}).URL}
}

func TestQueries(t *testing.T) {
	_, qs := load(t)
	start := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -days)
	stop := start.Add(days * 24 * time.Hour)
	all := map[string]string{"rp": "autogen", "tz": "UTC", "lane": "(free|paid)", "site": ".*"}
	for version, base := range servers(t) {
		t.Run("InfluxDB "+version, func(t *testing.T) {
			db := influxtest.NewDB(t, base)
			write(t, base, db, lineProtocol(start))
			query := func(key string, vars map[string]string) []series {
				return run(t, base, db, fill(t, qs[key], start, stop, vars))
			}

			t.Run("variable lane lists the lanes", func(t *testing.T) {
				var lanes []string
				for _, s := range query("variable lane", all) {
					for _, r := range s.Values {
						lanes = append(lanes, fmt.Sprint(r[1]))
					}
				}
				if slices.Sort(lanes); !slices.Equal(lanes, []string{"free", "paid"}) {
					t.Errorf("lanes %v, want [free paid]", lanes)
				}
			})

			// hourly checks a panel's series: one row an hour for each lane, the
			// paid lane's at 2 s, the free lane's as free says of hour i.
			hourly := func(t *testing.T, key string, free func(i int) float64) {
				lanes := byLane(t, query(key, all))
				for _, lane := range []string{"free", "paid"} {
					rows := lanes[lane].Values
					if len(rows) != days*24 {
						t.Errorf("%s: %d rows, want %d (one per hour)", lane, len(rows), days*24)
					}
					for _, r := range rows {
						at, v := point(t, r)
						want := 2.0
						if lane == "free" {
							want = free(int(at.Sub(start) / time.Hour))
						}
						if v != want {
							t.Errorf("%s %s: %v, want %v", lane, at.Format("2006-01-02T15"), v, want)
						}
					}
				}
			}
			t.Run("panel 1 worst queue of the ok probes", func(t *testing.T) {
				hourly(t, "panel 1 A", func(i int) float64 { return freeWorst(i/24, i%24) }) // not the failed probe's 120 s at hour 3
			})
			t.Run("panel 2 the hourly records, a failed probe's wait counted", func(t *testing.T) {
				hourly(t, "panel 2 A", func(i int) float64 {
					if i%24 == 3 {
						return 120 // worst_censored_s: the timeout waited that long
					}
					return freeWorst(i/24, i%24)
				})
			})

			t.Run("panel 3 eligibility per hour", func(t *testing.T) {
				lanes := byLane(t, query("panel 3 A", all))
				for _, lane := range []string{"free", "paid"} {
					rows := lanes[lane].Values
					if len(rows) != days*24 {
						t.Fatalf("%s: %d rows, want %d", lane, len(rows), days*24)
					}
					not := []int{}
					for _, r := range rows {
						at, v := point(t, r)
						switch v {
						case false:
							not = append(not, int(at.Sub(start)/time.Hour))
						case true:
						default:
							t.Errorf("%s %v: value %#v, want true or false", lane, at, v)
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

			t.Run("tz starts the hour buckets at the zone's hours", func(t *testing.T) {
				// Asia/Kolkata is UTC+5:30: its hours start at UTC's half hours,
				// so each of its buckets holds the probes of two UTC hours.
				kolkata := map[string]string{"rp": "autogen", "tz": "Asia/Kolkata", "lane": "(free)", "site": ".*"}
				rows := byLane(t, query("panel 1 A", kolkata))["free"].Values
				if len(rows) != days*24+1 {
					t.Fatalf("%d buckets, want %d (the first and last half hours each their own)", len(rows), days*24+1)
				}
				at, _ := point(t, rows[1])
				if at.Minute() != 30 {
					t.Errorf("bucket starts at %v, want a UTC half hour", at)
				}
			})
		})
	}
}

// With sites: the site variable lists them, a chosen site shows only its
// points, All shows every site's and the untagged ones, and the hourly
// records count a failed probe's known wait (worst_censored_s).
func TestSites(t *testing.T) {
	_, qs := load(t)
	base := influxtest.URL(t)
	db := influxtest.NewDB(t, base)
	start := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -1)
	stop := start.Add(24 * time.Hour)
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
	query := func(key, site string) []series {
		vars := map[string]string{"rp": "autogen", "tz": "UTC", "lane": "free", "site": site}
		return run(t, base, db, fill(t, qs[key], start, stop, vars))
	}
	var sites []string
	for _, s := range query("variable site", ".*") {
		for _, r := range s.Values {
			sites = append(sites, fmt.Sprint(r[1]))
		}
	}
	if slices.Sort(sites); !slices.Equal(sites, []string{"fra1", "iad1"}) {
		t.Errorf("site variable lists %v, want [fra1 iad1]", sites)
	}
	values := func(key, site string) (tags []string, vs []float64) {
		for _, s := range query(key, site) {
			tags = append(tags, s.Tags["site"])
			for _, r := range s.Values {
				_, v := point(t, r)
				vs = append(vs, v.(float64))
			}
		}
		slices.Sort(tags)
		slices.Sort(vs)
		return tags, vs
	}
	for _, tc := range []struct {
		key, site string
		tags      []string
		values    []float64
	}{
		{"panel 1 A", "fra1", []string{"fra1"}, []float64{10}},
		{"panel 1 A", "(fra1|iad1)", []string{"fra1", "iad1"}, []float64{10, 11}},
		{"panel 1 A", ".*", []string{"", "fra1", "iad1"}, []float64{10, 11, 12}},
		{"panel 2 A", "iad1", []string{"iad1"}, []float64{100}}, // its censored wait beats its ok worst of 11
		{"panel 2 A", ".*", []string{"", "fra1", "iad1"}, []float64{10, 100, 200}},
	} {
		if tags, vs := values(tc.key, tc.site); !slices.Equal(tags, tc.tags) || !slices.Equal(vs, tc.values) {
			t.Errorf("%s, site %s: sites %q values %v, want %q %v", tc.key, tc.site, tags, vs, tc.tags, tc.values)
		}
	}
}
