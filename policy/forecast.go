package policy

import (
	"fmt"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

// ForecastProbes returns 24 forecast policies for the day holding `day`
// (in p.Location), one per wall-clock hour, from the lookback days before
// it alone (docs/policy.md#forecasts).
func ForecastProbes(p Params, recs []store.Hourly, probes []store.Probe, states []LaneState, day time.Time) []File {
	loc := store.OrUTC(p.Location)
	d := civilOf(day.In(loc))
	x := NewHistory(loc)
	for _, r := range recs {
		if civilOf(r.Hour.In(loc)) < d {
			x.Add(r)
		}
	}
	cals := map[string]*Calibrator{} // the rule's state at the day's start
	if p.Calibrated() {
		for _, pr := range sortedProbes(probes) {
			o, ok := ProbeObs(pr)
			if !ok || civilOf(pr.Time.In(loc)) >= d {
				continue
			}
			if cals[pr.Lane] == nil {
				cals[pr.Lane] = NewCalibrator(CalibratedParams{LookbackDays: p.LookbackDays, Location: loc, DayAhead: true})
			}
			_ = cals[pr.Lane].Add(o) // in time order
		}
	}
	files := make([]File, 24)
	for hr := range files {
		f := File{Hour: fmt.Sprintf("%04d-%02d-%02dT%02d", d/10000, d/100%100, d%100, hr), Timezone: loc.String(), Basis: BasisForecast}
		if p.Calibrated() {
			f.Rule, f.Coverage = RuleCalibrated, p.CoverageOr()
		}
		start := time.Date(int(d/10000), time.Month(d/100%100), int(d%100), hr, 0, 0, 0, loc)
		worst := make([]float64, 0, len(p.Lanes))
		sites := map[string]bool{}
		for _, spec := range p.Lanes {
			lh := x.lanes[spec.Name]
			state := stateOf(states, spec.Name)
			var s stat
			if lh != nil {
				for r := range x.lookbackRecs(lh, d, hr, p.LookbackDays) {
					s.add(r)
					sites[r.Site] = true
				}
			}
			l := s.lane(spec)
			worst = append(worst, l.NextQueueS)
			if p.Calibrated() {
				l.NextQueueS = calibratedQueue(cals[spec.Name], start, p.CoverageOr(), l.NextQueueS)
			}
			l.setReason(lh, state, state.QuotaUntil.After(start), s.records == 0, s.samples-s.failures < 1 || (s.failures > 0 && !p.Calibrated()))
			f.Records += s.records
			f.Lanes = append(f.Lanes, l)
		}
		f.Sites = siteList(sites)
		f.Classes = classesAt(p, f.Lanes, start, func(i int) *Calibrator { return cals[f.Lanes[i].Name] },
			func(i int) float64 { return worst[i] }, nil)
		files[hr] = f
	}
	return files
}
