package lanesim

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"time"

	"github.com/lanewatch/lanewatch/probe"
	"github.com/lanewatch/lanewatch/series"
)

// History generates a realistic probe history of several lanes, for demos,
// tests and backtests (`lanesim history`), deterministic for a seed: the
// same options give the same probes. Each lane draws from its own random
// source (seeded from the seed and the lane's name), so adding a lane does
// not change the others.
//
// The model, per lane:
//
//   - rounds at :07, :27 and :47 of every hour, the lanes of a round started
//     a few hundred milliseconds apart (the sampler's schedule);
//   - a free lane queues q = m × curve(hour of day, UTC) × day × exp(0.9·Z):
//     a median m of 3 s for the first free lane, 2 s more for each next one,
//     the time-of-day load Curve (DefaultHistoryCurve), a factor per day
//     exp(0.25·Z), and a lognormal spread (σ 0.9: the p99 is 8× the median);
//     its decode rate is 40 tok/s over (1 + 0.15·(curve-1)), ±10 %;
//   - a wait beyond Timeout is a timeout: the probe fails, and its queue_s
//     is the timeout, the lower bound the sampler stores;
//   - outages: each hour of a free lane starts one with probability
//     OutageRate (0.4 %), lasting 1 to 4 hours, in which every probe times
//     out: about 1 % of a free lane's probes;
//   - 429 bursts: outside outages, each probe of a free lane starts one with
//     probability Burst429Rate (1 %): it is rate_limited (429) with a
//     quota_reset_s of 10 to 60 minutes, no probe of the lane follows until
//     the reset (the sampler backs off), and the next probe after it is
//     rate_limited again with probability 1/2: about 2 % of a free lane's
//     probes are 429s;
//   - a paid lane is fast and steady: a median queue of 0.6 s (σ 0.3), no
//     time-of-day curve, 120 tok/s, no outage and no 429.
//
// Every probe asks for 16 tokens.
type HistoryOptions struct {
	Start time.Time // the first round is the first :07, :27 or :47 at or after Start
	Days  int       // the history covers [Start, Start + Days × 24 h)
	Lanes []HistoryLane
	Seed  uint64
	// Curve is the free lanes' load multiplier by hour of day (UTC); nil:
	// DefaultHistoryCurve.
	Curve Curve
	// Timeout is the probe timeout; 0: DefaultHistoryTimeout.
	Timeout time.Duration
}

// HistoryLane is a lane of a generated history.
type HistoryLane struct {
	Name string
	Kind string // free | paid
}

// The model's constants (see HistoryOptions).
const (
	DefaultHistoryTimeout = 120 * time.Second
	OutageRate            = 0.004 // per free lane-hour
	Burst429Rate          = 0.01  // per free probe
	historyTokens         = 16
)

// DefaultHistoryCurve is a working day on shared free lanes: quiet at
// night, a morning rise, the peak in the early afternoon (UTC), a calmer
// evening.
var DefaultHistoryCurve = Curve{{0, 0.5}, {6, 0.6}, {9, 2.5}, {13, 4}, {17, 2.5}, {21, 1}}

// HistoryMaxDays bounds Days (ten years).
const HistoryMaxDays = 3660

// History calls emit with the probes of each generated day, in time order
// (lanes in the given order within a round). It stops at emit's first
// error and returns it.
func History(opts HistoryOptions, emit func(day []series.Probe) error) error {
	if opts.Days < 1 || opts.Days > HistoryMaxDays {
		return fmt.Errorf("history: %d days: want 1 to %d", opts.Days, HistoryMaxDays)
	}
	if len(opts.Lanes) == 0 {
		return errors.New("history: no lanes")
	}
	curve := opts.Curve
	if curve == nil {
		curve = DefaultHistoryCurve
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultHistoryTimeout
	}
	lanes := make([]*histLane, len(opts.Lanes))
	free := 0
	for i, l := range opts.Lanes {
		switch l.Kind {
		case "free", "paid":
		default:
			return fmt.Errorf("history: lane %q: kind %q: want free or paid", l.Name, l.Kind)
		}
		h := fnv.New64a()
		h.Write([]byte(l.Name))
		hl := &histLane{HistoryLane: l, rng: rand.New(rand.NewPCG(opts.Seed, h.Sum64())), offset: time.Duration(i)*150*time.Millisecond + time.Duration(h.Sum64()%100)*time.Millisecond}
		if l.Kind == "free" {
			hl.median = 3 + 2*float64(free)
			free++
		}
		lanes[i] = hl
	}
	start := opts.Start.UTC()
	end := start.Add(time.Duration(opts.Days) * 24 * time.Hour)
	var day []series.Probe
	dayEnd := start.Add(24 * time.Hour)
	for hour := start.Truncate(time.Hour); hour.Before(end); hour = hour.Add(time.Hour) {
		for _, l := range lanes {
			l.startHour(hour)
		}
		for _, m := range []time.Duration{7, 27, 47} {
			round := hour.Add(m * time.Minute)
			if round.Before(start) || !round.Before(end) {
				continue
			}
			if !round.Before(dayEnd) {
				if err := emit(day); err != nil {
					return err
				}
				day, dayEnd = day[:0], dayEnd.Add(24*time.Hour)
			}
			for _, l := range lanes {
				if p, ok := l.probe(round.Add(l.offset), curve, timeout); ok {
					day = append(day, p)
				}
			}
		}
	}
	if len(day) > 0 {
		return emit(day)
	}
	return nil
}

// histLane is a lane's generator state.
type histLane struct {
	HistoryLane
	rng       *rand.Rand
	offset    time.Duration // after the round's start
	median    float64       // free: median queue at curve 1
	dayFactor float64
	day       int64
	outage    int // hours of outage left, this one included
	backoff   time.Time
	burst     bool // the last probe was a 429
}

func (l *histLane) startHour(hour time.Time) {
	if d := hour.Unix() / 86400; d != l.day || l.dayFactor == 0 {
		l.day, l.dayFactor = d, math.Exp(0.25*l.rng.NormFloat64())
	}
	if l.Kind != "free" {
		return
	}
	if l.outage > 0 {
		l.outage--
	}
	if l.outage == 0 && l.rng.Float64() < OutageRate {
		l.outage = 1 + l.rng.IntN(4)
	}
}

// probe returns the lane's probe at t, or false when the lane backs off.
func (l *histLane) probe(t time.Time, curve Curve, timeout time.Duration) (series.Probe, bool) {
	p := series.Probe{Lane: l.Name, Kind: l.Kind, Time: t, HeadersS: 0.05, ConnectS: 0.02}
	if l.Kind == "paid" {
		q := 0.6 * math.Exp(0.3*l.rng.NormFloat64())
		rate := 120 * (1 + 0.1*(2*l.rng.Float64()-1))
		p.QueueS, p.GenS, p.Tokens = round3(q), round3(historyTokens/rate), historyTokens
		p.OK, p.Outcome, p.Status = true, string(probe.OK), 200
		return p, true
	}
	if t.Before(l.backoff) {
		return p, false
	}
	hod := float64(t.Hour()) + float64(t.Minute())/60
	mult := curve.At(hod)
	q := l.median * mult * l.dayFactor * math.Exp(0.9*l.rng.NormFloat64())
	rate := 40 / (1 + 0.15*(mult-1)) * (1 + 0.1*(2*l.rng.Float64()-1))
	burst := l.rng.Float64() // drawn for every probe, so that outages do not shift the draws
	switch {
	case l.outage > 0:
		p.QueueS, p.Outcome = timeout.Seconds(), "timeout"
		l.burst = false
	case (l.burst && burst < 0.5) || (!l.burst && burst < Burst429Rate):
		reset := time.Duration(10+l.rng.IntN(51)) * time.Minute
		p.Outcome, p.Status, p.QuotaResetS = string(probe.RateLimited), 429, reset.Seconds()
		p.QuotaKnown, p.QuotaRemaining = true, 0
		l.backoff, l.burst = t.Add(reset), true
	case q >= timeout.Seconds():
		p.QueueS, p.Outcome = timeout.Seconds(), "timeout"
		l.burst = false
	default:
		p.QueueS, p.GenS, p.Tokens = round3(q), round3(historyTokens/rate), historyTokens
		p.OK, p.Outcome, p.Status = true, string(probe.OK), 200
		l.burst = false
	}
	return p, true
}

// round3 rounds to a millisecond, as a probe's timings are.
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
