package policy

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/lanewatch/lanewatch/internal/num"
)

// Constants of the calibrated rule.
const (
	DefaultCalibratedLookbackDays = 14
	// The weights of the level's slow and fast EWMAs.
	calibratedAlpha, calibratedFastAlpha = 0.1, 0.3
	// CalibratedShiftTail is the tail beyond which two observations in a
	// row signal a shift of the lane's level; calibratedShiftMin is how
	// many residuals the shift rule needs.
	CalibratedShiftTail = 0.05
	calibratedShiftMin  = 20
	// MinQueueObsS is the least wait an observation counts as (1 ms, a
	// probe's resolution), so that a wait of 0 has a logarithm.
	MinQueueObsS = 0.001
	// MinWaitSamples is how many ok waits a decision's distribution holds
	// at least (Waits): the hour of day's, with the neighbouring hours'
	// added, nearest first, while it holds fewer.
	MinWaitSamples = 30
)

// QueueObs is one observation of a lane's queue: the wait Value (seconds)
// of the attempt that started at Time. Censored says Value is a lower
// bound: the probe failed before its first token after waiting Value (a
// timeout: the wait it was cut at).
type QueueObs struct {
	Time     time.Time
	Value    float64
	Censored bool
}

// CalibratedParams tunes the calibrated rule.
type CalibratedParams struct {
	LookbackDays int            // window of the profile and the margin; <= 0: 14
	Location     *time.Location // hours of day are this zone's; nil: UTC
	// DayAhead drops the level (it stays 1): the margin is then the
	// quantile of the residuals against the profile alone, the error of a
	// forecast made before the day it is for (ForecastProbes): the level
	// a forecast made at midnight reads is up to a day old by its hour.
	DayAhead bool
}

// CheckCoverage says whether c is a coverage the rule takes: 0 < c < 1.
func CheckCoverage(c float64) error {
	if !(c > 0 && c < 1) {
		return fmt.Errorf("coverage %v: want 0 < c < 1", c)
	}
	return nil
}

// CalibratedFigure is a forecast of the calibrated rule.
type CalibratedFigure struct {
	QueueS   float64 // ProfileS × Level × Margin: the next attempt's wait at the coverage
	ProfileS float64 // exp P(h): the hour of day's median
	Level    float64 // exp L
	Margin   float64 // exp Q(c)
	// Residuals is how many residuals the margin comes from; Warm is true
	// when there are enough for the quantile (k <= n; otherwise the margin
	// is the largest residual, or 1 with none).
	Residuals int
	Warm      bool
}

// Calibrator is the calibrated rule's state for one lane (docs/policy.md,
// "The calibrated rule"), fed one observation at a time (Add) and asked
// for a forecast at any instant t not before the last observation
// (Quantile, which changes nothing) from the observations of the lookback
// before t. It forecasts the wait q the next attempt stays under with
// probability c, exp(P(h) + L + Q(c)), all in log seconds:
//
//   - the profile P(h): the upper median of the observations at hour of
//     day h over the window, a censored one ranked above every uncensored
//     one; with none at h, the median over all hours;
//   - the level L: the larger of two EWMAs (weights 0.1 and 0.3) of the
//     residuals e = log v - P(h); a censored residual only raises it (e is
//     taken as max(e, L)). Two observations in a row above the 0.95
//     quantile of the prediction residuals (a censored one by its bound)
//     move both EWMAs at once to the smaller of their residuals minus the
//     residuals' median; two uncensored ones below the 0.05 quantile, to
//     the larger of theirs minus the median;
//   - the margin Q(c): the conformal c-quantile of the prediction
//     residuals d = e - L (L before the observation) over the window, the
//     k-th smallest of n, k = ceil(c (n+1)); a censored one counts at its
//     bound, as coverage scores a timeout.
//
// Use NewCalibrator; the zero value is not usable.
type Calibrator struct {
	p      CalibratedParams
	window int64 // nanoseconds

	hours [24]orderedWindow[profileKey] // by hour of day
	all   orderedWindow[profileKey]
	resid orderedWindow[float64]
	// waits holds, per hour of day, the prediction residuals d of the
	// uncensored observations: the wait distribution decisions weigh.
	waits [24]orderedWindow[waitResid]

	level      float64 // L = max(slow, fast)
	slow, fast float64 // the EWMAs
	last       time.Time
	seen       bool
	prevHi     bool // the previous observation lay above the shift tail
	prevLo     bool // ... below it (uncensored)
	prevE      float64
}

// NewCalibrator returns an empty calibrator.
func NewCalibrator(p CalibratedParams) *Calibrator {
	if p.LookbackDays <= 0 {
		p.LookbackDays = DefaultCalibratedLookbackDays
	}
	if p.Location == nil {
		p.Location = time.UTC
	}
	c := &Calibrator{p: p, window: int64(p.LookbackDays) * 24 * int64(time.Hour)}
	for i := range c.hours {
		c.hours[i].cmp = cmpProfileKey
		c.waits[i].cmp = func(a, b waitResid) int { return cmp.Compare(a.d, b.d) }
	}
	c.all.cmp, c.all.lazy = cmpProfileKey, true // read only for an hour without observations
	c.resid.cmp = cmp.Compare[float64]
	return c
}

// ErrObsOrder is Add's answer to an observation older than the last one.
var ErrObsOrder = errors.New("calibrated: observation before the previous one")

// Add feeds the next observation. Observations come in time order (equal
// times are fine); a non-finite or negative value is ignored.
func (c *Calibrator) Add(o QueueObs) error {
	if c.seen && o.Time.Before(c.last) {
		return ErrObsOrder
	}
	if !num.Finite(o.Value) || o.Value < 0 {
		return nil
	}
	c.last, c.seen = o.Time, true
	t := o.Time.UnixNano()
	lv := math.Log(max(o.Value, MinQueueObsS))
	h := o.Time.In(c.p.Location).Hour()
	c.evict(t, h)
	if prof, ok := c.profile(h, t-c.window); ok {
		e := lv - prof
		d := e - c.level
		hi, lo, med, detect := c.shiftBounds()
		isHi, isLo := detect && d > hi, detect && !o.Censored && d < lo
		upd := e
		if o.Censored {
			upd = max(e, c.level)
		}
		c.slow = (1-calibratedAlpha)*c.slow + calibratedAlpha*upd
		c.fast = (1-calibratedFastAlpha)*c.fast + calibratedFastAlpha*upd
		switch {
		case isHi && c.prevHi:
			c.slow = min(e, c.prevE) - med
			c.fast = c.slow
		case isLo && c.prevLo:
			c.slow = max(e, c.prevE) - med
			c.fast = c.slow
		}
		if !c.p.DayAhead {
			c.level = max(c.slow, c.fast)
		}
		if !o.Censored || isHi { // a bound below the tail says nothing of a shift
			c.prevHi, c.prevLo, c.prevE = isHi, isLo, e
		}
		c.resid.add(t, d)
		if !o.Censored {
			c.waits[h].add(t, waitResid{d, math.Exp(d)})
		}
	}
	k := profileKey{censored: o.Censored, v: lv}
	c.hours[h].add(t, k)
	c.all.add(t, k)
	return nil
}

// Quantile returns the forecast for an attempt at t (not before the last
// observation: the rule is causal) at coverage cov (0 < cov < 1), and false
// when the lane has no observation yet.
func (c *Calibrator) Quantile(t time.Time, cov float64) (CalibratedFigure, bool) {
	if CheckCoverage(cov) != nil || (c.seen && t.Before(c.last)) {
		return CalibratedFigure{}, false
	}
	from := t.UnixNano() - c.window
	prof, ok := c.profile(t.In(c.p.Location).Hour(), from)
	if !ok {
		return CalibratedFigure{}, false
	}
	q, n, warm := c.margin(cov, from)
	return CalibratedFigure{QueueS: math.Exp(prof + c.level + q), ProfileS: math.Exp(prof), Level: math.Exp(c.level),
		Margin: math.Exp(q), Residuals: n, Warm: warm}, true
}

// WaitDist is a lane's first-token wait distribution at an instant, for
// the decisions (Decide): the ok waits of the hour of day over the window
// (with neighbouring hours while there are fewer than MinWaitSamples),
// each moved to the lane's level now: exp(P(h) + L + d) for each of their
// prediction residuals d. So the spread is the hour's own, and a lane that
// runs twice as slow as its profile today has its samples doubled. A zero
// WaitDist holds no wait.
type WaitDist struct {
	c     *Calibrator
	from  int64
	base  float64 // log seconds: P(h) + L
	hours uint32  // bit h: hour of day h's waits are in
	n     int
	// top is at least every residual held and total the sum of the live
	// ones' exp: a wait past exp(base + top) counts them all.
	top, total float64
	waits      []float64 // WaitsOf's sorted waits, without a calibrator
}

// waitResid is a residual d of a wait and exp(d), so that summing waits
// takes no logarithm.
type waitResid struct{ d, e float64 }

// WaitsOf returns the distribution of the waits given (seconds): for a
// lane the rule has no observation of, its next_queue_s alone.
func WaitsOf(s ...float64) WaitDist {
	w := slices.Clone(s)
	slices.Sort(w)
	return WaitDist{waits: w, n: len(w)}
}

// Waits returns the wait distribution of an attempt at t (WaitDist), and
// false when the calibrator has no observation to make it from.
func (c *Calibrator) Waits(t time.Time) (WaitDist, bool) {
	t = later(t, c.last)
	from := t.UnixNano() - c.window
	h := t.In(c.p.Location).Hour()
	prof, ok := c.profile(h, from)
	if !ok {
		return WaitDist{}, false
	}
	w := WaitDist{c: c, from: from, base: prof + c.level, top: math.Inf(-1)}
	for k := 0; k <= 12 && w.n < MinWaitSamples; k++ {
		for _, j := range [2]int{h - k, h + k} {
			j = (j + 24) % 24
			if w.hours&(1<<j) != 0 {
				continue
			}
			w.hours |= 1 << j
			ws := &c.waits[j]
			stale := ws.stale(from)
			w.n += ws.len() - len(stale)
			if n := ws.len(); n > 0 {
				w.top = max(w.top, ws.sorted[n-1].d)
			}
			for _, r := range ws.sorted {
				w.total += r.e
			}
			for _, it := range stale {
				w.total -= it.v.e
			}
		}
	}
	return w, w.n > 0
}

// N returns how many waits the distribution holds.
func (w WaitDist) N() int { return w.n }

// Within returns how many of its waits are at most s seconds, and their
// sum.
func (w WaitDist) Within(s float64) (int, float64) {
	if w.c == nil {
		k := sort.Search(len(w.waits), func(i int) bool { return w.waits[i] > s })
		sum := 0.0
		for _, v := range w.waits[:k] {
			sum += v
		}
		return k, sum
	}
	if !(s > 0) {
		return 0, 0
	}
	x := math.Log(s) - w.base
	if x >= w.top {
		return w.n, math.Exp(w.base) * w.total
	}
	n, sum := 0, 0.0
	for j := range 24 {
		if w.hours&(1<<j) == 0 {
			continue
		}
		ws := &w.c.waits[j]
		k := sort.Search(len(ws.sorted), func(i int) bool { return ws.sorted[i].d > x })
		n += k
		for _, r := range ws.sorted[:k] {
			sum += r.e
		}
		for _, it := range ws.stale(w.from) {
			if it.v.d <= x {
				n--
				sum -= it.v.e
			}
		}
	}
	return n, math.Exp(w.base) * sum
}

// evict drops what is older than the window [t - lookback, t). Of the
// hours of day only h, the observation's, is evicted: the others drop
// theirs when an observation of their own comes, and until then their
// readers skip them, so that an Add touches one hour's window, not 24.
func (c *Calibrator) evict(t int64, h int) {
	from := t - c.window
	c.hours[h].evict(from)
	c.waits[h].evict(from)
	c.all.evict(from)
	c.resid.evict(from)
}

// profile returns P(h): the upper median of hour h's observations after
// from, else of all of them.
func (c *Calibrator) profile(h int, from int64) (float64, bool) {
	w := &c.hours[h]
	if n := w.len() - len(w.stale(from)); n > 0 {
		return w.kth(from, n/2+1).v, true
	}
	s := c.all.view(from)
	if len(s) == 0 {
		return 0, false
	}
	return s[len(s)/2].v, true
}

// shiftBounds returns the residuals' shift tails and median, and whether
// there are enough residuals to tell a shift.
func (c *Calibrator) shiftBounds() (hi, lo, med float64, ok bool) {
	s := c.resid.sorted
	n := len(s)
	if n < calibratedShiftMin {
		return 0, 0, 0, false
	}
	at := func(q float64) float64 { return s[min(n-1, max(0, int(math.Ceil(q*float64(n)))-1))] }
	return at(1 - CalibratedShiftTail), at(CalibratedShiftTail), s[n/2], true
}

// margin returns Q(cov): the conformal quantile of the residuals from from
// on, how many there are, and whether there are enough of them.
func (c *Calibrator) margin(cov float64, from int64) (float64, int, bool) {
	n := c.resid.len() - len(c.resid.stale(from))
	if n == 0 {
		return 0, 0, false
	}
	k := int(math.Ceil(cov*float64(n+1) - 1e-9))
	if k > n {
		return c.resid.kth(from, n), n, false
	}
	return c.resid.kth(from, max(k, 1)), n, true
}

// profileKey orders a profile's observations: uncensored by value, then the
// censored ones by bound.
type profileKey struct {
	censored bool
	v        float64
}

func cmpProfileKey(a, b profileKey) int {
	if a.censored != b.censored {
		if a.censored {
			return 1
		}
		return -1
	}
	return cmp.Compare(a.v, b.v)
}

// orderedWindow holds the values of a time window twice: in arrival order
// (to drop the oldest) and sorted by cmp (for order statistics). A lazy
// window keeps the arrival order alone and sorts a copy when asked (view):
// for a window read rarely, so that adding and dropping shift no sorted
// values.
type orderedWindow[T any] struct {
	cmp    func(a, b T) int
	lazy   bool
	items  []windowItem[T]
	head   int
	sorted []T
}

type windowItem[T any] struct {
	t int64
	v T
}

func (w *orderedWindow[T]) len() int { return len(w.sorted) }

func (w *orderedWindow[T]) add(t int64, v T) {
	w.items = append(w.items, windowItem[T]{t, v})
	if !w.lazy {
		i, _ := slices.BinarySearchFunc(w.sorted, v, w.cmp)
		w.sorted = slices.Insert(w.sorted, i, v)
	}
}

// view returns the sorted values of a lazy window's items from from on.
func (w *orderedWindow[T]) view(from int64) []T {
	live := w.items[w.head+len(w.stale(from)):]
	s := make([]T, len(live))
	for i, it := range live {
		s[i] = it.v
	}
	slices.SortFunc(s, w.cmp)
	return s
}

// stale returns the items before from that evict(from) would drop.
func (w *orderedWindow[T]) stale(from int64) []windowItem[T] {
	live := w.items[w.head:]
	n := 0
	for n < len(live) && live[n].t < from {
		n++
	}
	return live[:n]
}

// kth returns the k-th smallest value (1-based, 1 <= k <= the count) of
// the items from from on, without changing w: the stale items' positions in
// the sorted slice (the first free slot of each one's run of equal values)
// are skipped.
func (w *orderedWindow[T]) kth(from int64, k int) T {
	stale := w.stale(from)
	if len(stale) == 0 {
		return w.sorted[k-1]
	}
	var buf [16]int
	pos := buf[:0]
	for _, it := range stale {
		i, _ := slices.BinarySearchFunc(w.sorted, it.v, w.cmp)
		for slices.Contains(pos, i) {
			i++
		}
		pos = append(pos, i)
	}
	slices.Sort(pos)
	j := k - 1
	for _, p := range pos {
		if p > j {
			break
		}
		j++
	}
	return w.sorted[j]
}

// evict drops the items before from.
func (w *orderedWindow[T]) evict(from int64) {
	for w.head < len(w.items) && w.items[w.head].t < from {
		it := w.items[w.head]
		w.items[w.head] = windowItem[T]{}
		w.head++
		if i, ok := slices.BinarySearchFunc(w.sorted, it.v, w.cmp); ok && !w.lazy {
			w.sorted = slices.Delete(w.sorted, i, i+1)
		}
	}
	if w.head > 64 && w.head*2 > len(w.items) {
		w.items = append(w.items[:0], w.items[w.head:]...)
		w.head = 0
	}
}
