package series_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/series"
)

// all is a query for every point the tests write.
var all = series.Between(hour0.Add(-48*time.Hour), hour0.Add(48*time.Hour))

// TestPruneRandom: for random probes and hourly records across a random
// cut, Prune keeps every probe at or after the cut exactly, drops every
// one before it, keeps every hourly record, and leaves a file that reads
// back with no warning and that series.Check finds clean for the hours
// wholly after the cut.
func TestPruneRandom(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		path := filepath.Join(t.TempDir(), "samples.lp")
		s, err := series.OpenFile(path, series.FileOptions{Warn: failOnWarn(t)})
		if err != nil {
			t.Fatal(err)
		}
		lanes := []string{"a", "b", "c"}
		n := 1 + r.IntN(100)
		for i := 0; i < n; i++ { // rounds of one to three probes, some rewritten
			var round []series.Probe
			for j := 0; j <= r.IntN(4); j++ {
				p := probeAt(lanes[r.IntN(len(lanes))], time.Duration(r.Int64N(int64(12*time.Hour))), float64(r.IntN(90)))
				p.Time = p.Time.Truncate(time.Millisecond)
				round = append(round, p)
			}
			if err := s.Write(ctx, round, nil); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := series.RebuildWindow(ctx, s, time.UTC, series.Window{From: hour0, To: hour0.Add(12 * time.Hour)}, nil); err != nil {
			t.Fatal(err)
		}
		// Hourly records of hours without probes, before and after the cut.
		if err := s.Write(ctx, nil, []series.Hourly{hourlyAt("z", -3, 1), hourlyAt("z", 20, 2)}); err != nil {
			t.Fatal(err)
		}
		beforeProbes, err := s.Probes(ctx, all)
		if err != nil {
			t.Fatal(err)
		}
		beforeHourly, err := s.Hourly(ctx, all)
		if err != nil {
			t.Fatal(err)
		}
		cut := hour0.Add(time.Duration(r.Int64N(int64(13 * time.Hour)))).Truncate(time.Millisecond)
		if r.IntN(4) == 0 {
			cut = cut.Truncate(time.Hour)
		}
		var want []series.Probe
		for _, p := range beforeProbes {
			if !p.Time.Before(cut) {
				want = append(want, p)
			}
		}
		st, err := s.Prune(ctx, cut, series.PruneOptions{})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if got := int(st.DroppedProbes); got < len(beforeProbes)-len(want) {
			t.Errorf("seed %d: dropped %d probe lines, want at least %d", seed, got, len(beforeProbes)-len(want))
		}
		check := func(s *series.File, what string) {
			t.Helper()
			gotProbes, err := s.Probes(ctx, all)
			if err != nil {
				t.Fatal(err)
			}
			if len(gotProbes) != len(want) || (len(want) > 0 && !reflect.DeepEqual(gotProbes, want)) {
				t.Errorf("seed %d %s: cut %s: kept %d probes, want %d", seed, what, cut, len(gotProbes), len(want))
			}
			gotHourly, err := s.Hourly(ctx, all)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(gotHourly, beforeHourly) {
				t.Errorf("seed %d %s: hourly records changed: %d, want %d", seed, what, len(gotHourly), len(beforeHourly))
			}
			kept := cut.Truncate(time.Hour)
			if kept.Before(cut) {
				kept = kept.Add(time.Hour)
			}
			ms, err := series.Check(ctx, s, time.UTC, series.Window{From: kept, To: hour0.Add(12 * time.Hour)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(ms) > 0 {
				t.Errorf("seed %d %s: check after the cut %s: %v", seed, what, kept, ms)
			}
		}
		check(s, "open")
		// The writer appends to the new file, and a reader opened later
		// sees it all.
		late := probeAt("a", 12*time.Hour+30*time.Minute, 3) // past the hours Check reads: it has no hourly record
		if err := s.Write(ctx, []series.Probe{late}, nil); err != nil {
			t.Fatalf("seed %d: write after prune: %v", seed, err)
		}
		want = append(want, late)
		want = sortedProbes(want)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		ro, err := series.OpenFile(path, series.FileOptions{ReadOnly: true, Warn: failOnWarn(t)})
		if err != nil {
			t.Fatal(err)
		}
		check(ro, "reopened")
	}
}

// sortedProbes orders probes as reads return them, by reading them
// through a scratch store.
func sortedProbes(ps []series.Probe) []series.Probe {
	s, err := series.OpenFile(filepath.Join(os.TempDir(), "lanewatch-prune-sort-"+time.Now().Format("150405.000000000")+".lp"), series.FileOptions{})
	if err != nil {
		panic(err)
	}
	defer func() { _ = os.Remove(s.Path()); _ = os.Remove(s.Path() + ".lock"); _ = s.Close() }()
	if err := s.Write(ctx, ps, nil); err != nil {
		panic(err)
	}
	out, err := s.Probes(ctx, all)
	if err != nil {
		panic(err)
	}
	return out
}

// TestPruneCrash: a prune cut short at each stage of the atomic write
// (the temp file written but not renamed) leaves the old file byte for
// byte, no temp file, and a writer that goes on appending to it.
func TestPruneCrash(t *testing.T) {
	for _, stage := range []string{"synced"} {
		t.Run(stage, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "samples.lp")
			s, err := series.OpenFile(path, series.FileOptions{Warn: failOnWarn(t)})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = s.Close() }()
			if err := s.Write(ctx, []series.Probe{probeAt("a", 0, 1), probeAt("a", 2*time.Hour, 2)}, []series.Hourly{hourlyAt("a", 0, 1)}); err != nil {
				t.Fatal(err)
			}
			old, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			boom := errors.New("power cut")
			_, err = s.Prune(ctx, hour0.Add(time.Hour), series.PruneOptions{Hook: func(st, tmp string) error {
				if st == stage {
					return boom
				}
				return nil
			}})
			if !errors.Is(err, boom) {
				t.Fatalf("prune: %v, want the hook's error", err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, old) {
				t.Errorf("the old file changed:\n%s\nwant\n%s", got, old)
			}
			ents, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				if e.Name() != "samples.lp" && e.Name() != "samples.lp.lock" {
					t.Errorf("left behind: %s", e.Name())
				}
			}
			if err := s.Write(ctx, []series.Probe{probeAt("a", 3*time.Hour, 3)}, nil); err != nil {
				t.Fatalf("write after a failed prune: %v", err)
			}
			ps, err := s.Probes(ctx, all)
			if err != nil {
				t.Fatal(err)
			}
			if len(ps) != 3 {
				t.Errorf("%d probes after a failed prune and a write, want 3", len(ps))
			}
		})
	}
}

// TestPruneReadOnly: only the writer prunes.
func TestPruneReadOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "samples.lp")
	w, err := series.OpenFile(path, series.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Close() }()
	ro, err := series.OpenFile(path, series.FileOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ro.Prune(ctx, hour0, series.PruneOptions{}); err == nil {
		t.Error("a read-only store pruned")
	}
}

// TestPruneReaderSeesWhole: a reader that opened the file before the
// rename reads the old file whole; one that opens after reads the new.
func TestPruneReaderSeesWhole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "samples.lp")
	s, err := series.OpenFile(path, series.FileOptions{Warn: failOnWarn(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	if err := s.Write(ctx, []series.Probe{probeAt("a", 0, 1), probeAt("a", 2*time.Hour, 2)}, nil); err != nil {
		t.Fatal(err)
	}
	old, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = old.Close() }()
	if _, err := s.Prune(ctx, hour0.Add(time.Hour), series.PruneOptions{}); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := b.ReadFrom(old); err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b.Bytes(), []byte("\n")); n != 2 {
		t.Errorf("the reader opened before the prune sees %d lines, want the old 2", n)
	}
	now, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(now, []byte("\n")); n != 1 {
		t.Errorf("the file has %d lines after the prune, want 1", n)
	}
}
