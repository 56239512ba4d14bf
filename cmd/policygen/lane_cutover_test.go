package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
)

// A calibrated file's cut-over reaches policygen lane: interactive starts
// on free with cutover_after_s 42.5 and paid as the fallback; batch, not
// free first this hour, goes straight to paid (no cut-over time), paid
// still its fallback; in every format.
func TestLaneCutover(t *testing.T) {
	t.Setenv("LW_TEST_FREE_KEY", freeSecret)
	t.Setenv("LW_TEST_PAID_KEY", paidSecret)
	now := time.Date(2026, 11, 30, 14, 25, 0, 0, time.UTC)
	fx := newLaneFixture(t, "UTC")
	path := fx.write(t, fx.out, "2026-11-30T14", []string{"free", "paid"}, []string{"free"})
	rewrite(t, path, func(f *policy.File) {
		f.Rule, f.Coverage = policy.RuleCalibrated, 0.95
		for i, c := range []policy.Cutover{{AfterS: 42.5, FreeFirst: true}, {AfterS: 0, FreeFirst: false}} {
			f.Classes[i].Coverage = 0.95
			f.Classes[i].Book.FreeLane, f.Classes[i].Book.PaidLane = "free", "paid"
			f.Classes[i].Cutover = &c
		}
	})
	free := `"lane":"free","kind":"free","api":"openai","base_url":"http://127.0.0.1:1/v1","model":"m-free","api_key_env":"LW_TEST_FREE_KEY"`
	paid := `"lane":"paid","kind":"paid","api":"anthropic","base_url":"https://paid.example/it's/v1","model":"claude x $(reboot)","api_key_env":"LW_TEST_PAID_KEY"`
	paidEnv := func(pre, prefix string) string {
		return pre + prefix + "LANE=paid\n" + pre + prefix + "API=anthropic\n" + pre + prefix + "BASE_URL='https://paid.example/it'\\''s/v1'\n" +
			pre + prefix + "MODEL='claude x $(reboot)'\n" + pre + prefix + "API_KEY_ENV=LW_TEST_PAID_KEY\n"
	}
	for _, tc := range []struct {
		class, format, want string
	}{
		{"interactive", "name", "free\n"},
		{"interactive", "json", `{` + free + `,"hour":"2026-11-30T14","class":"interactive","cutover_after_s":42.5,"fallback":{` + paid + `}}` + "\n"},
		{"interactive", "env", "export LANEWATCH_LANE=free\nexport LANEWATCH_KIND=free\nexport LANEWATCH_API=openai\nexport LANEWATCH_BASE_URL=http://127.0.0.1:1/v1\nexport LANEWATCH_MODEL=m-free\n" +
			"export LANEWATCH_API_KEY_ENV=LW_TEST_FREE_KEY\nexport LANEWATCH_HOUR=2026-11-30T14\nexport LANEWATCH_CLASS=interactive\n" +
			"export LANEWATCH_CUTOVER_AFTER_S=42.5\n" + paidEnv("export ", "LANEWATCH_FALLBACK_")},
		{"interactive", "dotenv", "LANEWATCH_LANE=free\nLANEWATCH_KIND=free\nLANEWATCH_API=openai\nLANEWATCH_BASE_URL=http://127.0.0.1:1/v1\nLANEWATCH_MODEL=m-free\n" +
			"LANEWATCH_API_KEY_ENV=LW_TEST_FREE_KEY\nLANEWATCH_HOUR=2026-11-30T14\nLANEWATCH_CLASS=interactive\n" +
			"LANEWATCH_CUTOVER_AFTER_S=42.5\n" + paidEnv("", "LANEWATCH_FALLBACK_")},
		{"batch", "name", "paid\n"},
		{"batch", "json", `{` + paid + `,"hour":"2026-11-30T14","class":"batch","cutover_after_s":null,"fallback":{` + paid + `}}` + "\n"},
		{"batch", "dotenv", "LANEWATCH_LANE=paid\nLANEWATCH_KIND=paid\nLANEWATCH_API=anthropic\nLANEWATCH_BASE_URL='https://paid.example/it'\\''s/v1'\nLANEWATCH_MODEL='claude x $(reboot)'\n" +
			"LANEWATCH_API_KEY_ENV=LW_TEST_PAID_KEY\nLANEWATCH_HOUR=2026-11-30T14\nLANEWATCH_CLASS=batch\n" +
			"LANEWATCH_CUTOVER_AFTER_S=\n" + paidEnv("", "LANEWATCH_FALLBACK_")},
	} {
		t.Run(tc.class+" "+tc.format, func(t *testing.T) {
			r := laneEnv(t, now).exec(t, "", "lane", "-config", fx.config, "-class", tc.class, "-format", tc.format)
			if r.code != 0 || r.stdout != tc.want || r.stderr != "" {
				t.Fatalf("exit %d, stdout\n%s\nstderr %q\nwant\n%s", r.code, r.stdout, r.stderr, tc.want)
			}
		})
	}
}

// From the store to the CI job (issue 30): two free lanes, aslow (1.51 s)
// and zfast (0.06 s), and a paid lane, under the calibrated rule. The
// hour's file orders the class's lanes by its decision, so policygen lane
// answers zfast with its cut-over and the paid fallback, and book -config
// sends the first attempt to zfast (before, by name: aslow, with
// cutover_after_s null).
func TestLaneFollowsTheDecision(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "lanewatch.yaml")
	if err := os.WriteFile(cfg, []byte(`timezone: UTC
store: {kind: file, path: data/samples.lp}
lanes:
  - {name: aslow, kind: free, api: openai, base_url: "http://127.0.0.1:1/v1", model: m}
  - {name: zfast, kind: free, api: openai, base_url: "http://127.0.0.1:2/v1", model: m}
  - {name: paid, kind: paid, api: openai, base_url: "http://127.0.0.1:3/v1", model: m}
policy:
  out: policies
  classes:
    - {name: interactive, deadline_s: 60, ceiling_tokens: 4000, est_tokens: 800, paid_usd_per_1k: 0.002}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := file.Open(filepath.Join(dir, "data", "samples.lp"), file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hour := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	for h := hour.AddDate(0, 0, -20); h.Before(hour); h = h.Add(time.Hour) {
		var ps []store.Probe
		var hs []store.Hourly
		for _, l := range []struct {
			name, kind string
			q          float64
		}{{"aslow", "free", 1.51}, {"zfast", "free", 0.06}, {"paid", "paid", 1}} {
			var lp []store.Probe
			for _, m := range []int{7, 27, 47} {
				lp = append(lp, store.Probe{Lane: l.name, Kind: l.kind, Time: h.Add(time.Duration(m) * time.Minute), QueueS: l.q, GenS: 0.4,
					Tokens: 16, OK: true, Outcome: "ok", Status: 200})
			}
			ps, hs = append(ps, lp...), append(hs, store.Aggregate(l.name, l.kind, "", h, lp))
		}
		if err := st.Write(context.Background(), store.Batch{Probes: ps, Hourly: hs}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	e := laneEnv(t, hour.Add(25*time.Minute))
	runOK(t, e, "", "-config", cfg, "-hour", "2026-11-30T14")
	r := runOK(t, e, "", "lane", "-config", cfg, "-class", "interactive", "-format", "json")
	var ch struct {
		Lane          string   `json:"lane"`
		CutoverAfterS *float64 `json:"cutover_after_s"`
		Fallback      *struct {
			Lane string `json:"lane"`
		} `json:"fallback"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &ch); err != nil {
		t.Fatal(err)
	}
	// Latest cut-over: 60 − 1 (the paid queue) − 800 / 40 tok/s = 39 s.
	if ch.Lane != "zfast" || ch.CutoverAfterS == nil || *ch.CutoverAfterS != 39 || ch.Fallback == nil || ch.Fallback.Lane != "paid" {
		t.Errorf("policygen lane: %s; want zfast, cut-over 39 s, fallback paid", r.stdout)
	}
	b := runOK(t, e, `{"attempts":[]}`, "book", "-config", cfg, "-class", "interactive")
	if !strings.Contains(b.stdout, `"action":"retry_free"`) || !strings.Contains(b.stdout, `"lane":"zfast"`) {
		t.Errorf("policygen book -config: %s; want retry_free on zfast", b.stdout)
	}
}
