package backtest

import (
	"math"
	"sort"
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

// timeline is a lane's probes that pending jobs may still meet, in time
// order.
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

// trim drops the events before the newest one at or before t.
func (tl *timeline) trim(t int64) {
	live := tl.ev[tl.head:]
	i := sort.Search(len(live), func(i int) bool { return live[i].t > t }) // first after t
	if i > 1 {
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

// meet returns what an attempt started at t (Unix ns) meets on the lane:
// the lane's next probe at or after t within Lookahead, unless the newest
// probe before t asked for a back-off that still runs (then, as without a
// probe, it fails fast).
func (tl *timeline) meet(t int64) world {
	live := tl.ev[tl.head:]
	i := sort.Search(len(live), func(i int) bool { return live[i].t >= t })
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

// decAcc accumulates one class and strategy.
type decAcc struct {
	jobs, met  int
	times      []float32 // time to result of met jobs, s
	burnedFree int64
	paidTokens int64
	attempts   int64
}

// outcome is one replayed job.
type outcome struct {
	met        bool
	timeS      float64
	burnedFree int64
	paidTokens int64
	attempts   int64
}

// resolve replays the job for every class and strategy whose horizon lies
// within the probes added; at the end (final) the others are dropped.
func (b *Backtest) resolve(j *job, final bool) {
	if b.base != nil {
		b.base.resolve(b, j, final)
	}
	if j.tune {
		return
	}
	for ci, c := range b.opts.Params.Classes {
		if final && j.t0.Add(b.horizons[ci]).After(b.latest) {
			b.dropped += len(Strategies)
			continue
		}
		for si, s := range Strategies {
			if s != StrategyLanewatch && b.fixedLane(s) == nil {
				continue // no such lane configured
			}
			o := b.replay(j, ci, c, s)
			a := &b.dec[ci*len(Strategies)+si]
			a.jobs++
			if o.met {
				a.met++
				a.times = append(a.times, float32(o.timeS))
			}
			a.burnedFree += o.burnedFree
			a.paidTokens += o.paidTokens
			a.attempts += o.attempts
		}
	}
}

// fixedLane returns the lane strategy s always retries on: the naive or
// the paid lane (nil when not configured, and for lanewatch, which follows
// the policy).
func (b *Backtest) fixedLane(s string) *lane {
	switch s {
	case StrategyNaive:
		return b.naive
	case StrategyPaid:
		return b.paid
	}
	return nil
}

// replay runs one job of class c with strategy s.
func (b *Backtest) replay(j *job, ci int, c policy.ClassSpec, s string) outcome {
	var out outcome
	deadline := min(c.DeadlineS, maxHorizon.Seconds()) // a job waits at most that long for its probes
	est := int64(max(c.EstTokens, 0))
	pol := j.pol[ci]
	l := b.fixedLane(s)
	if s == StrategyLanewatch {
		if l = b.lanes[pol.first]; l == nil {
			l = b.follow(policy.Book(nil, pol.book), pol.book)
		}
	}
	account := func(l *lane, tokens int64, shipped bool) {
		switch {
		case l.spec.Kind == policy.KindPaid:
			out.paidTokens += tokens
		case !shipped:
			out.burnedFree += tokens
		}
	}
	t0 := j.t0.UnixNano()
	var spent policy.Attempt // the attempts so far, summed: all Book reads of them
	at := 0.0                // seconds since arrival
	for l != nil && at < deadline {
		w := l.tl.meet(t0 + int64(math.Round(at*1e9)))
		if w.ok {
			out.attempts++
			gen := 0.0
			if w.rate > 0 {
				gen = float64(est) / w.rate
			}
			if end := at + w.queue + gen; end <= deadline {
				out.met, out.timeS = true, end
				account(l, est, true)
				return out
			}
			emitted := int64(0)
			if g := deadline - at - w.queue; g > 0 && w.rate > 0 {
				emitted = min(est, int64(g*w.rate))
			}
			account(l, emitted, false)
			return out // cut at the deadline
		}
		// A run of failed attempts that all meet the same: n of them
		// before what they meet changes or the deadline comes.
		cost := max(w.queue+w.gen, MinAttemptS)
		limit := deadline
		if w.until != never {
			limit = min(limit, float64(w.until-t0)/1e9)
		}
		n := int64(1)
		if nf := math.Ceil((limit - at) / cost); nf > 1 {
			n = int64(min(nf, 1<<40))
		}
		run := func(m int64) policy.Attempt {
			a := spent
			a.QueueS += min(float64(m)*cost, deadline-at)
			a.EmittedTokens += int(m * min(w.tokens, est))
			return a
		}
		if s == StrategyLanewatch && n > 1 {
			// The ledger is asked after each attempt. As time and tokens
			// are spent its answer only moves along retry_free, cut_over,
			// stop (each check only tightens), so once it sends the
			// next attempt to this lane it does so for a prefix of the
			// run.
			stays := func(m int64) bool {
				a := run(m)
				return b.follow(policy.Book([]policy.Attempt{a}, pol.book), pol.book) == l
			}
			if !stays(1) {
				n = 1
			} else {
				k := sort.Search(int(n-2), func(i int) bool { return !stays(int64(i) + 2) })
				n = int64(k) + 2
			}
		}
		next := run(n)
		at += next.QueueS - spent.QueueS
		account(l, int64(next.EmittedTokens-spent.EmittedTokens), false)
		spent = next
		out.attempts += n
		if s == StrategyLanewatch {
			l = b.follow(policy.Book([]policy.Attempt{spent}, pol.book), pol.book)
		}
	}
	return out
}

// follow returns the lane the ledger's decision sends the next attempt to
// (nil: stop).
func (b *Backtest) follow(d policy.Decision, bp policy.BookPolicy) *lane {
	switch d.Action {
	case policy.RetryFree:
		return b.lanes[bp.FreeLane]
	case policy.CutOver:
		return b.lanes[bp.PaidLane]
	}
	return nil
}
