package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/influxtest"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
)

// secrets are the strings no command may print or write anywhere.
type secrets struct {
	suffix   string // random; part of every marker below
	laneKey  string // the lanes' API key (env LW_E2E_LANE_KEY)
	token    string // the InfluxDB token, 1.8 style user:password (env LW_E2E_INFLUX_TOKEN)
	password string // the password half of the token
	prompt   string // the configured prompt
	promptMk string // the marker inside the prompt
	gen      string // the generated text the hostile lanes stream
}

func newSecrets(t *testing.T) secrets {
	t.Helper()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	s := secrets{suffix: hex.EncodeToString(b)}
	s.laneKey = "sk-SECRET-lane-" + s.suffix // a "safe token": it passes the probe's error-type filter
	s.password = "tok-SECRET-" + s.suffix
	s.token = "lwuser:" + s.password
	s.promptMk = "PROMPTMARK-" + s.suffix
	s.prompt = "Reply with the single word ok, " + s.promptMk
	s.gen = "GENMARK-" + s.suffix
	return s
}

func (s secrets) env() []string {
	return []string{"LW_E2E_LANE_KEY=" + s.laneKey, "LW_E2E_INFLUX_TOKEN=" + s.token}
}

// needles are what the scan looks for, most specific first; the bare random
// suffix last catches a partial copy of any of them.
func (s secrets) needles() []string {
	return []string{s.laneKey, s.token, s.password, s.promptMk, s.gen, s.suffix}
}

// leakScan collects everything the commands printed and then searches it
// and every file under the output folders for the secrets.
type leakScan struct {
	outputs map[string]string // name → text
}

func (l *leakScan) add(name, text string) {
	if l.outputs == nil {
		l.outputs = map[string]string{}
	}
	for i := 0; ; i++ {
		k := name
		if i > 0 {
			k = fmt.Sprintf("%s #%d", name, i+1)
		}
		if _, dup := l.outputs[k]; !dup {
			l.outputs[k] = text
			return
		}
	}
}

func (l *leakScan) addResult(r result) {
	l.add(r.name+" (stdout)", r.stdout)
	l.add(r.name+" (stderr)", r.stderr)
}

// check fails the test for every place a needle occurs; it returns how many
// outputs and files it searched and their total size.
func (l *leakScan) check(t *testing.T, s secrets, dirs ...string) (places int, bytes int64) {
	t.Helper()
	look := func(where string, data []byte) {
		places++
		bytes += int64(len(data))
		for _, n := range s.needles() {
			if i := strings.Index(string(data), n); i >= 0 {
				lo, hi := max(i-80, 0), min(i+len(n)+80, len(data))
				t.Errorf("LEAK: %s holds %q (%d times): ...%s...", where, n, strings.Count(string(data), n), data[lo:hi])
				if n != s.suffix {
					break // the suffix is part of every needle: a second report of the same place
				}
			}
		}
	}
	for name, text := range l.outputs {
		look(name, []byte(text))
	}
	for _, d := range dirs {
		err := filepath.WalkDir(d, func(path string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.Type().IsRegular() {
				data, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				look(path, data)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return places, bytes
}

// TestSecretsNeverLeak runs every command with a lane key and an InfluxDB
// token in the environment, against stand-in lanes and hostile servers that
// echo the key, the token, the prompt and generated text back in every place
// a careless client would copy from, and then searches all output and every
// file the commands wrote. Zero hits.
func TestSecretsNeverLeak(t *testing.T) {
	sec := newSecrets(t)
	env := sec.env()
	cfgDir := t.TempDir() // configs: they hold the prompt by design, so they are not scanned
	out := t.TempDir()    // everything the commands write
	var scan leakScan

	// Lanes: two on an in-process lanesim, two on the lanesim binary (debug
	// logging), and every hostile mode in both dialects.
	sim := simLane(t, fastSim(16))
	simBin := startDaemon(t, bin("lanesim"), []string{"-listen", "127.0.0.1:0", "-addr-file", filepath.Join(out, "lanesim.addr"),
		"-log-level", "debug", "-slots", "8", "-prefill", "20ms", "-token-interval", "5ms", "-tokens", "4"}, env)
	simBinLine := simBin.waitLine(t, "lanesim started", 10*time.Second)
	simBinURL := regexp.MustCompile(`url=(\S+)`).FindStringSubmatch(simBinLine)[1]
	lanes := []laneSpec{
		openaiLane("sim-openai", "free", sim, "LW_E2E_LANE_KEY"),
		anthropicLane("sim-anthropic", "paid", sim, "LW_E2E_LANE_KEY"),
		openaiLane("bin-openai", "free", simBinURL, "LW_E2E_LANE_KEY"),
		anthropicLane("bin-anthropic", "paid", simBinURL, "LW_E2E_LANE_KEY"),
	}
	wantOutcome := map[string]string{"sim-openai": "ok", "sim-anthropic": "ok", "bin-openai": "ok", "bin-anthropic": "ok"}
	modes := map[hostileMode]string{
		echo401: "http_error", keyAsType: "http_error", typeIsPrompt: "http_error", echo429: "rate_limited",
		sseError: "stream_error", okGen: "ok", malformed: "stream_error", json200: "http_error", crossRedirct: "http_error",
	}
	var hostiles []*hostile
	for mode, outcome := range modes {
		h := newHostile(t, mode, sec.laneKey, sec.promptMk, sec.gen)
		hostiles = append(hostiles, h)
		for _, api := range []string{"openai", "anthropic"} {
			name := strings.ReplaceAll(string(mode), "_", "-") + "-" + api
			lanes = append(lanes, h.lane(name, api, "LW_E2E_LANE_KEY"))
			wantOutcome[name] = outcome
		}
	}

	fileCfg := writeConfig(t, filepath.Join(cfgDir, "file.yaml"), cfgSpec{
		prompt: sec.prompt, storeAt: filepath.Join(out, "file", "samples.lp"),
		policy: filepath.Join(out, "policies"), lanes: lanes,
	})

	// sampler -once, file store, debug logs.
	r := run(t, invocation{bin: "sampler", args: []string{"-config", fileCfg, "-once", "-log-level", "debug"}, env: env}).want(t, 0)
	scan.addResult(r)
	for name, outcome := range wantOutcome {
		if !regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(name) + `\s+\w+\s+` + outcome + `\s`).MatchString(r.stdout) {
			t.Errorf("sampler -once: lane %s: want outcome %s in the table:\n%s", name, outcome, r.stdout)
		}
	}
	for _, h := range hostiles {
		// The leak path existed: the server had the key and the prompt to echo.
		if h.sawKey.Load() == 0 || h.sawPrompt.Load() == 0 {
			t.Errorf("hostile %s: saw the key in %d and the prompt in %d of %d requests; the test proves nothing",
				h.mode, h.sawKey.Load(), h.sawPrompt.Load(), h.requests.Load())
		}
		if h.collector != nil && h.leakedToCol.Load() > 0 {
			t.Errorf("LEAK: the key followed a redirect to another origin (%d requests)", h.leakedToCol.Load())
		}
	}
	checkStoredOutcomes(t, filepath.Join(out, "file", "samples.lp"), wantOutcome)

	// sampler daemon, json logs at debug, metrics served: two rounds, then SIGTERM.
	d := startDaemon(t, bin("sampler"), []string{"-config", fileCfg, "-log-format", "json", "-log-level", "debug", "-listen", "127.0.0.1:0"}, env)
	addrLine := d.waitLine(t, `"serving metrics"`, 10*time.Second)
	var served struct{ Addr string }
	if err := json.Unmarshal([]byte(addrLine), &served); err != nil || served.Addr == "" {
		t.Fatalf("serving metrics line %q: %v", addrLine, err)
	}
	for range 2 {
		d.waitLine(t, `"msg":"round stored"`, 30*time.Second)
	}
	for _, path := range []string{"/metrics", "/healthz"} {
		scan.add("GET "+path, httpGet(t, "http://"+served.Addr+path))
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	if code := d.wait(t, 30*time.Second); code != 0 {
		t.Errorf("sampler daemon: exit %d after SIGTERM", code)
	}
	scan.add("sampler daemon (stderr)", d.Stderr())
	if !strings.Contains(d.Stderr(), `"msg":"probe failed"`) {
		t.Errorf("the daemon logged no failed probe; the hostile lanes were not exercised:\n%s", d.Stderr())
	}

	// InfluxDB: a real 1.8 server (auth off: the token is sent and ignored).
	influxURL := influxtest.URL(t)
	db := influxtest.NewDB(t, influxURL)
	influxCfg := writeConfig(t, filepath.Join(cfgDir, "influx.yaml"), cfgSpec{
		prompt: sec.prompt, store: influxStore(influxURL, db, filepath.Join(out, "influx")),
		policy: filepath.Join(out, "policies-influx"), lanes: lanes,
	})
	scan.addResult(run(t, invocation{bin: "sampler", args: []string{"-config", influxCfg, "-once"}, env: env}).want(t, 0))

	// An outage: the store opens, every write fails with a 503 that echoes
	// the token; the points go to the spool. Twice, so the replay runs too.
	down := newFakeInflux(t, "down", sec.token)
	downCfg := writeConfig(t, filepath.Join(cfgDir, "down.yaml"), cfgSpec{
		prompt: sec.prompt, store: influxStore(down.srv.URL, "lanewatch", filepath.Join(out, "down")), lanes: lanes,
	})
	for range 2 {
		r := run(t, invocation{bin: "sampler", args: []string{"-config", downCfg, "-once"}, env: env}).want(t, 0)
		scan.addResult(r)
		redacted(t, "sampler -once during an outage", r.stderr)
		if !strings.Contains(r.stdout, "wait in the spool") {
			t.Errorf("sampler -once during an outage: no spool notice on stdout:\n%s", r.stdout)
		}
	}
	spool := filepath.Join(out, "down", "spool.lp")
	if fi, err := os.Stat(spool); err != nil || fi.Size() == 0 {
		t.Fatalf("outage: spool %s not written: %v", spool, err)
	}
	if down.token.Load() == 0 {
		t.Error("the fake InfluxDB never received the token; the test proves nothing")
	}

	// A permanent refusal: 400 echoing the token; points go to the dead letter, exit 1.
	refuse := newFakeInflux(t, "refuse", sec.token)
	refuseCfg := writeConfig(t, filepath.Join(cfgDir, "refuse.yaml"), cfgSpec{
		prompt: sec.prompt, store: influxStore(refuse.srv.URL, "lanewatch", filepath.Join(out, "refuse")), lanes: lanes,
	})
	r = run(t, invocation{bin: "sampler", args: []string{"-config", refuseCfg, "-once"}, env: env}).want(t, 1)
	scan.addResult(r)
	redacted(t, "sampler -once with a refusing store", r.stderr)
	dead := filepath.Join(out, "refuse", "dead-letter.lp")
	if fi, err := os.Stat(dead); err != nil || fi.Size() == 0 {
		t.Fatalf("refusal: dead letter %s not written: %v", dead, err)
	}

	// The read check refused with a 401 echoing the token: exit 1, one line.
	deny := newFakeInflux(t, "deny", sec.token)
	denyCfg := writeConfig(t, filepath.Join(cfgDir, "deny.yaml"), cfgSpec{
		prompt: sec.prompt, store: influxStore(deny.srv.URL, "lanewatch", filepath.Join(out, "deny")), lanes: lanes,
	})
	for _, in := range []invocation{
		{bin: "sampler", args: []string{"-config", denyCfg, "-once"}},
		{bin: "policygen", args: []string{"-config", denyCfg, "-hour", time.Now().UTC().Format("2006-01-02T15")}},
	} {
		in.env = env
		r := run(t, in).want(t, 1)
		scan.addResult(r)
		if n := len(lines(r.stderr)); n != 1 {
			t.Errorf("%s with a store that denies: %d lines on stderr, want 1:\n%s", r.name, n, r.stderr)
		}
		redacted(t, r.name, r.stderr)
	}

	// sampler import: the file store, the outage's spool and the dead letter
	// into the real InfluxDB; the file store into a second file store.
	for _, f := range []string{filepath.Join(out, "file", "samples.lp"), spool, dead} {
		scan.addResult(run(t, invocation{bin: "sampler", args: []string{"import", "-config", influxCfg, f}, env: env}).want(t, 0))
	}
	copyCfg := writeConfig(t, filepath.Join(cfgDir, "copy.yaml"), cfgSpec{
		prompt: sec.prompt, storeAt: filepath.Join(out, "copy", "samples.lp"), lanes: lanes,
	})
	scan.addResult(run(t, invocation{bin: "sampler", args: []string{"import", "-config", copyCfg, filepath.Join(out, "file", "samples.lp")}, env: env}).want(t, 0))

	// policygen: an hour, a day, from the file and from InfluxDB.
	hour := time.Now().UTC().Format("2006-01-02T15")
	day := time.Now().UTC().Format("2006-01-02")
	for _, in := range []invocation{
		{bin: "policygen", args: []string{"-config", fileCfg, "-hour", hour}},
		{bin: "policygen", args: []string{"-config", fileCfg, "-day", day, "-out", filepath.Join(out, "forecast")}},
		{bin: "policygen", args: []string{"-config", influxCfg, "-print"}},
		{bin: "policygen", args: []string{"-config", influxCfg, "-day", day, "-print"}},
	} {
		in.env = env
		scan.addResult(run(t, in).want(t, 0))
	}
	policyFile := filepath.Join(out, "policies", hour+".yaml")
	if _, err := os.Stat(policyFile); err != nil {
		t.Fatalf("policygen -hour wrote no %s: %v", policyFile, err)
	}

	// policygen swings: every format, an SVG and a PNG chart, both stores.
	for _, in := range []invocation{
		{bin: "policygen", args: []string{"swings", "-config", fileCfg, "-days", "2"}},
		{bin: "policygen", args: []string{"swings", "-config", fileCfg, "-format", "csv", "-lane", "sim-openai"}},
		{bin: "policygen", args: []string{"swings", "-config", fileCfg, "-format", "json", "-svg", filepath.Join(out, "chart", "swings.svg")}},
		{bin: "policygen", args: []string{"swings", "-config", fileCfg, "-svg", filepath.Join(out, "chart", "swings.png")}},
		{bin: "policygen", args: []string{"swings", "-config", influxCfg, "-format", "json"}},
	} {
		in.env = env
		scan.addResult(run(t, in).want(t, 0))
	}
	for _, f := range []string{"swings.svg", "swings.png"} {
		if fi, err := os.Stat(filepath.Join(out, "chart", f)); err != nil || fi.Size() == 0 {
			t.Errorf("swings chart %s not written: %v", f, err)
		}
	}

	// policygen book: the policy on stdin, and the class's book from the file.
	for _, in := range []invocation{
		{bin: "policygen", args: []string{"book"}, stdin: `{"attempts":[{"queue_s":12.5,"gen_s":3,"emitted_tokens":120,"shipped":false}],` +
			`"policy":{"deadline_s":60,"ceiling_tokens":4000,"next_queue_s":20,"next_gen_s":10,"next_est_tokens":800,"paid_queue_s":1,"paid_usd_per_1k":0.002}}`},
		{bin: "policygen", args: []string{"book", "-policy", policyFile, "-class", "interactive"}, stdin: `{"attempts":[]}`},
	} {
		in.env = env
		r := run(t, in).want(t, 0)
		scan.addResult(r)
		if !strings.Contains(r.stdout, `"action"`) {
			t.Errorf("%s: no decision on stdout:\n%s", r.name, r.stdout)
		}
	}

	// The lanesim binary served probes with the key and the prompt, at debug.
	_ = simBin.cmd.Process.Signal(syscall.SIGTERM)
	if code := simBin.wait(t, 15*time.Second); code != 0 {
		t.Errorf("lanesim: exit %d after SIGTERM", code)
	}
	scan.add("lanesim (stderr)", simBin.Stderr())

	places, size := scan.check(t, sec, out)
	t.Logf("searched %d outputs and files (%d KiB) for %d needles: key, token, password, prompt, generated text, random suffix",
		places, size>>10, len(sec.needles()))
}

// checkStoredOutcomes reads the file store and checks each lane's probes
// carry the outcome the table showed: the hostile lanes were probed and
// stored, not skipped.
func checkStoredOutcomes(t *testing.T, path string, want map[string]string) {
	t.Helper()
	st, err := file.Open(path, file.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	probes, err := store.ReadProbes(context.Background(), st, store.Between(time.Unix(0, 0), time.Now().Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range probes {
		got[p.Lane] = p.Outcome
	}
	for lane, outcome := range want {
		if got[lane] != outcome {
			t.Errorf("store: lane %s outcome %q, want %q", lane, got[lane], outcome)
		}
	}
}

// redacted fails the test unless text shows a secret was blanked: the echo
// reached the output and the guard worked, so the scan proves something.
func redacted(t *testing.T, what, text string) {
	t.Helper()
	if !strings.Contains(text, "[redacted]") {
		t.Errorf("%s: no [redacted] in its output; the echo never reached it:\n%s", what, text)
	}
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(b)
}
