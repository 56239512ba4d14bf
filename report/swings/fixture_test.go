package swings_test

import (
	"slices"
	"time"

	"github.com/lanewatch/lanewatch/report/swings"
	"github.com/lanewatch/lanewatch/store"
)

// weekStart is the first hour of the generated week (UTC).
var weekStart = time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)

// week generates 7 days of hourly records with a known daily curve:
//
//	free: queue = 5 + 20·[9 <= hour <= 17] + 0.5·day seconds; 3 probes an hour;
//	      at hour 3 one probe failed on days 0 and 2.
//	paid: queue = 2 + 1·[12 <= hour <= 14] seconds, every day; 3 probes an hour.
//
// So free's medians are 6.5 s off-peak and 26.5 s from 09 to 17 (worst 8 and
// 28), peak 09, quietest 00, swing 20 s (26.5/6.5 = 4.077x); paid peaks at 12
// with 3 s against 2 s (swing 1 s, 1.5x).
func week() []store.Hourly {
	var recs []store.Hourly
	for d := range 7 {
		for h := range 24 {
			t := weekStart.Add(time.Duration(d*24+h) * time.Hour)
			q := 5 + 0.5*float64(d)
			if h >= 9 && h <= 17 {
				q += 20
			}
			free := store.Hourly{Lane: "free", Kind: "free", Hour: t, WorstQueueS: q, Samples: 3}
			if h == 3 && (d == 0 || d == 2) {
				free.Failures = 1
			}
			p := 2.0
			if h >= 12 && h <= 14 {
				p = 3
			}
			paid := store.Hourly{Lane: "paid", Kind: "paid", Hour: t, WorstQueueS: p, Samples: 3}
			recs = append(recs, free, paid)
		}
	}
	return recs
}

func weekOptions() swings.Options {
	return swings.Options{
		Location: time.UTC,
		From:     weekStart,
		To:       weekStart.AddDate(0, 0, 7),
		Days:     7,
		Lanes:    []swings.Lane{{Name: "free", Kind: "free"}, {Name: "paid", Kind: "paid"}},
	}
}

// censoredReport: three days, "free" queues 5 s and "paid" 2 s every hour,
// three probes an hour, except for free:
//
//	10h, day 1: one probe timed out at 30 s before its first token (the ok
//	     ones queued 6 s) → that hour's worst is >30, the median stays 5.
//	14h, every day: a probe timed out at 30 s (ok ones 8 s) → worst and
//	     median >30: the peak, and the swing is >25 (30 against 5).
//	20h, day 0: both probes failed, the longest known wait 12 s (the only
//	     value of that record) → worst >12, median 5.
//	03h, day 2: a failed probe waited 2 s, less than the ok ones (9 s) →
//	     worst 9, exact.
func censoredReport() *swings.Report {
	start := weekStart
	var recs []store.Hourly
	for d := range 3 {
		for h := range 24 {
			t := start.Add(time.Duration(d*24+h) * time.Hour)
			free := store.Hourly{Lane: "free", Kind: "free", Hour: t, WorstQueueS: 5, Samples: 3}
			switch {
			case h == 10 && d == 1:
				free.WorstQueueS, free.WorstCensoredS, free.Failures = 6, 30, 1
			case h == 14:
				free.WorstQueueS, free.WorstCensoredS, free.Failures = 8, 30, 1
			case h == 20 && d == 0:
				free.WorstQueueS, free.WorstCensoredS, free.Samples, free.Failures = 0, 12, 2, 2
			case h == 3 && d == 2:
				free.WorstQueueS, free.WorstCensoredS, free.Failures = 9, 2, 1
			}
			recs = append(recs, free, store.Hourly{Lane: "paid", Kind: "paid", Hour: t, WorstQueueS: 2, Samples: 3})
		}
	}
	return swings.Compute(recs, swings.Options{
		Location: time.UTC, From: start, To: start.AddDate(0, 0, 3), Days: 3,
		Lanes:   []swings.Lane{{Name: "free", Kind: "free"}, {Name: "paid", Kind: "paid"}},
		Classes: []swings.ClassLine{{Name: "interactive", DeadlineS: 60}, {Name: "batch", DeadlineS: 600}},
	})
}

// laneOf returns the lane of r named name, or false.
func laneOf(r *swings.Report, name string) (swings.LaneReport, bool) {
	i := slices.IndexFunc(r.Lanes, func(l swings.LaneReport) bool { return l.Name == name })
	if i < 0 {
		return swings.LaneReport{}, false
	}
	return r.Lanes[i], true
}
