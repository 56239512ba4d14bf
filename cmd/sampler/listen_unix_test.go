//go:build unix

package main

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"
)

// A daemon with 64 descriptors and more visitors than that holding idle
// connections to -listen keeps probing and storing its rounds (issue 18:
// without a cap they took the descriptors and the round was not stored).
func TestVisitorsCannotTakeTheRoundsDescriptors(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon")
	}
	bin := buildSampler(t)
	ok, _ := sseServer(t, 5*time.Millisecond, 2, http.StatusOK)
	cfg := writeConfig(t, t.TempDir(), "@every 1s", map[string]string{"free": ok.URL})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command("sh", "-c", `ulimit -n 64 && exec "$0" "$@"`, bin, "-config", cfg, "-listen", addr, "-log-format", "json")
	cmd.Env = append(os.Environ(), "LW_TEST_KEY="+secretKey)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	type logLine struct {
		Msg     string `json:"msg"`
		Err     string `json:"err"`
		Failed  int    `json:"failed"`
		Probes  int    `json:"probes"`
		Outcome string `json:"outcome"`
		Detail  string `json:"detail"`
	}
	lines := make(chan logLine, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var l logLine
			if json.Unmarshal(sc.Bytes(), &l) == nil {
				lines <- l
			}
		}
	}()
	next := func(want ...string) logLine {
		t.Helper()
		timeout := time.After(20 * time.Second)
		for {
			select {
			case l, open := <-lines:
				if !open {
					t.Fatalf("the daemon ended before logging %q", want)
				}
				for _, w := range want {
					if l.Msg == w {
						return l
					}
				}
				if l.Msg == "probe failed" {
					t.Errorf("probe failed: %s %s", l.Outcome, l.Detail)
				}
			case <-timeout:
				t.Fatalf("no %q logged in 20 s", want)
			}
		}
	}
	next("serving metrics")
	next("round stored", "round not stored") // the descriptors a round needs are open
	var held []net.Conn
	for range 150 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	for i := range 3 {
		l := next("round stored", "round not stored")
		if l.Msg != "round stored" || l.Failed != 0 || l.Probes != 1 {
			t.Errorf("round %d beside %d held connections: %s (%s), %d probes, %d failed; want stored, 1 probe ok",
				i, len(held), l.Msg, l.Err, l.Probes, l.Failed)
		}
	}
}
