package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lanewatch/lanewatch/policy"
)

// `policygen book` with running_s answers the running question from the
// class's cut-over: hand-worked against policy.Running's four rules.
func TestBookRunningViaStdin(t *testing.T) {
	const pol = `"policy": {"deadline_s": 60, "ceiling_tokens": 4000, "next_queue_s": 35, "next_gen_s": 12, "next_est_tokens": 800, "paid_queue_s": 2, "paid_usd_per_1k": 0.002`
	cases := []struct {
		name, in, want string
	}{
		{"waits inside the cut-over",
			`{"attempts": [], "running_s": 5, ` + pol + `, "cutover_after_s": 12, "free_first": true}}`,
			`{"action":"wait","why":"` + policy.WhyRunningWait + `","elapsed_s":5}`},
		{"a first token at exactly the cut-over is in time",
			`{"attempts": [], "running_s": 12, ` + pol + `, "cutover_after_s": 12, "free_first": true}}`,
			`{"action":"wait","why":"` + policy.WhyRunningWait + `","elapsed_s":12}`},
		{"past the cut-over",
			`{"attempts": [], "running_s": 12.5, ` + pol + `, "cutover_after_s": 12, "free_first": true}}`,
			`{"action":"cut_over","why":"` + policy.WhyRunningCut + `","elapsed_s":12.5}`},
		{"earlier attempts count: 10 + 2 + 1 = 13 > 12",
			`{"attempts": [{"queue_s": 10, "gen_s": 2, "emitted_tokens": 50, "shipped": false}], "running_s": 1, ` + pol + `, "cutover_after_s": 12, "free_first": true}}`,
			`{"action":"cut_over","why":"` + policy.WhyRunningCut + `","elapsed_s":13}`},
		{"free lane not worth a try",
			`{"attempts": [], "running_s": 0, ` + pol + `, "cutover_after_s": 0, "free_first": false}}`,
			`{"action":"cut_over","why":"` + policy.WhyRunningNotFirst + `","elapsed_s":0}`},
		{"no paid lane to cut over to",
			`{"attempts": [], "running_s": 40, ` + pol + `, "paid_eligible": false, "cutover_after_s": 12, "free_first": true}}`,
			`{"action":"wait","why":"` + policy.WhyRunningPaidClosed + `","elapsed_s":40}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runOK(t, &env{}, c.in, "book")
			if r.stdout != c.want+"\n" {
				t.Fatalf("got  %s\nwant %s", r.stdout, c.want)
			}
		})
	}
	// Without running_s the cut-over fields change nothing: Book's answer.
	plain := runOK(t, &env{}, `{"attempts": [], `+pol+`}}`, "book")
	with := runOK(t, &env{}, `{"attempts": [], `+pol+`, "cutover_after_s": 12, "free_first": true}}`, "book")
	if plain.stdout != with.stdout || !strings.Contains(plain.stdout, `"action":"retry_free"`) {
		t.Fatalf("the ledger's answer changed with the cut-over fields: %s vs %s", plain.stdout, with.stdout)
	}
}

func TestBookRunningBadInput(t *testing.T) {
	const pol = `"policy": {"deadline_s": 60, "ceiling_tokens": 4000, "next_queue_s": 35, "next_gen_s": 12, "next_est_tokens": 800, "paid_queue_s": 2, "paid_usd_per_1k": 0.002`
	cases := []struct{ name, in, want string }{
		{"no cut-over", `{"attempts": [], "running_s": 5, ` + pol + `}}`, "running_s: the class has no cutover_after_s this hour"},
		{"negative", `{"attempts": [], "running_s": -1, ` + pol + `, "cutover_after_s": 12, "free_first": true}}`, "running_s: must be >= 0"},
		{"not a number", `{"attempts": [], "running_s": "soon", ` + pol + `, "cutover_after_s": 12, "free_first": true}}`, "running_s"},
		{"cut-over without free_first", `{"attempts": [], "running_s": 5, ` + pol + `, "cutover_after_s": 12}}`, "policy.free_first: missing"},
		{"free_first without cut-over", `{"attempts": [], "running_s": 5, ` + pol + `, "free_first": true}}`, "policy.cutover_after_s: missing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := (&env{}).exec(t, c.in, "book")
			if r.code != 1 || !strings.Contains(r.stderr, c.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
				t.Fatalf("exit %d, stderr %q; want exit 1 and one line with %q", r.code, r.stderr, c.want)
			}
		})
	}
}

// With -policy, the cut-over comes from the calibrated file's class; a
// rule: max file has none.
func TestBookRunningWithPolicyFile(t *testing.T) {
	fx := newFixture(t, "UTC")
	book := policy.BookPolicy{DeadlineS: 60, CeilingTokens: 4000, NextQueueS: 10, NextGenS: 1, NextEstTokens: 40, PaidQueueS: 2, PaidUSDPer1k: 1, FreeEligible: true, PaidEligible: true, FreeLane: "free", PaidLane: "paid"}
	f := policy.File{Hour: "2026-11-30T14", Timezone: "UTC", Basis: policy.BasisLive, Rule: "calibrated", Coverage: 0.95,
		Lanes: []policy.Lane{
			{Name: "free", Kind: "free", Eligible: true, Reason: "ok", NextQueueS: 10, TokPerS: 40, Samples: 4},
			{Name: "paid", Kind: "paid", Eligible: true, Reason: "ok", NextQueueS: 2, TokPerS: 40, Samples: 4},
		},
		Classes: []policy.Class{
			{Name: "d60", DeadlineS: 60, CeilingTokens: 4000, EstTokens: 40, Coverage: 0.95, Lanes: []string{"free", "paid"}, Book: book,
				Cutover: &policy.Cutover{AfterS: 12, FreeFirst: true}},
			{Name: "plain", DeadlineS: 60, CeilingTokens: 4000, EstTokens: 40, Coverage: 0.95, Lanes: []string{"free", "paid"}, Book: book},
		}}
	data, err := policy.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(fx.dir, "2026-11-30T14.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r := runOK(t, &env{}, `{"attempts": [], "running_s": 12.01}`, "book", "-policy", path, "-class", "d60")
	if want := `{"action":"cut_over","why":"` + policy.WhyRunningCut + `","elapsed_s":12.01}` + "\n"; r.stdout != want {
		t.Fatalf("got  %swant %s", r.stdout, want)
	}
	r = runOK(t, &env{}, `{"attempts": [], "running_s": 11.99}`, "book", "-policy", path, "-class", "d60")
	if !strings.HasPrefix(r.stdout, `{"action":"wait"`) {
		t.Fatalf("11.99 s inside a 12 s cut-over: %s", r.stdout)
	}
	bad := (&env{}).exec(t, `{"attempts": [], "running_s": 1}`, "book", "-policy", path, "-class", "plain")
	if bad.code != 1 || !strings.Contains(bad.stderr, "no cutover_after_s") {
		t.Fatalf("a class without a cut-over: exit %d, %q", bad.code, bad.stderr)
	}
}
