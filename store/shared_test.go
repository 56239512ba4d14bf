package store_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

// TestSharedFileBesideTheWriter: for random sequences of rounds appended
// by the writer (which holds the lock) and by a SharedFile beside it, at
// once from two goroutines, with prunes by the writer (each renames a new
// file over the old one) in between, every point either wrote reads back,
// through the writer and through the SharedFile, and no line is torn.
func TestSharedFileBesideTheWriter(t *testing.T) {
	for seed := uint64(1); seed <= 10; seed++ {
		r := rand.New(rand.NewPCG(seed, 11))
		path := filepath.Join(t.TempDir(), "samples.lp")
		w, err := store.OpenFile(path, store.FileOptions{Warn: failOnWarn(t)})
		if err != nil {
			t.Fatal(err)
		}
		sh, err := store.OpenFileShared(path, store.FileOptions{Warn: failOnWarn(t)})
		if err != nil {
			t.Fatal(err)
		}
		stores := []store.Store{w, sh}
		n := 5 + r.IntN(30)
		var want []store.Probe
		rounds := make([][][]store.Probe, 2)
		for i := range n {
			who := r.IntN(2)
			p := probeAt([]string{"a", "b"}[who], time.Duration(i)*time.Second, float64(r.IntN(90)))
			rounds[who] = append(rounds[who], []store.Probe{p})
			want = append(want, p)
		}
		var wg sync.WaitGroup
		for who, st := range stores {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j, round := range rounds[who] {
					if err := st.Write(ctx, round, nil); err != nil {
						t.Error(err)
						return
					}
					if who == 0 && j%3 == 1 { // a prune that drops nothing but replaces the file
						if _, err := w.Prune(ctx, hour0.Add(-time.Hour), store.PruneOptions{}); err != nil {
							t.Error(err)
							return
						}
					}
				}
			}()
		}
		wg.Wait()
		for _, st := range stores {
			got, err := st.Probes(ctx, all)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("seed %d: read %d probes, want %d", seed, len(got), len(want))
			}
			for i := range want {
				if !got[i].Time.Equal(want[i].Time) || got[i].Lane != want[i].Lane || got[i].QueueS != want[i].QueueS {
					t.Fatalf("seed %d: probe %d is %+v, want %+v", seed, i, got[i], want[i])
				}
			}
		}
		_ = sh.Close()
		_ = w.Close()
	}
}

// A SharedFile's append after a torn last line (a writer's append cut
// short by a crash) starts on a line of its own, so the booking reads
// back; the torn line stays skipped, as before. A store path that names
// a directory is refused.
func TestSharedFileCases(t *testing.T) {
	cases := []struct {
		name    string
		before  string // the file's content before the shared append; "-" for a directory
		probes  int    // the probes that read back
		wantErr string
	}{
		{name: "empty", before: "", probes: 1},
		{name: "whole lines", before: "probe,kind=free,lane=z ok=true,outcome=\"ok\",queue_s=1 1796047200000000000\n", probes: 2},
		{name: "torn tail", before: "probe,kind=free,lane=z ok=tr", probes: 1},
		{name: "directory", before: "-", wantErr: "not a regular file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "samples.lp")
			var err error
			if c.before == "-" {
				err = os.Mkdir(path, 0o755)
			} else {
				err = os.WriteFile(path, []byte(c.before), 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
			sh, err := store.OpenFileShared(path, store.FileOptions{})
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer sh.Close()
			if err := sh.Write(ctx, []store.Probe{probeAt("a", time.Minute, 3)}, nil); err != nil {
				t.Fatal(err)
			}
			got, err := sh.Probes(ctx, all)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != c.probes {
				t.Fatalf("read %d probes, want %d: %+v", len(got), c.probes, got)
			}
		})
	}
}
