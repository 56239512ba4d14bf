package policy

import "testing"

// Tests written for gremlins' survivors in cutover.go and calibrated.go
// (issue 22, fourth round): each fails on the mutant named in its comment.

// The cap is the free wait at coverage 0.99 (docs/policy.md, "The cut-over
// time"), not at the largest coverage given: with a 0.999 point past it the
// cap stays 0.99's. 60 s deadline, paid 2 + 5 s, free generation 10 s:
// latest 51, useful 50; the free wait at 0.99 is 20 s, so the cap is 22 and
// after_s 22, where a cap read at 0.999 (60 + 2) would give 50.
// (cutover.go: `p.Coverage >= CutoverCapCoverage` → `>`.)
func TestCutoverCapIsTheP99NotTheLargestCoverage(t *testing.T) {
	base := CutoverInput{DeadlineS: 60, PaidQueueS: 2, PaidGenS: 5, FreeGenS: 10, FreeEligible: true, PaidEligible: true}
	for _, tc := range []struct {
		name string
		free []QuantilePoint
		want Cutover
	}{
		{"0.999 past the 0.99", pts(0.5, 5, 0.99, 20, 0.999, 60), Cutover{AfterS: 22, FreeFirst: true, FreeChance: 0.99}},
		{"0.999 first in the input", pts(0.999, 60, 0.99, 20, 0.5, 5), Cutover{AfterS: 22, FreeFirst: true, FreeChance: 0.99}},
	} {
		in := base
		in.Free = tc.free
		if got := CutoverFor(in); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
