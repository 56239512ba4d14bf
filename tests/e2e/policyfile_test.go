package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/store"
)

// fourLanes writes a config of three stand-in lanes (lanesim, in process)
// and one whose port is closed into dir, scheduled @every 1s, its store
// and policy.out in dir.
func fourLanes(t *testing.T, dir string) string {
	t.Helper()
	free, paid := simLane(t, fastSim(4)), simLane(t, fastSim(4))
	slow := fastSim(4)
	slow.Prefill = 300 * time.Millisecond
	return writeConfig(t, filepath.Join(dir, "lanewatch.yaml"), cfgSpec{
		storeAt: filepath.Join(dir, "samples.lp"),
		lanes: []laneSpec{openaiLane("free", "free", free, ""), openaiLane("slow", "free", simLane(t, slow), ""),
			anthropicLane("paid", "paid", paid, ""), openaiLane("down", "free", "http://"+closedPort(t), "")},
	})
}

// sampler -once writes the hour's policy file and the next hour's
// forecast, byte for byte what policygen -hour and -day write from the
// same store (one code path: policy/load, api.Folder.Write).
func TestRoundWritesWhatPolicygenWrites(t *testing.T) {
	awayHourEdge(t, 20*time.Second)
	dir := t.TempDir()
	cfg := fourLanes(t, dir)
	for range 2 {
		run(t, invocation{bin: "sampler", args: []string{"-config", cfg, "-once"}}).want(t, 0)
	}
	loc := time.UTC // the config's
	now := time.Now()
	this, next := store.HourLabel(now, loc), store.HourLabel(now.Add(time.Hour), loc)
	// Two folders: -day writes 24 files, this hour's forecast among them
	// when the next hour is the same day.
	hourOut, dayOut := filepath.Join(dir, "policygen-hour"), filepath.Join(dir, "policygen-day")
	run(t, invocation{bin: "policygen", args: []string{"-config", cfg, "-hour", this, "-out", hourOut}}).want(t, 0)
	run(t, invocation{bin: "policygen", args: []string{"-config", cfg, "-day", now.Add(time.Hour).In(loc).Format("2006-01-02"), "-out", dayOut}}).want(t, 0)
	for hour, out := range map[string]string{this: hourOut, next: dayOut} {
		mine, err := os.ReadFile(filepath.Join(dir, "policies", hour+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := os.ReadFile(filepath.Join(out, hour+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(mine, theirs) {
			t.Errorf("%s: the sampler wrote\n%s\npolicygen wrote\n%s", hour, mine, theirs)
		}
		if f, err := policy.ParseFile(mine); err != nil || len(f.Lanes) != 4 {
			t.Errorf("%s: %v, %d lanes", hour, err, len(f.Lanes))
		}
	}
}

// laneView is what one reader says of a lane: eligible and next_queue_s.
type laneView struct {
	Eligible   bool    `json:"eligible"`
	NextQueueS float64 `json:"next_queue_s"`
}

// pageRow reads a lane's row of the status page's policy table.
var pageRow = regexp.MustCompile(`<tr><td><strong>([a-z0-9_-]+)</strong></td><td>[a-z]+</td><td><span class="badge [a-z]+">(yes|no)</span></td><td>[a-z_]+</td><td class="num">([0-9.]+)</td>`)

// metricLine reads a decision gauge of /metrics.
var metricLine = regexp.MustCompile(`(?m)^lanewatch_lane_(eligible|next_queue_seconds)\{lane="([a-z0-9_-]+)"\} (\S+)$`)

// After a round of the daemon, the page, /api/v1/policy, the policy file
// and /metrics say the same of every lane (issue 31: the page computed its
// own policy, the API read a file nobody wrote). The daemon rewrites the
// file every second, so the four are read until they were read between
// two writes and the page (rendered at most 5 s before) names the file's
// write time.
func TestPageAPIFileAndMetricsAgree(t *testing.T) {
	awayHourEdge(t, 60*time.Second)
	dir := t.TempDir()
	cfg := fourLanes(t, dir)
	d := startDaemon(t, bin("sampler"), []string{"-config", cfg, "-listen", "127.0.0.1:0", "-log-format", "json"}, nil)
	addr := logField(t, d.waitLine(t, `"serving metrics"`, 20*time.Second), "addr")
	d.waitLine(t, `"round stored"`, 30*time.Second)
	path := filepath.Join(dir, "policies", store.HourLabel(time.Now(), time.UTC)+".yaml")
	deadline := time.Now().Add(60 * time.Second)
	for try := 1; ; try++ {
		before, err := os.ReadFile(path)
		fi, statErr := os.Stat(path)
		_, page := get(t, addr, "/")
		_, api := get(t, addr, "/api/v1/policy")
		_, metrics := get(t, addr, "/metrics")
		after, _ := os.ReadFile(path)
		written := ""
		if statErr == nil {
			written = `written <time class="mono" datetime="` + fi.ModTime().UTC().Format(time.RFC3339) + `"`
		}
		if err != nil || !bytes.Equal(before, after) || !strings.Contains(page, "file <code>"+path+"</code>, "+written) {
			if time.Now().After(deadline) {
				t.Fatalf("no consistent read in %d tries: file %v, page:\n%s", try, err, page)
			}
			time.Sleep(500 * time.Millisecond)
			continue
		}
		views := agreement(t, before, page, api, metrics)
		t.Logf("agreed after %d tries: %v", try, views)
		return
	}
}

// agreement checks that the page, the API's JSON and /metrics say what the
// file says of each of its lanes, and returns the file's view.
func agreement(t *testing.T, file []byte, page, api, metrics string) map[string]laneView {
	t.Helper()
	f, err := policy.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]laneView{}
	for _, l := range f.Lanes {
		want[l.Name] = laneView{l.Eligible, l.NextQueueS}
	}
	if len(want) != 4 || want["down"].Eligible || !want["free"].Eligible {
		t.Fatalf("the file has lanes %v, want the config's four, down not eligible, free eligible", want)
	}
	var doc struct {
		Lanes []struct {
			Name string `json:"name"`
			laneView
		}
	}
	if err := json.Unmarshal([]byte(api), &doc); err != nil {
		t.Fatalf("/api/v1/policy: %v\n%s", err, api)
	}
	byAPI, byPage, byMetrics := map[string]laneView{}, map[string]laneView{}, map[string]laneView{}
	for _, l := range doc.Lanes {
		byAPI[l.Name] = l.laneView
	}
	for _, m := range pageRow.FindAllStringSubmatch(page, -1) {
		q, _ := strconv.ParseFloat(m[3], 64)
		byPage[m[1]] = laneView{m[2] == "yes", q}
	}
	for _, m := range metricLine.FindAllStringSubmatch(metrics, -1) {
		v, _ := strconv.ParseFloat(m[3], 64)
		lv := byMetrics[m[2]]
		if m[1] == "eligible" {
			lv.Eligible = v == 1
		} else {
			lv.NextQueueS = v
		}
		byMetrics[m[2]] = lv
	}
	for name, got := range map[string]map[string]laneView{"the page": byPage, "/api/v1/policy": byAPI, "/metrics": byMetrics} {
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s says %v, the file %v", name, got, want)
		}
	}
	return want
}
