package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/lanesim"
	"github.com/lanewatch/lanewatch/internal/missingtool"
)

// prometheusBin is Debian's Prometheus server (package prometheus, which
// .ci/run installs).
const prometheusBin = "/usr/bin/prometheus"

// A real Prometheus scrapes a running sampler daemon every second and
// evaluates deploy/prometheus/lanewatch.rules.yml (every for: cut to 0s):
// once a lane is taken down, its rounds fail, the hour's policy file marks
// it ineligible, and LanewatchLaneIneligible fires for it, for it alone.
func TestPrometheusFiresOnALaneTakenDown(t *testing.T) {
	if testing.Short() {
		t.Skip("a sampler daemon and a Prometheus server")
	}
	if _, err := os.Stat(prometheusBin); err != nil {
		missingtool.Skip(t, "prometheus", "apt-get install prometheus", fmt.Sprintf("%v; the alert rules are not run against a sampler", err))
	}
	awayHourEdge(t, 90*time.Second) // one hour's file throughout
	dir := t.TempDir()
	up := simLane(t, fastSim(4))
	sim := lanesim.New(fastSim(4))
	t.Cleanup(sim.Close)
	doomed := httptest.NewServer(sim.Handler())
	t.Cleanup(doomed.Close)
	cfg := writeConfig(t, filepath.Join(dir, "lanewatch.yaml"), cfgSpec{
		storeAt: filepath.Join(dir, "samples.lp"), timeout: "2s",
		lanes: []laneSpec{openaiLane("up", "free", up, ""), openaiLane("doomed", "free", doomed.URL, "")},
	})
	d := startDaemon(t, bin("sampler"), []string{"-config", cfg, "-listen", "127.0.0.1:0", "-log-format", "json"}, nil)
	target := logField(t, d.waitLine(t, `"serving metrics"`, 20*time.Second), "addr")

	rules, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "prometheus", "lanewatch.rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	rules = regexp.MustCompile(`(?m)^(\s+for:) \S+$`).ReplaceAll(rules, []byte("$1 0s"))
	prom := startPrometheus(t, dir, target, rules)

	// Both lanes eligible first, as Prometheus sees them.
	waitFor(t, "both lanes eligible in Prometheus", func() (bool, string) {
		r := promQuery(t, prom, `sum(lanewatch_lane_eligible)`)
		return r == "2", r
	})
	if a := firing(t, prom, "LanewatchLaneIneligible"); len(a) > 0 {
		t.Fatalf("alerts before a lane went down: %v", a)
	}
	doomed.Close() // its next probes cannot connect
	waitFor(t, "LanewatchLaneIneligible firing for lane doomed", func() (bool, string) {
		a := firing(t, prom, "LanewatchLaneIneligible")
		return len(a) == 1 && a[0] == "doomed", strings.Join(a, "; ")
	})
}

// startPrometheus starts the Prometheus server on a free loopback port,
// with its own storage under dir, scraping target every second and
// evaluating rules every second, and returns its address.
func startPrometheus(t *testing.T, dir, target string, rules []byte) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "rules.yml"), rules, 0o644); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf(`global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}
rule_files: [%q]
scrape_configs:
  - job_name: lanewatch
    static_configs: [{targets: [%q]}]
`, filepath.Join(dir, "rules.yml"), target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	for attempt := 0; ; attempt++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		_ = l.Close()
		p := startDaemon(t, prometheusBin, []string{"--config.file=" + filepath.Join(dir, "prometheus.yml"),
			"--storage.tsdb.path=" + filepath.Join(dir, fmt.Sprintf("tsdb%d", attempt)), "--web.listen-address=" + addr}, nil)
		ready := make(chan bool, 1)
		go func() {
			for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
				select {
				case <-p.done:
					ready <- false
					return
				default:
				}
				if resp, err := http.Get("http://" + addr + "/-/ready"); err == nil {
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						ready <- true
						return
					}
				}
			}
			ready <- false
		}()
		if <-ready {
			return addr
		}
		if attempt == 2 { // the port was taken in between, thrice
			t.Fatalf("prometheus did not start:\n%s", p.Stderr())
		}
	}
}

// promQuery returns the value of an instant query that yields one sample,
// "" when it yields none.
func promQuery(t *testing.T, addr, q string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + strings.ReplaceAll(q, " ", "%20"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	if len(r.Data.Result) != 1 {
		return ""
	}
	return fmt.Sprint(r.Data.Result[0].Value[1])
}

// firing returns the lane labels of the alerts named name that Prometheus
// has firing. (Other rules may fire on a busy machine: with every for: at
// 0s, a round late by three one-second intervals is LanewatchNoRoundStored.)
func firing(t *testing.T, addr, name string) []string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/api/v1/alerts")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Data struct {
			Alerts []struct {
				Labels map[string]string `json:"labels"`
				State  string            `json:"state"`
			} `json:"alerts"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range r.Data.Alerts {
		if a.State == "firing" && a.Labels["alertname"] == name {
			out = append(out, a.Labels["lane"])
		}
	}
	return out
}

// waitFor polls cond every 500 ms until it holds, for up to 90 s (generous:
// the machine may be busy), and fails the test with the last state
// otherwise.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	for end := time.Now().Add(90 * time.Second); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		var ok bool
		if ok, last = cond(); ok {
			return
		}
	}
	t.Fatalf("no %s within 90s; last: %q", what, last)
}
