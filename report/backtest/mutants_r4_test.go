package backtest

// Tests written for gremlins' survivors in strategies.go and replay.go
// (issue 22, fourth round); each names the mutant it kills. Expected
// values are worked by hand from docs/backtest.md ("Baselines").

import (
	"bufio"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/store"
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
		if err == nil && !slices.Equal(b.rep.deadlines[0], tc.deadlinesOfClass) {
			t.Errorf("%s: deadlines %v, want %v", tc.name, b.rep.deadlines[0], tc.deadlinesOfClass)
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

// An attempt that meets a failure (no first token): cancelled at cancelAt
// when its failure would come later (before the deadline), else a failed
// attempt that costs its queue and generation (at least MinAttemptS),
// ending at the deadline at the latest, its first token (for the queue it
// keeps, cancelled) at start + queue. 60 s deadline, free lane.
// (strategies.go attempt: `at+w.queue > cancelAt && cancelAt < r.d` (the
// 6 mutants of the line), `r.abandoned++` → `--`, `max(at+w.queue,
// behind)` → `at-w.queue`, `w.queue+w.gen` → `-`, `r.d-at` → `r.d+at`,
// `limit - at` → `limit + at`.)
func TestBaselineAttemptThatFails(t *testing.T) {
	t0 := day0.UnixNano()
	for _, tc := range []struct {
		name                string
		ev                  []event // the lane's probes
		at, cancelAt        float64
		run                 bool
		step                step
		attempts, abandoned int64
	}{
		{"a 30 s timeout cancelled at 20 s", []event{{t: t0, queue: 30}}, 0, 20, false,
			step{kind: stepAbandoned, end: 20, first: 30}, 1, 1},
		{"a 20 s timeout and a cancel at 20 s: it fails first", []event{{t: t0, queue: 20}}, 0, 20, false,
			step{kind: stepFailed, end: 20, n: 1}, 1, 0},
		{"a 5 s failure before the cancel", []event{{t: t0, queue: 5}}, 0, 20, false,
			step{kind: stepFailed, end: 5, n: 1}, 1, 0},
		{"a cancel at the deadline is no cancel", []event{{t: t0, queue: 70}}, 0, 60, false,
			step{kind: stepFailed, end: 60, n: 1}, 1, 0},
		{"a failure costs queue + generation", []event{{t: t0, queue: 5, gen: 3}}, 0, noCancel, false,
			step{kind: stepFailed, end: 8, n: 1}, 1, 0},
		{"a failure ends at the deadline at the latest", []event{{t: t0 + 58e9, queue: 5}}, 58, noCancel, false,
			step{kind: stepFailed, end: 60, n: 1}, 1, 0},
		{"no probe: 50 fast failures of 1 s from 10 s to the deadline", nil, 10, noCancel, true,
			step{kind: stepFailed, end: 60, n: 50}, 50, 0},
	} {
		l := &lane{spec: policy.LaneSpec{Name: "free", Kind: policy.KindFree}}
		l.tl.ev = tc.ev
		r := baseRun{b: &Backtest{}, t0: t0, d: 60, est: 800}
		st := r.attempt(l, tc.at, tc.cancelAt, 0, tc.run)
		if st != tc.step || r.attempts != tc.attempts || r.freeReq != tc.attempts || r.abandoned != tc.abandoned {
			t.Errorf("%s: %+v, %d attempts (%d free), %d abandoned; want %+v, %d, %d", tc.name, st, r.attempts, r.freeReq, r.abandoned, tc.step, tc.attempts, tc.abandoned)
		}
	}
}

// Every baseline sends at most maxBaselineAttempts requests a job, and
// none at or after the deadline. cancel-retry@1 on a lane whose queue is
// always 10^6 s: one request a second, each cancelled; over 10 s 10 of
// them, over 200,000 s 100,000. naive on a lane that always fails at once
// (1 s an attempt, each meeting a probe of its own) the same; lanewatch
// (free_first, no paid lane) sends one: a failed attempt is an error, and
// the ledger answers no free retry after one.
// (strategies.go countOne `r.attempts++` → `--`; the loops of repeat,
// cancel-retry and lanewatch: `at < r.d` → `<=`, `r.attempts <
// maxBaselineAttempts` → `<=`, `&&` → `||`.)
func TestBaselineAttemptsBounded(t *testing.T) {
	t0 := day0.UnixNano()
	// ok: a probe every 30 min that met a 10^6 s queue; not ok: a probe
	// every second that failed at once (each attempt meets its own).
	long := func(d float64, ok bool) *lane {
		l := &lane{spec: policy.LaneSpec{Name: "free", Kind: policy.KindFree}}
		step, ev := 1.0, event{}
		if ok {
			step, ev = 1800, event{queue: 1e6, ok: true, rate: 80, tokens: 16}
		}
		for s := 0.0; s <= d; s += step {
			ev.t = t0 + int64(s*1e9)
			l.tl.ev = append(l.tl.ev, ev)
		}
		return l
	}
	for _, tc := range []struct {
		name string
		s    baseStrategy
		ok   bool // the lane's probes: ok (queue 10^6 s) or failed at once
		d    float64
		want int64
	}{
		{"cancel-retry@1, 10 s", baseStrategy{kind: baseCancelRetry, t: 1}, true, 10, 10},
		{"cancel-retry@1, 200,000 s", baseStrategy{kind: baseCancelRetry, t: 1}, true, 200000, maxBaselineAttempts},
		{"naive, 200,000 s of fast failures", baseStrategy{kind: baseNaive}, false, 200000, maxBaselineAttempts},
		{"lanewatch free first, 200,000 s of fast failures", baseStrategy{kind: baseLanewatch}, false, 200000, 1},
	} {
		l := long(tc.d, tc.ok)
		b := &Backtest{naive: l, lanes: map[string]*lane{"free": l}}
		bp := policy.BookPolicy{FreeLane: "free", FreeEligible: true}
		r := baseRun{b: b, t0: t0, d: tc.d, est: 800}
		r.play(tc.s, jobCut{Cutover: policy.Cutover{AfterS: tc.d, FreeFirst: true}, decided: true, book: bp, first: "free"})
		if r.freeReq != tc.want || r.met {
			t.Errorf("%s: %d free requests (met %v), want %d", tc.name, r.freeReq, r.met, tc.want)
		}
	}
}

// lanewatch with free_first and a paid lane: a free attempt that fails by
// itself before cutover_after_s (20 s) is an error, and the job cuts over
// to the paid lane then, as at 20 s (docs/backtest.md, "Baselines"); the
// free lane's next probe (a 3 s queue) is never met. Paid: its probe's 1 s
// queue and 5 s (160 tok/s): met at 5 + 6 = 11 s, or 20 + 6 = 26 s, 800
// paid tokens, one free request.
func TestLanewatchBaselineCutsOverAfterAFreeFailure(t *testing.T) {
	t0 := day0.UnixNano()
	for _, tc := range []struct {
		name             string
		free             []event
		timeS            float64
		freeReq, paidTok int64
	}{
		{"a failure at 5 s, cut over", []event{{t: t0, queue: 5}, {t: t0 + 5e9, queue: 3, gen: 0.2, rate: 80, tokens: 16, ok: true}}, 11, 1, 800},
		{"a failure at 20 s, cut over", []event{{t: t0, queue: 20}, {t: t0 + 20e9, queue: 3, gen: 0.2, rate: 80, tokens: 16, ok: true}}, 26, 1, 800},
	} {
		free := &lane{spec: policy.LaneSpec{Name: "free", Kind: policy.KindFree}}
		free.tl.ev = tc.free
		paid := &lane{spec: policy.LaneSpec{Name: "paid", Kind: policy.KindPaid}}
		paid.tl.ev = []event{{t: t0 + 30e9, queue: 1, gen: 0.1, rate: 160, tokens: 16, ok: true}}
		b := &Backtest{naive: free, paid: paid, lanes: map[string]*lane{"free": free, "paid": paid}}
		bp := policy.BookPolicy{DeadlineS: 60, FreeEligible: true, PaidEligible: true, FreeLane: "free", PaidLane: "paid"}
		r := baseRun{b: b, t0: t0, d: 60, est: 800}
		r.play(baseStrategy{kind: baseLanewatch}, jobCut{Cutover: policy.Cutover{AfterS: 20, FreeFirst: true}, decided: true, book: bp, first: "free"})
		if !r.met || r.timeS != tc.timeS || r.freeReq != tc.freeReq || r.paidTokens != tc.paidTok || r.abandoned != 0 {
			t.Errorf("%s: met %v at %v, %d free requests, %d paid tokens, %d abandoned; want met at %v, %d, %d, 0",
				tc.name, r.met, r.timeS, r.freeReq, r.paidTokens, r.abandoned, tc.timeS, tc.freeReq, tc.paidTok)
		}
	}
}

// A first token from a probe that reported no decode rate (0 tokens)
// ships at once, as in the decision replay: a 5 s queue, met at 5 s.
// (strategies.go attempt: `w.rate > 0` → `>= 0`.)
func TestBaselineAttemptWithoutARate(t *testing.T) {
	t0 := day0.UnixNano()
	l := &lane{spec: policy.LaneSpec{Name: "free", Kind: policy.KindFree}}
	l.tl.ev = []event{{t: t0, queue: 5, ok: true}}
	r := baseRun{b: &Backtest{}, t0: t0, d: 60, est: 800}
	if st := r.attempt(l, 0, noCancel, 0, false); st.kind != stepShipped || !r.met || r.timeS != 5 {
		t.Errorf("step %+v, met %v at %v; want shipped at 5", st, r.met, r.timeS)
	}
}

// met_pct is 100 × met / jobs rounded to 2 decimals, 0 without a job.
// (strategies.go rows: `a.jobs > 0` → `>= 0`, `<= 0`; `100*float64(a.met)
// /float64(a.jobs)` → `/`, `*`.)
func TestBaselineMetPct(t *testing.T) {
	bs := &replays{baselines: true, strategies: []baseStrategy{{kind: baseNaive, name: StrategyNaive}}, deadlines: [][]float64{{60, 30}},
		acc: [][]baseAcc{{{jobs: 3, met: 2, times: []float32{10, 20}}, {}}}}
	b := &Backtest{naive: &lane{}, opts: Options{Params: params(1)}}
	rows := bs.rows(b)
	if len(rows) != 2 || rows[0].MetPct != 66.67 || rows[1].MetPct != 0 || rows[1].Jobs != 0 {
		t.Errorf("rows %+v; want met_pct 66.67 for 2 of 3, 0 without a job", rows)
	}
}

// fallback@T needs both a free and a paid lane: with only a free lane the
// report has naive and cancel-retry rows, no fallback or paid row.
// (strategies.go configured: `b.naive != nil && b.paid != nil` → `||`.)
func TestFallbackNeedsBothLanes(t *testing.T) {
	from := day0.AddDate(0, 0, 2)
	opts := Options{Params: params(1), From: from, To: from.Add(3 * time.Hour), Fallbacks: []float64{10}}
	opts.Params.Lanes = opts.Params.Lanes[:1]
	var ps []store.Probe
	for _, p := range rounds(opts.ReadFrom(), opts.To, func(time.Time) (float64, bool) { return 100, true }) {
		if p.Lane == "free" {
			ps = append(ps, p)
		}
	}
	var got []string
	for _, b := range run(t, opts, ps).Baselines {
		got = append(got, b.Strategy)
	}
	if want := []string{StrategyNaive, StrategyLanewatch, "cancel-retry@10"}; !slices.Equal(got, want) {
		t.Errorf("strategies %v, want %v", got, want)
	}
}

// The table and the CSV have a baselines section only with baselines; the
// table says how many replays were left out when some were.
// (strategies.go writeBaselinesTable `r.Baselines == nil` → `!=`,
// `r.DroppedBaselines > 0` → `>=`, `<=`; writeBaselinesCSV's `== nil`.)
func TestBaselinesSections(t *testing.T) {
	m := 1.25
	one := []Baseline{{Class: "c", DeadlineS: 60, Strategy: "naive", Jobs: 2, Met: 1, MetPct: 50, MedianTimeS: &m, P90TimeS: &m, FreeRequests: 3}}
	for _, tc := range []struct {
		name         string
		r            Report
		table, noTab []string
		csv          string
	}{
		{"none", Report{}, nil, []string{"baselines"}, ""},
		{"one row", Report{Baselines: one}, []string{"\nbaselines: ", "naive"}, []string{"left out"},
			"\nclass,deadline_s,strategy,jobs,met,met_pct,paid_usd,median_time_s,p90_time_s,free_requests,abandoned_free_requests,burned_free_tokens,tuned_s\nc,60,naive,2,1,50,0,1.25,1.25,3,0,0,\n"},
		{"one row, 2 left out", Report{Baselines: one, DroppedBaselines: 2}, []string{"(2 replays left out"}, nil, ""},
	} {
		var tb strings.Builder
		bw := bufio.NewWriter(&tb)
		writeBaselinesTable(bw, &tc.r)
		_ = bw.Flush()
		for _, w := range tc.table {
			if !strings.Contains(tb.String(), w) {
				t.Errorf("%s: table %q lacks %q", tc.name, tb.String(), w)
			}
		}
		for _, w := range tc.noTab {
			if strings.Contains(tb.String(), w) {
				t.Errorf("%s: table %q has %q", tc.name, tb.String(), w)
			}
		}
		if tc.name == "one row, 2 left out" {
			continue
		}
		var cb strings.Builder
		if err := writeBaselinesCSV(&cb, &tc.r); err != nil || cb.String() != tc.csv {
			t.Errorf("%s: CSV %q, %v; want %q", tc.name, cb.String(), err, tc.csv)
		}
	}
}

// The lanewatch baseline follows the policy in force at each job's
// arrival for the class at each deadline: the decision, book and starting
// lane (Class.Start) History.ClassesAt gives for the class moved to that
// deadline.
func TestLanewatchBaselineFollowsThePolicy(t *testing.T) {
	from := day0.AddDate(0, 0, 15)
	p := params(14)
	p.Rule = policy.RuleCalibrated
	opts := Options{Params: p, From: from, To: from.Add(6 * time.Hour), Fallbacks: []float64{20}, Deadlines: []float64{12, 30, 90}}
	b, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 9))
	for _, pr := range rounds(opts.ReadFrom(), opts.To, func(time.Time) (float64, bool) { return 3 * math.Exp(rng.NormFloat64()), rng.IntN(40) > 0 }) {
		if err := b.Add(pr); err != nil {
			t.Fatal(err)
		}
	}
	j := &job{t0: opts.To.Add(time.Minute)}
	b.evaluate(j)
	cuts := j.cuts[0]
	for di, d := range []float64{60, 12, 30, 90} {
		q := b.params[b.decide]
		q.Classes = []policy.ClassSpec{p.Classes[0]}
		q.Classes[0].DeadlineS = d
		c := b.hist.ClassesAt(q, b.figs, b.hourOf(j.t0).start)[0]
		first, _ := c.Start()
		if got := cuts[di]; c.Cutover == nil || got.Cutover != *c.Cutover || !got.decided || got.book != c.Book || got.first != first {
			t.Errorf("deadline %v: the baseline's %+v, the policy's %+v %+v %q", d, got, c.Cutover, c.Book, first)
		}
	}
}

// A class that lists no lane sends nothing: no request, nothing paid.
func TestLanewatchBaselineSendsNothingWithoutALane(t *testing.T) {
	t0 := day0.UnixNano()
	free := &lane{spec: policy.LaneSpec{Name: "free", Kind: policy.KindFree}}
	free.tl.ev = []event{{t: t0, queue: 1, gen: 0.2, rate: 80, tokens: 16, ok: true}}
	paid := &lane{spec: policy.LaneSpec{Name: "paid", Kind: policy.KindPaid}}
	paid.tl.ev = []event{{t: t0, queue: 1, gen: 0.1, rate: 160, tokens: 16, ok: true}}
	b := &Backtest{naive: free, paid: paid, lanes: map[string]*lane{"free": free, "paid": paid}}
	bp := policy.BookPolicy{DeadlineS: 5, FreeEligible: true, PaidEligible: true, FreeLane: "free", PaidLane: "paid"}
	r := baseRun{b: b, t0: t0, d: 5, est: 800}
	r.play(baseStrategy{kind: baseLanewatch}, jobCut{decided: true, book: bp})
	if r.attempts != 0 || r.freeReq != 0 || r.paidTokens != 0 || r.met {
		t.Errorf("no lane listed: %+v", r)
	}
}
