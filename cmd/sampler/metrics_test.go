package main

import (
	"errors"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/sampler"
	"github.com/lanewatch/lanewatch/sampler/budget"
)

// The gauges the alert rules read (deploy/prometheus): the start of the
// last round stored (a round the store refused leaves it), the end of each
// quota group's day in its own zone, the shard and site of the standby
// gauge.
func TestAlertGauges(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	m := newMetrics("eu", "1/2", []budget.Group{{Name: "g", ProbesPerDay: 48, Location: ny}, {Name: "h", ProbesPerDay: 1}})
	start := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC) // 22:00 on the 29th in New York
	m.observeRound(&sampler.Round{Start: start, Plan: budget.Plan{Left: map[string]int{"g": 0, "h": 1}}}, nil, 0)
	m.observeRound(&sampler.Round{Start: start.Add(time.Hour)}, errors.New("refused"), 0)
	got := map[string]float64{} // name{label values} → value, as gathered
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			key := mf.GetName() + "{"
			for _, l := range mt.GetLabel() {
				key += l.GetName() + "=" + l.GetValue() + ","
			}
			got[key+"}"] = mt.GetGauge().GetValue()
		}
	}
	for key, want := range map[string]float64{
		"lanewatch_last_round_timestamp_seconds{}":           float64(start.Unix()),
		"lanewatch_budget_reset_timestamp_seconds{quota=g,}": float64(time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC).Unix()),
		"lanewatch_budget_reset_timestamp_seconds{quota=h,}": float64(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).Unix()),
		"lanewatch_budget_left{quota=g,}":                    0,
		"lanewatch_standby{shard=1/2,site=eu,}":              0,
	} {
		if v, ok := got[key]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", key, v, ok, want)
		}
	}
}
