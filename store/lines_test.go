package store

// The schema's line codec (records.go, lines.go) and the reading of
// InfluxDB's rows (columns.go), all driven by one table.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	lp "github.com/influxdata/line-protocol/v2/lineprotocol"
)

// Each field of the tables has the one accessor of its type (a marker
// field, written alone with a constant, none) and a unique key.
func TestSchemaTables(t *testing.T) {
	check := func(name string, fields []SchemaField, accessors func(i int) [4]bool, marker func(i int) bool) {
		t.Run(name, func(t *testing.T) {
			seen := map[string]bool{}
			for i, f := range fields {
				if seen[f.Key] {
					t.Errorf("field %s twice", f.Key)
				}
				seen[f.Key] = true
				w, ok := map[string]int{"float": 0, "int": 1, "bool": 2, "string": 3}[f.Type]
				if !ok {
					t.Errorf("field %s: type %s", f.Key, f.Type)
					continue
				}
				for j, set := range accessors(i) {
					if set != (j == w && !marker(i)) {
						t.Errorf("field %s (%s): accessor %d set %v", f.Key, f.Type, j, set)
					}
				}
			}
		})
	}
	s := Schemas()
	check(MeasurementProbe, s[0].Fields, func(i int) [4]bool {
		f := probeSchema.fields[i]
		return [4]bool{f.f != nil, f.i != nil, f.b != nil, f.s != nil}
	}, func(i int) bool { return probeSchema.fields[i].alone })
	check(MeasurementHourly, s[1].Fields, func(i int) [4]bool {
		f := hourlySchema.fields[i]
		return [4]bool{f.f != nil, f.i != nil, f.b != nil, f.s != nil}
	}, func(i int) bool { return hourlySchema.fields[i].alone })
	check(MeasurementHeartbeat, s[2].Fields, func(i int) [4]bool {
		f := heartbeatSchema.fields[i]
		return [4]bool{f.f != nil, f.i != nil, f.b != nil, f.s != nil}
	}, func(i int) bool { return heartbeatSchema.fields[i].alone })
}

// rowOf reads a line as InfluxDB answers it: the time, the tags and the
// fields as columns and values.
func rowOf(t *testing.T, line []byte) ([]string, []Value) {
	t.Helper()
	d := lp.NewDecoderWithBytes(line)
	if !d.Next() {
		t.Fatalf("%q: no line", line)
	}
	if _, err := d.Measurement(); err != nil {
		t.Fatal(err)
	}
	cols, vals := []string{"time"}, []Value{{Kind: lp.Int}}
	for {
		k, v, err := d.NextTag()
		if err != nil {
			t.Fatal(err)
		}
		if k == nil {
			break
		}
		cols, vals = append(cols, string(k)), append(vals, Value{Kind: lp.String, S: bytes.Clone(v)})
	}
	for {
		k, v, err := d.NextField()
		if err != nil {
			t.Fatal(err)
		}
		if k == nil {
			break
		}
		val := Value{Kind: v.Kind()}
		switch v.Kind() {
		case lp.Float:
			val.F = v.FloatV()
		case lp.Int:
			val.I = v.IntV()
		case lp.Bool:
			val.B = v.BoolV()
		case lp.String:
			val.S = bytes.Clone(v.BytesV())
		}
		if val.Kind == lp.Float && val.F == math.Trunc(val.F) && math.Abs(val.F) < 1<<53 && len(cols)%2 == 0 {
			val = Value{Kind: lp.Int, I: int64(val.F)} // as JSON answers an integral float, now and then
		}
		cols, vals = append(cols, string(k)), append(vals, val)
	}
	at, err := d.Time(lp.Nanosecond, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	vals[0].I = at.UnixNano()
	return cols, vals
}

func rowPoint[T Point](t *testing.T, line []byte) T {
	t.Helper()
	var p T
	cols, vals := rowOf(t, line)
	NewColumns[T](cols).Decode(Names{}, vals, &p)
	return p
}

func decode[T Point](line []byte) (T, error) {
	var p T
	err := Decode(nil, line, &p)
	return p, err
}

func lines(t *testing.T, b Batch) [][]byte {
	t.Helper()
	out, err := AppendLines(nil, b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Split(bytes.TrimSuffix(out, []byte{'\n'}), []byte{'\n'})
}

// randomProbe and randomHourly fill every field, the optional ones now and
// then, with values of both plain and escaped spelling.
func randomProbe(rng *rand.Rand) Probe {
	p := Probe{Lane: pick(rng, "a", "lane-07", "a b,c=d"), Kind: pick(rng, "free", "paid"), Site: pick(rng, "", "eu", "x\\y"),
		Time: time.Unix(0, rng.Int64N(1<<62)-1<<61).UTC(), QueueS: rng.Float64() * 100, GenS: rng.NormFloat64(),
		HeadersS: float64(rng.IntN(3)), ConnectS: rng.Float64(), Tokens: rng.Int64() - 1<<62, OK: rng.IntN(2) == 0,
		Outcome: pick(rng, "ok", "timeout", `a "q" \ ü`, ""), Status: rng.Int64N(600)}
	if rng.IntN(2) == 0 {
		p.QuotaRemaining, p.QuotaKnown = rng.Int64N(100)-1, true
	}
	if rng.IntN(2) == 0 {
		p.QuotaResetS = rng.Float64() * 3600
	}
	return p
}

func randomHourly(rng *rand.Rand) Hourly {
	return Hourly{Lane: pick(rng, "a", "lane-07", "a b,c=d"), Kind: pick(rng, "free", "paid"), Site: pick(rng, "", "eu"),
		Hour: time.Unix((rng.Int64N(1<<21)-1<<20)*3600, 0).UTC(), WorstQueueS: rng.Float64() * 100, WorstGenS: rng.Float64(),
		MinTokPerS: rng.ExpFloat64(), Samples: rng.Int64N(100), Failures: rng.Int64N(100), Eligible: rng.IntN(2) == 0,
		WorstCensoredS: float64(rng.IntN(2)) * 30}
}

func pick(rng *rand.Rand, s ...string) string { return s[rng.IntN(len(s))] }

// Random points written as lines read back equal through the line decoder
// and through InfluxDB's rows.
func TestSchemaRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	for range 2000 {
		p, h := randomProbe(rng), randomHourly(rng)
		ls := lines(t, Batch{Probes: []Probe{p}, Hourly: []Hourly{h}})
		if gp, err := decode[Probe](ls[0]); err != nil || !reflect.DeepEqual(gp, p) {
			t.Fatalf("%q decodes to %+v, %v; want %+v", ls[0], gp, err, p)
		}
		if rp := rowPoint[Probe](t, ls[0]); !reflect.DeepEqual(rp, p) {
			t.Fatalf("%q reads as a row %+v; want %+v", ls[0], rp, p)
		}
		if gh, err := decode[Hourly](ls[1]); err != nil || !reflect.DeepEqual(gh, h) {
			t.Fatalf("%q decodes to %+v, %v; want %+v", ls[1], gh, err, h)
		}
		if rh := rowPoint[Hourly](t, ls[1]); !reflect.DeepEqual(rh, h) {
			t.Fatalf("%q reads as a row %+v; want %+v", ls[1], rh, h)
		}
	}
}

// A field of the wrong type fails the line, naming the field; a field the
// table does not name is ignored.
func TestSchemaFieldTypes(t *testing.T) {
	for _, c := range []struct{ line, err string }{
		{"probe,kind=free,lane=a queue_s=1i 1", "field queue_s is int, want float"},
		{"probe,kind=free,lane=a ok=1 1", "field ok is float, want bool"},
		{"probe,kind=free,lane=a outcome=1i 1", "field outcome is int, want string"},
		{"probe,kind=free,lane=a quota_remaining=\"x\" 1", "field quota_remaining is string, want int"},
		{"queue_hourly,kind=free,lane=a eligible=\"t\" 1", "field eligible is string, want bool"},
		{"queue_hourly,kind=free,lane=a samples=1.5 1", "field samples is float, want int"},
		{"probe,kind=free,lane=a other=1i,queue_s=2 1", ""},
	} {
		t.Run(c.line, func(t *testing.T) {
			var err error
			if strings.HasPrefix(c.line, MeasurementProbe+",") {
				_, err = decode[Probe]([]byte(c.line))
			} else {
				_, err = decode[Hourly]([]byte(c.line))
			}
			if got := fmt.Sprint(err); (c.err == "" && err != nil) || (c.err != "" && got != c.err) {
				t.Errorf("error %v, want %q", err, c.err)
			}
		})
	}
}

// A reservation is written as the booked field alone, and reads back as
// a reservation through the line decoder and the row reader; a point that
// holds booked and an outcome (InfluxDB merged a booking with the probe
// that settled it, in either order, as an export may list the fields)
// reads as that probe; an old reservation, written with every field and
// outcome "reserved", still reads as one.
func TestReservationIsWrittenAsItsMarker(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 5, time.UTC)
	booked := Probe{Lane: "a", Kind: "free", Site: "eu", Time: at, Outcome: OutcomeReserved}
	b, err := AppendLines(nil, Batch{Probes: []Probe{booked}})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("probe,kind=free,lane=a,site=eu booked=true %d\n", at.UnixNano())
	if string(b) != want {
		t.Fatalf("a reservation is written as %q, want %q", b, want)
	}
	settled := Probe{Lane: "a", Kind: "free", Site: "eu", Time: at, QueueS: 2.5, GenS: 1, Tokens: 8, OK: true, Outcome: "ok", Status: 200}
	for _, c := range []struct {
		line string
		want Probe
	}{
		{strings.TrimSuffix(want, "\n"), booked},
		{fmt.Sprintf(`probe,kind=free,lane=a,site=eu booked=true,gen_s=1,headers_s=0,ok=true,outcome="ok",queue_s=2.5,status=200i,tokens=8i %d`, at.UnixNano()), settled},
		{fmt.Sprintf(`probe,kind=free,lane=a,site=eu queue_s=2.5,gen_s=1,headers_s=0,tokens=8i,ok=true,outcome="ok",status=200i,booked=true %d`, at.UnixNano()), settled},
		{fmt.Sprintf(`probe,kind=free,lane=a,site=eu queue_s=0,gen_s=0,headers_s=0,connect_s=0,tokens=0i,ok=false,outcome="reserved",status=0i %d`, at.UnixNano()), booked},
	} {
		got, err := decode[Probe]([]byte(c.line))
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q decodes to %+v, %v; want %+v", c.line, got, err, c.want)
		}
		if rp := rowPoint[Probe](t, []byte(c.line)); !reflect.DeepEqual(rp, c.want) {
			t.Errorf("%q reads as a row %+v; want %+v", c.line, rp, c.want)
		}
	}
}

// An invalid point fails the whole batch, naming the point and the first
// value InfluxDB would not store; the batch's bytes are not returned.
func TestAppendLinesRefuses(t *testing.T) {
	at := time.Unix(0, 1795960800000000000)
	good := Probe{Lane: "a", Kind: "free", Time: at, OK: true, Outcome: "ok"}
	for _, c := range []struct {
		name string
		b    Batch
		err  string
	}{
		{"not finite", Batch{Probes: []Probe{good, {Lane: "x", Kind: "free", Time: at, QueueS: math.NaN(), GenS: math.Inf(1)}}}, `probe 1 (lane "x"): queue_s is NaN, want a finite number`},
		{"not UTF-8", Batch{Hourly: []Hourly{{Lane: "a", Kind: "free", Hour: at}}, Heartbeats: []Heartbeat{{Instance: "i", Shard: "0/1", Time: at, Host: "\xff"}}}, `heartbeat 0 (instance "i"): host is not valid UTF-8`},
		{"empty tag", Batch{Heartbeats: []Heartbeat{{Shard: "0/1", Time: at}}}, "instance is empty"},
		{"no shard", Batch{Heartbeats: []Heartbeat{{Instance: "x", Time: at}}}, "shard is empty"},
		{"zero time", Batch{Hourly: []Hourly{{Lane: "x", Kind: "free"}}}, "time is zero"},
		{"out of range", Batch{Probes: []Probe{{Lane: "x", Kind: "free", Time: time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)}}}, "outside the range InfluxDB stores"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := AppendLines([]byte("before\n"), c.b)
			if err == nil || !strings.Contains(err.Error(), c.err) || string(got) != "before\n" {
				t.Errorf("AppendLines = %q, %v; want %q and the bytes before", got, err, c.err)
			}
		})
	}
}

// A heartbeat line is one of the schema: instance and shard tags, fields in
// table order, sites only when set.
func TestHeartbeatLine(t *testing.T) {
	at := time.Unix(1700000000, 5)
	b := Heartbeat{Instance: "h-1-ab", Shard: "0/1", Site: "eu", Time: at, Host: "h", StartNS: 42, Version: "v0", IntervalS: 1.5}
	shared := b
	shared.Time, shared.Sites = at.Add(1), "eu,us"
	got, err := AppendLines(nil, Batch{Heartbeats: []Heartbeat{b, shared}})
	want := `sampler_heartbeat,instance=h-1-ab,shard=0/1,site=eu host="h",start_ns=42i,version="v0",interval_s=1.5 1700000000000000005` + "\n" +
		`sampler_heartbeat,instance=h-1-ab,shard=0/1,site=eu host="h",start_ns=42i,version="v0",interval_s=1.5,sites="eu,us" 1700000000000000006` + "\n"
	if err != nil || string(got) != want {
		t.Errorf("lines\n  %q, %v\nwant\n  %q", got, err, want)
	}
	if got := b.Start(); !got.Equal(time.Unix(0, 42)) {
		t.Errorf("Start() = %s", got)
	}
}

// FuzzDecode: any line decodes or fails cleanly, and what decodes re-encodes
// to a line that decodes to the same point.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		"probe,kind=free,lane=a queue_s=1.5,gen_s=2,headers_s=0.5,tokens=16i,ok=true,outcome=\"ok\",status=200i 1795960800000000000",
		"queue_hourly,kind=paid,lane=a\\ b worst_queue_s=1,worst_gen_s=0,min_tok_per_s=41.5,samples=3i,failures=1i,eligible=false 1795960800000000000",
		"probe,kind=free,lane=a outcome=\"a \\\"q\\\" \\\\ ü\" -1",
		"queue_hourly,lane=x worst_queue_s=1 1",
		"probe,kind=free,lane=a queue_s=1e400 1",
		"probe queue_s=1 1",
		"queue_hourly,kind=k,lane=l samples=1u 5",
		"\xff\x00",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if p, err := decode[Probe](line); err == nil {
			b, err := AppendLines(nil, Batch{Probes: []Probe{p}})
			if err != nil {
				return // e.g. out of InfluxDB's time range
			}
			q, err := decode[Probe](bytes.TrimSuffix(b, []byte{'\n'}))
			if err != nil || !q.Time.Equal(p.Time) || q.Lane != p.Lane || q.Outcome != p.Outcome || q.QueueS != p.QueueS {
				t.Fatalf("round trip of %q: %+v, %v; want %+v", line, q, err, p)
			}
		}
		if h, err := decode[Hourly](line); err == nil {
			b, err := AppendLines(nil, Batch{Hourly: []Hourly{h}})
			if err != nil {
				return
			}
			g, err := decode[Hourly](bytes.TrimSuffix(b, []byte{'\n'}))
			g.Hour, h.Hour = g.Hour.UTC(), h.Hour.UTC()
			if err != nil || !g.Hour.Equal(h.Hour) || g.Lane != h.Lane || g.Samples != h.Samples {
				t.Fatalf("round trip of %q: %+v, %v; want %+v", line, g, err, h)
			}
		}
	})
}

func TestLineTime(t *testing.T) {
	for _, c := range []struct {
		in string
		ns int64
		ok bool
	}{
		{"m f=1 123", 123, true},
		{"m f=1 -5", -5, true},
		{"m f=1 9223372036854775807", math.MaxInt64, true},
		{"m f=1 9223372036854775808", 0, false},
		{"m f=1 99999999999999999999", 0, false},
		{"m f=1", 0, false},
		{"m f=1 ", 0, false},
		{"m f=1 12a", 0, false},
		{"m f=1 -", 0, false},
		{"nospace", 0, false},
	} {
		t.Run(c.in, func(t *testing.T) {
			ns, ok := LineTime([]byte(c.in))
			if ns != c.ns || ok != c.ok {
				t.Errorf("LineTime(%q) = %d, %v; want %d, %v", c.in, ns, ok, c.ns, c.ok)
			}
		})
	}
}

func TestScanLines(t *testing.T) {
	long := strings.Repeat("y", 100)
	for _, c := range []struct {
		name  string
		in    string
		lines []string // with a trailing "!" when not terminated
		longs []int64
	}{
		{"empty", "", nil, nil},
		{"one line", "a\n", []string{"a"}, nil},
		{"unterminated last", "a\nb", []string{"a", "b!"}, nil},
		{"empty lines", "\n\nx\n", []string{"", "", "x"}, nil},
		{"lines longer than the buffer are assembled", "a\n" + long + "\n" + long, []string{"a", long, long + "!"}, nil},
		{"line longer than the cap is skipped", "a\n" + strings.Repeat("z", MaxLine+5) + "\nb\n", []string{"a", "b"}, []int64{2}},
		{"unterminated line longer than the cap", "a\n" + strings.Repeat("z", MaxLine+5), []string{"a"}, []int64{2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			var longs []int64
			err := scanLines(t.Context(), strings.NewReader(c.in), 16, func(n int64, line []byte, terminated bool) error {
				if int(n) != len(got)+len(longs)+1 {
					t.Errorf("line number %d, want %d", n, len(got)+len(longs)+1)
				}
				s := string(line)
				if !terminated {
					s += "!"
				}
				got = append(got, s)
				return nil
			}, func(n int64) { longs = append(longs, n) })
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "|") != strings.Join(c.lines, "|") {
				t.Errorf("lines %q, want %q", got, c.lines)
			}
			if len(longs) != len(c.longs) || (len(longs) > 0 && longs[0] != c.longs[0]) {
				t.Errorf("long lines %v, want %v", longs, c.longs)
			}
		})
	}
}

// A scan of a source without end (one line that never ends, the
// over-long-line path; short lines without end; /dev/zero where it exists)
// stops with the context's error soon after the context is cancelled.
func TestScanLinesEndlessStopsOnCancel(t *testing.T) {
	srcs := map[string]io.Reader{
		"zeros":       endless{[]byte{0}},
		"lines":       endless{[]byte("not a point\n")},
		"a torn line": endless{[]byte("probe,kind=free,lane=a queue_s=1 1795960800000000000\nprobe,kind=")},
	}
	if f, err := os.Open("/dev/zero"); err == nil {
		defer f.Close()
		srcs["/dev/zero"] = f
	}
	for name, src := range srcs {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() {
				done <- ScanLines(ctx, src, func(int64, []byte, bool) error { return nil }, func(int64) {})
			}()
			time.Sleep(20 * time.Millisecond)
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("returned %v, want context.Canceled", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("still reading 10 s after the context was cancelled")
			}
		})
	}
}

// endless is a reader that never ends: its pattern, again and again.
type endless struct{ pattern []byte }

func (e endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = e.pattern[i%len(e.pattern)]
	}
	return len(p), nil
}

// event is what a decoder hands on, in order.
type event struct {
	tag   bool
	k, v  string
	field Value
}

func plainEvents(line []byte, want string) (evs []event, ns int64, ok bool, err error) {
	ns, ok, err = plain(line, want,
		func(k, v []byte) { evs = append(evs, event{tag: true, k: string(k), v: string(v)}) },
		func(k []byte, c Value) error {
			c.S = bytes.Clone(c.S)
			evs = append(evs, event{k: string(k), field: c})
			return nil
		})
	return evs, ns, ok, err
}

func libraryEvents(line []byte, want string) (evs []event, ns int64, err error) {
	ns, err = library(line, want,
		func(k, v []byte) { evs = append(evs, event{tag: true, k: string(k), v: string(v)}) },
		func(k []byte, c Value) error {
			c.S = bytes.Clone(c.S)
			evs = append(evs, event{k: string(k), field: c})
			return nil
		})
	return evs, ns, err
}

// FuzzPlain: whatever plain takes, the line-protocol library reads the
// same way (the same tags and fields in the same order, the same
// timestamp, no error).
func FuzzPlain(f *testing.F) {
	for _, s := range []string{
		"probe,kind=free,lane=lane-00 queue_s=11.692553250344035,gen_s=0.44,headers_s=0.08,connect_s=0,tokens=16i,ok=true,outcome=\"ok\",status=200i 1764547633584475097",
		"queue_hourly,kind=paid,lane=a,site=eu worst_queue_s=1,worst_gen_s=0,min_tok_per_s=41.5,samples=3i,failures=1i,eligible=false,worst_censored_s=30 1795960800000000000",
		"probe,kind=free,lane=a outcome=\"a b, c=d\" -1",
		"probe,kind=free,lane=a queue_s=1e400 1",
		"probe,kind=free,lane=a queue_s=-1.5E-3,tokens=-0i 0",
		"probe,kind=free,lane=a queue_s=1. 1",
		"probe,kind=free,lane=a ok=t 1",
		"probe,kind=free,lane=a,lane=b x=1,x=2 1",
		"probe,=free,lane=a x=1 1",
		"probe,kind=free x=1",
		"probe x=1 1 ",
		"probe,kind=fr\"ee x=1 1",
		"probe,kind=free x=\"\" 1",
		"probe,kind=free x=99999999999999999999i 1",
		"probe,kind=free x=1 99999999999999999999",
		"probe,kind=free x=1 -9223372036854775808",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		for _, want := range []string{"probe", "queue_hourly"} {
			evs, ns, ok, err := plainEvents(line, want)
			if err != nil {
				t.Fatalf("%q: Plain returned %v with a field function that never fails", line, err)
			}
			if !ok {
				if len(evs) > 0 {
					t.Fatalf("%q: not plain, yet handed on %v", line, evs)
				}
				continue
			}
			lib, lns, err := libraryEvents(line, want)
			if err != nil {
				t.Fatalf("%q: plain, but the library says %v", line, err)
			}
			if !reflect.DeepEqual(evs, lib) || lns != ns {
				t.Fatalf("%q:\nplain   %v %d\nlibrary %v %d", line, evs, ns, lib, lns)
			}
		}
	})
}

// TestWrittenLinesArePlain: every line the stores write takes the plain
// path, so that reads never fall back to the library for their own data.
func TestWrittenLinesArePlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	num := func() float64 {
		switch rng.IntN(4) {
		case 0:
			return 0
		case 1:
			return math.Round(rng.Float64()*1e4) / 100
		case 2:
			return rng.ExpFloat64() * math.Pow(10, float64(rng.IntN(40)-20))
		}
		return rng.Float64() * 1e6
	}
	name := func() string {
		return strings.Repeat(string("abz09-_.:/"[rng.IntN(10)]), 1+rng.IntN(12))
	}
	for i := range 2000 {
		p := Probe{Lane: name(), Kind: []string{"free", "paid"}[rng.IntN(2)], Site: []string{"", name()}[rng.IntN(2)],
			Time: time.Unix(0, rng.Int64N(4e18)-2e18), QueueS: num(), GenS: num(), HeadersS: num(), ConnectS: num(),
			Tokens: rng.Int64N(1e6), OK: rng.IntN(2) == 0, Outcome: []string{"ok", "timeout", "http_error", "rate_limited"}[rng.IntN(4)],
			Status: int64(rng.IntN(600)), QuotaKnown: rng.IntN(2) == 0, QuotaRemaining: rng.Int64N(1000), QuotaResetS: num()}
		if !p.QuotaKnown {
			p.QuotaRemaining = 0 // not written
		}
		p.Time = p.Time.UTC()
		h := Hourly{Lane: p.Lane, Kind: p.Kind, Site: p.Site, Hour: p.Time.Truncate(time.Hour), WorstQueueS: num(), WorstGenS: num(),
			MinTokPerS: num(), Samples: rng.Int64N(10), Failures: rng.Int64N(10), Eligible: rng.IntN(2) == 0, WorstCensoredS: num()}
		lines := lines(t, Batch{Probes: []Probe{p}, Hourly: []Hourly{h}})
		for j, want := range []string{MeasurementProbe, MeasurementHourly} {
			if _, ok, _ := plain(lines[j], want, func(k, v []byte) {}, func([]byte, Value) error { return nil }); !ok {
				t.Fatalf("line %d: written, but not plain: %q", i, lines[j])
			}
		}
		got, err := decode[Probe](lines[0])
		if err != nil || fmt.Sprint(got) != fmt.Sprint(p) {
			t.Fatalf("line %d: %q reads as %+v, %v; want %+v", i, lines[0], got, err, p)
		}
	}
}

// TestDecimalIsParseFloat: the fast path reads every decimal it takes as
// strconv.ParseFloat does, bit for bit (the sign of zero too), and leaves
// the rest to it.
func TestDecimalIsParseFloat(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	cases := []string{"0", "-0", "0.0", "-0.0", "1", "11.692553250344035", "0.44", "999999999999999", "-999999999999999",
		"0.000000000000001", "123456789012345", "1234567890123456", "1.", ".5", "-", "", "1e5", "1.5.5", "--1", "0x10", "1_0"}
	for range 200000 {
		digits := make([]byte, 1+r.IntN(17))
		for i := range digits {
			digits[i] = byte('0' + r.IntN(10))
		}
		s := string(digits)
		if k := r.IntN(len(digits) + 1); k > 0 && k < len(digits) {
			s = s[:k] + "." + s[k:]
		}
		if r.IntN(2) == 0 {
			s = "-" + s
		}
		cases = append(cases, s)
	}
	taken := 0
	for _, s := range cases {
		got, ok := decimal([]byte(s))
		want, err := strconv.ParseFloat(s, 64)
		if !ok {
			continue
		}
		taken++
		if err != nil || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("decimal(%q) = %v (%#x), strconv.ParseFloat = %v (%#x), %v", s, got, math.Float64bits(got), want, math.Float64bits(want), err)
		}
	}
	for _, s := range []string{"1.", ".5", "-", "", "1e5", "1.5.5", "--1", "1234567890123456"} {
		if _, ok := decimal([]byte(s)); ok {
			t.Errorf("decimal(%q) took what it must leave to strconv.ParseFloat", s)
		}
	}
	if taken < len(cases)/2 {
		t.Errorf("the fast path took %d of %d decimals", taken, len(cases))
	}
}
