package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// vector is one file of testdata/book (copied from the shared vectors).
type vector struct {
	Input struct {
		Attempts []struct {
			QueueS        float64 `json:"queue_s"`
			GenS          float64 `json:"gen_s"`
			EmittedTokens int     `json:"emitted_tokens"`
			Shipped       bool    `json:"shipped"`
		} `json:"attempts"`
		Policy struct {
			DeadlineS     float64 `json:"deadline_s"`
			CeilingTokens int     `json:"ceiling_tokens"`
			NextQueueS    float64 `json:"next_queue_s"`
			NextGenS      float64 `json:"next_gen_s"`
			NextEstTokens int     `json:"next_est_tokens"`
			PaidQueueS    float64 `json:"paid_queue_s"`
			PaidUSDPer1k  float64 `json:"paid_usd_per_1k"`
		} `json:"policy"`
	} `json:"input"`
	Expected json.RawMessage `json:"expected"`
}

func loadVectors(t testing.TB) map[string]vector {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "book", "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no vectors: %v", err)
	}
	out := make(map[string]vector, len(paths))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var v vector
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out[strings.TrimSuffix(filepath.Base(p), ".json")] = v
	}
	return out
}

func (v vector) args() ([]Attempt, BookPolicy) {
	var as []Attempt
	for _, a := range v.Input.Attempts {
		as = append(as, Attempt{QueueS: a.QueueS, GenS: a.GenS, EmittedTokens: a.EmittedTokens, Shipped: a.Shipped})
	}
	p := v.Input.Policy
	return as, BookPolicy{
		DeadlineS: p.DeadlineS, CeilingTokens: p.CeilingTokens,
		NextQueueS: p.NextQueueS, NextGenS: p.NextGenS, NextEstTokens: p.NextEstTokens,
		PaidQueueS: p.PaidQueueS, PaidUSDPer1k: p.PaidUSDPer1k,
		FreeEligible: true, PaidEligible: true,
	}
}

// jsonPairs returns the keys of a flat JSON object in order with their values,
// numbers as float64.
func jsonPairs(t *testing.T, data []byte) ([]string, map[string]any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", data)
	}
	var keys []string
	vals := map[string]any{}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		vals[k.(string)] = v
	}
	return keys, vals
}

// CompareDecisionJSON checks got against a vector's expected object: the same
// keys in the same order and the same values (numbers compared as float64, so
// 0 and 0.0 match).
func compareDecisionJSON(t *testing.T, got, want []byte) {
	t.Helper()
	gk, gv := jsonPairs(t, got)
	wk, wv := jsonPairs(t, want)
	if strings.Join(gk, ",") != strings.Join(wk, ",") {
		t.Fatalf("keys\n got %v\nwant %v", gk, wk)
	}
	for _, k := range wk {
		if gv[k] != wv[k] {
			t.Errorf("%s: got %v, want %v\n got %s", k, gv[k], wv[k], got)
		}
	}
}

func TestBookVectors(t *testing.T) {
	for name, v := range loadVectors(t) {
		t.Run(name, func(t *testing.T) {
			as, pol := v.args()
			got, err := json.Marshal(Book(as, pol))
			if err != nil {
				t.Fatal(err)
			}
			compareDecisionJSON(t, got, v.Expected)
		})
	}
}

func TestBookOrderOfChecks(t *testing.T) {
	fits := BookPolicy{DeadlineS: 100, CeilingTokens: 1000, NextQueueS: 10, NextGenS: 10, NextEstTokens: 100, PaidQueueS: 1, PaidUSDPer1k: 1, FreeEligible: true, PaidEligible: true}
	with := func(f func(*BookPolicy)) BookPolicy { p := fits; f(&p); return p }
	shipped := []Attempt{{QueueS: 1, GenS: 1, EmittedTokens: 5000, Shipped: true}}
	overCeiling := []Attempt{{QueueS: 1, GenS: 1, EmittedTokens: 950}}
	for _, tc := range []struct {
		name     string
		attempts []Attempt
		pol      BookPolicy
		action   Action
		why      string
	}{
		{"shipped beats ceiling and fits", shipped, fits, Stop, WhyShipped},
		{"shipped beats overdrawn clock", []Attempt{{QueueS: 500, Shipped: true}}, fits, Stop, WhyShipped},
		{"shipped in a later attempt", []Attempt{{QueueS: 1}, {QueueS: 1, Shipped: true}}, fits, Stop, WhyShipped},
		{"ceiling beats free fit", overCeiling, fits, Stop, WhyCeiling},
		{"ceiling beats paid fit", overCeiling, with(func(p *BookPolicy) { p.NextQueueS = 1000 }), Stop, WhyCeiling},
		{"ceiling beats ineligible lanes", overCeiling, with(func(p *BookPolicy) { p.FreeEligible, p.PaidEligible = false, false }), Stop, WhyCeiling},
		{"free beats paid when both fit", nil, fits, RetryFree, WhyFreeFits},
		{"paid when free does not fit", nil, with(func(p *BookPolicy) { p.NextQueueS = 95 }), CutOver, WhyPaidFits},
		{"stop when nothing fits", []Attempt{{QueueS: 90, GenS: 5}}, fits, Stop, WhyNoneFits},
		{"ineligible free that fits cuts over", nil, with(func(p *BookPolicy) { p.FreeEligible = false }), CutOver, WhyFreeIneligiblePaidFits},
		{"ineligible free, paid does not fit", []Attempt{{QueueS: 90, GenS: 5}}, with(func(p *BookPolicy) { p.FreeEligible = false }), Stop, WhyFreeIneligibleNoneFits},
		{"ineligible paid that fits is not used", nil, with(func(p *BookPolicy) { p.NextQueueS, p.PaidEligible = 95, false }), Stop, WhyPaidIneligible},
		{"ineligible paid does not stop a free retry", nil, with(func(p *BookPolicy) { p.PaidEligible = false }), RetryFree, WhyFreeFits},
		{"neither eligible", nil, with(func(p *BookPolicy) { p.FreeEligible, p.PaidEligible = false, false }), Stop, WhyNoneEligible},
		{"zero value policy stops", nil, BookPolicy{}, Stop, WhyNoneEligible},
		{"an error cuts over where free fits", []Attempt{{QueueS: 1, Error: true}}, fits, CutOver, WhyErrorPaidFits},
		{"an error of an earlier attempt too", []Attempt{{QueueS: 1, Error: true}, {QueueS: 1}}, fits, CutOver, WhyErrorPaidFits},
		{"an error, paid does not fit", []Attempt{{QueueS: 1, Error: true}}, with(func(p *BookPolicy) { p.PaidQueueS = 95 }), Stop, WhyErrorNoneFits},
		{"an error, paid not eligible", []Attempt{{QueueS: 1, Error: true}}, with(func(p *BookPolicy) { p.PaidEligible = false }), Stop, WhyErrorPaidIneligible},
		{"an error with the free lane ineligible says the hour", []Attempt{{QueueS: 1, Error: true}}, with(func(p *BookPolicy) { p.FreeEligible = false }), CutOver, WhyFreeIneligiblePaidFits},
		{"shipped beats an error", []Attempt{{QueueS: 1, Error: true}, {QueueS: 1, Shipped: true}}, fits, Stop, WhyShipped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Book(tc.attempts, tc.pol)
			if d.Action != tc.action || d.Why != tc.why {
				t.Fatalf("got %s (%s), want %s (%s)", d.Action, d.Why, tc.action, tc.why)
			}
		})
	}
}

// TestBookBoundaries: every comparison is inclusive (<=) on the fitting side,
// and one ulp past it flips the answer.
func TestBookBoundaries(t *testing.T) {
	base := BookPolicy{DeadlineS: 60, CeilingTokens: 4000, NextQueueS: 35, NextGenS: 12, NextEstTokens: 800, PaidQueueS: 2, PaidUSDPer1k: 0.002, FreeEligible: true, PaidEligible: true}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		// Quarter-second values: sums and differences are exact in binary.
		q := float64(rng.IntN(400)) / 4
		g := float64(rng.IntN(400)) / 4
		spentQ := float64(rng.IntN(400)) / 4
		spentG := float64(rng.IntN(400)) / 4
		tokens := rng.IntN(4000)
		est := rng.IntN(4000)
		as := []Attempt{{QueueS: spentQ, GenS: spentG, EmittedTokens: tokens}}
		t.Run(fmt.Sprintf("case%03d", i), func(t *testing.T) {
			// Free exactly fits.
			p := base
			p.NextQueueS, p.NextGenS, p.NextEstTokens, p.CeilingTokens = q, g, est, tokens+est
			p.DeadlineS = spentQ + spentG + q + g
			if d := Book(as, p); d.Action != RetryFree || d.RemainingS != q+g {
				t.Fatalf("exact free fit: %+v", d)
			}
			// Ceiling exactly reached is allowed; one token more is not.
			p.CeilingTokens = tokens + est - 1
			if d := Book(as, p); d.Action != Stop || d.Why != WhyCeiling {
				t.Fatalf("one token over the ceiling: %+v", d)
			}
			p.CeilingTokens = tokens + est
			// Free misses by one ulp; paid exactly fits.
			p.DeadlineS = math.Nextafter(spentQ+spentG+q+g, math.Inf(-1))
			p.PaidQueueS = p.DeadlineS - (spentQ + spentG) - g
			if p.PaidQueueS < 0 {
				return // no room for a paid attempt that fits
			}
			if d := Book(as, p); d.Action != CutOver {
				t.Fatalf("free misses by one ulp, paid fits: %+v", d)
			}
			// Paid misses by one ulp too.
			p.PaidQueueS = math.Nextafter(p.PaidQueueS, math.Inf(1))
			if p.PaidQueueS+g <= p.DeadlineS-(spentQ+spentG) {
				return // the ulp vanished in the sum
			}
			if d := Book(as, p); d.Action != Stop || d.Why != WhyNoneFits {
				t.Fatalf("both miss: %+v", d)
			}
		})
	}
}

// TestBookInvariants checks, over random input, what each answer implies.
func TestBookInvariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 5000 {
		n := rng.IntN(9)
		as := make([]Attempt, n)
		var spent float64
		var tokens int
		shipped, erred := false, false
		for j := range as {
			as[j] = Attempt{QueueS: rng.Float64() * 60, GenS: rng.Float64() * 30, EmittedTokens: rng.IntN(1000), Shipped: rng.IntN(20) == 0,
				Error: rng.IntN(8) == 0}
			spent += as[j].QueueS + as[j].GenS
			tokens += as[j].EmittedTokens
			shipped = shipped || as[j].Shipped
			erred = erred || as[j].Error
		}
		p := BookPolicy{
			DeadlineS: rng.Float64() * 600, CeilingTokens: rng.IntN(8000),
			NextQueueS: rng.Float64() * 100, NextGenS: rng.Float64() * 50, NextEstTokens: rng.IntN(2000),
			PaidQueueS: rng.Float64() * 10, PaidUSDPer1k: rng.Float64() / 100,
			FreeEligible: rng.IntN(4) != 0, PaidEligible: rng.IntN(4) != 0,
		}
		d := Book(as, p)
		rem := p.DeadlineS - spent
		freeFits := p.NextQueueS+p.NextGenS <= rem
		paidFits := p.PaidQueueS+p.NextGenS <= rem
		over := tokens+p.NextEstTokens > p.CeilingTokens
		if d.SpentS != spent || d.RemainingS != rem || d.SpentTokens != tokens || d.ProjectedTokens != tokens+p.NextEstTokens {
			t.Fatalf("case %d: sums: %+v", i, d)
		}
		free := p.FreeEligible && !erred && freeFits // an attempt that ended in an error is never retried free
		var ok bool
		switch d.Action {
		case RetryFree:
			ok = !shipped && !over && free
		case CutOver:
			ok = !shipped && !over && !free && p.PaidEligible && paidFits
		case Stop:
			ok = shipped || over || (!free && !(p.PaidEligible && paidFits))
		}
		if !ok {
			t.Fatalf("case %d: %s (%s) with shipped=%v over=%v erred=%v freeFits=%v paidFits=%v policy %+v", i, d.Action, d.Why, shipped, over, erred, freeFits, paidFits, p)
		}
		if d.Action == Stop && !shipped && !over && !p.FreeEligible && !strings.Contains(d.Why, "free lane is not eligible") && d.Why != WhyNoneEligible {
			t.Fatalf("case %d: why %q does not say the free lane is not eligible", i, d.Why)
		}
		if d.Action != RetryFree && !shipped && !over && p.FreeEligible && erred && freeFits && !strings.HasPrefix(d.Why, "an attempt ended in an error") {
			t.Fatalf("case %d: why %q does not say an attempt ended in an error", i, d.Why)
		}
	}
}

func TestRounding(t *testing.T) {
	for _, tc := range []struct {
		x    float64
		n    int
		want string
	}{
		{44, 2, "44"},
		{4.054999999999999715782905695960, 2, "4.05"}, // below the half
		{6.445000000000000284217094304040, 2, "6.45"}, // above the half
		{0.125, 2, "0.12"},                            // exact half: to even
		{0.375, 2, "0.38"},                            // exact half: to even
		{2.675, 2, "2.67"},                            // 2.67499999...
		{1.005, 2, "1"},                               // 1.00499999...
		{0.00025000000000000000520417, 4, "0.0003"},
		{0.00002, 4, "0"},
		{-0.001, 2, "0"}, // no "-0"
		{-150, 2, "-150"},
		{0.1, 4, "0.1"},
		{1e21, 2, "1000000000000000000000"},
		{math.NaN(), 2, "0"},
	} {
		t.Run(strconv.FormatFloat(tc.x, 'g', -1, 64), func(t *testing.T) {
			if got := string(appendRounded(nil, tc.x, tc.n)); got != tc.want {
				t.Fatalf("appendRounded(%v, %d) = %s, want %s", tc.x, tc.n, got, tc.want)
			}
		})
	}
	t.Run("agrees with FormatFloat", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(5, 6))
		for range 100000 {
			x := (rng.Float64() - 0.5) * math.Pow(10, float64(rng.IntN(8)))
			for _, n := range []int{2, 4} {
				got, _ := strconv.ParseFloat(string(appendRounded(nil, x, n)), 64)
				want, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', n, 64), 64)
				if got != want || got != Round(x, n) {
					t.Fatalf("%v to %d: got %v, FormatFloat %v, Round %v", x, n, got, want, Round(x, n))
				}
			}
		}
	})
}

func TestDecisionJSONRejectsNonFinite(t *testing.T) {
	d := Book([]Attempt{{QueueS: math.Inf(1)}}, BookPolicy{DeadlineS: 1})
	if _, err := json.Marshal(d); err == nil {
		t.Fatal("want an error for an infinite spent_s")
	}
}

func TestBookDoesNotAllocate(t *testing.T) {
	as := make([]Attempt, 8)
	for i := range as {
		as[i] = Attempt{QueueS: 3, GenS: 1, EmittedTokens: 10}
	}
	pol := BookPolicy{DeadlineS: 600, CeilingTokens: 4000, NextQueueS: 35, NextGenS: 12, NextEstTokens: 800, PaidQueueS: 2, PaidUSDPer1k: 0.002, FreeEligible: true, PaidEligible: true}
	var d Decision
	if n := testing.AllocsPerRun(100, func() { d = Book(as, pol) }); n != 0 {
		t.Fatalf("Book allocates %v times", n)
	}
	if d.SpentTokens != 80 {
		t.Fatalf("spent_tokens %d", d.SpentTokens)
	}
}

var sink Decision

func BenchmarkBook(b *testing.B) {
	pol := BookPolicy{DeadlineS: 600, CeilingTokens: 4000, NextQueueS: 35, NextGenS: 12, NextEstTokens: 800, PaidQueueS: 2, PaidUSDPer1k: 0.002, FreeEligible: true, PaidEligible: true}
	for _, n := range []int{0, 1, 8} {
		as := make([]Attempt, n)
		for i := range as {
			as[i] = Attempt{QueueS: 35.5, GenS: 9.25, EmittedTokens: 220}
		}
		b.Run(fmt.Sprintf("attempts=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sink = Book(as, pol)
			}
		})
	}
}

func BenchmarkDecisionAppendJSON(b *testing.B) {
	d := Book([]Attempt{{QueueS: 35.5, GenS: 9.25, EmittedTokens: 220}}, BookPolicy{DeadlineS: 600, PaidUSDPer1k: 0.002})
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = d.AppendJSON(buf[:0])
	}
}

// boundedFloat draws a value in [0, limit] spread over every magnitude, with
// the edges (0, limit) and whole numbers common.
func boundedFloat(rng *rand.Rand, limit float64) float64 {
	switch rng.IntN(6) {
	case 0:
		return 0
	case 1:
		return limit
	case 2:
		return float64(rng.IntN(1000))
	}
	return math.Min(limit, math.Pow(10, rng.Float64()*math.Log10(limit+1))-1+rng.Float64())
}

func boundedCount(rng *rand.Rand) int {
	return int(math.Trunc(boundedFloat(rng, MaxTokens)))
}

// TestBookPropertyWithinBounds: for any attempts and policy within the bounds
// readers enforce, the answer respects eligibility, the token figures are
// ordered and non-negative, and the JSON encodes.
func TestBookPropertyWithinBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 5000 {
		n := rng.IntN(12)
		if i%500 == 0 {
			n = 10000 // the most attempts stdin accepts
		}
		as := make([]Attempt, n)
		for j := range as {
			as[j] = Attempt{QueueS: boundedFloat(rng, MaxSeconds), GenS: boundedFloat(rng, MaxSeconds), EmittedTokens: boundedCount(rng), Shipped: rng.IntN(30) == 0,
				Error: rng.IntN(30) == 0}
		}
		p := BookPolicy{
			DeadlineS: boundedFloat(rng, MaxSeconds), CeilingTokens: boundedCount(rng),
			NextQueueS: boundedFloat(rng, MaxSeconds), NextGenS: boundedFloat(rng, MaxSeconds), NextEstTokens: boundedCount(rng),
			PaidQueueS: boundedFloat(rng, MaxSeconds), PaidUSDPer1k: boundedFloat(rng, MaxUSDPer1k),
			FreeEligible: rng.IntN(2) == 0, PaidEligible: rng.IntN(2) == 0,
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("case %d: generator out of bounds: %v", i, err)
		}
		d := Book(as, p)
		checkBookProperties(t, i, as, p, d)
		if _, err := json.Marshal(d); err != nil {
			t.Fatalf("case %d: %+v does not encode: %v", i, d, err)
		}
	}
}

// TestBookPropertyOutOfBounds: past the bounds (huge, negative, NaN,
// infinite) Book still never panics, never wraps a token sum and never
// answers a lane that is not eligible.
func TestBookPropertyOutOfBounds(t *testing.T) {
	floats := []float64{0, 1, -1, 1e300, math.MaxFloat64, -math.MaxFloat64, math.Inf(1), math.Inf(-1), math.NaN(), math.SmallestNonzeroFloat64}
	ints := []int{0, 1, -1, math.MaxInt, math.MaxInt - 1, math.MinInt, MaxTokens + 1}
	rng := rand.New(rand.NewPCG(7, 8))
	f := func() float64 { return floats[rng.IntN(len(floats))] }
	k := func() int { return ints[rng.IntN(len(ints))] }
	for i := range 20000 {
		as := make([]Attempt, rng.IntN(4))
		for j := range as {
			as[j] = Attempt{QueueS: f(), GenS: f(), EmittedTokens: k(), Shipped: rng.IntN(30) == 0, Error: rng.IntN(30) == 0}
		}
		p := BookPolicy{
			DeadlineS: f(), CeilingTokens: k(), NextQueueS: f(), NextGenS: f(), NextEstTokens: k(),
			PaidQueueS: f(), PaidUSDPer1k: f(), FreeEligible: rng.IntN(2) == 0, PaidEligible: rng.IntN(2) == 0,
		}
		d := Book(as, p)
		checkBookProperties(t, i, as, p, d)
		_ = d.AppendJSON(nil) // never panics, whatever the figures
	}
}

func checkBookProperties(t *testing.T, i int, as []Attempt, p BookPolicy, d Decision) {
	t.Helper()
	if d.Action == RetryFree && (!p.FreeEligible || slices.ContainsFunc(as, func(a Attempt) bool { return a.Error })) {
		t.Fatalf("case %d: retry_free with the free lane not eligible or after an error: %+v", i, d)
	}
	if d.Action == CutOver && !p.PaidEligible {
		t.Fatalf("case %d: cut_over with the paid lane not eligible: %+v", i, d)
	}
	if d.SpentTokens < 0 || d.ProjectedTokens < d.SpentTokens {
		t.Fatalf("case %d: spent %d, projected %d", i, d.SpentTokens, d.ProjectedTokens)
	}
	// The ceiling check on exact (big) integers.
	sum := new(big.Int)
	for _, a := range as {
		sum.Add(sum, big.NewInt(int64(max(a.EmittedTokens, 0))))
	}
	sum.Add(sum, big.NewInt(int64(max(p.NextEstTokens, 0))))
	over := sum.Cmp(big.NewInt(int64(p.CeilingTokens))) > 0
	shipped := false
	for _, a := range as {
		shipped = shipped || a.Shipped
	}
	if over && !shipped && (d.Action != Stop || d.Why != WhyCeiling) {
		t.Fatalf("case %d: projected %v > ceiling %d, answer %s (%s)", i, sum, p.CeilingTokens, d.Action, d.Why)
	}
	if d.Action != Stop && over {
		t.Fatalf("case %d: %s past the ceiling", i, d.Action)
	}
}

// A next_est_tokens that overflowed to a negative projection used to answer
// retry_free.
func TestBookTokenSumsSaturate(t *testing.T) {
	p := BookPolicy{DeadlineS: 600, CeilingTokens: 4000, NextQueueS: 1, NextGenS: 1, NextEstTokens: math.MaxInt, FreeEligible: true, PaidEligible: true}
	for _, tc := range []struct {
		name    string
		tokens  []int
		est     int
		ceiling int
	}{
		{"huge estimate", []int{220}, math.MaxInt, 4000},
		{"huge estimate, ceiling at MaxInt", []int{220}, math.MaxInt, math.MaxInt},
		{"attempts overflow", []int{math.MaxInt, math.MaxInt}, 0, math.MaxInt},
		{"attempts at MaxInt, estimate 1", []int{math.MaxInt}, 1, math.MaxInt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var as []Attempt
			for _, n := range tc.tokens {
				as = append(as, Attempt{QueueS: 1, GenS: 1, EmittedTokens: n})
			}
			p := p
			p.NextEstTokens, p.CeilingTokens = tc.est, tc.ceiling
			d := Book(as, p)
			if d.Action != Stop || d.Why != WhyCeiling || d.ProjectedTokens != math.MaxInt || d.SpentTokens < 0 {
				t.Fatalf("%+v, want a stop at the ceiling with projected_tokens saturated", d)
			}
		})
	}
	t.Run("negative counts count as 0", func(t *testing.T) {
		q := p
		q.NextEstTokens = -5
		d := Book([]Attempt{{EmittedTokens: -100}}, q)
		if d.SpentTokens != 0 || d.ProjectedTokens != 0 || d.Action != RetryFree {
			t.Fatalf("%+v", d)
		}
	})
}

func TestBookPolicyValidate(t *testing.T) {
	good := BookPolicy{DeadlineS: 60, CeilingTokens: 4000, NextQueueS: 35, NextGenS: 12, NextEstTokens: 800, PaidQueueS: 2, PaidUSDPer1k: 0.002}
	for _, tc := range []struct {
		name string
		edit func(*BookPolicy)
		want string
	}{
		{"good", func(*BookPolicy) {}, ""},
		{"at the bounds", func(p *BookPolicy) {
			p.DeadlineS, p.NextQueueS, p.NextGenS, p.PaidQueueS = MaxSeconds, MaxSeconds, MaxSeconds, MaxSeconds
			p.CeilingTokens, p.NextEstTokens, p.PaidUSDPer1k = MaxTokens, MaxTokens, MaxUSDPer1k
		}, ""},
		{"huge estimate", func(p *BookPolicy) { p.NextEstTokens = math.MaxInt }, "next_est_tokens: must be at most 1000000000000"},
		{"one token past", func(p *BookPolicy) { p.CeilingTokens = MaxTokens + 1 }, "ceiling_tokens: must be at most 1000000000000"},
		{"negative ceiling", func(p *BookPolicy) { p.CeilingTokens = -1 }, "ceiling_tokens: must be >= 0"},
		{"deadline past", func(p *BookPolicy) { p.DeadlineS = 1e9 + 1 }, "deadline_s: must be at most 1000000000"},
		{"NaN queue", func(p *BookPolicy) { p.NextQueueS = math.NaN() }, "next_queue_s: must be a finite number"},
		{"infinite gen", func(p *BookPolicy) { p.NextGenS = math.Inf(1) }, "next_gen_s: must be a finite number"},
		{"negative paid queue", func(p *BookPolicy) { p.PaidQueueS = -0.5 }, "paid_queue_s: must be >= 0"},
		{"price", func(p *BookPolicy) { p.PaidUSDPer1k = 2e6 }, "paid_usd_per_1k: must be at most 1000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := good
			tc.edit(&p)
			err := p.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var fe *FieldError
			if err == nil || err.Error() != tc.want || !errors.As(err, &fe) {
				t.Fatalf("Validate = %v, want %q as a *FieldError", err, tc.want)
			}
			if got := fmt.Errorf("classes[0].book.%w", err).Error(); got != "classes[0].book."+tc.want {
				t.Errorf("with a path: %q", got)
			}
		})
	}
}

// MarshalJSON refuses a decision with any non-finite figure; AppendJSON
// writes it as 0 (issue 22 #9: only spent_s was checked).
func TestDecisionJSONRejectsEveryNonFiniteFigure(t *testing.T) {
	ok := Decision{Action: Stop, Why: WhyNoneFits, SpentS: 1.234, RemainingS: 2.345, SpentTokens: 10, ProjectedTokens: 20, SunkUSD: 0.00015}
	data, err := json.Marshal(ok)
	// In binary 1.234 is 1.23399… → 1.23; 2.345 is 2.345000…02 → 2.35; 0.00015 is 0.000149999… → 0.0001.
	if want := `{"action":"stop","why":"` + WhyNoneFits + `","spent_s":1.23,"remaining_s":2.35,"spent_tokens":10,"projected_tokens":20,"sunk_usd_if_those_tokens_were_paid":0.0001}`; err != nil || string(data) != want {
		t.Fatalf("got %s, %v\nwant %s", data, err, want)
	}
	for _, tc := range []struct {
		name string
		set  func(*Decision)
		want string // AppendJSON's figures
	}{
		{"spent_s NaN", func(d *Decision) { d.SpentS = math.NaN() }, `"spent_s":0,"remaining_s":2.35,`},
		{"remaining_s NaN", func(d *Decision) { d.RemainingS = math.NaN() }, `"spent_s":1.23,"remaining_s":0,`},
		{"remaining_s -Inf", func(d *Decision) { d.RemainingS = math.Inf(-1) }, `"spent_s":1.23,"remaining_s":0,`},
		{"sunk_usd NaN", func(d *Decision) { d.SunkUSD = math.NaN() }, `"sunk_usd_if_those_tokens_were_paid":0}`},
		{"sunk_usd +Inf", func(d *Decision) { d.SunkUSD = math.Inf(1) }, `"sunk_usd_if_those_tokens_were_paid":0}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := ok
			tc.set(&d)
			if data, err := d.MarshalJSON(); err == nil {
				t.Errorf("MarshalJSON: %s, want an error", data)
			}
			if _, err := json.Marshal(d); err == nil {
				t.Errorf("json.Marshal: want an error")
			}
			if got := string(d.AppendJSON(nil)); !strings.Contains(got, tc.want) {
				t.Errorf("AppendJSON %s, want it to hold %s", got, tc.want)
			}
		})
	}
}

// A token sum that reaches math.MaxInt exactly has not overflowed: it is
// over a ceiling below MaxInt only (book.go's `sum > MaxInt-n` → `>=`
// stopped a job whose projection is exactly MaxInt at a MaxInt ceiling).
func TestBookTokenSumAtExactlyMaxInt(t *testing.T) {
	p := BookPolicy{DeadlineS: 60, NextQueueS: 1, NextGenS: 1, FreeEligible: true, PaidEligible: true}
	for _, tc := range []struct {
		name      string
		tokens    []int
		est       int
		ceiling   int
		action    Action
		spent     int
		projected int
	}{
		{"estimate MaxInt, ceiling MaxInt", nil, math.MaxInt, math.MaxInt, RetryFree, 0, math.MaxInt},
		{"estimate MaxInt, ceiling one less", nil, math.MaxInt, math.MaxInt - 1, Stop, 0, math.MaxInt},
		{"attempts sum to MaxInt", []int{math.MaxInt - 5, 5}, 0, math.MaxInt, RetryFree, math.MaxInt, math.MaxInt},
		{"attempts at MaxInt-5, estimate 5", []int{math.MaxInt - 5}, 5, math.MaxInt, RetryFree, math.MaxInt - 5, math.MaxInt},
		{"attempts one past MaxInt", []int{math.MaxInt - 5, 6}, 0, math.MaxInt, Stop, math.MaxInt, math.MaxInt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var as []Attempt
			for _, n := range tc.tokens {
				as = append(as, Attempt{EmittedTokens: n})
			}
			q := p
			q.NextEstTokens, q.CeilingTokens = tc.est, tc.ceiling
			d := Book(as, q)
			if d.Action != tc.action || d.SpentTokens != tc.spent || d.ProjectedTokens != tc.projected {
				t.Fatalf("%+v; want %s, spent %d, projected %d", d, tc.action, tc.spent, tc.projected)
			}
			if tc.action == Stop && d.Why != WhyCeiling {
				t.Fatalf("why %q, want the ceiling", d.Why)
			}
		})
	}
}

// appendRounded with no decimals keeps an integer's zeros.
func TestAppendRoundedNoDecimals(t *testing.T) {
	for _, tc := range []struct {
		x    float64
		want string
	}{{100, "100"}, {2.5, "2"}, {3.5, "4"}, {0, "0"}, {-0.4, "0"}, {1e3, "1000"}} {
		if got := string(appendRounded(nil, tc.x, 0)); got != tc.want {
			t.Errorf("appendRounded(%v, 0) = %s, want %s", tc.x, got, tc.want)
		}
	}
}
