package e2e

import (
	"context"
	"fmt"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/influxtest"
	"github.com/lanewatch/lanewatch/internal/lanesim"
	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/sampler/shard"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/influx"
)

// Three samplers share one real InfluxDB: site a split in two shards, site
// b whole. Every lane gets exactly one probe point per round per site, each
// site's hourly records are the aggregate of that site's probes (no sampler
// overwrote another's), and policygen's merged and per-site files say what
// the probes say.
func TestSitesAndShardsShareOneInflux(t *testing.T) {
	if testing.Short() {
		t.Skip("three sampler daemons")
	}
	url := influxtest.URL(t)
	db := influxtest.NewDB(t, url)
	sim := simLane(t, fastSim(16))
	var lanes []laneSpec
	var names []shard.Lane
	for i := range 5 {
		n := fmt.Sprintf("l%d", i)
		lanes = append(lanes, openaiLane(n, "free", sim, ""))
		names = append(names, shard.Lane{Name: n})
	}
	dir := t.TempDir()
	config := func(name, site string) string {
		store := fmt.Sprintf("  kind: influx\n  url: %q\n  bucket: %q\n  spool: %s.spool.lp\n  dead_letter: %s.dead.lp\n", url, db+"/autogen", name, name)
		path := writeConfig(t, filepath.Join(dir, name+".yaml"), cfgSpec{store: store, lanes: lanes, policy: filepath.Join(dir, "policies")})
		return withSite(t, path, site)
	}
	type proc struct {
		site, shard string
		cfg         string
		d           *daemon
	}
	procs := []*proc{
		{site: "a", shard: "0/2", cfg: config("a0", "a")},
		{site: "a", shard: "1/2", cfg: config("a1", "a")},
		{site: "b", cfg: config("b", "b")},
	}
	// The daemons' rounds in one hour: the policies below are of the hour
	// of the last probe, and a site or shard whose rounds all ended before
	// its turn has no sample there: its lanes' policy is not what the
	// test counts of that hour.
	awayHourEdge(t, time.Minute)
	for _, p := range procs {
		args := []string{"-config", p.cfg, "-log-format", "json"}
		if p.shard != "" {
			args = append(args, "-shard", p.shard)
		}
		p.d = startDaemon(t, bin("sampler"), args, nil)
	}
	for _, p := range procs {
		for range 3 {
			p.d.waitLine(t, `"round stored"`, 20*time.Second)
		}
	}
	for _, p := range procs {
		_ = p.d.cmd.Process.Signal(syscall.SIGTERM)
	}
	rounds := map[*proc]int{}
	for _, p := range procs {
		if code := p.d.wait(t, 30*time.Second); code != 0 {
			t.Fatalf("sampler %s %s exited %d:\n%s", p.site, p.shard, code, p.d.Stderr())
		}
		rounds[p] = strings.Count(p.d.Stderr(), `"round stored"`)
	}

	st, err := influx.Open(context.Background(), influx.Options{URL: url, Bucket: db + "/autogen"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := store.Window{From: time.Now().Add(-2 * time.Hour), To: time.Now().Add(time.Minute)}
	probes, err := store.ReadProbes(context.Background(), st, store.Query{Windows: []store.Window{w}})
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{} // site/lane → probe points
	for _, p := range probes {
		count[p.Site+"/"+p.Lane]++
	}
	for _, l := range names {
		var a *proc
		for _, p := range procs[:2] {
			var idx, n int
			fmt.Sscanf(p.shard, "%d/%d", &idx, &n)
			if shard.Of(shard.Key(l.Name, ""), n) == idx {
				a = p
			}
		}
		if got, want := count["a/"+l.Name], rounds[a]; got != want {
			t.Errorf("site a lane %s: %d probe points, want %d (one per round of shard %s)", l.Name, got, want, a.shard)
		}
		if got, want := count["b/"+l.Name], rounds[procs[2]]; got != want {
			t.Errorf("site b lane %s: %d probe points, want %d (one per round)", l.Name, got, want)
		}
	}
	for _, site := range []string{"a", "b"} {
		bad, err := store.Check(context.Background(), st, time.UTC, w, []string{site})
		if err != nil || len(bad) != 0 {
			t.Errorf("site %s: hourly records that are not the aggregate of the site's probes: %v %v", site, bad, err)
		}
	}

	// The hour of the last probe, and what its probes say, per site.
	var last time.Time
	for _, p := range probes {
		if p.Time.After(last) {
			last = p.Time
		}
	}
	h := store.HourStart(last, time.UTC)
	worst := map[string]float64{} // site/lane and "*/lane" → worst queue in h
	samples := map[string]int{}
	for _, p := range probes {
		if !store.HourStart(p.Time, time.UTC).Equal(h) {
			continue
		}
		for _, k := range []string{p.Site + "/" + p.Lane, "*/" + p.Lane} {
			worst[k] = math.Max(worst[k], p.QueueS)
			samples[k]++
		}
	}
	for _, view := range []struct{ flag, key string }{{"", "*"}, {"a", "a"}, {"b", "b"}} {
		args := []string{"-config", procs[2].cfg, "-hour", store.HourLabel(h, time.UTC), "-print"}
		if view.flag != "" {
			args = append(args, "-site", view.flag)
		}
		out := run(t, invocation{bin: "policygen", args: args}).want(t, 0).stdout
		f, err := policy.ParseFile([]byte(out[strings.Index(out, "\n")+1:]))
		if err != nil {
			t.Fatalf("policy (site %q): %v\n%s", view.flag, err, out)
		}
		wantSites := []string{"a", "b"}
		if view.flag != "" {
			wantSites = []string{view.flag}
		}
		if fmt.Sprint(f.Sites) != fmt.Sprint(wantSites) {
			t.Errorf("view %q: sites %v, want %v", view.flag, f.Sites, wantSites)
		}
		for _, l := range f.Lanes {
			k := view.key + "/" + l.Name
			want := math.Ceil(worst[k]*100-1e-6) / 100
			if l.NextQueueS != want || l.Samples != samples[k] || !l.Eligible {
				t.Errorf("view %q lane %s: next_queue_s %v samples %d eligible %v; the probes say %v (%d samples, all ok)",
					view.flag, l.Name, l.NextQueueS, l.Samples, l.Eligible, want, samples[k])
			}
		}
	}
}

// withSite adds `site: NAME` to a written config.
func withSite(t *testing.T, path, site string) string {
	t.Helper()
	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append([]byte("site: "+site+"\n"), body...), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Issue 28: two sampler daemons whose configs list different sites
// (fra1: [fra1, iad1], iad1: [fra1, iad1, sgp1]) against one real
// InfluxDB share one account quota but cannot agree on its slots. Each
// reads the other's heartbeat, logs once, at error level, which site
// lists which, and from then on neither sends a request of the group,
// though their rounds go on.
func TestSitesThatDisagreeStopAndSayOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("two sampler daemons")
	}
	url := influxtest.URL(t)
	db := influxtest.NewDB(t, url)
	sim := lanesim.New(fastSim(8))
	t.Cleanup(sim.Close)
	lane := &countingLane{sim: sim.Handler(), n: map[string]int{}}
	srv := httptest.NewServer(lane)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	config := func(site string, sites []string) string {
		store := fmt.Sprintf("  kind: influx\n  url: %q\n  bucket: %q\n  spool: %s.spool.lp\n  dead_letter: %s.dead.lp\n", url, db+"/autogen", site, site)
		path := writeConfig(t, filepath.Join(dir, site+".yaml"), cfgSpec{store: store, schedule: "@every 2s", timeout: "2s",
			lanes: []laneSpec{openaiLane("l0", "free", srv.URL+"/"+site, ""), openaiLane("l1", "free", srv.URL+"/"+site, "")}})
		body, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// 2-second slots: each site owns some of its rounds' slots.
		text := fmt.Sprintf("site: %s\nsites: [%s]\nquotas:\n  - {name: g, probes_per_day: 43200}\n", site, strings.Join(sites, ", ")) +
			strings.NewReplacer("model: m-l0\n", "model: m-l0\n    quota: g\n", "model: m-l1\n", "model: m-l1\n    quota: g\n").Replace(string(body))
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	args := func(cfg string) []string { return []string{"-config", cfg, "-log-format", "json"} }
	fra1 := startDaemon(t, bin("sampler"), args(config("fra1", []string{"fra1", "iad1"})), nil)
	// fra1 alone probes the group in its slots.
	for i := 0; lane.count("fra1") == 0; i++ {
		if i == 10 {
			t.Fatalf("fra1 alone sent no request of the group in 10 rounds:\n%s", fra1.Stderr())
		}
		fra1.waitLine(t, `"msg":"round stored"`, 20*time.Second)
	}
	iad1 := startDaemon(t, bin("sampler"), args(config("iad1", []string{"fra1", "iad1", "sgp1"})), nil)
	for _, c := range []struct {
		d            *daemon
		other, lists string
	}{{iad1, "fra1", "fra1,iad1"}, {fra1, "iad1", "fra1,iad1,sgp1"}} {
		line := c.d.waitLine(t, `"msg":"sites disagree`, 20*time.Second)
		if logField(t, line, "level") != "ERROR" || logField(t, line, "other_site") != c.other || logField(t, line, "other_sites") != c.lists {
			t.Errorf("the sites line names %s listing %s, want %s listing %s: %s", logField(t, line, "other_site"), logField(t, line, "other_sites"), c.other, c.lists, line)
		}
	}
	sent := map[string]int{"fra1": lane.count("fra1"), "iad1": lane.count("iad1")}
	for _, d := range []*daemon{fra1, iad1} {
		for range 3 {
			d.waitLine(t, `"msg":"round stored"`, 20*time.Second)
		}
	}
	for site, n := range sent {
		if got := lane.count(site); got != n {
			t.Errorf("%s sent %d requests of the group after the sites found they disagree", site, got-n)
		}
	}
	for _, d := range []*daemon{fra1, iad1} {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		if code := d.wait(t, 30*time.Second); code != 0 {
			t.Fatalf("sampler exited %d:\n%s", code, d.Stderr())
		}
		if n := strings.Count(d.Stderr(), `"msg":"sites disagree`); n != 1 {
			t.Errorf("the sites line was logged %d times, want once:\n%s", n, d.Stderr())
		}
		if n := strings.Count(d.Stderr(), `"msg":"sites agree`); n != 0 {
			t.Errorf("the sites were said to agree %d times:\n%s", n, d.Stderr())
		}
	}
}
