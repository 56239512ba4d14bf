package policy

import (
	"fmt"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

// Forecast returns 24 forecast policies for the day holding `day` (in
// p.Location), one per wall-clock hour 00..23, from the same hour of day on each
// of the previous p.LookbackDays days alone (basis: forecast), at every
// site. A lane is eligible when that history holds at least one ok probe and
// no failed probe (the calibrated rule: at least one ok probe, see
// ForecastProbes); with no history at that hour its reason is
// no_recent_sample; while its quota is spent (state.QuotaUntil after the
// hour's start) it is quota_exhausted. Records from the day itself or later
// are ignored.
func Forecast(p Params, recs []store.Hourly, states []LaneState, day time.Time) []File {
	return ForecastProbes(p, recs, nil, states, day)
}

// ForecastProbes is Forecast with the lanes' probes, which the calibrated
// rule (p.Rule) learns from: those before the day count. Its next_queue_s
// a day ahead is the day-ahead form of the rule (CalibratedParams.DayAhead:
// the hour of day's profile times a margin of the residuals against the
// profile alone, so that it covers a forecast made before the day), never
// under the worst-of figure while the margin is cold. Each class's
// decision (Decide) reads the free lanes' day-ahead waits of the hour
// (Calibrator.Waits), and a lane whose lookback holds an ok probe is
// eligible, its failures priced there rather than banning the hour.
func ForecastProbes(p Params, recs []store.Hourly, probes []store.Probe, states []LaneState, day time.Time) []File {
	loc := store.OrUTC(p.Location)
	d := civilOf(day.In(loc))
	x := NewHistory(loc)
	for _, r := range recs {
		if civilOf(r.Hour.In(loc)) < d {
			x.Add(r)
		}
	}
	// The calibrated rule's state at the day's start, one per lane.
	cals := map[string]*Calibrator{}
	if p.Calibrated() {
		for _, pr := range sortedProbes(probes) {
			o, ok := ProbeObs(pr)
			if !ok || civilOf(pr.Time.In(loc)) >= d {
				continue
			}
			c := cals[pr.Lane]
			if c == nil {
				var err error
				if c, err = NewCalibrator(CalibratedParams{LookbackDays: p.LookbackDays, Location: loc, DayAhead: true}); err != nil {
					continue // the defaults are valid
				}
				cals[pr.Lane] = c
			}
			_ = c.Add(o) // in time order
		}
	}
	queue := func(lane string, at time.Time, cov, worst float64) float64 {
		c := cals[lane]
		if c == nil {
			return worst
		}
		f, ok := c.Quantile(at, cov)
		if !ok {
			return worst
		}
		q := f.QueueS
		if !f.Warm {
			q = max(q, worst)
		}
		return min(ceil2(q), MaxSeconds)
	}
	files := make([]File, 24)
	for hr := range files {
		f := File{
			Hour:     fmt.Sprintf("%04d-%02d-%02dT%02d", d/10000, d/100%100, d%100, hr),
			Timezone: loc.String(),
			Basis:    BasisForecast,
		}
		if p.Calibrated() {
			f.Rule, f.Coverage = RuleCalibrated, p.CoverageOr()
		}
		start := time.Date(int(d/10000), time.Month(d/100%100), int(d%100), hr, 0, 0, 0, loc)
		worst := make([]float64, 0, len(p.Lanes))
		sites := map[string]bool{}
		f.Lanes = make([]Lane, 0, len(p.Lanes))
		for _, spec := range p.Lanes {
			lh := x.lanes[spec.Name]
			state := stateOf(states, spec.Name)
			var s stat
			if lh != nil {
				for _, u := range x.lookbackHours(d, hr, p.LookbackDays) {
					rs := lh.byHour[u]
					for i := range rs {
						if rs[i].Samples > 0 {
							s.add(&rs[i])
							sites[rs[i].Site] = true
						}
					}
				}
			}
			l := s.lane(spec)
			worst = append(worst, l.NextQueueS)
			if p.Calibrated() {
				l.NextQueueS = queue(spec.Name, start, p.CoverageOr(), l.NextQueueS)
			}
			switch {
			case (lh == nil || lh.ever == 0) && state.LastSample.IsZero():
				l.Reason = ReasonNeverSampled
			case state.QuotaUntil.After(start):
				l.Reason, l.Until = ReasonQuotaExhausted, state.QuotaUntil.UTC().Truncate(time.Second)
			case s.records == 0:
				l.Reason = ReasonNoRecentSample
			case s.samples-s.failures < 1 || (s.failures > 0 && !p.Calibrated()):
				// The calibrated rule prices the failures in its
				// decisions instead (failures / samples).
				l.Reason = ReasonProbeFailed
			default:
				l.Reason = ReasonOK
			}
			l.Eligible = l.Reason == ReasonOK
			l.LastSample = wholeSecond(state.LastSample)
			f.Records += s.records
			f.Lanes = append(f.Lanes, l)
		}
		f.Sites = siteList(sites)
		f.Classes = Classes(p, f.Lanes)
		if p.Calibrated() {
			qs := make([][]float64, len(p.Classes))
			for ci, cs := range p.Classes {
				if cov := p.ClassCoverage(cs); cov != p.CoverageOr() {
					qs[ci] = make([]float64, len(f.Lanes))
					for li, l := range f.Lanes {
						qs[ci][li] = queue(l.Name, start, cov, worst[li])
					}
				}
			}
			f.Classes = classesWith(p, f.Lanes, qs, func(i int) (WaitDist, bool) {
				c := cals[f.Lanes[i].Name]
				if c == nil {
					return WaitDist{}, false
				}
				return c.Waits(start)
			}, nil)
			for ci := range f.Classes {
				f.Classes[ci].Coverage = p.ClassCoverage(p.Classes[ci])
				f.Classes[ci].Objective = ObjectiveOr(p.Classes[ci].Objective)
			}
		}
		files[hr] = f
	}
	return files
}
