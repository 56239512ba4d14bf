package backtest

// Tests written for gremlins' survivors in strategies.go and replay.go
// (issue 22, fourth round); each names the mutant it kills. Expected
// values are worked by hand from docs/backtest.md ("Baselines").

import (
	"slices"
	"testing"

	"github.com/lanewatch/lanewatch/policy"
)

// The sweeps take up to MaxFallbacks timeouts of at least MinFallbackS and
// up to MaxDeadlines deadlines of at least MinAttemptS, each at most
// policy.MaxSeconds, repeats counted once; the class's own deadline given
// again in -deadlines is replayed once.
// (strategies.go checkSeconds: `len(out) > most` → `>=`, `x < least` →
// `<=`, `x > policy.MaxSeconds` → `>=`; newBaselines `d != c.DeadlineS` →
// `==`.)
func TestBaselineSweepBounds(t *testing.T) {
	from := day0.AddDate(0, 0, 2)
	seq := func(n int) []float64 {
		var xs []float64
		for i := range n {
			xs = append(xs, float64(i+1))
		}
		return xs
	}
	for _, tc := range []struct {
		name                 string
		fallbacks, deadlines []float64
		ok                   bool
		deadlinesOfClass     []float64
	}{
		{"16 fallbacks", seq(MaxFallbacks), nil, true, []float64{60}},
		{"17 fallbacks, one repeated", append(seq(MaxFallbacks), 1), nil, true, []float64{60}},
		{"17 fallbacks", seq(MaxFallbacks + 1), nil, false, nil},
		{"the shortest fallback", []float64{MinFallbackS}, nil, true, []float64{60}},
		{"the longest fallback", []float64{policy.MaxSeconds}, nil, true, []float64{60}},
		{"past the longest fallback", []float64{policy.MaxSeconds * 1.0000001}, nil, false, nil},
		{"16 deadlines", nil, seq(MaxDeadlines), true, append([]float64{60}, seq(MaxDeadlines)...)},
		{"17 deadlines", nil, seq(MaxDeadlines + 1), false, nil},
		{"the shortest deadline", nil, []float64{MinAttemptS}, true, []float64{60, MinAttemptS}},
		{"the longest deadline", nil, []float64{policy.MaxSeconds}, true, []float64{60, policy.MaxSeconds}},
		{"the class's own deadline again", nil, []float64{30, 60}, true, []float64{60, 30}},
	} {
		o := Options{Params: params(1), From: from, To: from.Add(1), Fallbacks: tc.fallbacks, Deadlines: tc.deadlines}
		b, err := New(o)
		if (err == nil) != tc.ok {
			t.Errorf("%s: error %v, want ok %v", tc.name, err, tc.ok)
			continue
		}
		if err == nil && !slices.Equal(b.base.deadlines[0], tc.deadlinesOfClass) {
			t.Errorf("%s: deadlines %v, want %v", tc.name, b.base.deadlines[0], tc.deadlinesOfClass)
		}
	}
}

// One attempt of a baseline on a lane whose next probe met queue q and
// generated 16 tokens in 0.2 s (80 tok/s), for a job of 800 tokens (10 s
// to generate) and a 60 s deadline: a first token at 50 s ships at 60 s,
// exactly the deadline (met); at 55 s the job is cut at 60 s with 5 s × 80
// = 400 tokens emitted (burned on a free lane, paid on a paid one); at
// 60 s there is no first token by the deadline: the free request is
// abandoned and nothing is emitted, nor when it would come at 70 s.
// (strategies.go attempt: `end <= r.d` → `<`, `first >= r.d && free` →
// `>`, `g > 0 && w.rate > 0` → `||`, the emitted tokens of a cut.)
func TestBaselineAttemptAtTheDeadline(t *testing.T) {
	t0 := day0.UnixNano()
	for _, tc := range []struct {
		name                      string
		kind                      string
		queue                     float64
		met                       bool
		timeS                     float64
		abandoned, burned, tokens int64
		step                      stepKind
	}{
		{"free, ships at the deadline", policy.KindFree, 50, true, 60, 0, 0, 0, stepShipped},
		{"free, cut with 400 tokens out", policy.KindFree, 55, false, 0, 0, 400, 0, stepCut},
		{"free, no first token by the deadline", policy.KindFree, 60, false, 0, 1, 0, 0, stepCut},
		{"paid, ships at the deadline", policy.KindPaid, 50, true, 60, 0, 0, 800, stepShipped},
		{"paid, cut with 400 tokens paid", policy.KindPaid, 55, false, 0, 0, 0, 400, stepCut},
		{"paid, no first token by the deadline", policy.KindPaid, 60, false, 0, 0, 0, 0, stepCut},
		{"free, first token 10 s past the deadline", policy.KindFree, 70, false, 0, 1, 0, 0, stepCut},
		{"paid, first token 10 s past the deadline", policy.KindPaid, 70, false, 0, 0, 0, 0, stepCut},
	} {
		l := &lane{spec: policy.LaneSpec{Name: "l", Kind: tc.kind}}
		l.tl.ev = []event{{t: t0, queue: tc.queue, gen: 0.2, rate: 80, tokens: 16, ok: true}}
		r := baseRun{b: &Backtest{}, t0: t0, d: 60, est: 800}
		st := r.attempt(l, 0, noCancel, 0, false)
		if st.kind != tc.step || r.met != tc.met || r.timeS != tc.timeS || r.abandoned != tc.abandoned || r.burned != tc.burned || r.paidTokens != tc.tokens {
			t.Errorf("%s: step %v, met %v at %v, %d abandoned, %d burned, %d paid tokens; want step %v, met %v at %v, %d, %d, %d",
				tc.name, st.kind, r.met, r.timeS, r.abandoned, r.burned, r.paidTokens, tc.step, tc.met, tc.timeS, tc.abandoned, tc.burned, tc.tokens)
		}
	}
}
