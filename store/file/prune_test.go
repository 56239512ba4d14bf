package file_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
	"github.com/lanewatch/lanewatch/store/storetest"
)

// all is a query for every point the tests write.

// TestPruneRandom: for random probes and hourly records across a random
// cut, Prune keeps every probe at or after the cut exactly, drops every
// one before it, keeps every hourly record, and leaves a file that reads
// back with no warning and that store.Check finds clean for the hours
// wholly after the cut.
func TestPruneRandom(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		path := filepath.Join(t.TempDir(), "samples.lp")
		s, err := file.Open(path, file.Options{Warn: storetest.FailOnWarn(t)})
		if err != nil {
			t.Fatal(err)
		}
		lanes := []string{"a", "b", "c"}
		n := 1 + r.IntN(100)
		for i := 0; i < n; i++ { // rounds of one to three probes, some rewritten
			var round []store.Probe
			for j := 0; j <= r.IntN(4); j++ {
				p := probeAt(lanes[r.IntN(len(lanes))], time.Duration(r.Int64N(int64(12*time.Hour))), float64(r.IntN(90)))
				p.Time = p.Time.Truncate(time.Millisecond)
				round = append(round, p)
			}
			if err := s.Write(ctx, store.Batch{Probes: round}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := store.RebuildWindow(ctx, s, time.UTC, store.Window{From: hour0, To: hour0.Add(12 * time.Hour)}, nil); err != nil {
			t.Fatal(err)
		}
		// Hourly records of hours without probes, before and after the cut.
		if err := s.Write(ctx, store.Batch{Hourly: []store.Hourly{hourlyAt("z", -3, 1), hourlyAt("z", 20, 2)}}); err != nil {
			t.Fatal(err)
		}
		beforeProbes, err := store.ReadProbes(ctx, s, all)
		if err != nil {
			t.Fatal(err)
		}
		beforeHourly, err := store.ReadHourly(ctx, s, all)
		if err != nil {
			t.Fatal(err)
		}
		cut := hour0.Add(time.Duration(r.Int64N(int64(13 * time.Hour)))).Truncate(time.Millisecond)
		if r.IntN(4) == 0 {
			cut = cut.Truncate(time.Hour)
		}
		var want []store.Probe
		for _, p := range beforeProbes {
			if !p.Time.Before(cut) {
				want = append(want, p)
			}
		}
		st, err := s.Prune(ctx, cut)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if got := int(st.Probes); got < len(beforeProbes)-len(want) {
			t.Errorf("seed %d: dropped %d probe lines, want at least %d", seed, got, len(beforeProbes)-len(want))
		}
		check := func(s *file.Store, what string) {
			t.Helper()
			gotProbes, err := store.ReadProbes(ctx, s, all)
			if err != nil {
				t.Fatal(err)
			}
			if len(gotProbes) != len(want) || (len(want) > 0 && !reflect.DeepEqual(gotProbes, want)) {
				t.Errorf("seed %d %s: cut %s: kept %d probes, want %d", seed, what, cut, len(gotProbes), len(want))
			}
			gotHourly, err := store.ReadHourly(ctx, s, all)
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
			ms, err := store.Check(ctx, s, time.UTC, store.Window{From: kept, To: hour0.Add(12 * time.Hour)}, nil)
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
		if err := s.Write(ctx, store.Batch{Probes: []store.Probe{late}}); err != nil {
			t.Fatalf("seed %d: write after prune: %v", seed, err)
		}
		want = append(want, late)
		want = sortedProbes(want)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		ro, err := file.Open(path, file.Options{ReadOnly: true, Warn: storetest.FailOnWarn(t)})
		if err != nil {
			t.Fatal(err)
		}
		check(ro, "reopened")
	}
}

// sortedProbes orders probes as reads return them, by reading them
// through a scratch store.
func sortedProbes(ps []store.Probe) []store.Probe {
	s, err := file.Open(filepath.Join(os.TempDir(), "lanewatch-prune-sort-"+time.Now().Format("150405.000000000")+".lp"), file.Options{})
	if err != nil {
		panic(err)
	}
	defer func() { _ = os.Remove(s.Status().Where); _ = os.Remove(s.Status().Where + ".lock"); _ = s.Close() }()
	if err := s.Write(ctx, store.Batch{Probes: ps}); err != nil {
		panic(err)
	}
	out, err := store.ReadProbes(ctx, s, all)
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
			s, err := file.Open(path, file.Options{Warn: storetest.FailOnWarn(t)})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = s.Close() }()
			if err := s.Write(ctx, store.Batch{Probes: []store.Probe{probeAt("a", 0, 1), probeAt("a", 2*time.Hour, 2)}, Hourly: []store.Hourly{hourlyAt("a", 0, 1)}}); err != nil {
				t.Fatal(err)
			}
			old, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			boom := errors.New("power cut")
			file.SetPruneHook(s, func(st, tmp string) error {
				if st == stage {
					return boom
				}
				return nil
			})
			_, err = s.Prune(ctx, hour0.Add(time.Hour))
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
			if err := s.Write(ctx, store.Batch{Probes: []store.Probe{probeAt("a", 3*time.Hour, 3)}}); err != nil {
				t.Fatalf("write after a failed prune: %v", err)
			}
			ps, err := store.ReadProbes(ctx, s, all)
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
	w, err := file.Open(path, file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Close() }()
	ro, err := file.Open(path, file.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ro.Prune(ctx, hour0); err == nil {
		t.Error("a read-only store pruned")
	}
}

// TestPruneReaderSeesWhole: a reader that opened the file before the
// rename reads the old file whole; one that opens after reads the new.
func TestPruneReaderSeesWhole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "samples.lp")
	s, err := file.Open(path, file.Options{Warn: storetest.FailOnWarn(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	if err := s.Write(ctx, store.Batch{Probes: []store.Probe{probeAt("a", 0, 1), probeAt("a", 2*time.Hour, 2)}}); err != nil {
		t.Fatal(err)
	}
	old, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = old.Close() }()
	if _, err := s.Prune(ctx, hour0.Add(time.Hour)); err != nil {
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

// pruneLine is one line of TestPruneLinesRandom's file and what a prune
// must do with it.
type pruneLine struct {
	kind string // "probe", "heartbeat", "hourly", "comment", "odd", "long", "torn"
	ns   int64
	// timed: a probe or heartbeat whose timestamp can be read; only those
	// are dropped, and only when older than the cut.
	timed bool
}

// kept reports whether a prune at cut keeps the line.
func (l pruneLine) kept(cut int64) bool {
	switch l.kind {
	case "long", "torn":
		return false
	case "probe", "heartbeat":
		return !l.timed || l.ns >= cut
	}
	return true
}

// TestPruneLinesRandom: for random sequences of probe, hourly, heartbeat,
// comment and odd lines (blank, unknown or look-alike measurements, a
// probe or heartbeat without a readable timestamp, a line longer than
// 1 MiB, a torn last line) at random times around a random cut, Prune
// keeps every hourly line, every probe and heartbeat at or after the cut
// and every comment and odd line a read can return, byte for byte and in
// their order; it drops every probe and heartbeat before the cut, and its
// stats count exactly that. A second prune at the same cut changes
// nothing.
func TestPruneLinesRandom(t *testing.T) {
	for seed := uint64(1); seed <= 60; seed++ {
		r := rand.New(rand.NewPCG(seed, 13))
		path := filepath.Join(t.TempDir(), "samples.lp")
		var warns storetest.Warnings
		s, err := file.Open(path, file.Options{Warn: warns.Warn})
		if err != nil {
			t.Fatal(err)
		}
		raw := func(b string) {
			t.Helper()
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteString(b); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
		}
		cut := hour0.Add(time.Duration(r.Int64N(int64(12 * time.Hour))))
		if r.IntN(4) == 0 {
			cut = cut.Truncate(time.Hour)
		}
		cutNS := cut.UnixNano()
		at := func() time.Time { // around the cut, on it and beside it often
			switch r.IntN(6) {
			case 0:
				return cut
			case 1:
				return cut.Add(-time.Nanosecond)
			case 2:
				return cut.Add(time.Nanosecond)
			}
			return cut.Add(time.Duration(r.Int64N(int64(12*time.Hour))) - 6*time.Hour)
		}
		var lines []pruneLine
		for range r.IntN(80) {
			when := at()
			l := pruneLine{ns: when.UnixNano(), timed: true}
			switch r.IntN(11) {
			case 0, 1:
				l.kind = "probe"
				p := probeAt([]string{"a", "b"}[r.IntN(2)], 0, float64(r.IntN(90)))
				p.Time = when
				if err := s.Write(ctx, store.Batch{Probes: []store.Probe{p}}); err != nil {
					t.Fatal(err)
				}
			case 2:
				l.kind = "probe" // as another writer spelled it
				raw(fmt.Sprintf("probe,kind=free,lane=r ok=true,outcome=\"ok\",queue_s=1 %d\n", l.ns))
			case 3:
				l.kind = "hourly"
				h := hourlyAt("a", 0, float64(r.IntN(90)))
				h.Hour = when.Truncate(time.Hour)
				if err := s.Write(ctx, store.Batch{Hourly: []store.Hourly{h}}); err != nil {
					t.Fatal(err)
				}
			case 4, 5:
				l.kind = "heartbeat"
				b := store.Heartbeat{Instance: fmt.Sprint("i", r.IntN(3)), Shard: "0/1", Site: []string{"", "eu"}[r.IntN(2)],
					Time: when, Host: "h", StartNS: hour0.UnixNano(), Version: "devel", IntervalS: 60}
				if err := s.Write(ctx, store.Batch{Heartbeats: []store.Heartbeat{b}}); err != nil {
					t.Fatal(err)
				}
			case 6:
				l.kind = "heartbeat"
				raw(fmt.Sprintf("sampler_heartbeat,instance=r,shard=0/1 host=\"h\",start_ns=1i,version=\"v\",interval_s=60 %d\n", l.ns))
			case 7:
				l.kind = "comment"
				raw([]string{"# a note\n", "\n", "   \n"}[r.IntN(3)])
			case 8:
				l.kind = "odd" // no measurement lanewatch reads, whatever its time
				raw(fmt.Sprintf([]string{
					"other,lane=a f=1 %d\n",
					"probes,kind=free,lane=a queue_s=1 %d\n",
					"sampler_heartbeats,instance=i host=\"h\" %d\n",
					"queue_hourly_x,lane=a samples=1i %d\n",
				}[r.IntN(4)], l.ns))
			case 9:
				l.kind, l.timed = []string{"probe", "heartbeat"}[r.IntN(2)], false // a timestamp it cannot read
				raw([]string{
					"probe,kind=free,lane=a queue_s=1 not-a-time\n",
					"probe,kind=free,lane=a queue_s=1\n",
					"sampler_heartbeat,instance=i,shard=0/1 host=\"h\"\n",
					"sampler_heartbeat,instance=i,shard=0/1 host=\"h\" 12e3\n",
				}[2*boolInt(l.kind == "heartbeat")+r.IntN(2)])
			case 10:
				if r.IntN(8) != 0 { // a MiB each: rare
					l.kind = "comment"
					raw("#\n")
					break
				}
				l.kind = "long"
				raw("probe,kind=free,lane=a queue_s=1,pad=\"" + strings.Repeat("x", 1<<20) + fmt.Sprintf("\" %d\n", l.ns))
			}
			lines = append(lines, l)
		}
		if r.IntN(4) == 0 {
			lines = append(lines, pruneLine{kind: "torn"})
			raw("probe,kind=free,lane=a queue_s=1 17") // no newline: a write cut short
		}
		before, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		got := strings.SplitAfter(string(before), "\n")
		if got[len(got)-1] == "" {
			got = got[:len(got)-1]
		}
		if len(got) != len(lines) {
			t.Fatalf("seed %d: the file has %d lines, the test wrote %d", seed, len(got), len(lines))
		}
		var want strings.Builder
		var wantSt store.Pruned
		for i, l := range lines {
			switch {
			case l.kept(cutNS):
				want.WriteString(got[i])
				wantSt.Kept++
			case l.kind == "probe":
				wantSt.Probes++
			case l.kind == "heartbeat":
				wantSt.Heartbeats++
			case l.kind == "long":
				wantSt.Long++
			}
		}
		st, err := s.Prune(ctx, cut)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if st != wantSt {
			t.Errorf("seed %d: cut %s: stats %+v, want %+v", seed, cut.Format(time.RFC3339Nano), st, wantSt)
		}
		if n := warns.Count(); n != int(wantSt.Long) {
			t.Errorf("seed %d: %d warnings, want one per long line (%d): %s", seed, n, wantSt.Long, warns.All())
		}
		after, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(after) != want.String() {
			t.Errorf("seed %d: cut %s: after the prune the file is\n%.2000s\nwant\n%.2000s", seed, cut.Format(time.RFC3339Nano), after, want.String())
		}
		again, err := s.Prune(ctx, cut)
		if err != nil {
			t.Fatalf("seed %d: second prune: %v", seed, err)
		}
		if again != (store.Pruned{Kept: wantSt.Kept}) {
			t.Errorf("seed %d: a second prune at the same cut: %+v, want only %d lines kept", seed, again, wantSt.Kept)
		}
		if twice, err := os.ReadFile(path); err != nil || !bytes.Equal(twice, after) {
			t.Errorf("seed %d: a second prune at the same cut changed the file (%v)", seed, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestPruneKeepsNewHeartbeats: after a prune, Heartbeats returns exactly
// the heartbeats at or after the cut, of each site, through the writer,
// through a reader opened (and indexed) before the prune and through one
// opened after it; the probes read back the same way, and the writer's
// next heartbeat reads back too.
func TestPruneKeepsNewHeartbeats(t *testing.T) {
	cases := []struct {
		name string
		cut  time.Time
	}{
		{"on the hour", hour0.Add(3 * time.Hour)},
		{"mid-hour", hour0.Add(3*time.Hour + 17*time.Minute + 3*time.Millisecond)},
		{"on a heartbeat", hour0.Add(4 * time.Hour)},
		{"before all", hour0.Add(-time.Hour)},
		{"after all", hour0.Add(24 * time.Hour)},
	}
	sites := []string{"", "eu"}
	window := store.Window{From: hour0.Add(-48 * time.Hour), To: hour0.Add(48 * time.Hour)}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "samples.lp")
			w, err := file.Open(path, file.Options{Warn: storetest.FailOnWarn(t)})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = w.Close() }()
			// A round's heartbeat every 20 minutes over 8 hours, per site
			// and two instances, and more than a MiB of probes across the
			// same hours, so that a reader keeps an index.
			beat := func(inst, site string, at time.Time) store.Heartbeat {
				return store.Heartbeat{Instance: inst, Shard: "0/1", Site: site, Time: at, Host: "h", StartNS: hour0.UnixNano(), Version: "devel", IntervalS: 1200}
			}
			for i := range 24 {
				at := hour0.Add(time.Duration(i) * 20 * time.Minute)
				var ps []store.Probe
				for j := range 500 {
					ps = append(ps, probeAt(fmt.Sprint("l", j), time.Duration(i)*20*time.Minute, float64(j%90)))
				}
				if err := w.Write(ctx, store.Batch{Probes: ps}); err != nil {
					t.Fatal(err)
				}
				for _, site := range sites {
					for _, inst := range []string{"a", "b"} {
						if err := w.Write(ctx, store.Batch{Heartbeats: []store.Heartbeat{beat(inst, site, at)}}); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			want := map[string][]store.Heartbeat{}
			for _, site := range sites {
				all, err := store.ReadHeartbeats(ctx, w, store.Query{Windows: []store.Window{window}, Sites: []string{site}})
				if err != nil {
					t.Fatal(err)
				}
				if len(all) != 48 {
					t.Fatalf("site %q: %d heartbeats before the prune, want 48", site, len(all))
				}
				for _, b := range all {
					if !b.Time.Before(c.cut) {
						want[site] = append(want[site], b)
					}
				}
			}
			allProbes, err := store.ReadProbes(ctx, w, all)
			if err != nil {
				t.Fatal(err)
			}
			var wantProbes []store.Probe
			for _, p := range allProbes {
				if !p.Time.Before(c.cut) {
					wantProbes = append(wantProbes, p)
				}
			}
			early, err := file.Open(path, file.Options{ReadOnly: true, Warn: storetest.FailOnWarn(t)})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = early.Close() }()
			if _, err := store.ReadProbes(ctx, early, store.Between(hour0, hour0.Add(time.Hour))); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(path + file.IndexSuffix); err != nil {
				t.Fatalf("no index before the prune: %v", err)
			}
			st, err := w.Prune(ctx, c.cut)
			if err != nil {
				t.Fatal(err)
			}
			dropped := int64(0)
			for _, site := range sites {
				dropped += 48 - int64(len(want[site]))
			}
			if st.Heartbeats != dropped || st.Probes != int64(len(allProbes)-len(wantProbes)) {
				t.Errorf("stats %+v, want %d heartbeats and %d probes dropped", st, dropped, len(allProbes)-len(wantProbes))
			}
			late, err := file.Open(path, file.Options{ReadOnly: true, Warn: storetest.FailOnWarn(t)})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = late.Close() }()
			check := func(what string) {
				t.Helper()
				for _, r := range []struct {
					name string
					s    *file.Store
				}{{"writer", w}, {"reader opened before", early}, {"reader opened after", late}} {
					for _, site := range sites {
						got, err := store.ReadHeartbeats(ctx, r.s, store.Query{Windows: []store.Window{window}, Sites: []string{site}})
						if err != nil {
							t.Fatal(err)
						}
						if len(got) != len(want[site]) || (len(got) > 0 && !reflect.DeepEqual(got, want[site])) {
							t.Errorf("%s, %s, site %q: %d heartbeats, want the %d at or after the cut %s", what, r.name, site, len(got), len(want[site]), c.cut)
						}
					}
					got, err := store.ReadProbes(ctx, r.s, all)
					if err != nil {
						t.Fatal(err)
					}
					if len(got) != len(wantProbes) || (len(got) > 0 && !reflect.DeepEqual(got, wantProbes)) {
						t.Errorf("%s, %s: %d probes, want %d", what, r.name, len(got), len(wantProbes))
					}
				}
			}
			check("after the prune")
			next := beat("a", "eu", hour0.Add(8*time.Hour))
			if err := w.Write(ctx, store.Batch{Heartbeats: []store.Heartbeat{next}}); err != nil {
				t.Fatalf("heartbeat after the prune: %v", err)
			}
			want["eu"] = append(want["eu"], next)
			check("after the next heartbeat")
		})
	}
}
