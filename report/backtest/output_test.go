package backtest

import (
	"encoding/csv"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// mtOutputReport is a small report built by hand for the writers.
func mtOutputReport() Report {
	cov, med, p90 := 1.0, 1.25, 2.0
	n := Counts{Probes: 4, OK: 3, Covered: 3, Coverage: &cov, MedianRatio: &med, P90Ratio: &p90, FalseEligible: 1, CensoredUncovered: 1}
	hours := []HourCounts{{Hour: 10, Counts: n}, {Hour: 11}}
	blind := Counts{Probes: 4}
	return Report{
		Timezone: "UTC", From: time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC), To: time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC),
		ReadFrom: time.Date(2026, 11, 2, 8, 0, 0, 0, time.UTC), Ignored: 3,
		Calibration: []Calibration{
			{LookbackDays: 1, Best: true, Lanes: []LaneCalibration{
				{Lane: "a-very-long-lane-name", Counts: n, Hours: hours},
				{Lane: "sixteen-chars-ab", Counts: n},
			}, All: AllCalibration{Counts: n, Hours: hours}},
			{LookbackDays: 7, Lanes: []LaneCalibration{{Lane: "a-very-long-lane-name", Counts: blind}}, All: AllCalibration{Counts: blind}},
		},
		NaiveLane: "free", ArrivalLane: "free", ArrivalLeadS: 60, DecisionLookback: 1, DroppedReplays: 2,
		Decisions: []Decision{{Class: "interactive", Strategy: "naive", Jobs: 3, Met: 2, MetPct: 66.67, MedianTimeS: fp(15), BurnedFreeTokens: 400, Attempts: 5}},
	}
}

// hasFields reports whether some line of out has exactly these
// whitespace-separated fields.
func hasFields(out string, fields ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		if slices.Equal(strings.Fields(line), fields) {
			return true
		}
	}
	return false
}

// WriteTable's lines, checked field by field against the hand-built
// report.
func TestWriteTableLines(t *testing.T) {
	var b strings.Builder
	r := mtOutputReport()
	if err := WriteTable(&b, &r, true); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range [][]string{
		strings.Fields("backtest of 2026-11-03T10:00Z .. 2026-11-03T12:00Z (UTC): 4 probes scored"),
		strings.Fields("warm-up from 2026-11-02T08:00Z: its probes feed the history, unscored"),
		strings.Fields("(3 probes of lanes not in the config left out)"),
		strings.Fields("lookback sweep, all lanes (* the lowest median ratio at coverage >= 0.95, else the best coverage)"),
		{"1", "d", "*", "4", "3", "1.000", "1.25", "2.00", "1", "0", "1"},
		{"7", "d", "4", "0", "-", "-", "-", "0", "0", "0"},
		strings.Fields("calibration, lookback 1 day (best): does the next attempt wait at most next_queue_s?"),
		strings.Fields("calibration, lookback 7 days: does the next attempt wait at most next_queue_s?"),
		{"a-very-long-lan~", "4", "3", "3", "1.000", "1.25", "2.00", "1", "0", "1", "0"},
		{"sixteen-chars-ab", "4", "3", "3", "1.000", "1.25", "2.00", "1", "0", "1", "0"},
		{"10", "4", "3", "3", "1.000", "1.25", "2.00", "1", "0", "1", "0"},
		{"all", "4", "3", "3", "1.000", "1.25", "2.00", "1", "0", "1", "0"},
		{"a-very-long-lan~", "4", "0", "0", "-", "-", "-", "0", "0", "0", "0"},
		strings.Fields("decisions: a job arrives 1m0s before each probe of free; naive retries free,"),
		strings.Fields("paid retries -; lanewatch follows the policy with lookback 1 day"),
		strings.Fields("(2 replays left out: their deadline + 1 h passes the newest probe)"),
		{"interactive", "naive", "3", "2", "66.7", "15.0", "400", "0.0000", "5"},
	} {
		if !hasFields(out, want...) {
			t.Errorf("no line %q in\n%s", strings.Join(want, " "), out)
		}
	}
	if hasFields(out, "11", "0", "0", "0", "-", "-", "-", "0", "0", "0", "0") || strings.Contains(out, "(no classes configured)") {
		t.Errorf("an hour without probes or the no-classes line in\n%s", out)
	}
	// One lookback, nothing ignored or dropped, no classes, no naive lane.
	r.Calibration, r.Ignored, r.DroppedReplays, r.Decisions, r.NaiveLane, r.DecisionLookback = r.Calibration[:1], 0, 0, nil, "", 7
	b.Reset()
	if err := WriteTable(&b, &r, false); err != nil {
		t.Fatal(err)
	}
	out = b.String()
	for _, want := range [][]string{
		strings.Fields("calibration, lookback 1 day: does the next attempt wait at most next_queue_s?"),
		strings.Fields("decisions: a job arrives 1m0s before each probe of free; naive retries -,"),
		strings.Fields("paid retries -; lanewatch follows the policy with lookback 7 days"),
		{"(no", "classes", "configured)"},
	} {
		if !hasFields(out, want...) {
			t.Errorf("no line %q in\n%s", strings.Join(want, " "), out)
		}
	}
	for _, not := range []string{"sweep", "left out", "(best)", "replays"} {
		if strings.Contains(out, not) {
			t.Errorf("%q in\n%s", not, out)
		}
	}
	if hasFields(out, "10", "4", "3", "3", "1.000", "1.25", "2.00", "1", "0", "1", "0") {
		t.Errorf("hour rows without byHour in\n%s", out)
	}
	// No calibration at all: nothing scored.
	r.Calibration = nil
	b.Reset()
	if err := WriteTable(&b, &r, false); err != nil || !strings.HasPrefix(b.String(), "backtest of 2026-11-03T10:00Z .. 2026-11-03T12:00Z (UTC): 0 probes scored\n") {
		t.Errorf("%v\n%s", err, b.String())
	}
}

// WriteCSV writes a row per lookback, lane and hour ("all" first), with
// the figures in their shortest form and an unknown one empty.
func TestWriteCSVRows(t *testing.T) {
	var b strings.Builder
	r := mtOutputReport()
	if err := WriteCSV(&b, &r, true); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(b.String())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"lookback_days", "lane", "hour", "probes", "ok", "covered", "coverage", "median_ratio", "p90_ratio", "false_eligible", "false_ineligible", "no_policy", "censored_uncovered", "best"},
		{"1", "a-very-long-lane-name", "all", "4", "3", "3", "1", "1.25", "2", "1", "0", "0", "1", "true"},
		{"1", "a-very-long-lane-name", "10", "4", "3", "3", "1", "1.25", "2", "1", "0", "0", "1", "true"},
		{"1", "a-very-long-lane-name", "11", "0", "0", "0", "", "", "", "0", "0", "0", "0", "true"},
		{"1", "sixteen-chars-ab", "all", "4", "3", "3", "1", "1.25", "2", "1", "0", "0", "1", "true"},
		{"1", "all", "all", "4", "3", "3", "1", "1.25", "2", "1", "0", "0", "1", "true"},
		{"1", "all", "10", "4", "3", "3", "1", "1.25", "2", "1", "0", "0", "1", "true"},
		{"1", "all", "11", "0", "0", "0", "", "", "", "0", "0", "0", "0", "true"},
		{"7", "a-very-long-lane-name", "all", "4", "0", "0", "", "", "", "0", "0", "0", "0", "false"},
		{"7", "all", "all", "4", "0", "0", "", "", "", "0", "0", "0", "0", "false"},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("rows\n got %q\nwant %q", rows, want)
	}
}
