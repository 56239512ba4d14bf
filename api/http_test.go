package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/policy"
)

// bookBody is a body of n bytes made on the fly, so that the client costs
// no memory: head, then unit repeated, then tail.
type bookBody struct {
	head, unit, tail string
	n, off           int
}

func (b *bookBody) Read(p []byte) (int, error) {
	if b.off >= b.n {
		return 0, io.EOF
	}
	p = p[:min(len(p), b.n-b.off)]
	for k := 0; k < len(p); {
		var c int
		switch tailAt := b.n - len(b.tail); {
		case b.off < len(b.head):
			c = copy(p[k:], b.head[b.off:])
		case b.off >= tailAt:
			c = copy(p[k:], b.tail[b.off-tailAt:])
		default:
			c = copy(p[k:min(len(p), k+tailAt-b.off)], b.unit[(b.off-len(b.head))%len(b.unit):])
		}
		k += c
		b.off += c
	}
	return len(p), nil
}

// maxBookCost is what one POST /api/v1/book may allocate, whatever its
// body: the manifest's 256 MiB (deploy/kubernetes), less about 40 MiB the
// daemon needs, shared by the 32 connections -listen serves at once
// (internal/httpserve; 16 of them in such a request), leaves 6.75 MiB a
// request.
const maxBookCost = 27 << 18 // 6.75 MiB

// The bodies that cost the most: the JSON values the decoder keeps, one
// long string it buffers, real attempts up to the cap and beyond, and
// blanks; each at the body cap and at 8 MiB.
func costlyBodies() map[string]func() io.Reader {
	attempt := `{"queue_s": 35.25, "gen_s": 9.5, "emitted_tokens": 220, "shipped": false}, `
	bodies := map[string]func() io.Reader{}
	for _, n := range []int{policy.MaxBookInput, 8 << 20} {
		for name, b := range map[string]bookBody{
			"values":   {head: `{"attempts": [`, unit: "0,", tail: "0]}"},
			"string":   {head: `{"attempts": [], "x": "`, unit: "a", tail: `"}`},
			"attempts": {head: `{"attempts": [`, unit: attempt, tail: strings.TrimSuffix(attempt, ", ") + "]}"},
			"blanks":   {head: " ", unit: " ", tail: `{"attempts": []}`},
		} {
			bodies[fmt.Sprintf("%s, %d bytes", name, n)] = func() io.Reader { b := b; b.n = n; return &b }
		}
	}
	// The most attempts an input may hold, with long decimals: accepted.
	long := `{"queue_s": 0.012345678901234567, "gen_s": 0.0012345678901234567, "emitted_tokens": 1, "shipped": false}, `
	most := bookBody{head: `{"attempts": [`, unit: long, tail: strings.TrimSuffix(long, ", ") + "]}"}
	most.n = len(most.head) + policy.MaxAttempts*len(long)
	bodies["the most attempts"] = func() io.Reader { b := most; return &b }
	return bodies
}

// post sends one costly body and returns the status; a server that
// answers before reading it all may also cut the upload.
func post(t *testing.T, url string, body io.Reader) int {
	t.Helper()
	resp, err := http.Post(url, "application/json", body)
	if err != nil {
		return 0 // the server answered early and closed: the body was refused
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// allocated is the bytes the process allocated while f ran.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// POST /api/v1/book costs at most maxBookCost of memory, whatever its
// body, alone and with 32 at once: 4 concurrent 8 MiB bodies took the
// daemon from 37 MB to 242 MB, 32 to 1.47 GB. Everything allocated while
// the requests run, the client's side too, is counted: what a request
// holds at its peak is at most what it allocated.
func TestBookBoundsTheMemoryOfARequest(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, testFile("2026-11-30T14", policy.BasisLive, []string{"free", "paid"}, true))
	srv := httptest.NewServer(Handler(Options{Folder: Folder{Dir: dir}, Lanes: testLanes}))
	defer srv.Close()
	url := srv.URL + "/api/v1/book?class=interactive&hour=2026-11-30T14"
	post(t, url, strings.NewReader(`{"attempts": []}`)) // the connection pool and the handler's first use
	bodies := costlyBodies()
	for name, body := range bodies {
		var status int
		cost := allocated(func() { status = post(t, url, body()) })
		t.Logf("%-22s %d, %5.2f MiB", name, status, float64(cost)/(1<<20))
		if cost > maxBookCost {
			t.Errorf("%s: a request allocated %.1f MiB, want at most %.1f MiB", name, float64(cost)/(1<<20), float64(maxBookCost)/(1<<20))
		}
	}
	// At once: each body at the cap, and 8 MiB ones (refused alike,
	// whatever they hold).
	const clients = 32
	for name, body := range bodies {
		if strings.HasSuffix(name, "8388608 bytes") && !strings.HasPrefix(name, "values") {
			continue
		}
		runtime.GC()
		stop := heapPeak()
		cost := allocated(func() {
			var wg sync.WaitGroup
			for range clients {
				wg.Add(1)
				go func() { defer wg.Done(); post(t, url, body()) }()
			}
			wg.Wait()
		})
		t.Logf("%-22s x%d: %6.1f MiB allocated, heap grew by at most %.1f MiB (sampled)", name, clients, float64(cost)/(1<<20), float64(stop())/(1<<20))
		if cost > clients*maxBookCost {
			t.Errorf("%s: %d requests at once allocated %.1f MiB, want at most %d × %.1f MiB", name, clients, float64(cost)/(1<<20), clients, float64(maxBookCost)/(1<<20))
		}
	}
}

// heapPeak samples the heap's objects every millisecond until stop, which
// returns by how much they grew at most (a sample may miss a peak: for the
// log only).
func heapPeak() (stop func() uint64) {
	done := make(chan struct{})
	growth := make(chan uint64)
	go func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		metrics.Read(s)
		base, top := s[0].Value.Uint64(), s[0].Value.Uint64()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				growth <- top - base
				return
			case <-tick.C:
				metrics.Read(s)
				top = max(top, s[0].Value.Uint64())
			}
		}
	}()
	return func() uint64 { close(done); return <-growth }
}

// The most attempts an input may have, pretty-printed with long decimals,
// fit the body cap and are answered.
func TestBookTakesTheMostAttempts(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, testFile("2026-11-30T14", policy.BasisLive, []string{"free", "paid"}, true))
	srv := httptest.NewServer(Handler(Options{Folder: Folder{Dir: dir}, Lanes: testLanes}))
	defer srv.Close()
	type attempt struct {
		QueueS        float64 `json:"queue_s"`
		GenS          float64 `json:"gen_s"`
		EmittedTokens int     `json:"emitted_tokens"`
		Shipped       bool    `json:"shipped"`
	}
	in := struct {
		Attempts []attempt `json:"attempts"`
	}{make([]attempt, policy.MaxAttempts)}
	for i := range in.Attempts {
		in.Attempts[i] = attempt{QueueS: 0.012345678901234567, GenS: 0.0012345678901234567, EmittedTokens: 1}
	}
	body, err := json.MarshalIndent(in, "", "    ")
	if err != nil {
		t.Fatal(err)
	}
	if len(body) > policy.MaxBookInput {
		t.Fatalf("%d attempts are %d bytes, over the cap of %d", policy.MaxAttempts, len(body), policy.MaxBookInput)
	}
	resp, err := http.Post(srv.URL+"/api/v1/book?class=interactive&hour=2026-11-30T14", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(got), fmt.Sprintf(`"spent_tokens":%d,`, policy.MaxAttempts)) {
		t.Errorf("%d attempts in %d bytes: %d %s", policy.MaxAttempts, len(body), resp.StatusCode, got)
	}
}
