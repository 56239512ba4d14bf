package policy

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// Answer's line for each kind of question: without running_s, Book's
// decision as MarshalJSON writes it; with it, the running answer from the
// input's cut-over when it gave one, else the class's, elapsed_s rounded
// to 0.01 s; no cut-over at all is ErrNoCutover; and an elapsed time that
// is no number of seconds (negative, NaN, infinite), or a decision with a
// sum that is not finite, is an error rather than a line.
func TestAnswerLine(t *testing.T) {
	pol := BookPolicy{DeadlineS: 60, CeilingTokens: 1000, NextQueueS: 5, NextGenS: 5, NextEstTokens: 100, PaidQueueS: 2, FreeEligible: true, PaidEligible: true}
	running := func(s float64) *float64 { return &s }
	class := &Cutover{AfterS: 12, FreeFirst: true}
	shipped := []Attempt{{QueueS: 3, GenS: 1.5, EmittedTokens: 40, Shipped: true}}
	for _, tc := range []struct {
		name   string
		in     BookInput
		cut    *Cutover // the class's
		line   string   // "" with an error
		action Action
		err    string // a part of the error's text; "" with a line
	}{
		{"book", BookInput{Attempts: shipped}, class,
			`{"action":"stop","why":"` + WhyShipped + `","spent_s":4.5,"remaining_s":55.5,"spent_tokens":40,"projected_tokens":140,"sunk_usd_if_those_tokens_were_paid":0}`, Stop, ""},
		{"book, a sum that is not finite", BookInput{Attempts: []Attempt{{QueueS: math.Inf(1)}}}, class, "", "", "book: "},
		{"running, the class's cut-over", BookInput{RunningS: running(12.5)}, class,
			`{"action":"cut_over","why":"` + WhyRunningCut + `","elapsed_s":12.5}`, CutOver, ""},
		{"running, the input's cut-over wins", BookInput{RunningS: running(12.5), Cutover: &Cutover{AfterS: 20, FreeFirst: true}}, class,
			`{"action":"wait","why":"` + WhyRunningWait + `","elapsed_s":12.5}`, Wait, ""},
		{"running, the input's cut-over alone", BookInput{RunningS: running(0), Cutover: &Cutover{AfterS: 20, FreeFirst: true}}, nil,
			`{"action":"wait","why":"` + WhyRunningWait + `","elapsed_s":0}`, Wait, ""},
		{"running, elapsed rounded to 0.01 s", BookInput{Attempts: shipped, RunningS: running(1.2345)}, class,
			`{"action":"wait","why":"` + WhyRunningWait + `","elapsed_s":5.73}`, Wait, ""},
		{"running, no cut-over", BookInput{RunningS: running(1)}, nil, "", "", ErrNoCutover.Error()},
		{"running, negative", BookInput{RunningS: running(-1)}, class, "", "", "book: elapsed -1 is not a number of seconds"},
		{"running, NaN", BookInput{RunningS: running(math.NaN())}, class, "", "", "book: elapsed NaN is not a number of seconds"},
		{"running, infinite", BookInput{RunningS: running(math.Inf(1))}, class, "", "", "book: elapsed +Inf is not a number of seconds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, action, err := Answer(tc.in, pol, tc.cut)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || out != nil || action != "" {
					t.Fatalf("Answer: %q, %q, %v; want no line and the error %q", out, action, err, tc.err)
				}
				if tc.err == ErrNoCutover.Error() && !errors.Is(err, ErrNoCutover) {
					t.Errorf("Answer: %v; want ErrNoCutover", err)
				}
				return
			}
			if err != nil || string(out) != tc.line+"\n" || action != tc.action {
				t.Errorf("Answer: %q, %q, %v;\nwant %q, %q", out, action, err, tc.line+"\n", tc.action)
			}
		})
	}
}
