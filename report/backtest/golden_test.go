package backtest

import (
	"bytes"
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/store"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from this run")

// A replay in the extended shape, every figure the writers print: a free
// lane whose queue is lognormal around a median that doubles at 09-17 and
// fails one probe in 25, a steady paid lane, both rules over two lookbacks
// and two coverages, a warm-up, the truth for the oracle, the fallback
// baselines and their tuned forms, and the decisions under the config's
// rule. Its table, CSV and JSON are testdata/extended.golden
// (go test -run TestExtendedReportGolden -update rewrites it).
func TestExtendedReportGolden(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	median := func(at time.Time) float64 {
		if h := at.Hour(); h >= 9 && h <= 17 {
			return 20
		}
		return 10
	}
	p := calibratedParams(3)
	p.Classes = append(p.Classes, policy.ClassSpec{Name: "batch", DeadlineS: 120, CeilingTokens: 4000, EstTokens: 800, PaidUSDPer1k: 0.002, Objective: policy.ObjectiveTime})
	opts := Options{Params: p, Lookbacks: []int{2, 3}, Rules: []string{policy.RuleCalibrated, policy.RuleMax}, Coverages: []float64{0.9, 0.95},
		From: day0.AddDate(0, 0, 5), To: day0.AddDate(0, 0, 8), WarmupDays: 3,
		Fallbacks: []float64{10, 30}, Deadlines: []float64{60, 120}, TuneDays: 2,
		Truth: func(p *store.Probe) (float64, float64, bool) {
			if p.Lane == "free" {
				return median(p.Time), 0.5, true
			}
			return 1, 0.1, true
		}}
	probes := rounds(opts.ReadFrom(), opts.To, func(at time.Time) (float64, bool) {
		return median(at) * math.Exp(0.5*r.NormFloat64()), r.IntN(25) > 0
	})
	rep := run(t, opts, probes)
	var out bytes.Buffer
	for _, w := range []func(*bytes.Buffer, *Report) error{
		func(b *bytes.Buffer, r *Report) error { return WriteTable(b, r, false) },
		func(b *bytes.Buffer, r *Report) error { return WriteCSV(b, r, false) },
		func(b *bytes.Buffer, r *Report) error { return WriteJSON(b, r, false) },
	} {
		if err := w(&out, &rep); err != nil {
			t.Fatal(err)
		}
		out.WriteString("----\n")
	}
	golden := filepath.Join("testdata", "extended.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -run TestExtendedReportGolden -update writes it)", err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Errorf("the report differs from %s (-update rewrites it after a change you meant):\n%s", golden, out.Bytes())
	}
}
