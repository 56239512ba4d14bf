package sampler_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/influxtest"
	"github.com/lanewatch/lanewatch/series"
)

// holdProxy is a reverse proxy in front of a real influxd that can hold
// a write: it takes the request, answers nothing until the client gives
// up, and hands it to influxd only when told, as a server that applies a
// write after its client timed out.
type holdProxy struct {
	rp     *httputil.ReverseProxy
	target string
	mu     sync.Mutex
	hold   bool            // hold the next write
	held   []*http.Request // the writes held, with their bodies
	got    chan struct{}   // a write was held
}

func newHoldProxy(t *testing.T, target string) (*holdProxy, string) {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &holdProxy{rp: httputil.NewSingleHostReverseProxy(u), target: target, got: make(chan struct{}, 1)}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return p, srv.URL
}

func (p *holdProxy) holdNextWrite() {
	p.mu.Lock()
	p.hold = true
	p.mu.Unlock()
}

func (p *holdProxy) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	p.mu.Lock()
	hold := p.hold && strings.HasSuffix(req.URL.Path, "/write")
	if hold {
		p.hold = false
	}
	p.mu.Unlock()
	if !hold {
		p.rp.ServeHTTP(w, req)
		return
	}
	body, _ := io.ReadAll(req.Body)
	late, err := http.NewRequest(req.Method, p.target+req.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		panic(err)
	}
	late.Header = req.Header.Clone()
	p.mu.Lock()
	p.held = append(p.held, late)
	p.mu.Unlock()
	p.got <- struct{}{}
	<-req.Context().Done() // the client timed out: it never learns the write's fate
}

// release has influxd apply the held writes now.
func (p *holdProxy) release(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	held := p.held
	p.held = nil
	p.mu.Unlock()
	for _, req := range held {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("the held write got %s", resp.Status)
		}
	}
}

// Issue 28, item 2: a booking that InfluxDB answers after the client's
// timeout is spooled, the round probes and stores its probe (the spool's
// replay of the booking first), and then the server applies the booking
// it held, of the same series and time. The stored probe stays the probe
// (not "reserved" with queue_s 0), and its hour agrees with it.
func TestLateBookingNeverOverwritesItsProbe(t *testing.T) {
	base := influxtest.URL(t)
	db := influxtest.NewDB(t, base)
	p, purl := newHoldProxy(t, base)
	open := func() series.Store {
		st, err := series.OpenInflux(context.Background(), series.InfluxOptions{URL: purl, Bucket: db + "/autogen", RequestTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	r := newRigWith(t, true, "", map[string]string{"a": ""}, open)
	r.lane.set("a", 200*time.Millisecond)
	p.holdNextWrite()
	rd, err := r.round(0)
	if err != nil || len(rd.Samples) != 1 || !rd.Samples[0].OK() {
		t.Fatalf("round %+v, %v; want lane a probed ok", rd, err)
	}
	select {
	case <-p.got:
	default:
		t.Fatal("the proxy held no write: the booking went through")
	}
	p.release(t)

	direct, err := series.OpenInflux(context.Background(), series.InfluxOptions{URL: base, Bucket: db + "/autogen"})
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	w := series.Window{From: r.now().Add(-time.Hour), To: r.now().Add(time.Hour)}
	ps, err := direct.Probes(context.Background(), series.Query{Windows: []series.Window{w}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 || ps[0].Outcome != "ok" || ps[0].QueueS < 0.2 {
		t.Fatalf("the server holds %+v; want lane a's ok probe, its queue at least 0.2 s", ps)
	}
	bad, err := series.Check(context.Background(), direct, r.cfg.Location, w, nil)
	if err != nil || len(bad) != 0 {
		t.Fatalf("hours that disagree with their probes: %v, %v", bad, err)
	}
}
