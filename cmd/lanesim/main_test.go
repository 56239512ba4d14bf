package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/cli"
	"github.com/lanewatch/lanewatch/internal/lanesim"
	"github.com/lanewatch/lanewatch/internal/syncbuf"
)

func TestRunServesAndStops(t *testing.T) {
	addrFile := filepath.Join(t.TempDir(), "lanesim.addr")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncbuf.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr-file", addrFile, "-tokens", "3", "-prefill", "0", "-token-interval", "1ms"}, &stdout, &stderr)
	}()

	lineRE := regexp.MustCompile(`^lanesim listening on (http://127\.0\.0\.1:\d+)\n$`)
	var url string
	deadline := time.Now().Add(5 * time.Second)
	for url == "" {
		if m := lineRE.FindStringSubmatch(stdout.String()); m != nil {
			url = m[1]
			break
		}
		select {
		case err := <-done:
			t.Fatalf("run returned early: %v\nstderr: %s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no listening line on stdout; got %q", stdout.String())
		}
		time.Sleep(5 * time.Millisecond)
	}

	got, err := os.ReadFile(addrFile)
	if err != nil {
		t.Fatalf("addr file: %v", err)
	}
	if string(got) != url {
		t.Errorf("addr file holds %q, stdout says %q", got, url)
	}

	resp, err := http.Get(url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz status %d", resp.StatusCode)
	}

	resp, err = http.Post(url+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if n := strings.Count(string(body), `"content":"tok "`); n != 3 || !strings.HasSuffix(string(body), "data: [DONE]\n\n") {
		t.Errorf("stream has %d content deltas (want 3) or no [DONE]:\n%s", n, body)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("run did not stop after ctx was cancelled")
	}
	if _, err := os.Stat(addrFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("addr file left behind: %v", err)
	}
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "http://"), time.Second); err == nil {
		c.Close()
		t.Error("still accepting connections after stop")
	}
}

// TestRunStopsWithOpenStream: shutdown does not wait for a stream that would
// take an hour, nor for one waiting in the queue.
func TestRunStopsWithOpenStream(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout syncbuf.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-token-interval", "1h", "-prefill", "0"}, &stdout, io.Discard)
	}()
	var url string
	for deadline := time.Now().Add(5 * time.Second); url == ""; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no listening line")
		}
		if s := stdout.String(); strings.HasSuffix(s, "\n") {
			url = strings.TrimSpace(strings.TrimPrefix(s, "lanesim listening on "))
		}
	}
	streams := make(chan error, 2)
	for range 2 {
		go func() {
			resp, err := http.Post(url+"/v1/chat/completions", "application/json",
				strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
			if err != nil {
				streams <- err
				return
			}
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			streams <- err
		}()
	}
	time.Sleep(200 * time.Millisecond) // both requests in: one generating, one queued
	stopped := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(4 * time.Second):
		t.Fatal("run did not stop with streams open")
	}
	if d := time.Since(stopped); d > 2*time.Second {
		t.Errorf("stop took %v", d)
	}
	for range 2 {
		<-streams // both clients were let go
	}
}

func TestRunUsage(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"help", []string{"-h"}, 0, ""},
		{"unknown flag", []string{"-nope"}, 2, "not defined"},
		{"extra argument", []string{"serve"}, 2, `unexpected argument "serve"`},
		{"no slots", []string{"-slots", "0"}, 2, "-slots 0"},
		{"negative tokens", []string{"-tokens", "-1"}, 2, "-tokens -1"},
		{"probability above 1", []string{"-fail-429", "1.5"}, 2, "-fail-429 1.5"},
		{"negative probability", []string{"-fail-midstream", "-0.1"}, 2, "-fail-midstream -0.1"},
		{"negative duration", []string{"-prefill", "-1s"}, 2, "must not be negative"},
		{"bad curve", []string{"-curve", "25:1"}, 2, "-curve"},
		{"negative exact", []string{"-exact", "-1s"}, 2, "-exact -1s"},
		{"negative hour-seconds", []string{"-hour-seconds", "-2"}, 2, "-hour-seconds"},
		{"bad listen address", []string{"-listen", "127.0.0.1:99999"}, 1, "listen"},
		{"addr file in a missing folder", []string{"-addr-file", filepath.Join(t.TempDir(), "no", "such", "f")}, 1, "addr file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			err := run(context.Background(), tt.args, io.Discard, &stderr)
			if tt.wantCode == 0 && !errors.Is(err, flag.ErrHelp) {
				t.Fatalf("err = %v, want flag.ErrHelp", err)
			}
			var printed bytes.Buffer
			if code := cli.Exit("lanesim", err, &printed); code != tt.wantCode {
				t.Errorf("exit code %d, want %d (err %v)", code, tt.wantCode, err)
			}
			if tt.wantErr != "" && !strings.Contains(printed.String(), tt.wantErr) {
				t.Errorf("stderr line %q does not mention %q", printed.String(), tt.wantErr)
			}
			if tt.name == "help" && (!strings.Contains(stderr.String(), "-slots") || !strings.Contains(stderr.String(), "lanesim history")) {
				t.Errorf("-h printed no usage naming the flags and lanesim history: %q", stderr.String())
			}
		})
	}
}

// -exact serves the exact-delay lane (lanesim.Exact) instead of the queue.
func TestRunExact(t *testing.T) {
	addrFile := filepath.Join(t.TempDir(), "lanesim.addr")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-exact", "20ms", "-addr-file", addrFile}, io.Discard, io.Discard) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	var url []byte
	for deadline := time.Now().Add(10 * time.Second); len(url) == 0; time.Sleep(5 * time.Millisecond) {
		if url, _ = os.ReadFile(addrFile); time.Now().After(deadline) {
			t.Fatal("no addr file")
		}
	}
	resp, err := http.Post(string(url)+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m"}`))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body) // the whole stream: the token is written after its record
	resp.Body.Close()
	resp, err = http.Get(string(url) + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	var recs map[string]lanesim.ExactRecord
	err = json.NewDecoder(resp.Body).Decode(&recs)
	resp.Body.Close()
	if err != nil || recs["m"].Held < int64(20*time.Millisecond) {
		t.Fatalf("stats %v (%v), want m held 20ms", recs, err)
	}
}
