package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/internal/cli"
	"github.com/lanewatch/lanewatch/internal/influxtest"
	"github.com/lanewatch/lanewatch/sampler"
	"github.com/lanewatch/lanewatch/sampler/budget"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
	"github.com/lanewatch/lanewatch/store/influx"
)

// sampler probe runs while another sampler holds the store's writer lock:
// the lane gets exactly one request, its row is printed as -once prints
// it, and the holder (the daemon's view) counts the probe against the
// quota group, so the next plan skips the group; a second probe of the
// group in the slot is refused with exit 4 and sends nothing unless
// -force; a real daemon run afterwards sends the group nothing more.
func TestProbeBesideTheDaemon(t *testing.T) {
	awaySlotEdge(t, 20*time.Second)
	a, hitsA := counter(t, okStream)
	b, hitsB := counter(t, okStream)
	c, hitsC := counter(t, okStream)
	dir := t.TempDir()
	cfgPath := budgetConfig(t, dir, [][2]string{{"or-a", a.URL}, {"or-b", b.URL}, {"paid", c.URL}},
		"quotas:\n  - {name: openrouter, probes_per_day: 48}\n", map[string]string{"or-a": "openrouter", "or-b": "openrouter"})
	held, err := file.Open(filepath.Join(dir, "samples.lp"), file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	probeRun := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := run(context.Background(), append([]string{"probe", "-config", cfgPath}, args...), &out, &errOut, env)
		return out.String() + errOut.String(), err
	}
	out, err := probeRun("-lane", "or-a")
	if err != nil {
		t.Fatalf("probe beside the lock holder: %v\n%s", err, out)
	}
	if hitsA.Load() != 1 || hitsB.Load() != 0 || hitsC.Load() != 0 {
		t.Fatalf("requests a, b, paid = %d, %d, %d; want 1, 0, 0", hitsA.Load(), hitsB.Load(), hitsC.Load())
	}
	for _, want := range []string{"lane", "queue_s", "or-a", " ok ", "quota openrouter: 47 probes left today"} {
		if !strings.Contains(out, want) {
			t.Errorf("probe output lacks %q:\n%s", want, out)
		}
	}

	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	o, err := cfg.SamplerOptions(held, env, config.Shard{})
	if err != nil {
		t.Fatal(err)
	}
	st := sampler.New(o).Status(context.Background())
	if !st.Healthy {
		t.Fatal(st.Problem)
	}
	var skipped []string
	for _, l := range st.Lanes {
		if l.Skip != "" {
			skipped = append(skipped, l.Name)
		}
	}
	if len(st.Groups) != 1 || st.Groups[0].Spent != 1 || !slices.Contains(skipped, "or-a") || !slices.Contains(skipped, "or-b") {
		t.Errorf("the lock holder's status after the probe: groups %+v, skipped %v; want openrouter spent 1, or-a and or-b skipped", st.Groups, skipped)
	}
	ps, err := store.ReadProbes(context.Background(), held, store.Between(time.Now().Add(-time.Hour), time.Now().Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 || ps[0].Lane != "or-a" || ps[0].Outcome != "ok" {
		t.Errorf("stored probes %+v, want one settled probe of or-a (its reservation replaced)", ps)
	}
	hs, err := store.ReadHourly(context.Background(), held, store.Between(time.Now().Add(-2*time.Hour), time.Now().Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 1 || hs[0].Lane != "or-a" || hs[0].Samples != 1 || !hs[0].Eligible {
		t.Errorf("stored hour records %+v, want or-a's hour with its one ok probe", hs)
	}

	out, err = probeRun("-lane", "or-b")
	var ee cli.ExitError
	if !errors.As(err, &ee) || ee.Code != exitSkipped || exitCode(err, &bytes.Buffer{}) != 4 {
		t.Fatalf("a second probe of the group in the slot: err %v, want exit 4\n%s", err, out)
	}
	if !strings.Contains(err.Error(), "budget is spent") || !strings.Contains(err.Error(), "-force") || hitsB.Load() != 0 {
		t.Errorf("refusal %q (or-b requests %d): want one line naming the spent budget and -force, and no request", err, hitsB.Load())
	}
	if out, err := probeRun("-lane", "or-b", "-force"); err != nil || hitsB.Load() != 1 {
		t.Fatalf("-force: err %v, or-b requests %d, want nil and 1\n%s", err, hitsB.Load(), out)
	}
	if err := held.Close(); err != nil {
		t.Fatal(err)
	}
	log := daemonFor(t, cfgPath, 2500*time.Millisecond)
	if n := hitsA.Load() + hitsB.Load(); n != 2 {
		t.Errorf("the daemon after the probes sent the group %d requests in all, want still 2 (the slot is used):\n%s", n, log)
	}
	if hitsC.Load() == 0 {
		t.Error("the daemon did not probe the unbudgeted lane")
	}
}

// sampler probe's usage errors exit 2 with one line; an unknown lane names
// the config's lanes.
func TestProbeUsage(t *testing.T) {
	dir := t.TempDir()
	cfgPath := budgetConfig(t, dir, [][2]string{{"or-a", "http://127.0.0.1:1"}, {"paid", "http://127.0.0.1:1"}}, "", nil)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-config", cfgPath, "-lane", "nope"}, `no lane "nope" in ` + cfgPath + "; its lanes: or-a, paid"},
		{[]string{"-config", cfgPath}, "-lane is required"},
		{[]string{"-lane", "or-a"}, "-config is required"},
		{[]string{"-config", cfgPath, "-lane", "or-a", "extra"}, `unexpected argument "extra"`},
	}
	for _, c := range cases {
		var stderr bytes.Buffer
		err := run(context.Background(), append([]string{"probe"}, c.args...), &bytes.Buffer{}, &bytes.Buffer{}, env)
		code := exitCode(err, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), c.want) || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("probe %q: exit %d, stderr %q; want 2 and one line with %q", c.args, code, stderr.String(), c.want)
		}
	}
}

// On InfluxDB, sampler probe runs while a daemon holds the spool's lock:
// the probe is booked and stored on the server, where the daemon's meter
// reads it. With the server down it has no spool of its own: the
// reservation cannot be written, so it sends nothing and exits 1.
func TestProbeBesideTheDaemonOnInflux(t *testing.T) {
	srv := influxtest.Start(t)
	db := srv.CreateDB(t, "lanewatch")
	free, hits := sseServer(t, 5*time.Millisecond, 2, http.StatusOK)
	dir := t.TempDir()
	cfgPath := influxConfig(t, dir, srv.URL, db, map[string]string{"free": free.URL})
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	held, err := config.OpenStore(context.Background(), cfg, config.Writer, nil, influxEnv) // the daemon's store: it locks the spool
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	probeRun := func() (string, error) {
		var out, errOut bytes.Buffer
		err := run(context.Background(), []string{"probe", "-config", cfgPath, "-lane", "free"}, &out, &errOut, influxEnv)
		return out.String() + errOut.String(), err
	}
	if out, err := probeRun(); err != nil || hits.Load() != 1 || !strings.Contains(out, " ok ") {
		t.Fatalf("probe beside the daemon: err %v, requests %d; want nil and 1\n%s", err, hits.Load(), out)
	}
	if ps := influxProbes(t, srv.URL, db); len(ps) != 1 || ps[0].Lane != "free" || ps[0].Outcome != "ok" {
		t.Fatalf("the server holds %+v, want the settled probe of free", ps)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	out, err := probeRun()
	if code := exitCode(err, &bytes.Buffer{}); code != 1 || hits.Load() != 1 {
		t.Errorf("probe with the server down: exit %d, requests %d; want 1 and still 1\n%s", code, hits.Load(), out)
	}
}

// writeFault is a reverse proxy in front of a real influxd that answers
// 503 (a load balancer without a backend) to the writes fail picks, by
// their number from 1, and passes everything else.
type writeFault struct {
	rp     *httputil.ReverseProxy
	mu     sync.Mutex
	writes int
	fail   func(n int) bool
}

func newWriteFault(t *testing.T, target string, fail func(n int) bool) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &writeFault{rp: httputil.NewSingleHostReverseProxy(u), fail: fail}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv.URL
}

func (p *writeFault) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if strings.HasSuffix(req.URL.Path, "/write") {
		p.mu.Lock()
		p.writes++
		fail := p.fail(p.writes)
		p.mu.Unlock()
		if fail {
			_, _ = io.Copy(io.Discard, req.Body)
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "<html><body><h1>503 Service Unavailable</h1></body></html>\n")
			return
		}
	}
	p.rp.ServeHTTP(w, req)
}

// Issue 28, item 3: on InfluxDB, sampler probe beside the daemon (which
// holds the spool) keeps a probe the server fails to take, as the daemon
// keeps its own: with a 503 to the write of the finished probe, the lane
// gets its one request, the row is printed and the command says where the
// probe waits (exit 0); the daemon's next write replays it, so the server
// ends with the ok probe and its hour.
func TestProbeKeepsWhatTheStoreFails(t *testing.T) {
	srv := influxtest.Start(t)
	db := srv.CreateDB(t, "lanewatch")
	free, hits := sseServer(t, 5*time.Millisecond, 2, http.StatusOK)
	dir := t.TempDir()
	failing := true
	var mu sync.Mutex
	purl := newWriteFault(t, srv.URL, func(n int) bool {
		mu.Lock()
		defer mu.Unlock()
		return failing && n == 2 // the booking goes through, the probe's write does not
	})
	cfgPath := influxConfig(t, dir, purl, db, map[string]string{"free": free.URL})
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	held, err := config.OpenStore(context.Background(), cfg, config.Writer, nil, influxEnv) // the daemon's store: it locks the spool
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	var out, errOut bytes.Buffer
	err = run(context.Background(), []string{"probe", "-config", cfgPath, "-lane", "free"}, &out, &errOut, influxEnv)
	if err != nil || hits.Load() != 1 || !strings.Contains(out.String(), " ok ") {
		t.Fatalf("probe with a 503 to its write: err %v, requests %d; want nil, 1 and the ok row\n%s%s", err, hits.Load(), out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "wait in "+filepath.Join(dir, "spool.lp")+store.InboxSuffix) {
		t.Errorf("probe output does not say where the probe waits:\n%s", out.String())
	}
	mu.Lock()
	failing = false
	mu.Unlock()
	if err := held.Write(context.Background(), store.Batch{}); err != nil { // the daemon's next write
		t.Fatal(err)
	}
	ps := influxProbes(t, srv.URL, db)
	if len(ps) != 1 || ps[0].Lane != "free" || ps[0].Outcome != "ok" {
		t.Fatalf("the server holds %+v, want the ok probe of free", ps)
	}
	direct, err := influx.Open(context.Background(), influx.Options{URL: srv.URL, Bucket: db + "/autogen"})
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	bad, err := store.Check(context.Background(), direct, cfg.Location, store.Window{From: time.Now().Add(-2 * time.Hour), To: time.Now().Add(time.Hour)}, nil)
	if err != nil || len(bad) != 0 {
		t.Errorf("hours that disagree with their probes: %v, %v", bad, err)
	}
}

// stableZone returns a zone (Etc/GMT±N) in which a group of perDay probes
// a day is in a slot now that lasts at least need more, so that processes
// started now all plan in one slot.
func stableZone(t *testing.T, perDay int, need time.Duration) string {
	t.Helper()
	now := time.Now()
	for off := -12; off <= 12; off++ {
		name := fmt.Sprintf("Etc/GMT%+d", off)
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Skip(err)
		}
		g := budget.Group{Name: "g", ProbesPerDay: perDay, Location: loc}
		s1, ok1 := budget.SlotStart(g, now)
		s2, ok2 := budget.SlotStart(g, now.Add(need))
		if ok1 && ok2 && s1.Equal(s2) && g.DayStart(now).Equal(g.DayStart(now.Add(need))) {
			return name
		}
	}
	t.Fatalf("no zone with a slot of %d a day lasting %s from now", perDay, need)
	return ""
}

// Issue 28, item 4, with processes: on the file store (holding 8 MB of
// today's probes of another lane, so that each read takes a while) and on
// InfluxDB, 2 to 8 concurrent `sampler probe` of the lanes of one quota
// group, with a `sampler -once` beside them half the time, all started
// with the group's slot unused: the group gets one request, and every
// process exits 0 (probed) or 4 (skipped: the slot is used), for budgets
// of 1 and 4 a day. The seed is printed.
func TestConcurrentProbesSpendOneSlot(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the sampler and runs it as concurrent processes")
	}
	bin := buildSampler(t)
	influxURL := influxtest.URL(t)
	for _, kind := range []string{"file", "influx"} {
		for _, perDay := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s/%d a day", kind, perDay), func(t *testing.T) {
				seed := uint64(time.Now().UnixNano())
				if s, err := strconv.ParseUint(os.Getenv("LANEWATCH_SEED"), 10, 64); err == nil {
					seed = s // a run to repeat
				}
				t.Logf("seed %d (LANEWATCH_SEED repeats it)", seed)
				rnd := rand.New(rand.NewPCG(seed, 28))
				a, hitsA := counter(t, okStream)
				b, hitsB := counter(t, okStream)
				dir := t.TempDir()
				store := "store: {kind: file, path: samples.lp}\n"
				if kind == "influx" {
					store = fmt.Sprintf("store: {kind: influx, url: %q, bucket: %q, spool: spool.lp, dead_letter: dead.lp}\n", influxURL, influxtest.NewDB(t, influxURL)+"/autogen")
				} else {
					prefill(t, filepath.Join(dir, "samples.lp"), 8<<20)
				}
				cfg := fmt.Sprintf("schedule: \"@every 1m\"\njitter: 0s\nquotas:\n  - {name: g, probes_per_day: %d, timezone: %s}\n%s", perDay, stableZone(t, perDay, 3*time.Minute), store)
				cfg += fmt.Sprintf("lanes:\n  - {name: a, kind: free, api: openai, base_url: %q, model: m, quota: g}\n  - {name: b, kind: free, api: openai, base_url: %q, model: m, quota: g}\n", a.URL, b.URL)
				cfgPath := filepath.Join(dir, "lanewatch.yaml")
				if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
					t.Fatal(err)
				}
				type proc struct {
					args []string
					cmd  *exec.Cmd
					out  bytes.Buffer
				}
				var procs []*proc
				for range 2 + rnd.IntN(7) {
					procs = append(procs, &proc{args: []string{"probe", "-config", cfgPath, "-lane", []string{"a", "b"}[rnd.IntN(2)]}})
				}
				if rnd.IntN(2) == 0 {
					procs = append(procs, &proc{args: []string{"-config", cfgPath, "-once"}})
				}
				for _, p := range procs {
					p.cmd = exec.Command(bin, p.args...)
					p.cmd.Dir = dir
					p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
				}
				for _, p := range procs {
					if err := p.cmd.Start(); err != nil {
						t.Fatal(err)
					}
				}
				var runs []string
				for _, p := range procs {
					err := p.cmd.Wait()
					code := p.cmd.ProcessState.ExitCode()
					runs = append(runs, fmt.Sprintf("%s %s: exit %d", p.args[0], p.args[len(p.args)-1], code))
					if code != 0 && !(code == exitSkipped && p.args[0] == "probe") {
						t.Errorf("%v: %v\n%s", p.args, err, p.out.String())
					}
				}
				if n := hitsA.Load() + hitsB.Load(); n != 1 {
					t.Errorf("seed %d: the group got %d requests from %d processes started in its unused slot, want 1:\n  %s", seed, n, len(procs), strings.Join(runs, "\n  "))
				}
				t.Logf("%d processes: %s", len(procs), strings.Join(runs, "; "))
			})
		}
	}
}

// prefill writes about size bytes of today's probes of a lane outside the
// config to the file store at path: what a sampler's read goes through.
func prefill(t *testing.T, path string, size int) {
	t.Helper()
	var b bytes.Buffer
	day := time.Now().UTC().Truncate(24 * time.Hour)
	for i := 0; b.Len() < size; i++ {
		at := day.Add(time.Duration(i) * time.Second)
		fmt.Fprintf(&b, "probe,kind=free,lane=elsewhere queue_s=%d.25,gen_s=1,headers_s=0.1,connect_s=0,tokens=8i,ok=true,outcome=\"ok\",status=200i %d\n", i%40, at.UnixNano())
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
