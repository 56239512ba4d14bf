package series

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// event is what a decoder hands on, in order.
type event struct {
	tag   bool
	k, v  string
	field fieldVal
}

func plainEvents(line []byte, want string) (evs []event, ns int64, ok bool, err error) {
	ns, ok, err = plainLine(line, want,
		func(k, v []byte) { evs = append(evs, event{tag: true, k: string(k), v: string(v)}) },
		func(k []byte, v fieldVal) error {
			v.s = bytes.Clone(v.s)
			evs = append(evs, event{k: string(k), field: v})
			return nil
		})
	return evs, ns, ok, err
}

func libraryEvents(line []byte, want string) (evs []event, t time.Time, err error) {
	t, err = libraryLine(line, want,
		func(k, v []byte) { evs = append(evs, event{tag: true, k: string(k), v: string(v)}) },
		func(k []byte, v fieldVal) error {
			v.s = bytes.Clone(v.s)
			evs = append(evs, event{k: string(k), field: v})
			return nil
		})
	return evs, t, err
}

// FuzzPlainLine: whatever plainLine accepts, the line-protocol library
// reads the same way (the same tags and fields in the same order, the
// same timestamp, no error).
func FuzzPlainLine(f *testing.F) {
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
		for _, want := range []string{MeasurementProbe, MeasurementHourly} {
			evs, ns, ok, err := plainEvents(line, want)
			if err != nil {
				t.Fatalf("%q: plainLine returned %v with a field function that never fails", line, err)
			}
			if !ok {
				if len(evs) > 0 {
					t.Fatalf("%q: not plain, yet handed on %v", line, evs)
				}
				continue
			}
			lib, lt, err := libraryEvents(line, want)
			if err != nil {
				t.Fatalf("%q: plain, but the library says %v", line, err)
			}
			if !reflect.DeepEqual(evs, lib) || lt.UnixNano() != ns {
				t.Fatalf("%q:\nplain   %v %d\nlibrary %v %d", line, evs, ns, lib, lt.UnixNano())
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
	var e encoder
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
		b, err := e.round([]Probe{p}, []Hourly{h})
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.Split(bytes.TrimSuffix(b, []byte{'\n'}), []byte{'\n'})
		for j, want := range []string{MeasurementProbe, MeasurementHourly} {
			if _, _, ok, _ := plainEvents(lines[j], want); !ok {
				t.Fatalf("line %d: written, but not plain: %q", i, lines[j])
			}
		}
		got, err := decodeProbe(lines[0])
		if err != nil || fmt.Sprint(got) != fmt.Sprint(p) {
			t.Fatalf("line %d: %q reads as %+v, %v; want %+v", i, lines[0], got, err, p)
		}
	}
}
