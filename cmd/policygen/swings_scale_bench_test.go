package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/influxtest"
)

// swingsScaleDays returns the -days that reaches back to the first hour of
// the scale data set from now (the binary reads [now - days, now)), so the
// report covers all of its 30 days whenever the benchmark runs.
func swingsScaleDays() int {
	first := scaleEnd.Add(-scaleDays * 24 * time.Hour)
	return int(math.Ceil(time.Since(first).Hours() / 24))
}

// BenchmarkSwingsScaleInflux runs the built `policygen swings` binary over
// the scale data set (1,000 lanes × 3 sites × 30 days; swings reads the
// 2.16 M hourly records only, never the probes) on a real InfluxDB and
// reports its wall time, CPU time and peak RSS. Budget: 5 s. A JSON run
// first checks that the report counts every hourly record of the set.
//
//	go test -run '^$' -bench SwingsScaleInflux -benchtime 3x -timeout 60m ./cmd/policygen
func BenchmarkSwingsScaleInflux(b *testing.B) {
	base := influxtest.URL(b)
	scaleSeed(b, base)
	cfg := scaleConfig(b, base)
	bin := buildPolicygen(b)
	days := fmt.Sprint(swingsScaleDays())

	cmd := exec.Command(bin, "swings", "-config", cfg, "-days", days, "-format", "json")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatal(err)
	}
	wall := time.Since(t0)
	var rep struct {
		Records int `json:"records"`
		Lanes   []struct {
			Name string `json:"name"`
		} `json:"lanes"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		b.Fatalf("swings -format json: %v", err)
	}
	b.Logf("policygen swings -days %s -format json: %d records, %s (%s CPU), %d KiB output", days, rep.Records,
		wall.Round(time.Millisecond), (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Round(time.Millisecond), out.Len()/1024)
	// Sites merged, one record per lane-hour, and a column per lane and
	// site (lane@site) with each site's records: every one of the 2.16 M.
	hours := scaleDays * 24
	if want := scaleLanes*hours + scaleLanes*len(scaleSites)*hours; rep.Records != want || len(rep.Lanes) != scaleLanes*(1+len(scaleSites)) {
		b.Fatalf("swings counted %d records of %d lanes; want %d of %d (the whole data set)", rep.Records, len(rep.Lanes), want, scaleLanes*(1+len(scaleSites)))
	}

	benchBinary(b, bin, "swings", "-config", cfg, "-days", days)
	w, rss := runBinary(b, bin, "swings", "-config", cfg, "-days", days, "-site", "iad1")
	b.Logf("policygen swings -days %s -site iad1: %s, %d MiB", days, w.Round(time.Millisecond), rss/1024)
}
