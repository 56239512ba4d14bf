package main

import (
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/policy"
)

// policygen book -config reads the class's book from the hour's file in
// policy.out, as policygen lane does, and names the lane the action runs
// on with its endpoint from the config (the key's variable, never a key).
// The answers are worked by hand from the fixture's books: interactive
// 60 s deadline, free 35 s queue + 20 s to generate, paid 55 s queue;
// batch 600 s with the free lane not eligible this hour.
func TestBookConfig(t *testing.T) {
	t.Setenv("LW_TEST_FREE_KEY", freeSecret)
	t.Setenv("LW_TEST_PAID_KEY", paidSecret)
	now := time.Date(2026, 11, 30, 14, 25, 0, 0, time.UTC)
	fx := newLaneFixture(t, "UTC")
	file := fx.write(t, fx.out, "2026-11-30T14", []string{"free", "paid"}, []string{"paid"})
	rewrite(t, file, func(f *policy.File) {
		for i := range f.Classes {
			f.Classes[i].Book.FreeLane, f.Classes[i].Book.PaidLane = "free", "paid"
		}
		f.Classes[0].Book.FreeEligible = true
	})
	ghost := fx.write(t, fx.out, "2026-11-30T16", []string{"paid"}, []string{"paid"})
	rewrite(t, ghost, func(f *policy.File) { f.Classes[1].Book.PaidLane = "ghost" })

	free := `{"lane":"free","kind":"free","api":"openai","base_url":"http://127.0.0.1:1/v1","model":"m-free","api_key_env":"LW_TEST_FREE_KEY"}`
	paid := `{"lane":"paid","kind":"paid","api":"anthropic","base_url":"https://paid.example/it's/v1","model":"claude x $(reboot)","api_key_env":"LW_TEST_PAID_KEY"}`
	cases := []struct {
		name, stdin string
		args        []string
		code        int
		want        string // stdout of exit 0, else a part of stderr
	}{
		{"first call, the current hour: the free lane fits (35 + 20 <= 60)", `{"attempts":[]}`,
			[]string{"-class", "interactive"}, 0,
			`{"action":"retry_free","why":"remaining clock covers one more free attempt","spent_s":0,"remaining_s":60,"spent_tokens":0,"projected_tokens":800,"sunk_usd_if_those_tokens_were_paid":0,"lane":"free","endpoint":` + free + "}\n"},
		{"free not eligible: cut over to paid (30 + 55 + 20 <= 600)", `{"attempts":[{"queue_s":30,"gen_s":0,"emitted_tokens":0,"shipped":false}]}`,
			[]string{"-class", "batch", "-hour", "2026-11-30T14"}, 0,
			`{"action":"cut_over","why":"the free lane is not eligible this hour; one paid attempt fits","spent_s":30,"remaining_s":570,"spent_tokens":0,"projected_tokens":800,"sunk_usd_if_those_tokens_were_paid":0,"lane":"paid","endpoint":` + paid + "}\n"},
		{"an attempt ended in an error: no free retry though it fits (1 + 35 + 20 <= 60), paid does not (1 + 55 + 20): stop", `{"attempts":[{"queue_s":1,"gen_s":0,"emitted_tokens":0,"shipped":false,"error":true}]}`,
			[]string{"-class", "interactive"}, 0,
			`{"action":"stop","why":"an attempt ended in an error: no free retry, and no paid attempt fits","spent_s":1,"remaining_s":59,"spent_tokens":0,"projected_tokens":800,"sunk_usd_if_those_tokens_were_paid":0,"lane":null,"endpoint":null}` + "\n"},
		{"no lane fits the 16 s left: stop, no lane", `{"attempts":[{"queue_s":35,"gen_s":9,"emitted_tokens":220,"shipped":false}]}`,
			[]string{"-class", "interactive"}, 0,
			`{"action":"stop","why":"no lane finishes inside the time you have left","spent_s":44,"remaining_s":16,"spent_tokens":220,"projected_tokens":1020,"sunk_usd_if_those_tokens_were_paid":0.0004,"lane":null,"endpoint":null}` + "\n"},
		{"-dir", `{"attempts":[]}`, []string{"-class", "interactive", "-dir", fx.out}, 0,
			`{"action":"retry_free","why":"remaining clock covers one more free attempt","spent_s":0,"remaining_s":60,"spent_tokens":0,"projected_tokens":800,"sunk_usd_if_those_tokens_were_paid":0,"lane":"free","endpoint":` + free + "}\n"},
		{"no file for the hour", `{"attempts":[]}`, []string{"-class", "interactive", "-hour", "2026-11-30T15"}, 1,
			"book: no policy file for 2026-11-30T15: " + fx.out + "/2026-11-30T15.yaml does not exist (policygen -config " + fx.config + " -hour 2026-11-30T15 writes it)"},
		{"a lane the config lacks", `{"attempts":[{"queue_s":30,"gen_s":0,"emitted_tokens":0,"shipped":false}]}`,
			[]string{"-class", "batch", "-hour", "2026-11-30T16"}, 1, `book: lane "ghost" of class "batch" is not in the config ` + fx.config},
		{"unknown class", `{"attempts":[]}`, []string{"-class", "nope"}, 1, `book: `},
		{"a policy on stdin", `{"attempts": [], ` + goodPolicy + `}`, []string{"-class", "interactive"}, 1, "policy: not allowed"},
		{"no -class", `{"attempts":[]}`, nil, 2, "book: -config goes with -class"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := laneEnv(t, now).exec(t, tc.stdin, append([]string{"book", "-config", fx.config}, tc.args...)...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", r.code, tc.code, r.stderr)
			}
			if tc.code == 0 && r.stdout != tc.want {
				t.Errorf("got  %s\nwant %s", r.stdout, tc.want)
			}
			if tc.code != 0 && (!strings.Contains(r.stderr, tc.want) || r.stdout != "") {
				t.Errorf("stderr %q, want it to hold %q (stdout %q)", r.stderr, tc.want, r.stdout)
			}
			for _, s := range []string{freeSecret, paidSecret} {
				if strings.Contains(r.stdout+r.stderr, s) {
					t.Errorf("a key reached the output")
				}
			}
		})
	}
}

// The flags of book's two file forms exclude each other and -hour, -dir
// need -config: each misuse is exit 2 with one line.
func TestBookConfigUsage(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-config", "c.yaml", "-policy", "p.yaml", "-class", "x"}, "book: -policy and -config exclude each other"},
		{[]string{"-hour", "2026-11-30T14"}, "book: -hour and -dir go with -config"},
		{[]string{"-policy", "p.yaml", "-class", "x", "-dir", "d"}, "book: -hour and -dir go with -config"},
		{[]string{"-policy", "p.yaml"}, "book: -policy and -class go together"},
	}
	for _, tc := range cases {
		r := (&env{}).exec(t, "", append([]string{"book"}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("book %q: exit %d, stderr %q; want 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}
