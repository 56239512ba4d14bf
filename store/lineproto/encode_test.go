package lineproto

import (
	"math"
	"testing"
	"time"
)

// The encoder writes a line as given, fails a line whose value InfluxDB
// would not store with the first such value named, and stays usable after.
func TestEncoder(t *testing.T) {
	at := time.Unix(0, 1795960800000000000)
	for _, c := range []struct {
		name string
		add  func(e *Encoder)
		line string
		err  string
	}{
		{"every type", func(e *Encoder) {
			e.AddTag("kind", "free")
			e.AddTag("lane", "a b")
			e.AddFloat("q", 1.5)
			e.AddInt("n", -3)
			e.AddBool("ok", true)
			e.AddString("s", `say "hi"`)
		}, `m,kind=free,lane=a\ b q=1.5,n=-3i,ok=true,s="say \"hi\"" 1795960800000000000` + "\n", ""},
		{"not finite", func(e *Encoder) { e.AddFloat("q", math.NaN()); e.AddFloat("g", math.Inf(1)) }, "", "q is NaN, want a finite number"},
		{"not UTF-8", func(e *Encoder) { e.AddInt("n", 1); e.AddString("s", "\xff") }, "", "s is not valid UTF-8"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var e Encoder
			e.StartLine("m")
			c.add(&e)
			err := e.EndLine(at)
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Fatalf("EndLine = %v, want %q", err, c.err)
				}
				e.Reset()
				e.StartLine("m")
				e.AddInt("n", 1)
				if err := e.EndLine(at); err != nil || string(e.Bytes()) != "m n=1i 1795960800000000000\n" {
					t.Fatalf("after a failed line: %q, %v", e.Bytes(), err)
				}
				return
			}
			if err != nil || string(e.Bytes()) != c.line {
				t.Fatalf("got %q, %v; want %q", e.Bytes(), err, c.line)
			}
		})
	}
}
