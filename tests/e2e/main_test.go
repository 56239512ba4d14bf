// Package e2e runs the real lanewatch binaries (sampler, policygen, lanesim)
// as subprocesses against stand-in lanes, hostile servers and InfluxDB, and
// checks what crosses command boundaries: exit codes, stderr, files on disk.
//
// TestMain builds ./cmd/... once per test run with a plain `go build` (no
// -race: a race build of all three costs several times more; the soak test
// builds a -race sampler of its own). The build cost is logged by
// TestBuildCost.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/influxtest"
	"github.com/lanewatch/lanewatch/internal/lanesim"
)

var (
	binDir    string        // where TestMain put the binaries
	buildCost time.Duration // wall time of that build
	repoRoot  string        // the module root
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	repoRoot = filepath.Dir(filepath.Dir(wd))
	binDir, err = os.MkdirTemp("", "lanewatch-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(binDir)
	start := time.Now()
	if out, err := goBuild(binDir+string(filepath.Separator), "./cmd/..."); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: go build ./cmd/...: %v\n%s", err, out)
		return 1
	}
	buildCost = time.Since(start)
	code := m.Run()
	influxtest.StopShared()
	return code
}

// goBuild runs `go build -o out [flags] pkgs` in the module root.
func goBuild(out string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", append([]string{"build", "-o", out}, args...)...)
	cmd.Dir = repoRoot
	return cmd.CombinedOutput()
}

// TestBuildCost reports what TestMain's build cost, and checks it produced
// the three commands.
func TestBuildCost(t *testing.T) {
	for _, name := range []string{"sampler", "policygen", "lanesim"} {
		if _, err := os.Stat(bin(name)); err != nil {
			t.Errorf("binary %s missing: %v", name, err)
		}
	}
	t.Logf("go build ./cmd/... took %s (plain build, once per test run)", buildCost.Round(time.Millisecond))
}

func bin(name string) string { return filepath.Join(binDir, name) }

// result is what one command run left behind.
type result struct {
	name           string // for messages and the leak scan
	stdout, stderr string
	code           int
}

// invocation describes one command run.
type invocation struct {
	bin     string   // sampler | policygen | lanesim
	args    []string // after the binary
	env     []string // added to os.Environ()
	stdin   string
	timeout time.Duration // default 60 s
}

func (in invocation) String() string { return in.bin + " " + strings.Join(in.args, " ") }

// run runs the invocation to completion. A timeout fails the test.
func run(t *testing.T, in invocation) result {
	t.Helper()
	timeout := in.timeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin(in.bin), in.args...)
	cmd.Env = append(os.Environ(), in.env...)
	cmd.Stdin = strings.NewReader(in.stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := result{name: in.String(), stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%s: still running after %s\nstderr:\n%s", in, timeout, res.stderr)
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%s: %v", in, err)
	}
	return res
}

// want fails the test unless the run exited with code.
func (r result) want(t *testing.T, code int) result {
	t.Helper()
	if r.code != code {
		t.Fatalf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.name, r.code, code, r.stdout, r.stderr)
	}
	return r
}

// lines splits s into its non-empty lines.
func lines(s string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != "" {
			out = append(out, sc.Text())
		}
	}
	return out
}

// simLane starts an in-process lanesim and returns its URL (the server root).
func simLane(t *testing.T, o lanesim.Options) string {
	t.Helper()
	sim := lanesim.New(o)
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(sim.Close) // runs first: ends open streams so Close can return
	return srv.URL
}

// fastSim is a lanesim with room for n concurrent probes and short replies.
func fastSim(n int) lanesim.Options {
	o := lanesim.DefaultOptions()
	o.Slots = n
	o.Prefill = 20 * time.Millisecond
	o.TokenInterval = 5 * time.Millisecond
	o.Tokens = 4
	o.Seed = 1
	return o
}

// laneSpec is one lane of a test config.
type laneSpec struct {
	name, kind, api, url, keyEnv string
	timeout                      string // "" = the probe default of the config
}

// openaiLane and anthropicLane point a lane at a server root.
func openaiLane(name, kind, root, keyEnv string) laneSpec {
	return laneSpec{name: name, kind: kind, api: "openai", url: root + "/v1", keyEnv: keyEnv}
}

func anthropicLane(name, kind, root, keyEnv string) laneSpec {
	return laneSpec{name: name, kind: kind, api: "anthropic", url: root, keyEnv: keyEnv}
}

// cfgSpec is a test config; zero fields take test defaults.
type cfgSpec struct {
	schedule string // default "@every 1s"
	prompt   string // default "Reply with the single word: ok"
	timeout  string // probe timeout, default 10s
	store    string // YAML of the store block (indented two spaces), default file at storePath
	storeAt  string // file store path when store is ""
	policy   string // policy.out
	lanes    []laneSpec
}

// writeConfig writes the config to path and returns path.
func writeConfig(t *testing.T, path string, c cfgSpec) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "timezone: UTC\nschedule: %q\njitter: 0s\nconcurrency: 16\n", or(c.schedule, "@every 1s"))
	if c.store != "" {
		b.WriteString("store:\n" + c.store)
	} else {
		fmt.Fprintf(&b, "store:\n  kind: file\n  path: %q\n", c.storeAt)
	}
	fmt.Fprintf(&b, "probe:\n  prompt: %q\n  max_tokens: 8\n  timeout: %s\n",
		or(c.prompt, "Reply with the single word: ok"), or(c.timeout, "10s"))
	b.WriteString("lanes:\n")
	for _, l := range c.lanes {
		fmt.Fprintf(&b, "  - name: %s\n    kind: %s\n    api: %s\n    base_url: %q\n    model: m-%s\n", l.name, l.kind, l.api, l.url, l.name)
		if l.keyEnv != "" {
			fmt.Fprintf(&b, "    api_key_env: %s\n", l.keyEnv)
		}
		if l.timeout != "" {
			fmt.Fprintf(&b, "    timeout: %s\n", l.timeout)
		}
	}
	fmt.Fprintf(&b, `policy:
  out: %q
  rule: max
  lookback_days: 7
  classes:
    - {name: interactive, deadline_s: 60, ceiling_tokens: 4000, est_tokens: 800, paid_usd_per_1k: 0.002}
    - {name: batch, deadline_s: 900, ceiling_tokens: 20000, est_tokens: 4000, paid_usd_per_1k: 0.001}
`, or(c.policy, filepath.Join(filepath.Dir(path), "policies")))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// daemon is a sampler started in the background whose stderr is read line
// by line as it comes.
type daemon struct {
	cmd     *exec.Cmd
	started time.Time
	lines   chan string // stderr lines; closed at EOF

	mu     sync.Mutex
	stderr bytes.Buffer // everything read so far
	done   chan struct{}
	err    error // Wait's error, once done is closed
}

// startDaemon starts path with args and env added to os.Environ().
func startDaemon(t *testing.T, path string, args, env []string) *daemon {
	t.Helper()
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	d := &daemon{cmd: cmd, lines: make(chan string, 4096), done: make(chan struct{})}
	d.started = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pipe)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			d.mu.Lock()
			d.stderr.WriteString(sc.Text() + "\n")
			d.mu.Unlock()
			select {
			case d.lines <- sc.Text():
			default: // nobody listens: the buffer keeps it
			}
		}
		_, _ = io.Copy(io.Discard, pipe)
		close(d.lines)
		d.err = cmd.Wait()
		close(d.done)
	}()
	t.Cleanup(func() {
		select {
		case <-d.done:
		default:
			_ = cmd.Process.Kill()
			<-d.done
		}
	})
	return d
}

// drain drops the stderr lines not read yet, so that waitLine sees only
// what comes next (Stderr keeps them all).
func (d *daemon) drain() {
	for {
		select {
		case _, ok := <-d.lines:
			if !ok {
				return
			}
		default:
			return
		}
	}
}

// Stderr returns what the daemon wrote to stderr so far.
func (d *daemon) Stderr() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stderr.String()
}

// waitLine waits up to timeout for a stderr line containing sub and returns it.
func (d *daemon) waitLine(t *testing.T, sub string, timeout time.Duration) string {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case l, ok := <-d.lines:
			if !ok {
				t.Fatalf("daemon exited before logging %q:\n%s", sub, d.Stderr())
			}
			if strings.Contains(l, sub) {
				return l
			}
		case <-deadline:
			t.Fatalf("no %q within %s:\n%s", sub, timeout, d.Stderr())
		}
	}
}

// wait waits for the process to exit and returns its exit code.
func (d *daemon) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-d.done:
	case <-time.After(timeout):
		_ = d.cmd.Process.Kill()
		<-d.done
		t.Fatalf("daemon did not exit within %s:\n%s", timeout, d.Stderr())
	}
	var ee *exec.ExitError
	if errors.As(d.err, &ee) {
		return ee.ExitCode()
	}
	return 0
}
