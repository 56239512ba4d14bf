package lanesim

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/lanewatch/lanewatch/probe"
	"github.com/lanewatch/lanewatch/store"
)

// HistoryOptions configure History, which generates a realistic probe
// history of several lanes for demos, tests and backtests (`lanesim
// history`; the model is its usage text's). The same options give the same
// probes; each lane draws from its own source (seeded from the seed and its
// name), so adding a lane does not change the others. Rounds run at :07,
// :27 and :47, the lanes of a round a few hundred milliseconds apart; every
// probe asks for 16 tokens. A free lane queues lognormally along the
// profile's time-of-day curve (HistoryProfile) with a factor per day;
// a wait past Timeout is a timeout (queue_s the timeout); each of its
// hours starts an outage (every probe times out) with probability
// OutageRate, lasting 1 to 4 hours; outside outages a probe starts a 429
// burst with probability Burst429Rate (quota_reset_s 10 to 60 minutes, no
// probe until the reset, the next one a 429 again with probability 1/2). A
// paid lane queues 0.6 s (σ 0.3) at 120 tok/s; with PaidFaults its median
// follows the curve a tenth as much, an hour is busy (×4) with probability
// PaidBusyRate and a probe fails (503) with probability PaidFailRate.
type HistoryOptions struct {
	Start       time.Time // the first round is the first :07, :27 or :47 at or after Start
	Days        int       // the history covers [Start, Start + Days × 24 h)
	Lanes       []HistoryLane
	Seed        uint64
	Profile     string        // the free lanes' model (ProfileNamed; "": harsh)
	Curve       Curve         // the free lanes' load by hour of day (UTC); nil: the profile's
	Timeout     time.Duration // 0: DefaultHistoryTimeout
	PaidFaults  bool
	ShiftAt     time.Time // when not zero, free medians × ShiftFactor from then on, the same draws
	ShiftFactor float64
	// Busy429Rate, when > 0, makes a free probe outside outages and bursts
	// rate_limited with probability min(1, Busy429Rate × curve(hour)), its
	// Retry-After log-uniform from 1 s to 15 minutes.
	Busy429Rate float64
}

// HistoryProfile is the free lanes' model of a generated history. A free
// lane (the i-th, from 0) at load multiplier mult = curve(hour of day)
// queues lognormally with median (FirstMedianS + i × NextMedianS) × mult ×
// day and σ SigmaBase + SigmaLoad × (mult - 1), where day is a factor per
// day, exp(DaySigma·Z); it decodes RateBase / (1 + RateLoad × (mult - 1))
// tok/s, ±10 %.
type HistoryProfile struct {
	Name                      string
	Curve                     Curve
	FirstMedianS, NextMedianS float64
	SigmaBase, SigmaLoad      float64
	DaySigma                  float64
	RateBase, RateLoad        float64

	// The held-out families' knobs (HeldOutProfiles), zero in harsh and
	// mild. Tail: "" a lognormal; TailMixture with probability SlowShare a
	// slow mode SlowFactor times the median; TailPareto a Pareto of index
	// TailAlpha, same median (the normal draw through its quantile).
	// WeekendFactor multiplies the medians on Saturdays and Sundays (UTC).
	// Shift is HistoryOptions.ShiftFactor's default, from two thirds into
	// the history. ProbeEvery > 1 probes the i-th free lane in the rounds r
	// with r mod ProbeEvery = i mod ProbeEvery. Upstream > 0 puts every lane
	// on one upstream: the free lanes share a day factor and outages, a paid
	// lane's median is 0.6 s × (curve × day factor)^Upstream, and while the
	// upstream is out half its probes fail (503).
	Tail                  string
	SlowShare, SlowFactor float64
	TailAlpha             float64
	WeekendFactor         float64
	Shift                 float64
	ProbeEvery            int
	Upstream              float64
}

// Tails of HistoryProfile.Tail.
const (
	TailMixture = "mixture"
	TailPareto  = "pareto"
)

// HarshProfile, the default: free lanes with a median of 3-5 s, 12-20 s at
// the peak, an 8× swing between hours and σ 0.9.
var HarshProfile = HistoryProfile{
	Name: "harsh", Curve: DefaultHistoryCurve,
	FirstMedianS: 3, NextMedianS: 2,
	SigmaBase: 0.9, SigmaLoad: 0,
	DaySigma: 0.25,
	RateBase: 40, RateLoad: 0.15,
}

// MildProfile is calibrated to published time-of-day figures of hosted
// LLM APIs: off-peak 30-40 % faster, the peak's p95 2.4× its median,
// throughput swinging 36 % over a day.
var MildProfile = HistoryProfile{
	Name: "mild", Curve: MildCurve,
	FirstMedianS: 0.55, NextMedianS: 0.35,
	SigmaBase: 0.45, SigmaLoad: 0.33,
	DaySigma: 0.25,
	RateBase: 60, RateLoad: 1,
}

// MildCurve is DefaultHistoryCurve's shape squeezed into 0.8-1.25.
var MildCurve = Curve{{0, 0.8}, {6, 0.85}, {9, 1.1}, {13, 1.25}, {17, 1.1}, {21, 0.9}}

// HeldOutProfiles are worlds lanewatch's decisions are scored on and none
// of its constants was chosen on (sparse: give its config a quota of 8
// probes a day).
var HeldOutProfiles = []HistoryProfile{
	{Name: "known-flat", Curve: Curve{{0, 0.9}, {12, 1.15}}, FirstMedianS: 1.5, NextMedianS: 1,
		SigmaBase: 0.6, DaySigma: 0.15, RateBase: 50, RateLoad: 0.2},
	{Name: "known-peak", Curve: Curve{{0, 0.4}, {7, 0.5}, {12, 1.5}, {18, 5}, {21, 2.5}, {23, 0.8}}, FirstMedianS: 2, NextMedianS: 1.5,
		SigmaBase: 0.5, SigmaLoad: 0.12, DaySigma: 0.2, RateBase: 45, RateLoad: 0.25},
	{Name: "weekly", Curve: Curve{{0, 0.7}, {8, 1}, {12, 1.6}, {18, 1.2}}, FirstMedianS: 2.5, NextMedianS: 1,
		SigmaBase: 0.7, DaySigma: 0.15, RateBase: 45, RateLoad: 0.3, WeekendFactor: 1.0 / 3},
	{Name: "drop", Curve: Curve{{0, 0.5}, {8, 1}, {13, 3}, {18, 1.5}}, FirstMedianS: 6, NextMedianS: 2,
		SigmaBase: 0.8, DaySigma: 0.2, RateBase: 40, RateLoad: 0.15, Shift: 0.25},
	{Name: "rise", Curve: Curve{{0, 0.8}, {9, 1.1}, {14, 1.4}, {20, 1}}, FirstMedianS: 1, NextMedianS: 0.5,
		SigmaBase: 0.5, DaySigma: 0.15, RateBase: 55, RateLoad: 0.5, Shift: 4},
	{Name: "mixture", Curve: Curve{{0, 0.8}, {10, 1.3}, {16, 1.5}, {21, 1}}, FirstMedianS: 1.2, NextMedianS: 0.6,
		SigmaBase: 0.4, DaySigma: 0.15, RateBase: 50, RateLoad: 0.3, Tail: TailMixture, SlowShare: 0.125, SlowFactor: 10},
	{Name: "pareto", Curve: Curve{{0, 0.6}, {9, 1.2}, {13, 2}, {19, 1}}, FirstMedianS: 2, NextMedianS: 1,
		DaySigma: 0.2, RateBase: 40, RateLoad: 0.2, Tail: TailPareto, TailAlpha: 1.4},
	{Name: "sparse", Curve: Curve{{0, 0.6}, {9, 1.5}, {14, 2.5}, {20, 1}}, FirstMedianS: 3, NextMedianS: 1.5,
		SigmaBase: 0.7, DaySigma: 0.2, RateBase: 40, RateLoad: 0.2, ProbeEvery: 10},
	{Name: "upstream", Curve: Curve{{0, 0.6}, {9, 2}, {14, 3}, {20, 1.2}}, FirstMedianS: 2.5, NextMedianS: 1.5,
		SigmaBase: 0.7, DaySigma: 0.25, RateBase: 40, RateLoad: 0.2, Upstream: 0.6},
}

// HistoryProfiles lists the profiles, the default first.
var HistoryProfiles = append([]HistoryProfile{HarshProfile, MildProfile}, HeldOutProfiles...)

// ProfileNames returns the profiles' names, comma-separated.
func ProfileNames() string {
	names := make([]string, len(HistoryProfiles))
	for i, p := range HistoryProfiles {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// ProfileNamed returns the profile of the given name ("": the default).
func ProfileNamed(name string) (HistoryProfile, error) {
	if name == "" {
		return HarshProfile, nil
	}
	for _, p := range HistoryProfiles {
		if p.Name == name {
			return p, nil
		}
	}
	return HistoryProfile{}, fmt.Errorf("profile %q: want one of %s", name, ProfileNames())
}

// Lognormal says whether ProbeTruth is the free lanes' whole distribution.
func (p HistoryProfile) Lognormal() bool { return p.Tail == "" }

// ProbeTruth is the lognormal a generated probe drew its queue from, before
// the timeout (see HistoryProfile.Lognormal); Outage: the lane was down.
type ProbeTruth struct {
	Time    time.Time `json:"time"`
	Lane    string    `json:"lane"`
	MedianS float64   `json:"median_s"`
	Sigma   float64   `json:"sigma"`
	Outage  bool      `json:"outage,omitempty"`
}

// AppendJSON appends t as one JSON object (lanesim history -truth).
func (t ProbeTruth) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"time":"`...)
	dst = t.Time.UTC().AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, `","lane":`...)
	dst = strconv.AppendQuote(dst, t.Lane)
	dst = append(dst, `,"median_s":`...)
	dst = strconv.AppendFloat(dst, t.MedianS, 'g', -1, 64)
	dst = append(dst, `,"sigma":`...)
	dst = strconv.AppendFloat(dst, t.Sigma, 'g', -1, 64)
	if t.Outage {
		dst = append(dst, `,"outage":true`...)
	}
	return append(dst, '}')
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
	PaidBusyRate          = 0.01  // per paid lane-hour, with PaidFaults
	PaidFailRate          = 0.002 // per paid probe, with PaidFaults
	historyTokens         = 16
	busy429MaxS           = 900 // the longest Retry-After of a short 429 (Busy429Rate)
)

// DefaultHistoryCurve is a working day on shared free lanes (UTC).
var DefaultHistoryCurve = Curve{{0, 0.5}, {6, 0.6}, {9, 2.5}, {13, 4}, {17, 2.5}, {21, 1}}

// HistoryMaxDays bounds Days (ten years).
const HistoryMaxDays = 3660

// History calls emit with the probes of each generated day, in time order,
// and their truth (truth[i] is day[i]'s), until emit's first error.
func History(opts HistoryOptions, emit func(day []store.Probe, truth []ProbeTruth) error) error {
	if opts.Days < 1 || opts.Days > HistoryMaxDays {
		return fmt.Errorf("history: %d days: want 1 to %d", opts.Days, HistoryMaxDays)
	}
	if len(opts.Lanes) == 0 {
		return errors.New("history: no lanes")
	}
	prof, err := ProfileNamed(opts.Profile)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	// opts resolved, for the lanes to read
	if opts.Curve == nil {
		opts.Curve = prof.Curve
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultHistoryTimeout
	}
	start := opts.Start.UTC()
	if prof.Shift > 0 {
		if opts.ShiftFactor == 0 {
			opts.ShiftFactor = prof.Shift
		}
		if opts.ShiftAt.IsZero() {
			opts.ShiftAt = start.AddDate(0, 0, opts.Days*2/3)
		}
	}
	var up *drift
	if prof.Upstream > 0 {
		up = &drift{rng: rand.New(rand.NewPCG(opts.Seed, 0x75707374)), sigma: prof.DaySigma}
	}
	lanes := make([]*histLane, len(opts.Lanes))
	free := 0
	for i, l := range opts.Lanes {
		if l.Kind != "free" && l.Kind != "paid" {
			return fmt.Errorf("history: lane %q: kind %q: want free or paid", l.Name, l.Kind)
		}
		h := fnv.New64a()
		h.Write([]byte(l.Name))
		hl := &histLane{HistoryLane: l, drift: drift{rng: rand.New(rand.NewPCG(opts.Seed, h.Sum64())), sigma: prof.DaySigma}, offset: time.Duration(i)*150*time.Millisecond + time.Duration(h.Sum64()%100)*time.Millisecond,
			opts: &opts, prof: &prof, up: up}
		if l.Kind == "free" {
			hl.median = prof.FirstMedianS + prof.NextMedianS*float64(free)
			hl.nth = free
			free++
		}
		lanes[i] = hl
	}
	end := start.Add(time.Duration(opts.Days) * 24 * time.Hour)
	var day []store.Probe
	var truth []ProbeTruth
	dayEnd := start.Add(24 * time.Hour)
	round := 0 // rounds since the start
	for hour := start.Truncate(time.Hour); hour.Before(end); hour = hour.Add(time.Hour) {
		if up != nil {
			up.startHour(hour, true)
		}
		for _, l := range lanes {
			l.startHour(hour)
		}
		for _, m := range []time.Duration{7, 27, 47} {
			at := hour.Add(m * time.Minute)
			if at.Before(start) || !at.Before(end) {
				continue
			}
			if !at.Before(dayEnd) {
				if err := emit(day, truth); err != nil {
					return err
				}
				day, truth, dayEnd = day[:0], truth[:0], dayEnd.Add(24*time.Hour)
			}
			for _, l := range lanes {
				if k := prof.ProbeEvery; k > 1 && l.Kind == "free" && round%k != l.nth%k {
					continue // sparse: not this lane's round
				}
				if p, tr, ok := l.probe(at.Add(l.offset)); ok {
					day, truth = append(day, p), append(truth, tr)
				}
			}
			round++
		}
	}
	if len(day) > 0 {
		return emit(day, truth)
	}
	return nil
}

// drift is the day factor and outages of a lane, or of the upstream the
// lanes of an upstream profile share, drawn from rng.
type drift struct {
	rng       *rand.Rand
	sigma     float64 // of the day factor's logarithm
	day       int64
	dayFactor float64
	outage    int // hours of outage left, this one included
}

// startHour draws the day factor of a new day and, with outages, whether
// an outage starts.
func (d *drift) startHour(hour time.Time, outages bool) {
	if k := hour.Unix() / 86400; k != d.day || d.dayFactor == 0 {
		d.day, d.dayFactor = k, math.Exp(d.sigma*d.rng.NormFloat64())
	}
	if !outages {
		return
	}
	if d.outage > 0 {
		d.outage--
	}
	if d.outage == 0 && d.rng.Float64() < OutageRate {
		d.outage = 1 + d.rng.IntN(4)
	}
}

// histLane is a lane's generator state.
type histLane struct {
	HistoryLane
	opts   *HistoryOptions // resolved by History
	prof   *HistoryProfile
	offset time.Duration // after the round's start
	median float64       // free: median queue at curve 1
	nth    int           // free: the lane's place among the free lanes
	up     *drift        // the shared upstream, or nil
	busy   bool          // paid with faults: this hour is busy
	drift
	backoff time.Time
	burst   bool // the last probe was a 429
}

func (l *histLane) startHour(hour time.Time) {
	l.drift.startHour(hour, l.Kind == "free")
	if l.Kind != "free" && l.opts.PaidFaults {
		l.busy = l.rng.Float64() < PaidBusyRate
	}
}

// probe returns the lane's probe at t and its truth, or false when the
// lane backs off.
func (l *histLane) probe(t time.Time) (store.Probe, ProbeTruth, bool) {
	p := store.Probe{Lane: l.Name, Kind: l.Kind, Time: t, HeadersS: 0.05, ConnectS: 0.02}
	tr := ProbeTruth{Time: t, Lane: l.Name}
	mult := l.opts.Curve.At(float64(t.Hour()) + float64(t.Minute())/60)
	if l.Kind == "paid" {
		return l.paidProbe(p, tr, mult)
	}
	if t.Before(l.backoff) {
		return p, tr, false
	}
	dayFactor, outage := l.dayFactor, l.outage
	if l.up != nil {
		dayFactor, outage = l.up.dayFactor, l.up.outage
	}
	tr.MedianS = l.median * mult * dayFactor
	if !l.opts.ShiftAt.IsZero() && !t.Before(l.opts.ShiftAt) && l.opts.ShiftFactor > 0 {
		tr.MedianS *= l.opts.ShiftFactor
	}
	if wd := t.Weekday(); l.prof.WeekendFactor > 0 && (wd == time.Saturday || wd == time.Sunday) {
		tr.MedianS *= l.prof.WeekendFactor
	}
	tr.Sigma = l.prof.SigmaBase + l.prof.SigmaLoad*(mult-1)
	tr.Outage = outage > 0
	z := l.rng.NormFloat64()
	q := tr.MedianS * math.Exp(tr.Sigma*z)
	if l.prof.Tail == TailPareto {
		// The Pareto of the same median, at the quantile of the normal draw.
		a := l.prof.TailAlpha
		u := 0.5 * math.Erfc(-z/math.Sqrt2)
		q = tr.MedianS / math.Pow(2, 1/a) * math.Pow(max(1-u, 1e-300), -1/a)
	}
	rate := l.prof.RateBase / (1 + l.prof.RateLoad*(mult-1)) * (1 + 0.1*(2*l.rng.Float64()-1))
	burst := l.rng.Float64() // drawn for every probe, so that outages do not shift the draws
	if l.prof.Tail == TailMixture && l.rng.Float64() < l.prof.SlowShare {
		q *= l.prof.SlowFactor
	}
	inBurst := l.burst
	l.burst = false // unless this probe is a burst's 429
	switch {
	case outage > 0:
		p.QueueS, p.Outcome = l.opts.Timeout.Seconds(), "timeout"
	case (inBurst && burst < 0.5) || (!inBurst && burst < Burst429Rate):
		reset := time.Duration(10+l.rng.IntN(51)) * time.Minute
		p.Outcome, p.Status, p.QuotaResetS = string(probe.RateLimited), 429, reset.Seconds()
		p.QuotaKnown, p.QuotaRemaining = true, 0
		l.backoff, l.burst = t.Add(reset), true
	case l.opts.Busy429Rate > 0 && l.rng.Float64() < min(1, l.opts.Busy429Rate*mult):
		wait := time.Duration(math.Exp(math.Log(busy429MaxS)*l.rng.Float64()) * float64(time.Second)).Round(time.Second)
		p.Outcome, p.Status, p.QuotaResetS = string(probe.RateLimited), 429, wait.Seconds()
		l.backoff = t.Add(wait)
	case q >= l.opts.Timeout.Seconds():
		p.QueueS, p.Outcome = l.opts.Timeout.Seconds(), "timeout"
	default:
		p.QueueS, p.GenS, p.Tokens = round3(q), round3(historyTokens/rate), historyTokens
		p.OK, p.Outcome, p.Status = true, string(probe.OK), 200
	}
	return p, tr, true
}

// paidProbe is probe for a paid lane, at load multiplier mult.
func (l *histLane) paidProbe(p store.Probe, tr ProbeTruth, mult float64) (store.Probe, ProbeTruth, bool) {
	tr.MedianS, tr.Sigma = 0.6, 0.3
	if l.opts.PaidFaults {
		tr.MedianS *= 1 + 0.1*(mult-1)
		if l.busy {
			tr.MedianS *= 4
		}
	}
	if l.up != nil {
		tr.MedianS *= math.Pow(mult*l.up.dayFactor, l.prof.Upstream)
		tr.Outage = l.up.outage > 0
	}
	q := tr.MedianS * math.Exp(tr.Sigma*l.rng.NormFloat64())
	rate := 120 * (1 + 0.1*(2*l.rng.Float64()-1))
	if (l.opts.PaidFaults && l.rng.Float64() < PaidFailRate) || (tr.Outage && l.rng.Float64() < 0.5) {
		p.QueueS, p.Outcome, p.Status = round3(q), string(probe.HTTPError), 503
		return p, tr, true
	}
	p.QueueS, p.GenS, p.Tokens = round3(q), round3(historyTokens/rate), historyTokens
	p.OK, p.Outcome, p.Status = true, string(probe.OK), 200
	return p, tr, true
}

// round3 rounds to a millisecond, as a probe's timings are.
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
