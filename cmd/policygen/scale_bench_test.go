package main

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/influxtest"
)

// The scale data set: 1,000 lanes probed from 3 sites for 30 days into one
// InfluxDB database, three probes an hour each (6.48 M probe points) and
// the hourly records (2.16 M points), ending at scaleEnd. Generated once per
// server into the database lanewatch_scale_v1 and kept there (drop it to
// regenerate).
const (
	scaleLanes = 1000
	scaleDays  = 30
	scaleDB    = "lanewatch_scale_v1"
)

var (
	scaleSites = []string{"fra1", "iad1", "sin1"}
	scaleEnd   = time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
)

// scaleConfig writes a config for the data set and returns its path.
func scaleConfig(tb testing.TB, base string) string {
	tb.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "timezone: UTC\nstore:\n  kind: influx\n  url: %q\n  bucket: %s/autogen\n  spool: spool.lp\n  timeout: 5m\nlanes:\n", base, scaleDB)
	for i := range scaleLanes {
		kind := "free"
		if i%5 == 4 {
			kind = "paid"
		}
		fmt.Fprintf(&b, "  - {name: lane-%04d, kind: %s, api: openai, base_url: \"http://127.0.0.1:1/v1\", model: m}\n", i, kind)
	}
	b.WriteString(`policy:
  out: policies
  lookback_days: 7
  classes:
    - {name: interactive, deadline_s: 60, ceiling_tokens: 4000, est_tokens: 800, paid_usd_per_1k: 0.002}
    - {name: batch, deadline_s: 900, ceiling_tokens: 20000, est_tokens: 4000, paid_usd_per_1k: 0.001}
`)
	dir := tb.TempDir()
	p := filepath.Join(dir, "lanewatch.yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
	return p
}

// scaleSeed fills the scale database unless it holds the data set already.
func scaleSeed(tb testing.TB, base string) {
	tb.Helper()
	if resp, err := http.Get(base + "/query?q=" + url.QueryEscape(`SELECT count("samples") FROM "`+scaleDB+`"."autogen"."queue_hourly"`)); err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(body), fmt.Sprintf(",%d]", scaleLanes*len(scaleSites)*scaleDays*24)) {
			return
		}
	}
	post := func(path, body string) {
		resp, err := http.Post(base+path, "text/plain", strings.NewReader(body))
		if err != nil {
			tb.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			tb.Fatalf("%s: %s %s", path, resp.Status, msg)
		}
	}
	post("/query?q="+url.QueryEscape("DROP DATABASE "+scaleDB), "")
	post("/query?q="+url.QueryEscape("CREATE DATABASE "+scaleDB), "")
	start := time.Now()
	r := rand.New(rand.NewPCG(1, 2))
	var buf bytes.Buffer
	flush := func() {
		if buf.Len() > 0 {
			post("/write?precision=s&db="+scaleDB, buf.String())
			buf.Reset()
		}
	}
	first := scaleEnd.Add(-scaleDays * 24 * time.Hour)
	points := 0
	for h := first; h.Before(scaleEnd); h = h.Add(time.Hour) {
		for s, site := range scaleSites {
			for l := range scaleLanes {
				kind := "free"
				base := 2 + 20*math.Max(0, math.Sin(float64(h.Hour()-6)/24*2*math.Pi))
				if l%5 == 4 {
					kind, base = "paid", 0.4
				}
				worst, fails := 0.0, 0
				for i, m := range []int{7, 27, 47} {
					q := base * (0.5 + r.ExpFloat64()/2)
					ok := r.IntN(200) != 0
					if !ok {
						fails++
					} else {
						worst = math.Max(worst, q)
					}
					fmt.Fprintf(&buf, "probe,kind=%s,lane=lane-%04d,site=%s queue_s=%.3f,gen_s=0.5,headers_s=0.1,connect_s=0.01,tokens=16i,ok=%t,outcome=%q,status=200i %d\n",
						kind, l, site, q, ok, map[bool]string{true: "ok", false: "timeout"}[ok], h.Add(time.Duration(m)*time.Minute+time.Duration(s*3+i)*time.Second).Unix())
				}
				fmt.Fprintf(&buf, "queue_hourly,kind=%s,lane=lane-%04d,site=%s worst_queue_s=%.3f,worst_gen_s=0.5,min_tok_per_s=32,samples=3i,failures=%di,eligible=%t,worst_censored_s=0 %d\n",
					kind, l, site, worst, fails, fails == 0, h.Unix())
				points += 4
				if buf.Len() > 4<<20 {
					flush()
				}
			}
		}
	}
	flush()
	tb.Logf("seeded %d points (%d lanes × %d sites × %d days) in %s", points, scaleLanes, len(scaleSites), scaleDays, time.Since(start).Round(time.Second))
}

// BenchmarkPolicyHourScaleInflux runs the built policygen binary for one
// hour over the scale data set on a real InfluxDB and reports its wall time
// and peak RSS (from rusage). Budget: under 3 s and 300 MiB.
//
//	go test -run '^$' -bench PolicyHourScaleInflux -benchtime 3x -timeout 30m ./cmd/policygen
func BenchmarkPolicyHourScaleInflux(b *testing.B) {
	base := influxtest.URL(b)
	scaleSeed(b, base)
	cfg := scaleConfig(b, base)
	bin := buildPolicygen(b)
	out := b.TempDir()
	benchBinary(b, bin, "-config", cfg, "-hour", "2026-11-30T13", "-out", out)
	w, rss := runBinary(b, bin, "-config", cfg, "-hour", "2026-11-30T13", "-out", out, "-site", "iad1")
	b.Logf("policygen -hour -site iad1: %s, %d MiB", w.Round(time.Millisecond), rss/1024)
}
