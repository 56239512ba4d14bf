package backtest

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/lanewatch/lanewatch/internal/num"
	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/sampler/budget"
	"github.com/lanewatch/lanewatch/store"
)

// event is what the replay needs of one probe.
type event struct {
	t       int64   // probe start, Unix ns
	backoff int64   // until when the probe asks for a back-off, Unix ns; 0: none
	queue   float64 // queue_s (failed: the known wait)
	gen     float64 // gen_s
	rate    float64 // tokens/gen_s of an ok probe; 0: unknown
	tokens  int64
	ok      bool
}

// timeline is a lane's probes that pending jobs may still meet, in order.
type timeline struct {
	ev   []event
	head int
}

func (tl *timeline) add(p store.Probe, loc *time.Location) {
	e := event{t: p.Time.UnixNano(), ok: p.OK, tokens: max(p.Tokens, 0)}
	if num.Finite(p.QueueS) && p.QueueS > 0 {
		e.queue = p.QueueS
	}
	if num.Finite(p.GenS) && p.GenS > 0 {
		e.gen = p.GenS
		if p.OK && p.Tokens > 0 {
			e.rate = float64(p.Tokens) / p.GenS
		}
	}
	if u, ok := budget.Backoff(p, loc); ok {
		e.backoff = u.UnixNano()
	}
	tl.ev = append(tl.ev, e)
}

// trim drops the events before the newest one before t: an attempt from t
// on meets the events from t on and reads the back-off of the one before.
func (tl *timeline) trim(t int64) {
	if i := tl.search(t); i > 1 {
		tl.head += i - 1
	}
	if tl.head > 256 && tl.head*2 > len(tl.ev) {
		n := copy(tl.ev, tl.ev[tl.head:])
		tl.ev, tl.head = tl.ev[:n], 0
	}
}

// world is what an attempt started at some instant meets, and until when
// (exclusive, Unix ns) an attempt started later meets the same.
type world struct {
	ok     bool
	queue  float64
	gen    float64
	rate   float64
	tokens int64
	until  int64
}

const never = math.MaxInt64

// search returns the index in the live events of the first at or after t.
func (tl *timeline) search(t int64) int {
	i, _ := slices.BinarySearchFunc(tl.ev[tl.head:], t, func(e event, t int64) int { return cmp.Compare(e.t, t) })
	return i
}

// meet returns what an attempt started at t (Unix ns) meets on the lane:
// the lane's next probe at or after t within Lookahead, unless the newest
// probe before t asked for a back-off that still runs (then, as without a
// probe, it fails fast).
func (tl *timeline) meet(t int64) world {
	live, i := tl.ev[tl.head:], tl.search(t)
	var next *event
	if i < len(live) {
		next = &live[i]
	}
	if i > 0 && live[i-1].backoff > t {
		w := world{until: live[i-1].backoff}
		if next != nil && next.t+1 < w.until {
			w.until = next.t + 1 // from just after it, it is the newest probe
		}
		return w
	}
	switch {
	case next == nil:
		return world{until: never}
	case next.t-t >= int64(Lookahead):
		return world{until: next.t - int64(Lookahead) + 1}
	}
	return world{ok: next.ok, queue: next.queue, gen: next.gen, rate: next.rate, tokens: next.tokens, until: next.t + 1}
}

// job is one arrival, replayed per class, deadline and strategy.
type job struct {
	t0   time.Time
	cuts [][]jobCut // per class and deadline, taken at the arrival
	tune bool       // a job before From, replayed only to tune the tuned baselines
}

// jobCut is what lanewatch follows for a class and deadline: the class's
// decision (the calibrated rule's; none under the worst-of rule), its book
// and the lane a job starts on ("" when none: nothing is sent).
type jobCut struct {
	policy.Cutover
	decided bool
	book    policy.BookPolicy
	first   string
}

// evaluate takes the policy in force at the job's arrival: each class's
// decision at each deadline (what policygen lane and policy.Running answer).
func (b *Backtest) evaluate(j *job) {
	if j.tune {
		return // fallback@T alone: no decision to take
	}
	b.figs = b.figs[:0]
	for _, l := range b.order {
		b.figs = append(b.figs, *b.figures(l, b.decide, b.state(l, j.t0), j.t0))
	}
	rs := b.rep
	classes := b.hist.ClassesAt(rs.params, b.figs, b.hourOf(j.t0).start)
	j.cuts = make([][]jobCut, len(rs.deadlines))
	k := 0
	for ci, ds := range rs.deadlines {
		j.cuts[ci] = make([]jobCut, len(ds))
		for di := range ds {
			c := classes[k]
			k++
			jc := &j.cuts[ci][di]
			jc.book = c.Book
			if c.Cutover != nil {
				jc.Cutover, jc.decided = *c.Cutover, true
			}
			jc.first, _ = c.Start()
		}
	}
}

// resolve replays the job for every class, deadline and strategy; at the
// end (final) those whose horizon passes the newest probe are left out. A
// tuning job (before From) is replayed under the fallbacks alone; the
// tuned strategies take the outcome of the fallback@T they pick.
func (b *Backtest) resolve(j *job, final bool) {
	rs := b.rep
	hod := j.t0.In(b.loc).Hour()
	day := int64(math.Floor(j.t0.Sub(b.opts.From).Hours() / 24))
	for ci, ds := range rs.deadlines {
		c := b.opts.Params.Classes[ci]
		for di, d := range ds {
			if final && j.t0.Add(rs.horizons[ci][di]).After(b.latest) {
				if !j.tune {
					rs.dropped += len(rs.strategies)
					if di == 0 {
						rs.droppedOwn += len(Strategies)
					}
				}
				continue
			}
			tn := rs.tuners[ci][di]
			if !j.tune && rs.tuned() {
				tn.pick(len(rs.fallbacks), day)
			}
			for si, s := range rs.strategies {
				if !rs.configured(b, s) {
					continue
				}
				r := &rs.runs[si]
				switch {
				case s.kind == baseTuned || s.kind == baseTunedWeekly || s.kind == baseTunedHourly:
					if j.tune {
						continue
					}
					k := tn.choice(s.kind, hod)
					if k < 0 {
						continue // nothing to tune on
					}
					*r = rs.runs[rs.fallbacks[k]]
				case j.tune && s.kind != baseFallback:
					continue
				default:
					*r = baseRun{b: b, t0: j.t0.UnixNano(), d: min(d, maxHorizon.Seconds()), est: int64(max(c.EstTokens, 0))}
					var cut jobCut
					if !j.tune {
						cut = j.cuts[ci][di]
					}
					r.play(s, cut)
				}
				if !j.tune {
					rs.acc[ci][di*len(rs.strategies)+si].add(r)
				}
			}
			if !rs.tuned() {
				continue
			}
			accs := tn.days[day]
			if accs == nil {
				accs = make([]tuneAcc, len(rs.fallbacks))
				tn.days[day] = accs
			}
			for k, si := range rs.fallbacks {
				r := &rs.runs[si]
				accs[k].add(r)
				if j.tune {
					tn.frozen[k].add(r)
					tn.hourly[hod][k].add(r)
				}
			}
		}
	}
}

// baseRun is one job replayed under one strategy.
type baseRun struct {
	b   *Backtest
	t0  int64
	d   float64 // deadline, s
	est int64

	met                                              bool
	timeS                                            float64
	freeReq, abandoned, burned, paidTokens, attempts int64
}

type stepKind int

const (
	stepShipped   stepKind = iota // shipped: the job is met
	stepCut                       // cut at the deadline: the job is missed
	stepFailed                    // failed by itself; end is when
	stepAbandoned                 // cancelled with no first token at end
)

type step struct {
	kind stepKind
	end  float64 // s since arrival
	// first is when an abandoned request's first token would have come:
	// it keeps its place in the server's queue until then.
	first float64
	// n is how many failed attempts a stepFailed stands for.
	n int64
}

const noCancel = math.MaxFloat64

// attempt runs attempts on l from at (s since arrival): one that gets a
// first token or is abandoned, or a run of failures that meet the same
// world. An attempt with no first token by cancelAt (s since arrival) is
// cancelled then; behind is the instant before which no first token can
// come on l (the cancelled requests ahead of it in the server's queue).
// Without run a failure is one attempt.
func (r *baseRun) attempt(l *lane, at, cancelAt, behind float64, run bool) step {
	w := l.tl.meet(r.t0 + int64(math.Round(at*1e9)))
	free := l.spec.Kind != policy.KindPaid
	account := func(tokens int64, shipped bool) {
		switch {
		case !free:
			r.paidTokens += tokens
		case !shipped:
			r.burned += tokens
		}
	}
	count := func(n int64) {
		r.attempts += n
		if free {
			r.freeReq += n
		}
	}
	abandon := func(first float64) step {
		if free {
			r.abandoned++
		}
		return step{kind: stepAbandoned, end: cancelAt, first: first}
	}
	if w.ok {
		count(1)
		first := max(at+w.queue, behind)
		if first > cancelAt && cancelAt < r.d {
			return abandon(first)
		}
		gen := 0.0
		if w.rate > 0 {
			gen = float64(r.est) / w.rate
		}
		if end := first + gen; end <= r.d {
			account(r.est, true)
			r.met, r.timeS = true, end
			return step{kind: stepShipped, end: end}
		}
		if first >= r.d && free {
			r.abandoned++ // still queued at the deadline
		}
		emitted := int64(0)
		if g := r.d - first; g > 0 && w.rate > 0 {
			emitted = min(r.est, int64(g*w.rate))
		}
		account(emitted, false)
		return step{kind: stepCut, end: r.d}
	}
	if at+w.queue > cancelAt && cancelAt < r.d {
		count(1)
		return abandon(max(at+w.queue, behind))
	}
	// A run of failures that all meet the same world, none cancelled:
	// n of them before what they meet changes, the deadline comes or the
	// cancel time passes.
	cost := max(w.queue+w.gen, MinAttemptS)
	limit := min(r.d, cancelAt)
	if w.until != never {
		limit = min(limit, float64(w.until-r.t0)/1e9)
	}
	n := int64(1)
	if nf := math.Ceil((limit - at) / cost); nf > 1 && run {
		n = int64(min(nf, 1<<40))
	}
	count(n)
	account(n*min(w.tokens, r.est), false)
	return step{kind: stepFailed, end: at + min(float64(n)*cost, r.d-at), n: n}
}

// repeat retries l at once from at until a result or the deadline.
func (r *baseRun) repeat(l *lane, at float64) {
	for at < r.d && r.attempts < maxBaselineAttempts {
		s := r.attempt(l, at, noCancel, 0, true)
		if s.kind != stepFailed {
			return
		}
		at = s.end
	}
}

// play replays the job under s; cut is the class's decision in force at
// its arrival (lanewatch's).
func (r *baseRun) play(s baseStrategy, cut jobCut) {
	b := r.b
	switch s.kind {
	case baseNaive:
		r.repeat(b.naive, 0)
	case basePaid:
		r.repeat(b.paid, 0)
	case baseFallback:
		st := r.attempt(b.naive, 0, min(s.t, r.d), 0, false)
		if st.kind == stepFailed || st.kind == stepAbandoned {
			r.repeat(b.paid, st.end)
		}
	case baseCancelRetry:
		at, behind := 0.0, 0.0
		for at < r.d && r.attempts < maxBaselineAttempts {
			st := r.attempt(b.naive, at, at+s.t, behind, true)
			switch st.kind {
			case stepAbandoned:
				behind = max(behind, st.first)
			case stepFailed:
			default:
				return
			}
			at = st.end
		}
	case baseLanewatch:
		bp := cut.book
		start := b.lanes[cut.first]
		if start == nil {
			return // the class lists no lane: nothing is sent
		}
		paid := b.lanes[bp.PaidLane]
		if !bp.PaidEligible {
			paid = nil
		}
		if !cut.decided {
			r.ledger(start, bp, paid) // the worst-of rule: no decision, the ledger alone
			return
		}
		at := 0.0
		if start.spec.Kind != policy.KindPaid && (cut.FreeFirst || paid == nil) {
			// policy.Running answers cut_over from elapsed > AfterS on
			// (free_first, paid eligible) and wait without a paid lane:
			// the attempt is cancelled at AfterS, or never. An attempt
			// that fails is an error: policy.Book then cuts over or stops.
			cancelAt := noCancel
			if paid != nil {
				cancelAt = cut.AfterS
			}
			st := r.attempt(start, at, cancelAt, 0, false)
			if st.kind == stepShipped || st.kind == stepCut {
				return
			}
			at = st.end
		}
		if paid != nil {
			r.repeat(paid, at)
		}
	}
}

// ledger replays a job the way the worst-of rule's files let it run: on
// the first lane, then, after a failed attempt (an error: policy.Book
// answers no retry_free after one), on the paid lane while policy.Book
// cuts over.
func (r *baseRun) ledger(l *lane, bp policy.BookPolicy, paid *lane) {
	spent := policy.Attempt{Error: true} // QueueS: the seconds since arrival
	for l != nil && spent.QueueS < r.d && r.attempts < maxBaselineAttempts {
		st := r.attempt(l, spent.QueueS, noCancel, 0, false)
		if st.kind != stepFailed {
			return
		}
		spent.QueueS = st.end
		if policy.Book([]policy.Attempt{spent}, bp).Action != policy.CutOver {
			return
		}
		l = paid
	}
}
