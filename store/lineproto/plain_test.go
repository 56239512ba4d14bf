package lineproto

import (
	"bytes"
	"reflect"
	"testing"
	"time"
)

// event is what a decoder hands on, in order.
type event struct {
	tag   bool
	k, v  string
	field Value
}

func plainEvents(line []byte, want string) (evs []event, ns int64, ok bool, err error) {
	ns, ok, err = Plain(line, want,
		func(k, v []byte) { evs = append(evs, event{tag: true, k: string(k), v: string(v)}) },
		func(k []byte, v Value) error {
			v.S = bytes.Clone(v.S)
			evs = append(evs, event{k: string(k), field: v})
			return nil
		})
	return evs, ns, ok, err
}

func libraryEvents(line []byte, want string) (evs []event, t time.Time, err error) {
	t, err = Library(line, want,
		func(k, v []byte) { evs = append(evs, event{tag: true, k: string(k), v: string(v)}) },
		func(k []byte, v Value) error {
			v.S = bytes.Clone(v.S)
			evs = append(evs, event{k: string(k), field: v})
			return nil
		})
	return evs, t, err
}

// FuzzPlainLine: whatever Plain accepts, the line-protocol library
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
