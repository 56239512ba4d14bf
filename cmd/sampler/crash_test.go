package main

import (
	"bytes"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/syncbuf"
)

// buildSampler compiles this command into a temp dir for subprocess tests.
func buildSampler(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sampler")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// kill -9 at random points over many rounds: the store stays readable and
// holds every round the daemon reported stored before it died.
func TestKill9LeavesAReadableStore(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a subprocess")
	}
	bin := buildSampler(t)
	a, _ := sseServer(t, 120*time.Millisecond, 6, http.StatusOK)
	b, _ := sseServer(t, 40*time.Millisecond, 3, http.StatusOK)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "@every 1s", map[string]string{"free": a.URL, "paid": b.URL})
	rng := rand.New(rand.NewPCG(1, 2))

	// Each kill comes at a random point of the rounds, 1.2 to 3.2 s after
	// the daemon logged that its schedule started (not after the process
	// started: a loaded machine can spend that long in start-up, and a kill
	// there tests no store). The last kill also waits for a stored round if
	// none came yet, so the checks below always have one to look for; on a
	// quiet machine it never waits.
	waitLog := func(cmd *exec.Cmd, stderr *syncbuf.Buffer, msg string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(stderr.String(), msg) {
			if time.Now().After(deadline) {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				t.Fatalf("no %s within 30 s:\n%s", msg, stderr.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	storedRounds := 0
	for kill := 0; kill < 6; kill++ {
		var stderr syncbuf.Buffer
		cmd := exec.Command(bin, "-config", cfg, "-log-format", "json")
		cmd.Env = append(os.Environ(), "LW_TEST_KEY="+secretKey)
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitLog(cmd, &stderr, `"msg":"sampler started"`)
		if kill == 5 && storedRounds == 0 {
			waitLog(cmd, &stderr, `"msg":"round stored"`)
		}
		time.Sleep(time.Duration(1200+rng.IntN(2000)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		storedRounds += strings.Count(stderr.String(), `"msg":"round stored"`)
	}
	if storedRounds == 0 {
		t.Fatal("no round finished before the kills; the test proved nothing")
	}
	// The next run reads the store and appends to it.
	var stdout, stderr bytes.Buffer
	if err := run(t.Context(), []string{"-config", cfg, "-once"}, &stdout, &stderr, env); err != nil {
		t.Fatalf("the run after kill -9 failed: %v\n%s", err, stderr.String())
	}
	probes, hourly := readStore(t, filepath.Join(dir, "samples.lp"))
	if want := 2 * (storedRounds + 1); len(probes) < want {
		t.Errorf("store holds %d probes, want at least %d (every stored round, 2 lanes each)", len(probes), want)
	}
	if len(hourly) == 0 {
		t.Error("no queue_hourly points after the crashes")
	}
	t.Logf("%d rounds stored across 6 kills; %d probes readable", storedRounds, len(probes))
}
