package series

import (
	"math"
	"time"
)

// Aggregate folds the probes of one lane-hour into its hourly point:
// worst_queue_s and worst_gen_s are the largest queue_s and gen_s of the ok
// probes, min_tok_per_s the lowest tokens/gen_s over ok probes with gen_s > 0
// (0 if there is none), samples counts every probe, failures the probes that
// were not ok, and the hour is eligible when it has at least one ok probe and
// no failure. The caller picks the probes; Aggregate does not filter them by
// lane or time. Non-finite measurements of an ok probe are left out of the
// worst and min values rather than poisoning them.
func Aggregate(lane, kind string, hour time.Time, probes []Probe) Hourly {
	h := Hourly{Lane: lane, Kind: kind, Hour: hour, Samples: int64(len(probes))}
	ok := 0
	rate := math.Inf(1)
	for _, p := range probes {
		if !p.OK {
			h.Failures++
			continue
		}
		ok++
		if finite(p.QueueS) && p.QueueS > h.WorstQueueS {
			h.WorstQueueS = p.QueueS
		}
		if finite(p.GenS) && p.GenS > h.WorstGenS {
			h.WorstGenS = p.GenS
		}
		if finite(p.GenS) && p.GenS > 0 {
			if r := float64(p.Tokens) / p.GenS; r < rate {
				rate = r
			}
		}
	}
	if !math.IsInf(rate, 1) {
		h.MinTokPerS = rate
	}
	h.Eligible = ok > 0 && h.Failures == 0
	return h
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// HourStart returns the start of the hour that holds t, as wall-clock hours
// run in loc (nil means UTC). It is right for zones whose offset is not a
// whole number of hours (India, Nepal, Newfoundland) and across DST changes:
// in the repeated hour of a fall-back, each instant maps to the start of its
// own occurrence of that hour. The result is in loc.
func HourStart(t time.Time, loc *time.Location) time.Time {
	if loc == nil {
		loc = time.UTC
	}
	lt := t.In(loc)
	into := time.Duration(lt.Minute())*time.Minute +
		time.Duration(lt.Second())*time.Second +
		time.Duration(lt.Nanosecond())
	start := lt.Add(-into)
	if start.Minute() != 0 || start.Second() != 0 || start.Nanosecond() != 0 || start.Hour() != lt.Hour() {
		// The offset changed inside this hour (a zone whose DST shift is
		// not a whole hour): fall back to the wall-clock date.
		start = time.Date(lt.Year(), lt.Month(), lt.Day(), lt.Hour(), 0, 0, 0, loc)
	}
	return start
}
