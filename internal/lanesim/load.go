package lanesim

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lanewatch/lanewatch/internal/num"
)

// CurvePoint sets the background load multiplier at one hour of the day.
type CurvePoint struct {
	Hour float64 // 0 <= Hour < 24
	Mult float64 // >= 0
}

// Curve is a time-of-day load curve, points sorted by hour, interpolated
// linearly (round midnight too); empty: a flat 1.
type Curve []CurvePoint

// ParseCurve reads "hour:mult,...", e.g. "0:1,9:4,14:8,20:2": unique hours
// in [0, 24), multipliers >= 0; "" is the flat curve.
func ParseCurve(s string) (Curve, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var c Curve
	for part := range strings.SplitSeq(s, ",") {
		h, m, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok {
			return nil, fmt.Errorf("curve point %q: want hour:multiplier", part)
		}
		hour, err := strconv.ParseFloat(strings.TrimSpace(h), 64)
		if err != nil || math.IsNaN(hour) || hour < 0 || hour >= 24 {
			return nil, fmt.Errorf("curve point %q: hour must be a number from 0 to below 24", part)
		}
		mult, err := strconv.ParseFloat(strings.TrimSpace(m), 64)
		if err != nil || !num.Finite(mult) || mult < 0 {
			return nil, fmt.Errorf("curve point %q: multiplier must be a number >= 0", part)
		}
		c = append(c, CurvePoint{Hour: hour, Mult: mult})
	}
	slices.SortFunc(c, func(a, b CurvePoint) int { return cmp.Compare(a.Hour, b.Hour) })
	for i := 1; i < len(c); i++ {
		if c[i].Hour == c[i-1].Hour {
			return nil, fmt.Errorf("curve: hour %g given twice", c[i].Hour)
		}
	}
	return c, nil
}

// At returns the multiplier at hour of day h (0 <= h < 24; other values wrap).
func (c Curve) At(h float64) float64 {
	switch len(c) {
	case 0:
		return 1
	case 1:
		return c[0].Mult
	}
	h = math.Mod(h, 24)
	if h < 0 {
		h += 24
	}
	i := slices.IndexFunc(c, func(p CurvePoint) bool { return p.Hour > h })
	if i < 0 {
		i = len(c)
	}
	prev, next := c[(i+len(c)-1)%len(c)], c[i%len(c)]
	switch i { // round midnight
	case 0:
		prev.Hour -= 24
	case len(c):
		next.Hour += 24
	}
	span := next.Hour - prev.Hour
	if span <= 0 {
		return prev.Mult
	}
	return prev.Mult + (next.Mult-prev.Mult)*(h-prev.Hour)/span
}

// String formats the curve the way ParseCurve reads it.
func (c Curve) String() string {
	parts := make([]string, len(c))
	for i, p := range c {
		parts[i] = strconv.FormatFloat(p.Hour, 'g', -1, 64) + ":" + strconv.FormatFloat(p.Mult, 'g', -1, 64)
	}
	return strings.Join(parts, ",")
}

// simClock maps real time to simulated time, from start+offset on, speed
// times faster.
type simClock struct {
	start  time.Time
	offset time.Duration
	speed  float64 // simulated seconds per real second
}

func newSimClock(start time.Time, offset, hourLength time.Duration) simClock {
	speed := 1.0
	if hourLength > 0 {
		speed = float64(time.Hour) / float64(hourLength)
	}
	return simClock{start: start, offset: offset, speed: speed}
}

// hour returns the simulated hour of day in UTC at real time now, with its
// fraction.
func (c simClock) hour(now time.Time) float64 {
	elapsed := float64(now.Sub(c.start)) * c.speed
	t := c.start.Add(c.offset).Add(time.Duration(elapsed)).UTC()
	return float64(t.Hour()) + float64(t.Minute())/60 + float64(t.Second())/3600
}

// runLoad runs the background load until Close: a Poisson process whose
// rate (Background per minute × the curve) is integrated every 50 ms.
func (s *Server) runLoad() {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	last := time.Now()
	need := s.draw((*rand.Rand).ExpFloat64) // integrated rate still to go before the next arrival
	for {
		select {
		case <-s.ctx.Done():
			return
		case now := <-tick.C:
			minutes := now.Sub(last).Minutes()
			last = now
			need -= s.opts.Background * s.opts.Curve.At(s.clock.hour(now)) * minutes
			for need <= 0 {
				s.arrive()
				need += s.draw((*rand.Rand).ExpFloat64)
			}
		}
	}
}

// arrive queues one background job, dropped when BackgroundBuffer wait.
func (s *Server) arrive() {
	t := s.queue.join()
	granted := false
	select {
	case <-t.ready:
		granted = true
	default:
	}
	if !granted && s.bgWaiting.Load() >= int64(s.opts.BackgroundBuffer) {
		s.queue.leave(t)
		s.bgDropped.Add(1)
		return
	}
	s.bgStarted.Add(1)
	if !granted {
		s.bgWaiting.Add(1)
	}
	s.wg.Go(func() {
		if !granted {
			select {
			case <-t.ready:
			case <-s.ctx.Done(): // Close: sleep returns at once, leave withdraws
			}
			s.bgWaiting.Add(-1)
		}
		sleep(s.ctx, s.opts.BackgroundHold)
		s.queue.leave(t)
	})
}
