package backtest

import (
	"time"

	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/store"
)

// warm says whether the hour starting at h is at least days days (in the
// replay's zone) after the hour of the lane's first probe. The old shape
// has no warm-up: it scores every probe of the window.
func (b *Backtest) warm(l *lane, h time.Time, days int) bool {
	if days <= 0 || !b.extended {
		return true
	}
	f := l.first.In(b.loc)
	return !h.Before(time.Date(f.Year(), f.Month(), f.Day()+days, f.Hour(), f.Minute(), 0, 0, b.loc))
}

// hourSpan is an hour in the replay's timezone: [start, end), its hour of
// day.
type hourSpan struct {
	start, end time.Time // UTC
	hod        int
}

// hourOf returns the hour holding t. A replay asks about one hour many
// times in a row; the answer is kept while t stays in it.
func (b *Backtest) hourOf(t time.Time) hourSpan {
	h := &b.hourNow
	if !t.Before(h.start) && t.Before(h.end) {
		return *h
	}
	start := store.HourStart(t, b.loc).UTC()
	*h = hourSpan{start: start, end: start, hod: start.In(b.loc).Hour()}
	// An hour is an hour long but near a DST change, which moves the clock
	// by a multiple of 15 minutes. hours.Start never goes back in time, so
	// the hour covers [start, start+d) when start+d-1ns is still in it.
	for _, d := range []time.Duration{time.Hour, 30 * time.Minute, 15 * time.Minute} {
		if end := start.Add(d); store.HourStart(end.Add(-1), b.loc).Equal(start) {
			h.end = end
			break
		}
	}
	if !t.Before(h.end) {
		h.end = t.Add(1) // none of those: this instant alone
	}
	return *h
}

// figures returns lane l's figures under params i at t, from the cache
// while the lane, the history and the hour are the same.
func (b *Backtest) figures(l *lane, i int, st policy.LaneState, t time.Time) *policy.Lane {
	f := &l.figs[i]
	h := b.hourOf(t).start.Unix()
	if !f.ok || f.hour != h || f.version != l.version || f.epoch != b.epoch || !f.until.Equal(st.QuotaUntil) {
		// At the hour's start, as policygen -hour: the calibrated rule's
		// figure is then that of the lane's newest probe (or the hour's start).
		*f = figures{ok: true, hour: h, version: l.version, epoch: b.epoch, until: st.QuotaUntil,
			lane: b.hist.LaneAt(b.params[i], l.spec, st, b.hourOf(t).start)}
	}
	return &f.lane
}

// prune drops from the history the hours no policy at or after now can
// read any more, so that memory stays bounded by the lookback, not the
// window. The lane states keep last_sample, so a lane never reads
// never_sampled again once it was probed.
func (b *Backtest) prune(now time.Time) {
	b.nextPrune = now.Add(b.pruneEvery)
	cutoff := store.HourStart(now, b.loc).Add(-b.keep)
	b.hist.Drop(cutoff)
	for _, l := range b.order {
		for _, sh := range l.sites {
			if sh.hour.Before(cutoff) {
				sh.hour, sh.probes = time.Time{}, sh.probes[:0]
			}
		}
	}
	b.epoch++
}

// trim drops the probes no pending job can meet any more: those before the
// newest probe of each lane before the oldest job that may arrive or wait.
func (b *Backtest) trim() {
	oldest := b.latest.Add(-ArrivalLead)
	if b.created.len() > 0 && b.created.peek().t0.Before(oldest) {
		oldest = b.created.peek().t0
	}
	if b.waiting.len() > 0 && b.waiting.peek().t0.Before(oldest) {
		oldest = b.waiting.peek().t0
	}
	for _, l := range b.order {
		l.tl.trim(oldest.UnixNano())
	}
}

// fifo is a queue on a slice that reuses its space.
type fifo[T any] struct {
	items []T
	head  int
}

func (q *fifo[T]) len() int { return len(q.items) - q.head }
func (q *fifo[T]) peek() T  { return q.items[q.head] }

// front points at the head item, until the next push or pop (drain hands
// it to apply: a copy would escape to the heap).
func (q *fifo[T]) front() *T { return &q.items[q.head] }
func (q *fifo[T]) push(x T)  { q.items = append(q.items, x) }
func (q *fifo[T]) pop() T {
	x := q.items[q.head]
	var zero T
	q.items[q.head] = zero
	q.head++
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	} else if q.head > 1024 && q.head*2 > len(q.items) {
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
	return x
}
