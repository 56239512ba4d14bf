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

// Constants of the calibrated rule (docs/policy.md#next_queue_s).
const (
	DefaultCalibratedLookbackDays        = 14
	calibratedAlpha, calibratedFastAlpha = 0.1, 0.3 // the level's EWMAs
	CalibratedShiftTail                  = 0.05
	calibratedShiftMin                   = 20    // residuals the shift rule needs
	MinQueueObsS                         = 0.001 // the least wait, so that 0 has a logarithm
	MinWaitSamples                       = 30    // ok waits a decision's distribution holds at least
)

// QueueObs is the wait Value (seconds) of the attempt that started at
// Time; Censored: a lower bound (the probe failed after waiting Value).
type QueueObs struct {
	Time     time.Time
	Value    float64
	Censored bool
}

// CalibratedParams tunes the calibrated rule.
type CalibratedParams struct {
	LookbackDays int            // window of the profile and the margin; <= 0: 14
	Location     *time.Location // hours of day are this zone's; nil: UTC
	DayAhead     bool           // the level stays 1: a forecast made before its day (ForecastProbes)
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
	QueueS    float64 // ProfileS × Level × Margin: the next attempt's wait at the coverage
	ProfileS  float64 // exp P(h): the hour of day's median
	Level     float64 // exp L
	Margin    float64 // exp Q(c)
	Residuals int     // the margin comes from
	Warm      bool    // enough residuals for the quantile
}

// Calibrator is the calibrated rule's state for one lane
// (docs/policy.md#next_queue_s): exp(P(h) + L + Q(c)), the profile, level
// and margin in log seconds. Use NewCalibrator.
type Calibrator struct {
	p      CalibratedParams
	window int64 // nanoseconds

	hours [24]orderedWindow[profileKey] // by hour of day
	resid orderedWindow[float64]
	waits [24]orderedWindow[waitResid] // by hour of day, the uncensored residuals d

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

// WaitDist is a lane's first-token wait distribution at an instant for the
// decisions: exp(P(h) + L + d) for the residuals d of the hour of day's ok
// waits (with neighbouring hours', while fewer than MinWaitSamples). A zero
// WaitDist holds no wait.
type WaitDist struct {
	c     *Calibrator
	from  int64
	base  float64 // log seconds: P(h) + L
	hours uint32  // bit h: hour of day h's waits are in
	n     int
	top   float64   // at least every residual held
	total float64   // the sum of the live ones' exp
	waits []float64 // WaitsOf's sorted waits, without a calibrator
}

// waitResid is a residual d of a wait and exp(d).
type waitResid struct{ d, e float64 }

// WaitsOf returns the distribution of the waits given (seconds).
func WaitsOf(s ...float64) WaitDist {
	w := slices.Clone(s)
	slices.Sort(w)
	return WaitDist{waits: w, n: len(w)}
}

// Waits returns the wait distribution of an attempt at t, and false
// without an observation.
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

// Within returns how many waits are at most s seconds, and their sum.
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

// evict drops what is older than the window; of the hours of day only h's
// (the others' readers skip their stale items).
func (c *Calibrator) evict(t int64, h int) {
	from := t - c.window
	c.hours[h].evict(from)
	c.waits[h].evict(from)
	c.resid.evict(from)
}

// profile returns P(h): the upper median of hour h's observations after
// from, else of all of them.
func (c *Calibrator) profile(h int, from int64) (float64, bool) {
	w := &c.hours[h]
	if n := w.len() - len(w.stale(from)); n > 0 {
		return w.kth(from, n/2+1).v, true
	}
	var s []profileKey
	for i := range c.hours {
		for _, it := range c.hours[i].live(from) {
			s = append(s, it.v)
		}
	}
	if len(s) == 0 {
		return 0, false
	}
	slices.SortFunc(s, cmpProfileKey)
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

// orderedWindow holds the values of a time window in arrival order and
// sorted by cmp.
type orderedWindow[T any] struct {
	cmp    func(a, b T) int
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
	i, _ := w.search(v)
	w.sorted = slices.Insert(w.sorted, i, v)
}

// search finds v in the sorted values; float64 windows compare directly,
// not through cmp (a replay's hottest loop).
func (w *orderedWindow[T]) search(v T) (int, bool) {
	if s, ok := any(w.sorted).([]float64); ok {
		return slices.BinarySearch(s, any(v).(float64))
	}
	return slices.BinarySearchFunc(w.sorted, v, w.cmp)
}

// live returns the items from from on.
func (w *orderedWindow[T]) live(from int64) []windowItem[T] {
	return w.items[w.head+len(w.stale(from)):]
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

// kth returns the k-th smallest value (1-based) of the items from from on,
// skipping the stale items' positions in the sorted slice.
func (w *orderedWindow[T]) kth(from int64, k int) T {
	stale := w.stale(from)
	if len(stale) == 0 {
		return w.sorted[k-1]
	}
	var buf [16]int
	pos := buf[:0]
	for _, it := range stale {
		i, _ := w.search(it.v)
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
		if i, ok := w.search(it.v); ok {
			w.sorted = slices.Delete(w.sorted, i, i+1)
		}
	}
	if w.head > 64 && w.head*2 > len(w.items) {
		w.items = append(w.items[:0], w.items[w.head:]...)
		w.head = 0
	}
}
