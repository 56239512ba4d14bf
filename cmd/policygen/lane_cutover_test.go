package main

import (
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/policy"
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
