package lanesim

import (
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

func genHistory(t *testing.T, opts HistoryOptions) []store.Probe {
	t.Helper()
	var all []store.Probe
	days := 0
	if err := History(opts, func(day []store.Probe, _ []ProbeTruth) error {
		days++
		all = append(all, day...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if days != opts.Days {
		t.Errorf("%d batches, want one per day: %d", days, opts.Days)
	}
	return all
}

var histStart = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

func TestHistoryIsDeterministic(t *testing.T) {
	opts := HistoryOptions{Start: histStart, Days: 5, Seed: 42, Lanes: []HistoryLane{{"free", "free"}, {"paid", "paid"}}}
	a, b := genHistory(t, opts), genHistory(t, opts)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same options gave different histories")
	}
	opts.Seed = 43
	if c := genHistory(t, opts); reflect.DeepEqual(a, c) {
		t.Fatal("another seed gave the same history")
	}
	// A lane draws from its own source: adding one leaves the others alone.
	opts.Seed = 42
	opts.Lanes = append(opts.Lanes, HistoryLane{"free2", "free"})
	var free []store.Probe
	for _, p := range genHistory(t, opts) {
		if p.Lane == "free" {
			free = append(free, p)
		}
	}
	var was []store.Probe
	for _, p := range a {
		if p.Lane == "free" {
			was = append(was, p)
		}
	}
	if !reflect.DeepEqual(free, was) {
		t.Error("adding a lane changed the free lane's probes")
	}
}

func TestHistoryShape(t *testing.T) {
	ps := genHistory(t, HistoryOptions{Start: histStart, Days: 2, Seed: 1, Lanes: []HistoryLane{{"free", "free"}, {"paid", "paid"}}})
	if !slices.IsSortedFunc(ps, func(a, b store.Probe) int { return a.Time.Compare(b.Time) }) {
		t.Error("probes are not in time order")
	}
	for _, p := range ps {
		if m := p.Time.Minute(); m != 7 && m != 27 && m != 47 {
			t.Fatalf("probe at %s: want rounds at :07, :27, :47", p.Time)
		}
		if p.Time.Before(histStart) || !p.Time.Before(histStart.AddDate(0, 0, 2)) {
			t.Fatalf("probe at %s outside the history", p.Time)
		}
		if p.OK != (p.Outcome == "ok") || (p.OK && (p.GenS <= 0 || p.Tokens != 16)) {
			t.Fatalf("inconsistent probe %+v", p)
		}
	}
	paid := 0
	for _, p := range ps {
		if p.Lane == "paid" {
			paid++
		}
	}
	if paid != 2*24*3 {
		t.Errorf("%d paid probes, want one per round: 144", paid)
	}
}

// TestHistoryModel checks the stated model over a year of two free lanes
// and a paid one: the time-of-day curve shows, outages take about 1 % of a
// free lane's hours, 429s about 2 % of its probes, each followed by a
// back-off without probes, and the paid lane is steady.
func TestHistoryModel(t *testing.T) {
	ps := genHistory(t, HistoryOptions{Start: histStart, Days: 365, Seed: 7,
		Lanes: []HistoryLane{{"free", "free"}, {"free2", "free"}, {"paid", "paid"}}})
	byHour := map[int][]float64{}
	type laneHour struct {
		lane string
		hour time.Time
	}
	probesOf := map[laneHour][]store.Probe{}
	var free, limited, paidFailed int
	var paidQueues []float64
	backoff := map[string]time.Time{}
	for _, p := range ps {
		if p.Lane == "paid" {
			if !p.OK {
				paidFailed++
			}
			paidQueues = append(paidQueues, p.QueueS)
			continue
		}
		free++
		if p.Time.Before(backoff[p.Lane]) {
			t.Fatalf("%s probed at %s during its back-off (until %s)", p.Lane, p.Time, backoff[p.Lane])
		}
		if p.Outcome == "rate_limited" {
			limited++
			if p.Status != 429 || p.QuotaResetS < 600 || p.QuotaResetS > 3600 {
				t.Fatalf("429 %+v: want status 429 and a reset of 10 to 60 minutes", p)
			}
			backoff[p.Lane] = p.Time.Add(time.Duration(p.QuotaResetS) * time.Second)
		}
		if p.Lane == "free" && p.OK {
			byHour[p.Time.Hour()] = append(byHour[p.Time.Hour()], p.QueueS)
		}
		k := laneHour{p.Lane, p.Time.Truncate(time.Hour)}
		probesOf[k] = append(probesOf[k], p)
	}
	median := func(xs []float64) float64 {
		s := slices.Clone(xs)
		slices.Sort(s)
		return s[len(s)/2]
	}
	peak, quiet := median(byHour[13]), median(byHour[3])
	if peak < 4*quiet {
		t.Errorf("median queue at 13h %.2f s, at 03h %.2f s: want the curve's peak (4) well above its night (0.5)", peak, quiet)
	}
	if want := 3 * DefaultHistoryCurve.At(3.5); math.Abs(quiet-want) > 0.15 {
		t.Errorf("median queue of the first free lane at 03h: %.2f s, want about 3 × curve(03h) = %.2f", quiet, want)
	}
	outageHours := 0
	for _, hp := range probesOf {
		all := len(hp) == 3
		for _, p := range hp {
			all = all && p.Outcome == "timeout" && p.QueueS == DefaultHistoryTimeout.Seconds()
		}
		if all {
			outageHours++
		}
	}
	if share := float64(outageHours) / (2 * 365 * 24); share < 0.006 || share > 0.015 {
		t.Errorf("outage hours: %.2f %% of free lane-hours, want about 1 %%", 100*share)
	}
	if share := float64(limited) / float64(free); share < 0.013 || share > 0.03 {
		t.Errorf("429s: %.2f %% of free probes, want about 2 %%", 100*share)
	}
	if paidFailed != 0 {
		t.Errorf("%d paid probes failed, want none", paidFailed)
	}
	if m := median(paidQueues); math.Abs(m-0.6) > 0.05 {
		t.Errorf("paid median queue %.3f s, want 0.6", m)
	}
	t.Logf("free probes %d: 429s %.2f %%, outage hours %.2f %%; median queue 03h %.2f s, 13h %.2f s",
		free, 100*float64(limited)/float64(free), 100*float64(outageHours)/(2*365*24), quiet, peak)
}

func TestHistoryBadOptions(t *testing.T) {
	for _, o := range []HistoryOptions{
		{Days: 0, Lanes: []HistoryLane{{"a", "free"}}},
		{Days: HistoryMaxDays + 1, Lanes: []HistoryLane{{"a", "free"}}},
		{Days: 1},
		{Days: 1, Lanes: []HistoryLane{{"a", "cheap"}}},
	} {
		if err := History(o, func([]store.Probe, []ProbeTruth) error { return nil }); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}
