package influx

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"reflect"
	"testing"
	"time"

	ihttp "github.com/influxdata/influxdb-client-go/v2/api/http"
	lp "github.com/influxdata/line-protocol/v2/lineprotocol"
	"github.com/lanewatch/lanewatch/store"
)

// TestIsTransient: a failure may go away by itself (network, 408, 429, a
// plain 5xx) unless the server says the bucket is missing or the token may
// not use it (which some servers answer with a 500 too).
func TestIsTransient(t *testing.T) {
	he := func(status int, msg string) error {
		return &ihttp.Error{StatusCode: status, Code: http.StatusText(status), Message: msg}
	}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"network", errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), true},
		{"cancelled", context.Canceled, true},
		{"408", he(408, "request timeout"), true},
		{"429", he(429, "too many requests"), true},
		{"500", he(500, "internal error"), true},
		{"503", he(503, "service unavailable"), true},
		{"wrapped 502", fmt.Errorf("read: %w", he(502, "bad gateway")), true},
		{"400", he(400, "bad query"), false},
		{"401", he(401, "authorization failed"), false},
		{"403", he(403, `user "reader" requires WRITE for database "lanewatch"`), false},
		{"404", he(404, "not found"), false},
		{"500 missing database", he(500, `failed to initialize execute state: database not found: "nope"`), false},
		{"500 missing retention policy", he(500, `failed to initialize execute state: retention policy not found: x`), false},
		{"500 without read permission", he(500, `failed to initialize execute state: user "stranger" requires READ for database "lanewatch"`), false},
		{"500 without write permission", he(500, `user "stranger" requires WRITE for database "lanewatch"`), false},
		{"500 unauthorized", he(500, "unauthorized access"), false},
		{"500 authorization failed", he(500, "authorization failed"), false},
		{"wrapped 500 without read permission", fmt.Errorf("read: %w", he(500, `requires READ for database "x"`)), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := transient(c.err); got != c.want {
				t.Errorf("transient(%v) = %v, want %v", c.err, got, c.want)
			}
			if got := unreachable(c.err); got != c.want {
				t.Errorf("unreachable(%v) = %v, want %v", c.err, got, c.want)
			}
			s := &Store{}
			if got := errors.Is(s.classify(c.err), store.ErrUnavailable); got != c.want {
				t.Errorf("classify(%v) is ErrUnavailable = %v, want %v", c.err, got, c.want)
			}
		})
	}
}

// Only a server on this host is asked for uncompressed answers.
func TestLoopback(t *testing.T) {
	for _, c := range []struct {
		host string
		want bool
	}{
		{"127.0.0.1", true}, {"127.8.9.1", true}, {"::1", true}, {"localhost", true},
		{"10.0.0.1", false}, {"influx.example.com", false}, {"", false}, {"::ffff:10.0.0.1", false},
	} {
		if got := loopback(c.host); got != c.want {
			t.Errorf("loopback(%q) = %v, want %v", c.host, got, c.want)
		}
	}
}

// split covers a span exactly, in order, with pieces of at least a day on
// whole hours from its start (the last takes the rest), at most pieces of
// them, one piece for a span shorter than two days.
func TestSplit(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 7))
	const h = int64(time.Hour)
	for range 2000 {
		from := rng.Int64N(1e18)
		sp := [2]int64{from, from + 1 + rng.Int64N(40*24*h)}
		got := split(sp)
		at := sp[0]
		for _, p := range got {
			if p[0] != at || p[1] <= p[0] || p[1] > sp[1] {
				t.Fatalf("span %v: piece %v does not follow %d (all %v)", sp, p, at, got)
			}
			if p[1] != sp[1] && ((p[1]-p[0])%h != 0 || p[1]-p[0] < 24*h) {
				t.Fatalf("span %v: piece %v is not whole hours of at least a day", sp, p)
			}
			at = p[1]
		}
		if at != sp[1] || len(got) > pieces || (sp[1]-sp[0] < 2*minPiece) != (len(got) == 1) {
			t.Fatalf("span %v: %v", sp, got)
		}
	}
	if got := split([2]int64{math.MinInt64 + 2, math.MaxInt64}); len(got) != 1 {
		t.Errorf("the stores' whole range: %v, want one piece", got)
	}
}

// rowsOf is the rows of hourly points: time, worst_queue_s, lane, kind,
// site.
func rowsOf(hs []store.Hourly) [][]store.Value {
	rows := make([][]store.Value, len(hs))
	for i, h := range hs {
		rows[i] = []store.Value{{Kind: lp.Int, I: h.Hour.UnixNano()}, {Kind: lp.Float, F: h.WorstQueueS},
			{Kind: lp.String, S: []byte(h.Lane)}, {Kind: lp.String, S: []byte(h.Kind)}, {Kind: lp.String, S: []byte(h.Site)}}
		if h.Site == "" {
			rows[i][4] = store.Value{}
		}
	}
	return rows
}

// readRows hands rows to a reader, a chunk's end after every seventh, and
// returns what it handed on.
func readRows(t testing.TB, rows [][]store.Value) []store.Hourly {
	var got []store.Hourly
	out := func(b func() error) error { return b() }
	row, end := newReader(store.Between(time.Unix(0, 0), time.Unix(1<<40, 0)).Filter(), func(h store.Hourly) error {
		got = append(got, h)
		return nil
	}, []string{"time", "worst_queue_s", "lane", "kind", "site"}, out)
	for i, vals := range rows {
		if err := row(vals); err != nil {
			t.Fatal(err)
		}
		if i%7 == 6 {
			if err := row(nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := end(); err != nil {
		t.Fatal(err)
	}
	return got
}

// A reader hands on what the latest write of each key would be, sorted
// by time and series, whatever InfluxDB's order within a time: runs whose
// series keep coming (a pool that grows, runs meeting series ranked and
// not yet ranked), copies of a key in a run.
func TestReaderSortsAndKeepsTheLast(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 13))
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for n := range 300 {
		var hs []store.Hourly
		pool := 1 + rng.IntN(4)
		for hour := range 1 + rng.IntN(60) {
			pool += rng.IntN(3) * rng.IntN(2)
			if hour == 0 && n%3 == 0 {
				pool += 40
			}
			for i := range rng.IntN(2 * pool) {
				s := rng.IntN(pool)
				hs = append(hs, store.Hourly{Lane: fmt.Sprintf("l%03d", s/3), Kind: []string{"free", "paid"}[s%2], Site: []string{"", "fra1", "iad1"}[s%3],
					Hour: t0.Add(time.Duration(hour) * time.Hour), WorstQueueS: float64(i)})
			}
		}
		var l store.Latest[store.Hourly]
		for _, h := range hs {
			l.Put(h)
		}
		if got, want := readRows(t, rowsOf(hs)), l.Sorted(); (len(got) > 0 || len(want) > 0) && !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d (%d points): the reader differs from the latest writes", n, len(hs))
		}
	}
}

// The series of a read are ranked a few times, not once per series a run
// brings: a probe read has a time of its own per probe (runs of one point),
// and 3,000 series seen one after the other, each ranked anew, ranked the
// series known so far 3,000 times (12,000 probes: 1.6 s, not 4 ms).
func TestReaderRanksSeldom(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for _, perRun := range []int{1, 2} {
		var hs []store.Hourly
		for i := range 3000 {
			hs = append(hs, store.Hourly{Lane: fmt.Sprintf("lane-%04d", (i*7919)%3000), Kind: "free", Site: "fra1",
				Hour: t0.Add(time.Duration(i/perRun) * time.Second)})
		}
		rd := &reader[store.Hourly]{f: store.Between(t0, t0.Add(time.Hour)).Filter(), emit: func(store.Hourly) error { return nil },
			out: func(b func() error) error { return b() }, cols: store.NewColumns[store.Hourly]([]string{"time", "worst_queue_s", "lane", "kind", "site"}),
			ns: math.MinInt64, names: store.Names{}, ranks: map[store.Key]int{}}
		for _, vals := range rowsOf(hs) {
			if err := rd.row(vals); err != nil {
				t.Fatal(err)
			}
		}
		if err := rd.end(); err != nil {
			t.Fatal(err)
		}
		if len(rd.series) > 2*perRun+2 {
			t.Errorf("3,000 series in runs of %d new ones: %d ranked; want the first few only (the rest sorted by name)", perRun, len(rd.series))
		}
	}
}
