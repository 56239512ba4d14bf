package shard

import (
	"fmt"
	"slices"
	"testing"
)

func lanes(n int) []Lane {
	out := make([]Lane, n)
	for i := range out {
		out[i] = Lane{Name: fmt.Sprintf("provider%d-model%03d", i%7, i)}
	}
	return out
}

// Every lane belongs to exactly one shard.
func TestPartition(t *testing.T) {
	ls := lanes(1000)
	for _, n := range []int{1, 2, 3, 5, 6, 16} {
		seen := map[string]int{}
		for i := range n {
			for _, l := range Owned(ls, i, n) {
				seen[l]++
			}
		}
		if len(seen) != len(ls) {
			t.Fatalf("%d shards own %d of %d lanes", n, len(seen), len(ls))
		}
		for l, c := range seen {
			if c != 1 {
				t.Fatalf("%d shards: lane %s owned %d times", n, l, c)
			}
		}
	}
}

// Going from 5 to 6 shards moves about a sixth of the lanes, at most a quarter.
func TestMovementBound(t *testing.T) {
	ls := lanes(1000)
	moved := 0
	for _, l := range ls {
		k := Key(l.Name, "")
		if Of(k, 5) != Of(k, 6) {
			moved++
			if Of(k, 6) != 5 {
				t.Errorf("lane %s moved from shard %d to %d, not to the new shard", l.Name, Of(k, 5), Of(k, 6))
			}
		}
	}
	if moved > 250 {
		t.Fatalf("5→6 shards moved %d of 1000 lanes, want ≤ 25%%", moved)
	}
	t.Logf("5→6 shards moved %d of 1000 lanes (ideal 167)", moved)
}

// Shards are balanced well enough that no shard gets twice its share.
func TestBalance(t *testing.T) {
	ls := lanes(1000)
	for _, n := range []int{2, 4, 5} {
		for i := range n {
			got := len(Owned(ls, i, n))
			if share := 1000 / n; got < share/2 || got > share*3/2 {
				t.Errorf("%d shards: shard %d owns %d lanes, share %d", n, i, got, share)
			}
		}
	}
}

// The assignment is a fixed function of the names: these values are the
// same on every machine and in every run.
func TestStable(t *testing.T) {
	for _, c := range []struct {
		key  string
		n    int
		want int
	}{
		{"lane:free", 5, Of("lane:free", 5)},
	} {
		for range 100 {
			if got := Of(c.key, c.n); got != c.want {
				t.Fatalf("Of(%q, %d) changed: %d then %d", c.key, c.n, c.want, got)
			}
		}
	}
	got := []int{Of("lane:free", 2), Of("lane:paid", 2), Of("lane:or-llama", 3), Of("quota:openrouter", 5), Of("lane:a", 1)}
	want := []int{1, 1, 0, 0, 0}
	if !slices.Equal(got, want) {
		t.Fatalf("assignment %v, want %v (a change here moves every deployed lane)", got, want)
	}
}

func TestQuotaGroupsStayTogether(t *testing.T) {
	ls := []Lane{{"or-a", "openrouter"}, {"or-b", "openrouter"}, {"or-c", "openrouter"}, {"x", ""}, {"y", ""}}
	for n := 1; n <= 8; n++ {
		owner := -1
		for i := range n {
			o := Owned(ls, i, n)
			c := 0
			for _, l := range o {
				if l == "or-a" || l == "or-b" || l == "or-c" {
					c++
				}
			}
			if c != 0 && c != 3 {
				t.Fatalf("%d shards: shard %d owns %d of the group's 3 lanes", n, i, c)
			}
			if c == 3 {
				owner = i
			}
		}
		if owner < 0 {
			t.Fatalf("%d shards: nobody owns the group", n)
		}
	}
}
