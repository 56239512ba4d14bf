//go:build unix

package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/probe"

	"github.com/lanewatch/lanewatch/internal/missingtool"
	"github.com/lanewatch/lanewatch/internal/stalls"
	"github.com/lanewatch/lanewatch/internal/syncbuf"
)

// The server under test: @dwmkerr/mock-llm, pinned in package.json.
//
// What the test relies on, read from its source (dist/main.js, config.js,
// streaming.js at 0.1.29):
//   - HOST and PORT from the environment; "--config FILE" names a YAML file
//     that is shallow-merged over the defaults, so a file with only
//     "streaming:" keeps the default rules.
//   - The default rule for POST /v1/chat/completions echoes the last user
//     message's content as the reply (templated into a JSON string, so the
//     prompt must need no JSON escaping).
//   - With "stream": true the reply is cut into ceil(len/chunkSize) chunks
//     (at least one). The first chunk carries the role and the first piece
//     of content together; the last carries finish_reason "stop". A
//     setInterval of chunkIntervalMs writes one chunk per tick and then
//     "data: [DONE]", so the first chunk (and the response headers with it)
//     comes one interval after the request, the stream ends chunks+1
//     intervals after it, and no usage is ever sent (include_usage is
//     ignored, max_tokens too).
//   - GET /health answers {"status":"healthy"} once listening.
const (
	mockLLMPackage = "@dwmkerr/mock-llm"
	mockLLMVersion = "0.1.29"
)

// mockLLM is one running mock-llm server.
type mockLLM struct {
	baseURL string // for probe.Target.BaseURL: http://127.0.0.1:PORT/v1
}

// need skips the test when a prerequisite is missing, or fails it under CI,
// where the prerequisites are installed by .ci/run.
func need(t *testing.T, format string, args ...any) {
	t.Helper()
	missingtool.Skip(t, "node and "+mockLLMPackage, "npm ci --prefix interop", fmt.Sprintf(format, args...))
}

// mockLLMEntry finds node and the package's entry script, and checks the
// installed version is the pinned one.
func mockLLMEntry(t *testing.T) (node, entry string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		need(t, "node not found: %v", err)
	}
	dir := filepath.Join("node_modules", filepath.FromSlash(mockLLMPackage))
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		need(t, "%s not installed: %v", mockLLMPackage, err)
	}
	var pkg struct {
		Version string            `json:"version"`
		Bin     map[string]string `json:"bin"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatalf("%s/package.json: %v", mockLLMPackage, err)
	}
	if pkg.Version != mockLLMVersion {
		t.Fatalf("%s is %s, want %s: run npm ci --prefix interop", mockLLMPackage, pkg.Version, mockLLMVersion)
	}
	bin, ok := pkg.Bin["mock-llm"]
	if !ok {
		t.Fatalf("%s/package.json has no mock-llm bin", mockLLMPackage)
	}
	entry, err = filepath.Abs(filepath.Join(dir, filepath.FromSlash(bin)))
	if err != nil {
		t.Fatal(err)
	}
	return node, entry
}

// startMockLLM starts mock-llm with the given streaming pacing on a free
// loopback port and waits until it answers /health. The server's process
// group is killed when the test ends.
func startMockLLM(t *testing.T, chunkSize int, interval time.Duration) *mockLLM {
	t.Helper()
	node, entry := mockLLMEntry(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "mock-llm.yaml")
	yaml := fmt.Sprintf("streaming:\n  chunkSize: %d\n  chunkIntervalMs: %d\n", chunkSize, interval.Milliseconds())
	if err := os.WriteFile(config, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}

	// The free port is found by binding and releasing it, so another process
	// may take it first; then node exits at once and we try another.
	var lastErr error
	for range 3 {
		m, err := tryStartMockLLM(t, node, entry, config, dir)
		if err == nil {
			return m
		}
		lastErr = err
	}
	t.Fatalf("mock-llm did not start: %v", lastErr)
	return nil
}

func tryStartMockLLM(t *testing.T, node, entry, config, dir string) (*mockLLM, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	out := &syncbuf.Buffer{}
	cmd := exec.Command(node, entry, "--config", config)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOST=127.0.0.1", "PORT="+strconv.Itoa(port), "NODE_ENV=test")
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start node: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}

	base := "http://127.0.0.1:" + strconv.Itoa(port)
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-exited:
			exited <- err // for stop
			stop()
			return nil, fmt.Errorf("node exited: %v; output:\n%s", err, out.String())
		default:
		}
		if resp, err := client.Get(base + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("no answer on %s/health within 30s; output:\n%s", base, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("mock-llm output:\n%s", out.String())
		}
	})
	return &mockLLM{baseURL: base + "/v1"}, nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// TestProbeAgainstMockLLM runs the lanewatch probe against mock-llm and
// checks what it measured against mock-llm's pacing: the first content
// arrives one chunk interval after the request, one token is counted per
// content chunk, and generation lasts one interval per chunk (the rest of
// the chunks, then [DONE]).
func TestProbeAgainstMockLLM(t *testing.T) {
	const (
		chunkSize = 4
		interval  = 300 * time.Millisecond
	)
	m := startMockLLM(t, chunkSize, interval)

	tests := []struct {
		name         string
		prompt       string // echoed back as the reply
		includeUsage bool
		chunks       int // ceil(len(prompt)/chunkSize)
	}{
		{"one short chunk", "ok", false, 1},
		{"exact chunks", "lanewatch probe!", false, 4},
		{"last chunk partial", "reply with ok", false, 4},
		{"include_usage ignored, deltas counted", "queue time", true, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			stopWatch := stalls.Watch()
			s, err := probe.Run(ctx, probe.Target{
				Lane:         "mock-llm",
				Kind:         "free",
				API:          probe.OpenAI,
				BaseURL:      m.baseURL,
				Model:        "gpt-4",
				Prompt:       tt.prompt,
				MaxTokens:    16,
				Timeout:      20 * time.Second,
				IncludeUsage: tt.includeUsage,
			})
			// How late this machine ran while the probe did: a first chunk
			// read late makes queue_s longer by as much (nothing when quiet).
			late := 3 * stopWatch()
			if err != nil {
				t.Fatalf("probe: %v (outcome %s, status %d, detail %q)", err, s.Outcome, s.Status, s.Detail)
			}
			if s.Outcome != probe.OK || s.Status != http.StatusOK {
				t.Fatalf("outcome %s status %d, want ok 200", s.Outcome, s.Status)
			}
			if s.Lane != "mock-llm" || s.Kind != "free" {
				t.Errorf("sample lane/kind = %q/%q", s.Lane, s.Kind)
			}

			t.Logf("queue_s %.3f headers_s %.3f gen_s %.3f tokens %d (%s)", s.QueueS(), s.HeadersS(), s.GenS(), s.Tokens, s.TokensSource)
			queue := time.Duration(s.QueueS() * float64(time.Second))
			if queue < interval-20*time.Millisecond || queue > interval+150*time.Millisecond+late {
				t.Errorf("queue_s = %.3f, want one chunk interval %.3f (-0.020/+0.150, +%.3f for the stalls seen)", s.QueueS(), interval.Seconds(), late.Seconds())
			}
			// mock-llm sends its headers with the first chunk, never before it.
			if s.HeadersS() <= 0 || s.HeadersS() > s.QueueS() {
				t.Errorf("headers_s = %.3f, want in (0, queue_s %.3f]", s.HeadersS(), s.QueueS())
			}
			// After the first chunk: chunks-1 more, then [DONE], one interval each.
			// gen_s starts when the client reads the first chunk, which on a
			// loaded machine can be late by more than any small slack, so
			// its lower bound is half an interval (still failing an end
			// stamped at the last chunk instead of [DONE], an interval
			// short), and the exact bound is on the whole stream: from the
			// request written (before mock-llm read it) to the end is at
			// least chunks+1 intervals, less mock-llm's timer slack.
			wantGen := time.Duration(tt.chunks) * interval
			gen := time.Duration(s.GenS() * float64(time.Second))
			if gen < wantGen-interval/2 || gen > wantGen+250*time.Millisecond {
				t.Errorf("gen_s = %.3f, want %.3f (%d intervals)", s.GenS(), wantGen.Seconds(), tt.chunks)
			}
			if total, want := s.End.Sub(s.Sent), time.Duration(tt.chunks+1)*interval; total < want-20*time.Millisecond {
				t.Errorf("request written → end = %s, want at least %s (%d intervals)", total, want, tt.chunks+1)
			}
			if s.Tokens != tt.chunks || s.TokensSource != probe.TokensDeltas {
				t.Errorf("tokens = %d from %q, want %d from %q (mock-llm sends no usage)",
					s.Tokens, s.TokensSource, tt.chunks, probe.TokensDeltas)
			}
		})
	}
}

// TestMockLLMWireFormat checks the assumptions above with a raw HTTP client,
// so a change in mock-llm shows up here and not as a puzzling probe result.
func TestMockLLMWireFormat(t *testing.T) {
	const interval = 200 * time.Millisecond
	m := startMockLLM(t, 3, interval)

	body := `{"model":"gpt-4","stream":true,"max_tokens":1,"stream_options":{"include_usage":true},` +
		`"messages":[{"role":"user","content":"abcdefg"}]}`
	start := time.Now()
	resp, err := http.Post(m.baseURL+"/chat/completions", "application/json", bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	headers := time.Since(start)
	raw := new(bytes.Buffer)
	_, err = raw.ReadFrom(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if headers < interval-20*time.Millisecond {
		t.Errorf("headers after %v, want them with the first chunk, one interval (%v) in", headers, interval)
	}

	var contents []string
	var roles, finishes, usages int
	var done bool
	for _, line := range bytes.Split(raw.Bytes(), []byte("\n")) {
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok {
			continue
		}
		if string(data) == "[DONE]" {
			done = true
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct {
					Role    string `json:"role"`
					Content string `json:"content"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage json.RawMessage `json:"usage"`
		}
		if err := json.Unmarshal(data, &c); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		if len(c.Usage) > 0 && string(c.Usage) != "null" {
			usages++
		}
		for _, ch := range c.Choices {
			if ch.Delta.Role != "" {
				roles++
			}
			if ch.FinishReason != nil {
				finishes++
			}
			contents = append(contents, ch.Delta.Content)
		}
	}
	want := []string{"abc", "def", "g"} // max_tokens is ignored
	if fmt.Sprint(contents) != fmt.Sprint(want) {
		t.Errorf("contents %q, want %q (the prompt echoed in chunks of 3)", contents, want)
	}
	if roles != 1 || finishes != 1 || usages != 0 || !done {
		t.Errorf("roles %d finishes %d usage chunks %d [DONE] %v; want 1 1 0 true", roles, finishes, usages, done)
	}
}
