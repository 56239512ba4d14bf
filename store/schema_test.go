package store

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/influxdata/line-protocol/v2/lineprotocol"
	"github.com/lanewatch/lanewatch/store/lineproto"
)

// Each field of the tables has the one accessor of its type (a marker
// field, written alone with a constant, none) and a unique key. (That the
// plain reader takes a line of every field and tag is
// TestWrittenLinesArePlain.)
func TestSchemaTables(t *testing.T) {
	check := func(name string, keys []string, accessors func(i int) [4]bool, kinds func(i int) lineproto.Kind, marker func(i int) bool) {
		t.Run(name, func(t *testing.T) {
			seen := map[string]bool{}
			for i, k := range keys {
				if seen[k] {
					t.Errorf("field %s twice", k)
				}
				seen[k] = true
				want := map[lineproto.Kind]int{lineproto.Float: 0, lineproto.Int: 1, lineproto.Bool: 2, lineproto.String: 3}
				w, ok := want[kinds(i)]
				if !ok {
					t.Errorf("field %s: type %s", k, kinds(i))
					continue
				}
				for j, set := range accessors(i) {
					if set != (j == w && !marker(i)) {
						t.Errorf("field %s (%s): accessor %d set %v", k, kinds(i), j, set)
					}
				}
			}
		})
	}
	check(MeasurementProbe, probeFields, func(i int) [4]bool {
		f := probeSchema.fields[i]
		return [4]bool{f.f != nil, f.i != nil, f.b != nil, f.s != nil}
	}, func(i int) lineproto.Kind { return probeSchema.fields[i].kind }, func(i int) bool { return probeSchema.fields[i].alone })
	check(MeasurementHourly, hourlyFields, func(i int) [4]bool {
		f := hourlySchema.fields[i]
		return [4]bool{f.f != nil, f.i != nil, f.b != nil, f.s != nil}
	}, func(i int) lineproto.Kind { return hourlySchema.fields[i].kind }, func(i int) bool { return hourlySchema.fields[i].alone })
}

// mapRow is a row of an InfluxDB read, made from a line.
type mapRow struct {
	t    time.Time
	vals map[string]any
}

func (r mapRow) at() time.Time        { return r.t }
func (r mapRow) value(key string) any { return r.vals[key] }

// rowOfLine reads a line as InfluxDB would hand it back: tags and fields
// as columns of their Go types.
func rowOfLine(t *testing.T, line []byte) mapRow {
	t.Helper()
	d := lineprotocol.NewDecoderWithBytes(line)
	r := mapRow{vals: map[string]any{}}
	if !d.Next() {
		t.Fatalf("%q: no line", line)
	}
	if _, err := d.Measurement(); err != nil {
		t.Fatal(err)
	}
	for {
		k, v, err := d.NextTag()
		if err != nil {
			t.Fatal(err)
		}
		if k == nil {
			break
		}
		r.vals[string(k)] = string(v)
	}
	for {
		k, v, err := d.NextField()
		if err != nil {
			t.Fatal(err)
		}
		if k == nil {
			break
		}
		r.vals[string(k)] = v.Interface()
	}
	var err error
	if r.t, err = d.Time(lineprotocol.Nanosecond, time.Time{}); err != nil {
		t.Fatal(err)
	}
	return r
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

// Random points written by the encoder read back equal through the line
// decoder (plain and library paths) and through the InfluxDB row reader:
// the three are driven by one table.
func TestSchemaRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	var e encoder
	for i := range 2000 {
		p, h := randomProbe(rng), randomHourly(rng)
		b, err := e.round([]Probe{p}, []Hourly{h})
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		lines := bytes.Split(bytes.TrimSuffix(b, []byte{'\n'}), []byte{'\n'})
		if len(lines) != 2 {
			t.Fatalf("%d: %d lines", i, len(lines))
		}
		gp, err := names{}.probe(lines[0])
		if err != nil || !reflect.DeepEqual(gp, p) {
			t.Fatalf("%q decodes to %+v, %v; want %+v", lines[0], gp, err, p)
		}
		if rp := probeOf(rowOfLine(t, lines[0])); !reflect.DeepEqual(rp, p) {
			t.Fatalf("%q reads as a row %+v; want %+v", lines[0], rp, p)
		}
		gh, err := names{}.hourly(lines[1])
		if err != nil || !reflect.DeepEqual(gh, h) {
			t.Fatalf("%q decodes to %+v, %v; want %+v", lines[1], gh, err, h)
		}
		if rh := hourlyOf(rowOfLine(t, lines[1])); !reflect.DeepEqual(rh, h) {
			t.Fatalf("%q reads as a row %+v; want %+v", lines[1], rh, h)
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
				_, err = decodeProbe([]byte(c.line))
			} else {
				_, err = decodeHourly([]byte(c.line))
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
	var e encoder
	b, err := e.round([]Probe{booked}, nil)
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
		got, err := decodeProbe([]byte(c.line))
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q decodes to %+v, %v; want %+v", c.line, got, err, c.want)
		}
		if rp := probeOf(rowOfLine(t, []byte(c.line))); !reflect.DeepEqual(rp, c.want) {
			t.Errorf("%q reads as a row %+v; want %+v", c.line, rp, c.want)
		}
	}
}
