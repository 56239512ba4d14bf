package api

import (
	"math/rand/v2"
	"testing"

	"github.com/lanewatch/lanewatch/policy"
)

// For any file whose classes carry a cut-over: the lane is the class's
// first, except that a class that is not free first goes straight to the
// fallback when it would start on the book's free lane; the cut-over time
// is the file's exactly when the job starts on the book's free lane, free
// first, with a fallback to cut over to; the fallback is the book's
// eligible paid lane as without a cut-over.
func TestChooseCutoverRule(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 1))
	var straight, cut int // classes sent straight to the fallback; with a cut-over time
	for i := range 500 {
		f := randomFile(r)
		var eps []Endpoint
		for _, l := range f.Lanes {
			eps = append(eps, Endpoint{Name: l.Name, Kind: l.Kind, API: "openai", BaseURL: "http://" + l.Name + "/v1", Model: "m"})
		}
		for ci := range f.Classes {
			if r.IntN(4) > 0 {
				f.Classes[ci].Cutover = &policy.Cutover{AfterS: float64(r.IntN(6000)) / 100, FreeFirst: r.IntN(2) == 0}
			}
		}
		for _, c := range f.Classes {
			ch, err := Choose(f, c.Name, eps)
			if len(c.Lanes) == 0 {
				continue
			}
			if err != nil {
				t.Fatalf("file %d class %s: %v", i, c.Name, err)
			}
			b := c.Book
			hasFallback := b.PaidLane != "" && b.PaidEligible
			if (ch.Fallback != nil) != hasFallback || hasFallback && ch.Fallback.Lane != b.PaidLane {
				t.Fatalf("file %d class %s: fallback %+v, book %+v", i, c.Name, ch.Fallback, b)
			}
			onFree := c.Lanes[0] == b.FreeLane && c.Cutover != nil && hasFallback
			wantLane := c.Lanes[0]
			if onFree && !c.Cutover.FreeFirst {
				wantLane = b.PaidLane
				straight++
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
