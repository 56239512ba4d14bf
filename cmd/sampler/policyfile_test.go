package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/store"
)

// httpGet returns the status and body of GET http://addr+path.
func httpGet(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A round writes the policy file of the hour and the next hour's forecast
// into policy.out, and -once names them; the API of -listen answers from
// the first (issue 31: it said 404 until someone ran policygen).
func TestRoundWritesTheHourFiles(t *testing.T) {
	awaySlotEdge(t, 15*time.Second) // the round and the checks in one hour
	d, addr, _ := servingDaemon(t)
	if code, _ := httpGet(t, addr, "/api/v1/policy"); code != http.StatusNotFound {
		t.Fatalf("/api/v1/policy before any round: %d, want 404", code)
	}
	var out bytes.Buffer
	if err := d.once(context.Background(), &out, false); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	this, next := store.HourLabel(now, d.cfg.Location), store.HourLabel(now.Add(time.Hour), d.cfg.Location)
	for i, tc := range []struct{ hour, basis string }{{this, policy.BasisLive}, {next, policy.BasisForecast}} {
		path := filepath.Join(d.cfg.Policy.Out, tc.hour+".yaml")
		if !strings.Contains(out.String(), "policy file "+path+"\n") {
			t.Errorf("-once does not name %s:\n%s", path, out.String())
		}
		f, _, err := d.folder().Read(tc.hour)
		if err != nil {
			t.Fatal(err)
		}
		if f.Basis != tc.basis || len(f.Lanes) != 1 || f.Lanes[0].Name != "free" {
			t.Errorf("%s: basis %s, lanes %+v; want %s with lane free", path, f.Basis, f.Lanes, tc.basis)
		}
		if i == 0 && (f.Lanes[0].Samples != 1 || f.Lanes[0].LastSample.IsZero()) {
			t.Errorf("%s: lane free has %d samples, last %v; want the round's probe", path, f.Lanes[0].Samples, f.Lanes[0].LastSample)
		}
	}
	if code, body := httpGet(t, addr, "/api/v1/policy"); code != http.StatusOK || !strings.Contains(body, `"hour":"`+this+`"`) {
		t.Errorf("/api/v1/policy after a round: %d %s", code, body)
	}
	// At 12:30 the day's forecasts hold 12h too: the live file of 12h is
	// not replaced by its forecast, whatever the hour the test runs at.
	noon := time.Date(now.Year(), now.Month(), now.Day(), 12, 30, 0, 0, d.cfg.Location)
	if paths := d.writePolicies(context.Background(), noon); len(paths) != 2 {
		t.Fatalf("wrote %v, want the hour's file and the next", paths)
	}
	for hour, basis := range map[time.Time]string{noon: policy.BasisLive, noon.Add(time.Hour): policy.BasisForecast} {
		if f, _, err := d.folder().Read(store.HourLabel(hour, d.cfg.Location)); err != nil || f.Basis != basis {
			t.Errorf("%s: basis %q (%v), want %s", store.HourLabel(hour, d.cfg.Location), f.Basis, err, basis)
		}
	}
}

// With policy.write false a round writes no policy file, and the page says
// how to get one.
func TestPolicyWriteOff(t *testing.T) {
	ok, _ := sseServer(t, 10*time.Millisecond, 2, http.StatusOK)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "@every 1s", map[string]string{"free": ok.URL})
	data, _ := os.ReadFile(cfg)
	if err := os.WriteFile(cfg, bytes.Replace(data, []byte("{out: policies}"), []byte("{out: policies, write: false}"), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := newDaemon(context.Background(), cfg, "", mustLogger(t), env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.close)
	addr, stop, err := d.serve("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	var out bytes.Buffer
	if err := d.once(context.Background(), &out, false); err != nil {
		t.Fatal(err)
	}
	if entries, err := os.ReadDir(filepath.Join(dir, "policies")); err == nil || len(entries) > 0 || strings.Contains(out.String(), "policy file") {
		t.Errorf("policy.write false: the round wrote %v (%v):\n%s", entries, err, out.String())
	}
	_, page := httpGet(t, addr, "/")
	if !strings.Contains(page, "does not exist; the sampler writes it after each round (policy.write), policygen -config F too") {
		t.Errorf("the page does not say how to get a policy file:\n%s", page)
	}
	if _, metrics := httpGet(t, addr, "/metrics"); strings.Contains(metrics, "lanewatch_lane_eligible{") {
		t.Errorf("/metrics has decision gauges without a policy file")
	}
}

// The page and /metrics show the hour's policy file as it is on disk,
// whoever wrote it: a file made by hand, unlike anything the daemon would
// compute from its store, is what they show (no second computation), and
// the page names the file and when it was written.
func TestPageAndMetricsReadTheHourFile(t *testing.T) {
	awaySlotEdge(t, 15*time.Second)
	d, addr, _ := servingDaemon(t)
	label := store.HourLabel(time.Now(), d.cfg.Location)
	f := policy.File{
		Hour: label, Timezone: store.OrUTC(d.cfg.Location).String(), Basis: policy.BasisLive,
		Rule: policy.RuleCalibrated, Coverage: 0.95,
		Lanes: []policy.Lane{
			{Name: "free", Kind: "free", Reason: policy.ReasonProbeFailed, NextQueueS: 12.34, TokPerS: 40, Samples: 3, Failures: 1},
			{Name: "other", Kind: "paid", Eligible: true, Reason: policy.ReasonOK, NextQueueS: 0.5, TokPerS: 90, Samples: 3},
		},
		Classes: []policy.Class{{
			Name: "interactive", DeadlineS: 60, CeilingTokens: 4000, EstTokens: 800, Coverage: 0.95, Objective: policy.ObjectiveCost,
			Lanes:   []string{"other"},
			Book:    policy.BookPolicy{DeadlineS: 60, CeilingTokens: 4000, NextQueueS: 0.5, NextGenS: 8.89, NextEstTokens: 800, PaidQueueS: 0.5, PaidEligible: true, FreeLane: "free", PaidLane: "other"},
			Cutover: &policy.Cutover{AfterS: 7.5, FreeFirst: true},
		}, {
			Name: "batch", DeadlineS: 900, CeilingTokens: 4000, EstTokens: 800, Coverage: 0.95, Objective: policy.ObjectiveCost,
			Lanes:   []string{"other"},
			Book:    policy.BookPolicy{DeadlineS: 900, CeilingTokens: 4000, NextQueueS: 0.5, NextGenS: 8.89, NextEstTokens: 800, PaidQueueS: 0.5, PaidEligible: true, FreeLane: "free", PaidLane: "other"},
			Cutover: &policy.Cutover{AfterS: 3.25}, // paid first: no cut-over, whatever the figure
		}},
	}
	path, _, err := d.folder().Write(f, "")
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	_, page := httpGet(t, addr, "/")
	for _, want := range []string{
		"file <code>" + path + "</code>, written <time class=\"mono\" datetime=\"" + fi.ModTime().UTC().Format(time.RFC3339) + "\"",
		"<td>probe_failed</td><td class=\"num\">12.34</td>", "<td class=\"num\">0.50</td>",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q:\n%s", want, page)
		}
	}
	_, metrics := httpGet(t, addr, "/metrics")
	for _, want := range []string{
		`lanewatch_lane_eligible{lane="free"} 0`, `lanewatch_lane_eligible{lane="other"} 1`,
		`lanewatch_lane_next_queue_seconds{lane="free"} 12.34`, `lanewatch_lane_next_queue_seconds{lane="other"} 0.5`,
		`lanewatch_class_cutover_seconds{class="interactive"} 7.5`, `lanewatch_class_cutover_seconds{class="batch"} 0` + "\n",
		"lanewatch_policy_file_timestamp_seconds 1.",
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
