// Package crowdtest opens, for tests, the connections of visitors that hold
// a server's connections without using them: keep-alive clients left idle
// after a request, clients that never finish their headers, and clients
// that never finish their body.
package crowdtest

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// Crowd is how many visitors of each kind to open.
type Crowd struct {
	Idle        int    // sent a GET of IdlePath, read the answer, keep the connection
	IdlePath    string // default /healthz
	SlowHeaders int    // sent part of a request's headers
	SlowBodies  int    // sent the headers of a POST of BodyPath and 1 byte of its 1000
	BodyPath    string // default /
}

// Gather opens the crowd on addr, all at once, and returns when every
// visitor has sent what it sends (an idle one has also read its answer,
// or given up after 5 s: a server that cannot take it is what the test is
// about). The connections stay open until the test ends. It returns how
// many idle visitors got their answer.
func Gather(t testing.TB, addr string, c Crowd) int {
	t.Helper()
	c.IdlePath, c.BodyPath = cmp.Or(c.IdlePath, "/healthz"), cmp.Or(c.BodyPath, "/")
	var (
		mu       sync.Mutex
		answered int
		wg       sync.WaitGroup
	)
	open := func(send string, read bool) {
		defer wg.Done()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Errorf("dial %s: %v", addr, err)
			return
		}
		t.Cleanup(func() { conn.Close() })
		if _, err := io.WriteString(conn, send); err != nil || !read {
			return // refused or closed at once: the server's choice
		}
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		_ = conn.SetReadDeadline(time.Time{})
		mu.Lock()
		answered++
		mu.Unlock()
	}
	for range c.Idle {
		wg.Add(1)
		go open(fmt.Sprintf("GET %s HTTP/1.1\r\nHost: visitor\r\n\r\n", c.IdlePath), true)
	}
	for range c.SlowHeaders {
		wg.Add(1)
		go open("GET / HTTP/1.1\r\nHost: visitor\r\n", false)
	}
	for range c.SlowBodies {
		wg.Add(1)
		go open(fmt.Sprintf("POST %s HTTP/1.1\r\nHost: visitor\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", c.BodyPath), false)
	}
	wg.Wait()
	return answered
}

// Get asks url with a client of its own (no connection of the crowd's) and
// fails the test unless an answer comes within 5 s; it returns the status.
func Get(t testing.TB, url string) int {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	start := time.Now()
	resp, err := client.Get(url)
	if err != nil {
		t.Errorf("GET %s beside the crowd: %v", url, err)
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	t.Logf("GET %s beside the crowd: %d after %s", url, resp.StatusCode, time.Since(start).Round(time.Millisecond))
	return resp.StatusCode
}
