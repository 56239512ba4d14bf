package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/influxtest"
	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
)

// The whole job on both stores: sampler rounds into the embedded file,
// `sampler import` into a real InfluxDB, and policygen reading each store
// back writes the same policy, whose numbers are the stored worst.
func TestPipelineFileAndInfluxAgree(t *testing.T) {
	free := lanesimWith(t, 300*time.Millisecond)
	paid := lanesimWith(t, 40*time.Millisecond)
	dir := t.TempDir()
	lanes := []laneSpec{openaiLane("free", "free", free, ""), anthropicLane("paid", "paid", paid, "")}
	fileCfg := writeConfig(t, filepath.Join(dir, "file", "lanewatch.yaml"), cfgSpec{
		storeAt: filepath.Join(dir, "file", "samples.lp"), policy: filepath.Join(dir, "out-file"), lanes: lanes})
	url := influxtest.URL(t)
	db := influxtest.NewDB(t, url)
	influxCfg := writeConfig(t, filepath.Join(dir, "influx", "lanewatch.yaml"), cfgSpec{
		store:  fmt.Sprintf("  kind: influx\n  url: %q\n  bucket: %q\n  spool: spool.lp\n", url, db+"/autogen"),
		policy: filepath.Join(dir, "out-influx"), lanes: lanes})

	// The rounds in the hour named: across its turn the later rounds'
	// probes fall in the next hour, and the policy of this one counts
	// fewer samples, or none.
	awayHourEdge(t, 30*time.Second)
	hour := time.Now().UTC().Format("2006-01-02T15")
	for i := 0; i < 3; i++ {
		run(t, invocation{bin: "sampler", args: []string{"-config", fileCfg, "-once"}}).want(t, 0)
	}
	run(t, invocation{bin: "sampler", args: []string{"import", "-config", influxCfg, filepath.Join(dir, "file", "samples.lp")}}).want(t, 0)

	var files [2]policy.File
	var raw [2][]byte
	for i, cfg := range []string{fileCfg, influxCfg} {
		out := run(t, invocation{bin: "policygen", args: []string{"-config", cfg, "-hour", hour, "-print"}}).want(t, 0).stdout
		body := out[strings.Index(out, "\n")+1:] // drop "# wrote PATH"
		raw[i] = []byte(body)
		f, err := policy.ParseFile(raw[i])
		if err != nil {
			t.Fatalf("policy from %s: %v\n%s", cfg, err, body)
		}
		files[i] = f
	}
	if string(raw[0]) != string(raw[1]) {
		t.Fatalf("the file and InfluxDB stores gave different policies:\n--- file\n%s\n--- influx\n%s", raw[0], raw[1])
	}

	// The policy's numbers are the stored worst, rounded up to 0.01 s.
	st, err := file.Open(filepath.Join(dir, "file", "samples.lp"), file.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h, _ := time.Parse("2006-01-02T15", hour)
	probes, err := store.ReadProbes(t.Context(), st, store.Between(h, h.Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	worst := map[string]float64{}
	count := map[string]int{}
	for _, p := range probes {
		worst[p.Lane] = max(worst[p.Lane], p.QueueS)
		count[p.Lane]++
	}
	for _, l := range files[0].Lanes {
		if !l.Eligible || l.Reason != "ok" {
			t.Errorf("lane %s: eligible %v reason %s, want an eligible lane", l.Name, l.Eligible, l.Reason)
		}
		w := worst[l.Name]
		if l.NextQueueS < w || l.NextQueueS > w+0.01+1e-9 {
			t.Errorf("lane %s: next_queue_s %.2f, want the stored worst %.4f rounded up", l.Name, l.NextQueueS, w)
		}
		if l.Samples != count[l.Name] {
			t.Errorf("lane %s: samples %d, want %d probes of the hour", l.Name, l.Samples, count[l.Name])
		}
	}
	if worst["free"] < 0.3 || worst["paid"] >= worst["free"] {
		t.Errorf("stored worst queues %v do not reflect the lanes' prefill (free 300 ms, paid 40 ms)", worst)
	}
}

// awayHourEdge waits, when the next hour's turn (UTC) is closer than need,
// until just past it, so that what a test does on the real clock falls in
// one hour.
func awayHourEdge(t *testing.T, need time.Duration) {
	t.Helper()
	now := time.Now().UTC()
	next := now.Truncate(time.Hour).Add(time.Hour)
	if wait := next.Sub(now); wait < need {
		t.Logf("waiting %s for the hour's turn", wait.Round(time.Second))
		time.Sleep(wait + 2*time.Second)
	}
}

// lanesimWith starts a lanesim with plenty of slots and the given prefill.
func lanesimWith(t *testing.T, prefill time.Duration) string {
	o := fastSim(4)
	o.Prefill = prefill
	return simLane(t, o)
}
