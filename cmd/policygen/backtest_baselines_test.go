package main

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lanewatch/lanewatch/report/backtest"
)

// The baselines' table, CSV and JSON on the golden history: new goldens;
// the existing ones hold the report without -fallback and -deadlines.
func TestBacktestBaselinesGolden(t *testing.T) {
	cfg := backtestFixture(t, false)
	for _, format := range []string{"table", "csv", "json"} {
		t.Run(format, func(t *testing.T) {
			r := backtestRun(t, "-config", cfg, "-days", "2", "-lookback", "1,3", "-fallback", "10,30", "-deadlines", "30,60", "-format", format)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			ext := map[string]string{"table": "txt", "csv": "csv", "json": "json"}[format]
			checkGolden(t, "backtest_baselines_"+format+"."+ext, []byte(r.stdout))
		})
	}
}

// The baselines' JSON keys, in the documented order; the report without
// them has neither key.
func TestBacktestBaselinesJSONShape(t *testing.T) {
	cfg := backtestFixture(t, false)
	r := backtestRun(t, "-config", cfg, "-days", "2", "-fallback", "20", "-format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var doc struct {
		Baselines []json.RawMessage `json:"baselines"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	want := []string{"class", "deadline_s", "strategy", "jobs", "met", "met_pct", "paid_usd", "median_time_s", "p90_time_s",
		"free_requests", "abandoned_free_requests", "burned_free_tokens"}
	if len(doc.Baselines) == 0 {
		t.Fatal("no baselines")
	}
	if got := objectKeys(t, doc.Baselines[0]); !slices.Equal(got, want) {
		t.Errorf("baseline keys %v\nwant %v", got, want)
	}
	var names []string
	for _, b := range doc.Baselines {
		var row struct {
			Class, Strategy string
		}
		_ = json.Unmarshal(b, &row)
		if row.Class == "interactive" {
			names = append(names, row.Strategy)
		}
	}
	if w := []string{"naive", "paid", "lanewatch", "fallback@20", "cancel-retry@20"}; !slices.Equal(names, w) {
		t.Errorf("strategies %v, want %v", names, w)
	}
	plain := backtestRun(t, "-config", cfg, "-days", "2", "-format", "json")
	if strings.Contains(plain.stdout, "baselines") {
		t.Error("baselines without -fallback or -deadlines")
	}
}

func TestBacktestBaselineFlagsChecked(t *testing.T) {
	cfg := backtestFixture(t, true)
	var ts []string
	for i := range backtest.MaxFallbacks + 1 {
		ts = append(ts, strconv.Itoa(i+1))
	}
	tooMany := strings.Join(ts, ",")
	for _, args := range [][]string{
		{"-fallback", "0"}, {"-fallback", "x"}, {"-fallback", "5,,10"}, {"-deadlines", "0.5"}, {"-deadlines", "NaN"},
		{"-fallback", tooMany}, {"-tune", "7"}, {"-tune", "-1", "-fallback", "5"}, {"-tune", "400", "-fallback", "5"},
	} {
		r := backtestRun(t, append([]string{"-config", cfg}, args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, args[0]) {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming the flag", args, r.code, r.stderr)
		}
	}
}
