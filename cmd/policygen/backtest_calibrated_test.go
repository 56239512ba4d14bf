package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBacktestCalibratedBadUsage(t *testing.T) {
	cfg := backtestFixture(t, true)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-config", cfg, "-rule", "p99"}, `policygen: backtest: -rule: want comma-separated calibrated or max, got "p99"` + "\n"},
		{[]string{"-config", cfg, "-coverage", "0.9,1"}, `policygen: backtest: -coverage: want comma-separated numbers above 0 and below 1, got "0.9,1"` + "\n"},
		{[]string{"-config", cfg, "-coverage", "x"}, `policygen: backtest: -coverage: want comma-separated numbers above 0 and below 1, got "x"` + "\n"},
		{[]string{"-config", cfg, "-warmup", "-1"}, "policygen: backtest: -warmup: want 0 to 366, got -1\n"},
	} {
		r := backtestRun(t, tc.args...)
		if r.code != 2 || r.stderr != tc.want || r.stdout != "" {
			t.Errorf("%v: exit %d, stderr %q\nwant %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}

// The sweep over rules and coverages, per kind, with coverage_all and the
// oracle from a truth file, in JSON.
func TestBacktestCalibratedSweepJSON(t *testing.T) {
	cfg := backtestFixture(t, false)
	truth := filepath.Join(t.TempDir(), "truth.jsonl")
	var b strings.Builder
	for _, lane := range []string{"free", "free2", "paid"} {
		fmt.Fprintf(&b, `{"time":"2026-11-03T10:07:00Z","lane":%q,"median_s":1,"sigma":0.5}`+"\n", lane)
	}
	if err := os.WriteFile(truth, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	r := backtestRun(t, "-config", cfg, "-days", "2", "-end", "2026-11-04T00", "-lookback", "1,2", "-rule", "calibrated,max",
		"-coverage", "0.95,0.9", "-warmup", "2", "-truth", truth, "-format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var rep struct {
		DecisionRule string `json:"decision_rule"`
		Calibration  []struct {
			Rule           string   `json:"rule"`
			LookbackDays   int      `json:"lookback_days"`
			TargetCoverage *float64 `json:"target_coverage"`
			WarmupDays     int      `json:"warmup_days"`
			Kinds          []struct {
				Kind        string   `json:"kind"`
				Probes      int      `json:"probes"`
				CoverageAll *float64 `json:"coverage_all"`
				Oracle      *struct {
					Probes int `json:"probes"`
				} `json:"oracle"`
			} `json:"kinds"`
		} `json:"calibration"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range rep.Calibration {
		n := fmt.Sprintf("%s/%d", c.Rule, c.LookbackDays)
		if c.TargetCoverage != nil {
			n += fmt.Sprintf("@%v", *c.TargetCoverage)
		}
		names = append(names, n)
		if c.WarmupDays != 2 || len(c.Kinds) != 2 || c.Kinds[0].Kind != "free" || c.Kinds[1].Kind != "paid" {
			t.Errorf("%s: warm-up %d, kinds %+v", n, c.WarmupDays, c.Kinds)
		}
		for _, k := range c.Kinds {
			if k.CoverageAll == nil || k.Probes == 0 || k.Oracle == nil {
				t.Errorf("%s %s: probes %d coverage_all %v oracle %v", n, k.Kind, k.Probes, k.CoverageAll, k.Oracle)
			}
		}
	}
	want := "calibrated/1@0.9 calibrated/1@0.95 calibrated/2@0.9 calibrated/2@0.95 max/1 max/2"
	if strings.Join(names, " ") != want || rep.DecisionRule != "max" {
		t.Errorf("calibrations %v, decision rule %q; want %s and max (the config's)", names, rep.DecisionRule, want)
	}
}
