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
