package api

import (
	"math/rand/v2"
	"testing"

	"github.com/lanewatch/lanewatch/policy"
)

// For any file whose classes carry a decision: a class that is free first
// starts on the book's free lane, listed or not; one that is not starts on
// its first lane, but goes straight to the fallback when that is the
// book's free lane; the cut-over time is the file's exactly when the job
// starts free first with a fallback to cut over to; the fallback is the
// book's eligible paid lane as without a decision.
func TestChooseCutoverRule(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 1))
	var straight, cut int // classes sent straight to the fallback; with a cut-over time
	for i := range 500 {
		f := randomFile(r)
		var eps []Lane
		for _, l := range f.Lanes {
			eps = append(eps, Lane{Lane: l.Name, Kind: l.Kind, API: "openai", BaseURL: "http://" + l.Name + "/v1", Model: "m"})
		}
		for ci := range f.Classes {
			if r.IntN(4) > 0 {
				f.Classes[ci].Cutover = &policy.Cutover{AfterS: float64(r.IntN(6000)) / 100, FreeFirst: r.IntN(2) == 0}
			}
		}
		for _, c := range f.Classes {
			ch, err := Choose(f, c.Name, eps)
			b := c.Book
			freeFirst := c.Cutover != nil && c.Cutover.FreeFirst && b.FreeLane != ""
			if len(c.Lanes) == 0 && !freeFirst {
				continue
			}
			if err != nil {
				t.Fatalf("file %d class %s: %v", i, c.Name, err)
			}
			hasFallback := b.PaidLane != "" && b.PaidEligible
			if (ch.Fallback != nil) != hasFallback || hasFallback && ch.Fallback.Lane != b.PaidLane {
				t.Fatalf("file %d class %s: fallback %+v, book %+v", i, c.Name, ch.Fallback, b)
			}
			wantLane := b.FreeLane
			onFree := freeFirst && hasFallback
			if !freeFirst {
				wantLane = c.Lanes[0]
				if c.Cutover != nil && wantLane == b.FreeLane && hasFallback {
					wantLane = b.PaidLane
					straight++
				}
			}
			if ch.Lane.Lane != wantLane || ch.BaseURL != "http://"+wantLane+"/v1" {
				t.Fatalf("file %d class %s: lane %q, want %q (cut-over %+v, book %+v)", i, c.Name, ch.Lane.Lane, wantLane, c.Cutover, b)
			}
			wantCut := onFree && c.Cutover.FreeFirst
			if wantCut {
				cut++
			}
			if (ch.CutoverAfterS != nil) != wantCut || wantCut && *ch.CutoverAfterS != c.Cutover.AfterS {
				t.Fatalf("file %d class %s: cut-over time %v, want one: %v (cut-over %+v)", i, c.Name, ch.CutoverAfterS, wantCut, c.Cutover)
			}
		}
	}
	if straight < 10 || cut < 10 {
		t.Fatalf("the files tried %d straight-to-fallback classes and %d with a cut-over time: too few", straight, cut)
	}
}
