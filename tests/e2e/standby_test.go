package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/influxtest"
	"github.com/lanewatch/lanewatch/internal/lanesim"
	"github.com/lanewatch/lanewatch/sampler/shard"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/influx"
)

// countingLane is a stand-in lane that counts the requests each sampler
// sends (each config points at its own path prefix).
type countingLane struct {
	sim http.Handler
	mu  sync.Mutex
	n   map[string]int
}

func (c *countingLane) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	who, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	c.mu.Lock()
	c.n[who]++
	c.mu.Unlock()
	r.URL.Path = "/" + rest
	c.sim.ServeHTTP(w, r)
}

func (c *countingLane) count(who string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[who]
}

// Issue 21, a shard runs once: two sampler daemons of shard 1/2 at one site
// against one real InfluxDB, the second started after the first's first
// round. Only the first probes; the second stands by (an error line per
// round naming the first, /healthz 503 with the reason, lanewatch_standby
// 1). Killed, the first stops writing heartbeats; the second takes over at
// its round two intervals after the first's last heartbeat (a heartbeat is
// live for two intervals less a quarter: duty.Lifetime).
// Afterwards no lane-hour disagrees with its probes (rollup -check).
func TestShardRunsOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("two sampler daemons")
	}
	url := influxtest.URL(t)
	db := influxtest.NewDB(t, url)
	sim := lanesim.New(fastSim(16))
	t.Cleanup(sim.Close)
	lane := &countingLane{sim: sim.Handler(), n: map[string]int{}}
	srv := httptest.NewServer(lane)
	t.Cleanup(srv.Close)

	const interval = time.Second // @every 1s, jitter 0s
	dir := t.TempDir()
	var owned []string
	config := func(name string) string {
		var lanes []laneSpec
		for i := range 6 {
			n := fmt.Sprintf("l%d", i)
			lanes = append(lanes, openaiLane(n, "free", srv.URL+"/"+name, ""))
			if name == "a" && shard.Of(shard.Key(n, ""), 2) == 1 {
				owned = append(owned, n)
			}
		}
		storePath := fmt.Sprintf("  kind: influx\n  url: %q\n  bucket: %q\n  spool: %s.spool.lp\n  dead_letter: %s.dead.lp\n", url, db+"/autogen", name, name)
		path := writeConfig(t, filepath.Join(dir, name+".yaml"), cfgSpec{store: storePath, lanes: lanes, timeout: "2s"})
		return withSite(t, path, "eu")
	}
	cfgA, cfgB := config("a"), config("b")
	if len(owned) == 0 {
		t.Fatal("shard 1/2 owns none of the lanes")
	}
	args := func(cfg string) []string {
		return []string{"-config", cfg, "-shard", "1/2", "-log-format", "json", "-listen", "127.0.0.1:0"}
	}
	a := startDaemon(t, bin("sampler"), args(cfgA), nil)
	addrA := logField(t, a.waitLine(t, `"serving metrics"`, 20*time.Second), "addr")
	instA := logField(t, a.waitLine(t, `"msg":"heartbeat"`, 20*time.Second), "instance")
	a.waitLine(t, `"round stored"`, 20*time.Second)

	b := startDaemon(t, bin("sampler"), args(cfgB), nil)
	addrB := logField(t, b.waitLine(t, `"serving metrics"`, 20*time.Second), "addr")
	instB := logField(t, b.waitLine(t, `"msg":"heartbeat"`, 20*time.Second), "instance")
	for range 3 {
		line := b.waitLine(t, `"level":"ERROR"`, 20*time.Second)
		if !strings.Contains(line, "standby: instance "+instA) || logField(t, line, "active_instance") != instA {
			t.Fatalf("b's standby line does not name a (%s): %s", instA, line)
		}
	}
	if code, body := get(t, addrB, "/healthz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "standby: instance "+instA) {
		t.Errorf("b /healthz: %d %q; want 503 naming a", code, body)
	}
	if code, body := get(t, addrA, "/healthz"); code != http.StatusOK {
		t.Errorf("a /healthz: %d %q; want 200", code, body)
	}
	if g := gauge(t, addrB, `lanewatch_standby{shard="1/2",site="eu"}`); g != "1" {
		t.Errorf("b lanewatch_standby %q, want 1", g)
	}
	if g := gauge(t, addrA, `lanewatch_standby{shard="1/2",site="eu"}`); g != "0" {
		t.Errorf("a lanewatch_standby %q, want 0", g)
	}
	if n := lane.count("b"); n != 0 {
		t.Fatalf("b on standby sent %d requests", n)
	}
	if n := lane.count("a"); n < 2*len(owned) {
		t.Fatalf("a sent %d requests in its rounds, want at least %d", n, 2*len(owned))
	}

	// Kill a right after a round, so that none of its probes is in flight.
	a.drain()
	a.waitLine(t, `"round stored"`, 20*time.Second)
	_ = a.cmd.Process.Signal(syscall.SIGKILL)
	killed := time.Now()
	a.wait(t, 10*time.Second)
	sentByA := lane.count("a")
	if n := lane.count("b"); n != 0 {
		t.Fatalf("b on standby sent %d requests before a was killed", n)
	}
	b.drain()
	b.waitLine(t, `"msg":"resuming`, 20*time.Second)
	b.waitLine(t, `"round stored"`, 20*time.Second)
	b.waitLine(t, `"round stored"`, 20*time.Second)
	if lane.count("b") == 0 {
		t.Fatal("b resumed but sent no request")
	}
	if code, body := get(t, addrB, "/healthz"); code != http.StatusOK {
		t.Errorf("b /healthz after the takeover: %d %q", code, body)
	}
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	if code := b.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("b exited %d:\n%s", code, b.Stderr())
	}

	st, err := influx.Open(context.Background(), influx.Options{URL: url, Bucket: db + "/autogen"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := store.Window{From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Minute)}
	beats, err := store.ReadHeartbeats(context.Background(), st, store.Query{Windows: []store.Window{w}, Sites: []string{"eu"}})
	if err != nil {
		t.Fatal(err)
	}
	var lastA time.Time
	var roundsB []time.Time // b's round starts: each round writes its heartbeat at its start
	for _, hb := range beats {
		if hb.Instance == instA && hb.Time.After(lastA) {
			lastA = hb.Time
		}
		if hb.Instance == instB {
			roundsB = append(roundsB, hb.Time)
		}
		if hb.Shard != "1/2" || (hb.Instance != instA && hb.Instance != instB) {
			t.Errorf("a heartbeat of neither sampler: %+v", hb)
		}
	}
	slices.SortFunc(roundsB, time.Time.Compare)
	// b's takeover round starts when its first probe is booked: the first
	// probe after a was killed (a was killed after its round was stored,
	// so every probe of a's is booked before; under load a's bookings can
	// come more than half an interval after its heartbeat).
	probes, err := store.ReadProbes(context.Background(), st, store.Query{Windows: []store.Window{w}})
	if err != nil {
		t.Fatal(err)
	}
	var resumed time.Time
	for _, p := range probes {
		if p.Time.After(killed) && (resumed.IsZero() || p.Time.Before(resumed)) {
			resumed = p.Time
		}
	}
	// The round that booked it began at b's last heartbeat before it; the
	// round before that stood by. The booking comes after the round's
	// heartbeat write and reads, which on a loaded machine take hundreds
	// of milliseconds, so the rule is checked at the round starts, where
	// b decided: exact, whatever the load.
	var took, stood time.Time
	for _, r := range roundsB {
		if !r.After(resumed) {
			stood, took = took, r
		}
	}
	if took.IsZero() || stood.IsZero() {
		t.Fatalf("b's heartbeats %v: no round that resumed at %v and one before it", roundsB, resumed)
	}
	// b stands by while a's last heartbeat is live and probes at its
	// first round after: on one schedule, the round two intervals after
	// a's last (a heartbeat is live for two intervals less a quarter,
	// written out here rather than taken from duty.Lifetime, so that a
	// wrong lifetime fails).
	life := 2*interval - interval/4
	gap := took.Sub(lastA)
	if gap < life {
		t.Errorf("b resumed at its round %s after a's last heartbeat, while that heartbeat was live (%s)", gap, life)
	}
	if g := stood.Sub(lastA); g >= life {
		t.Errorf("b stood by at its round %s after a's last heartbeat, which was stale after %s", g, life)
	}
	if d := took.Sub(stood); d > interval+interval/2 {
		t.Errorf("b's round that resumed began %s after the one before it; want one interval (%s)", d, interval)
	}
	// Two intervals after the kill, or three when a's last round began
	// more than a quarter interval later after its tick than b's did (a
	// loaded machine can do that; b then rightly stands by once more).
	// Which of the two is the rule's call, checked exactly above.
	tookOver := took.Sub(killed)
	if tookOver > 3*interval {
		t.Errorf("b took over %s after a was killed; want within two intervals (%s), three on a loaded machine", tookOver, interval)
	}
	t.Logf("a sent %d requests; b's takeover round began %s after the kill, %s after a's last heartbeat, and booked its first probe %s after that",
		sentByA, tookOver.Round(time.Millisecond), gap.Round(time.Millisecond), resumed.Sub(took).Round(time.Millisecond))

	res := run(t, invocation{bin: "sampler", args: []string{"rollup", "-config", cfgB, "-days", "1", "-check"}})
	if res.code != 0 {
		t.Fatalf("rollup -check after the overlap: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
}

// logField returns a string field of a JSON log line.
func logField(t *testing.T, line, key string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("log line %q: %v", line, err)
	}
	s, _ := m[key].(string)
	if s == "" {
		t.Fatalf("log line %q has no %s", line, key)
	}
	return s
}

// get fetches path from a daemon's -listen address.
func get(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// gauge reads one unlabelled metric's value from /metrics.
func gauge(t *testing.T, addr, name string) string {
	t.Helper()
	_, body := get(t, addr, "/metrics")
	for _, l := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			return v
		}
	}
	t.Fatalf("/metrics has no %s", name)
	return ""
}

// Issue 28: one forged or corrupt sampler_heartbeat point of the shard and
// site in a real InfluxDB (interval_s 5e9, a start an hour ago: its
// lifetime was 277 years) held a sampler daemon on standby for as long as
// its rounds read the point. The daemon now probes from its first round
// and says once, not at every round, that it ignores the point, naming
// its instance and why; so for one stamped far ahead of its clock.
func TestForgedHeartbeatIgnoredOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("a sampler daemon")
	}
	url := influxtest.URL(t)
	db := influxtest.NewDB(t, url)
	sim := simLane(t, fastSim(4))
	dir := t.TempDir()
	storePath := fmt.Sprintf("  kind: influx\n  url: %q\n  bucket: %q\n  spool: spool.lp\n  dead_letter: dead.lp\n", url, db+"/autogen")
	cfg := withSite(t, writeConfig(t, filepath.Join(dir, "c.yaml"), cfgSpec{store: storePath, lanes: []laneSpec{openaiLane("l0", "free", sim, "")}, timeout: "2s"}), "eu")

	st, err := influx.Open(context.Background(), influx.Options{URL: url, Bucket: db + "/autogen"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	for _, b := range []store.Heartbeat{
		{Instance: "forged", Shard: "0/1", Site: "eu", Time: now, Host: "nowhere", StartNS: now.Add(-time.Hour).UnixNano(), IntervalS: 5e9},
		{Instance: "ahead", Shard: "0/1", Site: "eu", Time: now.Add(10 * time.Minute), Host: "nowhere", StartNS: now.Add(-time.Hour).UnixNano(), IntervalS: 1},
	} {
		if err := st.Write(context.Background(), store.Batch{Heartbeats: []store.Heartbeat{b}}); err != nil {
			t.Fatal(err)
		}
	}

	d := startDaemon(t, bin("sampler"), []string{"-config", cfg, "-log-format", "json"}, nil)
	for stored := 0; stored < 3; {
		line := d.waitLine(t, `"msg":"`, 20*time.Second)
		if strings.Contains(line, `"msg":"standby: `) {
			t.Fatalf("the daemon stands by for a forged heartbeat: %s", line)
		}
		if strings.Contains(line, `"msg":"round stored"`) {
			stored++
		}
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	if code := d.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("sampler exited %d:\n%s", code, d.Stderr())
	}
	said := map[string][]string{}
	for _, l := range lines(d.Stderr()) {
		if strings.Contains(l, `"msg":"heartbeat ignored`) {
			said[logField(t, l, "instance")] = append(said[logField(t, l, "instance")], l)
		}
	}
	for inst, why := range map[string]string{"forged": "interval_s 5e+09", "ahead": "ahead of this host's clock"} {
		if got := said[inst]; len(got) != 1 || !strings.Contains(got[0], why) || logField(t, got[0], "level") != "WARN" {
			t.Errorf("the log says of %s's heartbeat %q; want one warning saying %q", inst, got, why)
		}
	}
	if len(said) != 2 {
		t.Errorf("heartbeats ignored: %v; want forged's and ahead's alone", said)
	}
}
