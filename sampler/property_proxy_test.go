package sampler_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/influxtest"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/influx"
	"github.com/tinylib/msgp/msgp"
)

// answer is what the fault proxy does with one kind of request (reads or
// writes) to InfluxDB.
type answer int

const (
	pass   answer = iota // forwarded to influxd
	ans401               // token revoked
	ans403               // user lost its write (or read) privilege
	ans404               // database not found as a 404 (a write to a dropped database; a proxy's read)
	dropDB               // database dropped: influxd 1.8's 200 with the statement's error for a read, 404 for a write
	ans413               // body over max-body-size
	ans400               // partial write: field type conflict
	ans500               // influxd failed (e.g. cache full)
	ans503               // a load balancer in front with no backend
	cut                  // the connection closed mid-request: a network cut
	lost                 // writes only: influxd took the write, the answer never came back
	// late is for writes only: the step's first write is held, unanswered,
	// until the client gives up (its deadline passes: the step's store
	// deadline is lateStoreTimeout) and spools it, and influxd applies it
	// only after later writes (applyLate); the step's other writes pass.
	late
	nAnswers
)

var answerNames = [...]string{"pass", "401", "403", "404", "dropped", "413", "400-conflict", "500", "503", "cut", "lost", "late"}

func (a answer) String() string { return answerNames[a] }

// faultProxy is a reverse proxy in front of a real influxd that answers as
// influxd 1.8 (or a proxy before it) would when told to fail, so the
// store client's own classification of real HTTP answers (passing:
// spooled; refused for good: dead-lettered) is what the property test
// exercises, not a wrapper's synthetic errors.
type faultProxy struct {
	rp          *httputil.ReverseProxy
	target      string
	db          string
	mu          sync.Mutex
	read, write answer
	hits        map[string]int // "write 403": how many requests got that answer
	held        []*http.Request
	heldOne     bool // a write of this setting was held (late)
}

func newFaultProxy(t *testing.T, target, db string) (*faultProxy, string) {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{rp: httputil.NewSingleHostReverseProxy(u), target: target, db: db, hits: map[string]int{}}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return p, srv.URL
}

func (p *faultProxy) set(read, write answer) {
	p.mu.Lock()
	p.read, p.write, p.heldOne = read, write, false
	p.mu.Unlock()
}

// applyLate has influxd apply the writes held (late) now, in the order
// they came; it reports how many.
func (p *faultProxy) applyLate() (int, error) {
	p.mu.Lock()
	held := p.held
	p.held = nil
	p.mu.Unlock()
	for _, req := range held {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			return 0, fmt.Errorf("influxd answered the late write %s", resp.Status)
		}
	}
	return len(held), nil
}

func (p *faultProxy) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	isWrite := strings.HasSuffix(req.URL.Path, "/write")
	p.mu.Lock()
	a, kind := p.read, "read"
	if isWrite {
		a, kind = p.write, "write"
	}
	if a == late {
		if p.heldOne {
			a = pass
		}
		p.heldOne = true
	}
	p.hits[kind+" "+a.String()]++
	p.mu.Unlock()
	// influxd 1.8's httpError: X-Influxdb-Error, application/json,
	// {"error": msg}; a 401 carries a Basic challenge instead of the header.
	influxErr := func(code int, msg string) {
		if code == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Basic realm="InfluxDB"`)
		} else {
			w.Header().Set("X-Influxdb-Error", msg)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		b, _ := json.Marshal(map[string]string{"error": msg})
		_, _ = w.Write(b)
	}
	switch a {
	case pass:
		p.rp.ServeHTTP(w, req)
	case ans401:
		_, _ = io.Copy(io.Discard, req.Body)
		influxErr(401, "authorization failed")
	case ans403:
		_, _ = io.Copy(io.Discard, req.Body)
		influxErr(403, fmt.Sprintf(`"lanewatch" user is not authorized to %s database %q`, kind, p.db))
	case ans404:
		_, _ = io.Copy(io.Discard, req.Body)
		influxErr(404, fmt.Sprintf("database not found: %q", p.db))
	case dropDB:
		_, _ = io.Copy(io.Discard, req.Body)
		if isWrite {
			influxErr(404, fmt.Sprintf("database not found: %q", p.db))
			break
		}
		statementError(w, req, "database not found: "+p.db)
	case ans413:
		_, _ = io.Copy(io.Discard, req.Body)
		influxErr(413, http.StatusText(http.StatusRequestEntityTooLarge))
	case ans400:
		_, _ = io.Copy(io.Discard, req.Body)
		if isWrite {
			influxErr(400, `partial write: field type conflict: input field "queue_s" on measurement "probe" is type string, already exists as type float dropped=1`)
		} else {
			influxErr(400, `error parsing query: found EOF, expected FROM at line 1, char 9`)
		}
	case ans500:
		_, _ = io.Copy(io.Discard, req.Body)
		influxErr(500, "engine: cache-max-memory-size exceeded: (1073742000/1073741824)")
	case ans503:
		_, _ = io.Copy(io.Discard, req.Body)
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(503)
		_, _ = io.WriteString(w, "<html><body><h1>503 Service Unavailable</h1>No server is available to handle this request.</body></html>\n")
	case cut:
		p.hijackClose(w)
	case lost:
		rec := httptest.NewRecorder()
		p.rp.ServeHTTP(rec, req) // influxd stored it
		p.hijackClose(w)
	case late:
		body, _ := io.ReadAll(req.Body)
		held, err := http.NewRequest(req.Method, p.target+req.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			panic(err)
		}
		held.Header = req.Header.Clone()
		<-req.Context().Done() // the client timed out: it never learns the write's fate
		p.mu.Lock()
		p.held = append(p.held, held)
		p.mu.Unlock()
	}
}

// statementError answers a chunked /query as influxd 1.8.10 answers one
// whose statement failed (a SELECT on a dropped database): 200 with the
// error in the statement's result, as MessagePack when the client asked for
// it (the map holds no statement_id then), else as a line of JSON:
//
//	{"results":[{"statement_id":0,"error":"database not found: lanewatch_x"}]}
func statementError(w http.ResponseWriter, req *http.Request, msg string) {
	if strings.Contains(req.Header.Get("Accept"), "application/x-msgpack") {
		b := msgp.AppendMapHeader(nil, 1)
		b = msgp.AppendString(b, "results")
		b = msgp.AppendArrayHeader(b, 1)
		b = msgp.AppendMapHeader(b, 1)
		b = msgp.AppendString(b, "error")
		b = msgp.AppendString(b, msg)
		w.Header().Set("Content-Type", "application/x-msgpack")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(b)
		return
	}
	type result struct {
		StatementID int    `json:"statement_id"`
		Error       string `json:"error"`
	}
	b, _ := json.Marshal(struct {
		Results []result `json:"results"`
	}{[]result{{0, msg}}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(b, '\n'))
}

// The proxy's dropDB answer to a read is, byte for byte, influxd's to a
// SELECT on a database dropped a moment before, for both formats the
// store client asks for.
func TestStatementErrorIsInfluxd(t *testing.T) {
	base := influxtest.URL(t)
	// A database never made (made and dropped, an unchecked DROP on a busy
	// shared server once left it there: an empty answer, not the error).
	db := fmt.Sprintf("t_absent_%d_%d", os.Getpid(), time.Now().UnixNano())
	for _, accept := range []string{"application/json", "application/x-msgpack, application/json;q=0.5"} {
		form := url.Values{"q": {`SELECT "ok" FROM "probe" WHERE time >= 0`}, "db": {db}, "epoch": {"ns"}, "chunked": {"true"}, "chunk_size": {"10000"}}
		ask := func(do func(*http.Request) (*http.Response, error), addr string) (string, string) {
			req, err := http.NewRequest(http.MethodPost, addr, strings.NewReader(form.Encode()))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Accept", accept)
			resp, err := do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = resp.Body.Close() }()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			return fmt.Sprintf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type")), string(body)
		}
		realHead, realBody := ask(http.DefaultClient.Do, base+"/query")
		fake := func(req *http.Request) (*http.Response, error) {
			rec := httptest.NewRecorder()
			statementError(rec, req, "database not found: "+db)
			return rec.Result(), nil
		}
		fakeHead, fakeBody := ask(fake, "http://proxy/query")
		if realHead != fakeHead || realBody != fakeBody {
			t.Errorf("Accept %s: influxd answers %s %q, the proxy %s %q", accept, realHead, realBody, fakeHead, fakeBody)
		}
	}
}

// hijackClose closes the client's connection without an answer.
func (p *faultProxy) hijackClose(w http.ResponseWriter) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	_ = conn.Close()
}

// The property of issue 18 again for the InfluxDB store, with the faults
// coming from a real HTTP proxy between the store client and influxd: the
// client's own reading of 401, 403, 404, a dropped database (a read's 200
// with the statement's error, a write's 404), 413, a field-type conflict, 500,
// 503, a cut connection and a write that landed but whose answer was lost
// decides between spool and dead letter; and a write (the step's first:
// the round's booking) that influxd applies late, after the client timed
// out and spooled it and after the writes that followed it (issue 28: the
// booking lands on the probe that settled it). Steps may also have a lane
// redirect to itself or probes that outlast the store deadline, as in
// TestPropertyMeterFirst. The same rules hold after every step, no probe
// reads twice (a write replayed from the spool after it landed is the same
// point, not a second one), and a settled probe never reads as its booking.
func TestPropertyMeterFirstProxy(t *testing.T) {
	base := influxtest.URL(t)
	hits := map[string]int{}
	for seed := range propertySeeds(t) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			db := influxtest.NewDB(t, base)
			p, purl := newFaultProxy(t, base, db)
			open := func() store.Store {
				st, err := influx.Open(context.Background(), influx.Options{URL: purl, Bucket: db + "/autogen"})
				if err != nil {
					t.Fatal(err)
				}
				return st
			}
			driveProxy(t, uint64(seed), p, open)
			p.mu.Lock()
			for k, n := range p.hits {
				hits[k] += n
			}
			p.mu.Unlock()
		})
	}
	var keys []string
	for k := range hits {
		keys = append(keys, fmt.Sprintf("%s=%d", k, hits[k]))
	}
	sort.Strings(keys)
	t.Logf("proxy answers: %s", strings.Join(keys, " "))
}

// lateStoreTimeout is the store deadline of a step whose first write
// influxd holds (late): the sampler gives up on it that soon.
const lateStoreTimeout = 300 * time.Millisecond

// proxyAnswer draws one answer: pass half the time, else a fault (lost
// and late only for writes, each a sixth of their faults: a write is rarer
// than a read).
func proxyAnswer(rnd *rand.Rand, write bool) answer {
	if rnd.IntN(2) == 0 {
		return pass
	}
	if write {
		switch rnd.IntN(6) {
		case 0:
			return lost
		case 1:
			return late
		}
	}
	return answer(1 + rnd.IntN(int(cut))) // the faults ans401..cut
}

func driveProxy(t *testing.T, seed uint64, p *faultProxy, openInner func() store.Store) {
	rnd := rand.New(rand.NewPCG(seed, 1818))
	perDay := 2 + rnd.IntN(5)
	extra := fmt.Sprintf("quotas:\n  - {name: g, probes_per_day: %d}\n", perDay)
	r := newRigWith(t, true, extra, map[string]string{"a": ", quota: g", "b": ", quota: g", "c": ""}, openInner)
	led := &ledger{now: r.now, next: r.lane}
	r.srv.Config.Handler = led
	var steps []string
	logf := func(format string, args ...any) { steps = append(steps, fmt.Sprintf(format, args...)) }
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d, %d a day: %s\nsteps:\n  %s", seed, perDay, fmt.Sprintf(format, args...), strings.Join(steps, "\n  "))
	}
	applyLate := func() {
		t.Helper()
		if n, err := p.applyLate(); err != nil {
			fail("apply the late writes: %v", err)
		} else if n > 0 {
			logf("influxd applied %d late writes", n)
		}
	}
	rebuildOwed := false // never set: the spool rebuilds at its next write, which the check's drain is
	settled := results{}
	for i := range 30 {
		r.setClock(r.now().Add(time.Duration(1+rnd.IntN(90)) * time.Minute))
		w := world{}
		killAt := 0
		read, write := proxyAnswer(rnd, false), proxyAnswer(rnd, true)
		switch rnd.IntN(10) {
		case 0:
			killAt = 1 // dies writing the reservations: nothing leaves
		case 1:
			killAt = 2 // dies after the requests left, before the round's write
		case 2:
			w.delay = map[string]time.Duration{"c": 400 * time.Millisecond}
			w.interrupt = 100 * time.Millisecond
		case 3:
			r.setClock(r.now().Add(-time.Duration(1+rnd.IntN(60)) * time.Minute))
		case 4:
			r.restart() // before the faults: a new process's open reads the store
		case 5:
			w.redirect = rigLanes[rnd.IntN(len(rigLanes))]
			w.code = 307 + rnd.IntN(2)
		case 6:
			w = slowWorld(rnd)
		}
		if write == late && w.storeTimeout == 0 {
			w.storeTimeout = lateStoreTimeout
		}
		p.set(read, write)
		if killAt > 0 {
			r.kill.mu.Lock()
			r.kill.killAt = r.kill.writes + killAt
			r.kill.mu.Unlock()
		}
		tk := w.step(r, led)
		logf("%d: %s read=%s write=%s kill=%d %s: %s", i, r.now().Format("01-02T15:04"), read, write, killAt, w, tk)
		p.set(pass, pass)
		if killAt > 0 {
			r.restart() // the process died: a new one starts on its files
		} else {
			settled.add(tk.rounds)
		}
		lateFirst := rnd.IntN(2) == 0 // a held write lands before the spool's replay, or after it
		if lateFirst {
			applyLate()
		}
		tk.check(w, fail)
		checkNoTwice(r, fail) // spool not replayed yet: a lost write is in the store and the spool
		checkMeter(r, led, perDay, &rebuildOwed, fail)
		if !lateFirst {
			applyLate()
		}
		checkNoTwice(r, fail)
		settled.check(r, fail)
	}
}

// checkNoTwice fails when a read holds two probes of one lane, site and
// time: a write that landed and was spooled for want of an answer, read
// from both the store and the spool, or replayed as a second point.
func checkNoTwice(r *rig, fail func(string, ...any)) {
	ps, err := store.ReadProbes(context.Background(), r.st, store.Between(r.now().Add(-72*time.Hour), r.now().Add(72*time.Hour)))
	if err != nil {
		fail("read: %v", err)
	}
	seen := map[string]bool{}
	for _, pr := range ps {
		k := pr.Lane + "\x00" + pr.Site + "\x00" + pr.Time.UTC().Format(time.RFC3339Nano)
		if seen[k] {
			fail("probe %s %s %s read twice", pr.Lane, pr.Site, pr.Time.UTC().Format(time.RFC3339Nano))
		}
		seen[k] = true
	}
}
