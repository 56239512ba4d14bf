package file_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
	"github.com/lanewatch/lanewatch/store/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := file.Open(filepath.Join(t.TempDir(), "samples.lp"), file.Options{Warn: storetest.FailOnWarn(t)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

var (
	ctx   = context.Background()
	hour0 = time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
)

func probeAt(lane string, d time.Duration, queue float64) store.Probe {
	return store.Probe{Lane: lane, Kind: "free", Time: hour0.Add(d), QueueS: queue, GenS: 2, HeadersS: 0.5, Tokens: 16, OK: true, Outcome: "ok", Status: 200}
}

func hourlyAt(lane string, h int, worst float64) store.Hourly {
	return store.Hourly{Lane: lane, Kind: "free", Hour: hour0.Add(time.Duration(h) * time.Hour), WorstQueueS: worst, WorstGenS: 2, MinTokPerS: 8, Samples: 1, Eligible: true}
}

func TestLineFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "deep", "er", "samples.lp")
	s, err := file.Open(path, file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p := store.Probe{Lane: "free", Kind: "free", Time: hour0.Add(7*time.Minute + 3*time.Second + 5), QueueS: 35.25, GenS: 1.5, HeadersS: 0.125, Tokens: 16, OK: true, Outcome: `stream_error "x"`, Status: 200}
	q := store.Probe{Lane: "or", Kind: "free", Site: "fra1", Time: hour0.Add(8 * time.Minute), QueueS: 2, ConnectS: 0.25, Outcome: "rate_limited", Status: 429,
		QuotaKnown: true, QuotaRemaining: 0, QuotaResetS: 3600}
	h := store.Hourly{Lane: "a b", Kind: "paid", Hour: hour0, WorstQueueS: 1, WorstGenS: 0, MinTokPerS: 41.5, Samples: 3, Failures: 1, Eligible: false, WorstCensoredS: 30.5}
	if err := s.Write(ctx, store.Batch{Probes: []store.Probe{p, q}, Hourly: []store.Hourly{h}}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ns := hour0.UnixNano()
	want := fmt.Sprintf("probe,kind=free,lane=free queue_s=35.25,gen_s=1.5,headers_s=0.125,connect_s=0,tokens=16i,ok=true,outcome=\"stream_error \\\"x\\\"\",status=200i %d\n"+
		"probe,kind=free,lane=or,site=fra1 queue_s=2,gen_s=0,headers_s=0,connect_s=0.25,tokens=0i,ok=false,outcome=\"rate_limited\",status=429i,quota_remaining=0i,quota_reset_s=3600 %d\n"+
		"queue_hourly,kind=paid,lane=a\\ b worst_queue_s=1,worst_gen_s=0,min_tok_per_s=41.5,samples=3i,failures=1i,eligible=false,worst_censored_s=30.5 %d\n",
		ns+int64(7*time.Minute+3*time.Second+5), ns+int64(8*time.Minute), ns)
	if string(got) != want {
		t.Fatalf("file holds\n%s\nwant\n%s", got, want)
	}
}

func TestBadLines(t *testing.T) {
	good1 := "queue_hourly,kind=free,lane=a worst_queue_s=1,worst_gen_s=2,min_tok_per_s=3,samples=1i,failures=0i,eligible=true %d\n"
	probe1 := "probe,kind=free,lane=a queue_s=1,gen_s=2,headers_s=0.5,tokens=16i,ok=true,outcome=\"ok\",status=200i %d\n"
	ns := hour0.UnixNano()
	for _, c := range []struct {
		name       string
		content    string
		hourly     int    // points Hourly returns
		probes     int    // points Probes returns
		warnHourly string // substring of the warnings of Hourly ("" = none)
	}{
		{"torn last line", fmt.Sprintf(good1, ns) + fmt.Sprintf(probe1, ns) + "queue_hourly,kind=free,lane=b worst_queue_s=1,worst_g", 1, 1, "line=3"},
		{"torn last line that parses", fmt.Sprintf(good1, ns) + strings.TrimSuffix(fmt.Sprintf(good1, ns+1), "\n"), 1, 0, "line=2"},
		{"corrupt middle line", fmt.Sprintf(good1, ns) + fmt.Sprintf("queue_hourly,kind=free,lane=b worst_queue_s=oops %d\n", ns) + fmt.Sprintf(good1, ns+int64(time.Hour)), 2, 0, "line=2"},
		{"hourly with a string field", fmt.Sprintf(good1, ns) + fmt.Sprintf("queue_hourly,kind=free,lane=b worst_queue_s=\"1\" %d\n", ns), 1, 0, "worst_queue_s is string"},
		{"no timestamp", "queue_hourly,kind=free,lane=b worst_queue_s=1\n" + fmt.Sprintf(good1, ns), 1, 0, "line=1"},
		{"no lane tag", fmt.Sprintf("queue_hourly,kind=free worst_queue_s=1 %d\n", ns), 0, 0, "no lane tag"},
		{"unknown measurement", "cpu,host=a usage=1 1\n" + fmt.Sprintf(good1, ns), 1, 0, "not a probe or queue_hourly"},
		{"garbage", "\x00\x01\xff\n" + fmt.Sprintf(probe1, ns), 0, 1, "line=1"},
		{"blank lines and comments", "\n# a comment\n   \n" + fmt.Sprintf(good1, ns), 1, 0, ""},
		{"line longer than 1 MiB", "queue_hourly,kind=free,lane=" + strings.Repeat("x", 2<<20) + " worst_queue_s=1 1\n" + fmt.Sprintf(good1, ns), 1, 0, "longer than 1 MiB"},
		{"windows line ending", strings.ReplaceAll(fmt.Sprintf(good1, ns), "\n", "\r\n"), 1, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "samples.lp")
			if err := os.WriteFile(path, []byte(c.content), 0o644); err != nil {
				t.Fatal(err)
			}
			var w storetest.Warnings
			s, err := file.Open(path, file.Options{ReadOnly: true, Warn: w.Warn})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			hs, err := store.ReadHourly(ctx, s, store.Between(hour0.Add(-time.Hour), hour0.Add(24*time.Hour)))
			if err != nil {
				t.Fatalf("Hourly: %v (bad lines must not be fatal)", err)
			}
			if len(hs) != c.hourly {
				t.Errorf("Hourly returned %d points, want %d: %+v", len(hs), c.hourly, hs)
			}
			if c.warnHourly == "" && w.Count() > 0 {
				t.Errorf("unexpected warnings: %s", w.All())
			}
			if c.warnHourly != "" && !strings.Contains(w.All(), c.warnHourly) {
				t.Errorf("warnings %q do not mention %q", w.All(), c.warnHourly)
			}
			ps, err := store.ReadProbes(ctx, s, store.Between(hour0.Add(-time.Hour), hour0.Add(24*time.Hour)))
			if err != nil {
				t.Fatalf("Probes: %v", err)
			}
			if len(ps) != c.probes {
				t.Errorf("Probes returned %d points, want %d", len(ps), c.probes)
			}
		})
	}
}

// A crash mid-append leaves a torn line; reopening for writing cuts it off so
// the next round is not glued onto it.
func TestAppendAfterTornTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "samples.lp")
	s, err := file.Open(path, file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, store.Batch{Probes: []store.Probe{probeAt("a", 0, 1)}, Hourly: []store.Hourly{hourlyAt("a", 0, 1)}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("probe,kind=free,lane=b queue_s=9,gen_s=1,headers_s=0.2,tokens=3i,ok=tr"); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()

	var w storetest.Warnings
	s, err = file.Open(path, file.Options{Warn: w.Warn})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !strings.Contains(w.All(), "torn") || !strings.Contains(w.All(), "line=3") {
		t.Errorf("open warnings = %q, want a torn line 3", w.All())
	}
	if err := s.Write(ctx, store.Batch{Probes: []store.Probe{probeAt("b", time.Minute, 2)}}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if n := bytes.Count(b, []byte("\n")); n != 3 || !bytes.HasSuffix(b, []byte("\n")) {
		t.Fatalf("file has %d lines, want 3 whole lines:\n%s", n, b)
	}
	ps, err := store.ReadProbes(ctx, s, store.Between(hour0, hour0.Add(time.Hour)))
	if err != nil || len(ps) != 2 || ps[1].Lane != "b" || ps[1].QueueS != 2 {
		t.Fatalf("Probes = %+v, %v; want a then b(2)", ps, err)
	}
	if w.Count() != 1 {
		t.Errorf("warnings after repair: %s", w.All())
	}
}

func TestLocking(t *testing.T) {
	path := filepath.Join(t.TempDir(), "samples.lp")
	w1, err := file.Open(path, file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("second writer is refused, naming the path", func(t *testing.T) {
		_, err := file.Open(path, file.Options{})
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "in use") {
			t.Fatalf("second OpenFile = %v; want an in-use error naming %s", err, path)
		}
	})
	t.Run("reader works while the writer holds the lock", func(t *testing.T) {
		if err := w1.Write(ctx, store.Batch{Hourly: []store.Hourly{hourlyAt("a", 0, 5)}}); err != nil {
			t.Fatal(err)
		}
		r, err := file.Open(path, file.Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("read-only open while locked: %v", err)
		}
		defer r.Close()
		hs, err := store.ReadHourly(ctx, r, store.Between(hour0, hour0.Add(time.Hour)))
		if err != nil || len(hs) != 1 || hs[0].WorstQueueS != 5 {
			t.Fatalf("reader Hourly = %+v, %v", hs, err)
		}
		if err := r.Write(ctx, store.Batch{Hourly: []store.Hourly{hourlyAt("a", 0, 6)}}); err == nil || !strings.Contains(err.Error(), "read-only") {
			t.Fatalf("Write on read-only store = %v; want a read-only error", err)
		}
	})
	t.Run("lock is released by Close", func(t *testing.T) {
		if err := w1.Close(); err != nil {
			t.Fatal(err)
		}
		w2, err := file.Open(path, file.Options{})
		if err != nil {
			t.Fatalf("OpenFile after Close: %v", err)
		}
		_ = w2.Close()
	})
	t.Run("closed store refuses calls", func(t *testing.T) {
		if err := w1.Write(ctx, store.Batch{}); err == nil {
			t.Error("Write after Close succeeded")
		}
		if _, err := store.ReadHourly(ctx, w1, store.Between(hour0, hour0.Add(time.Hour))); err == nil {
			t.Error("Hourly after Close succeeded")
		}
	})
	t.Run("read-only open of a missing file fails", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "nope.lp")
		_, err := file.Open(missing, file.Options{ReadOnly: true})
		if err == nil || !strings.Contains(err.Error(), missing) {
			t.Fatalf("OpenFile = %v; want an error naming %s", err, missing)
		}
	})
}

// A reader running while rounds are appended never sees half a round.
func TestReadWhileWriting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "samples.lp")
	w, err := file.Open(path, file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var warn storetest.Warnings
	r, err := file.Open(path, file.Options{ReadOnly: true, Warn: warn.Warn})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const lanes, rounds = 50, 40
	done := make(chan error)
	go func() {
		for i := range rounds {
			var ps []store.Probe
			for l := range lanes {
				ps = append(ps, probeAt(fmt.Sprintf("l%02d", l), time.Duration(i)*time.Second, float64(i)))
			}
			if err := w.Write(ctx, store.Batch{Probes: ps}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for reading := true; reading; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			reading = false
		default:
		}
		ps, err := store.ReadProbes(ctx, r, store.Between(hour0, hour0.Add(time.Hour)))
		if err != nil {
			t.Fatal(err)
		}
		if len(ps)%lanes != 0 {
			t.Fatalf("reader saw %d probes: half a round", len(ps))
		}
	}
	if warn.Count() > 0 {
		t.Errorf("reader warned: %s", warn.All())
	}
}

func TestReplacementAcrossRounds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "samples.lp")
	s, err := file.Open(path, file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 3 {
		if err := s.Write(ctx, store.Batch{Hourly: []store.Hourly{hourlyAt("a", 0, float64(i)), hourlyAt("b", 0, float64(10+i))}}); err != nil {
			t.Fatal(err)
		}
	}
	hs, err := store.ReadHourly(ctx, s, store.Between(hour0, hour0.Add(time.Hour)))
	if err != nil || len(hs) != 2 || hs[0].WorstQueueS != 2 || hs[1].WorstQueueS != 12 {
		t.Fatalf("Hourly = %+v, %v; want a=2, b=12 (the last rewrite)", hs, err)
	}
	// Reopened, the rule still holds: it is in the file, not in memory.
	_ = s.Close()
	r, err := file.Open(path, file.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	hs, err = store.ReadHourly(ctx, r, store.Between(hour0, hour0.Add(time.Hour)))
	if err != nil || len(hs) != 2 || hs[0].WorstQueueS != 2 {
		t.Fatalf("after reopen Hourly = %+v, %v", hs, err)
	}
}

func TestReadCancelled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "samples.lp")
	s, err := file.Open(path, file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ps []store.Probe
	for i := range 70000 {
		ps = append(ps, probeAt("a", time.Duration(i)*time.Millisecond, 1))
	}
	if err := s.Write(ctx, store.Batch{Probes: ps}); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := store.ReadProbes(cctx, s, store.Between(hour0, hour0.Add(time.Hour))); err == nil {
		t.Fatal("Probes with a cancelled context succeeded")
	}
}

// A read streams a sampler's file in time order (a round's probes are
// written in lane order, their times a little apart), each point once, the
// later line of a rewritten point winning, as a whole read sorts them; a
// file with lines far out of order (an import of older history) reads the
// same, sorted.
func TestReadInTimeOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.lp")
	f, err := file.Open(path, file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	at := func(lane string, d time.Duration, q float64) store.Probe {
		return store.Probe{Lane: lane, Kind: "free", Time: hour0.Add(d), QueueS: q, OK: true, Outcome: "ok"}
	}
	rounds := [][]store.Probe{
		{at("b", 3*time.Millisecond, 1), at("a", 5*time.Millisecond, 2), at("c", 1*time.Millisecond, 3)},
		{at("a", 20*time.Minute, 4), at("b", 20*time.Minute-time.Second, 5)},
		{at("a", 20*time.Minute, 40)}, // a rewrite: the later line wins
		{at("c", 40*time.Minute, 6)},
		{at("a", -2*time.Hour, 9)}, // an import of older history, read last
	}
	for i, r := range rounds {
		if err := f.Write(ctx, store.Batch{Probes: r}); err != nil {
			t.Fatal(err)
		}
		var whole store.Latest[store.Probe]
		for _, r := range rounds[:i+1] {
			for _, p := range r {
				whole.Put(p)
			}
		}
		got, err := store.ReadProbes(ctx, f, store.Between(hour0.Add(-3*time.Hour), hour0.Add(time.Hour)))
		if want := whole.Sorted(); err != nil || !slices.Equal(got, want) {
			t.Fatalf("after round %d, Read gave\n %+v, %v\nwant\n %+v", i, got, err, want)
		}
		if j := slices.IndexFunc(got, func(p store.Probe) bool { return p.Lane == "a" && p.Time.Equal(hour0.Add(20*time.Minute)) }); i >= 2 && got[j].QueueS != 40 {
			t.Errorf("rewritten point %+v, want the later line's queue 40", got[j])
		}
	}
}

// A line whose timestamp the cheap reader cannot take (a CRLF line end, a
// trailing space) is decoded in full, and a corrupt one is skipped with
// one warning a read.
func TestReadOddLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.lp")
	lines := "probe,kind=free,lane=a queue_s=1,ok=true,outcome=\"ok\" 1795960800000000000\r\n" +
		"probe,kind=free,lane=b queue_s=2,ok=true,outcome=\"ok\" 1795960801000000000 \n" +
		"probe,kind=free,lane=c queue_s=oops 1795960802000000000\n" +
		"probe,kind=free,lane=d queue_s=4,ok=true,outcome=\"ok\" 1795960803000000000\n"
	if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	var warnings []string
	f, err := file.Open(path, file.Options{ReadOnly: true, Warn: func(msg string, _ ...any) { warnings = append(warnings, msg) }})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	q := store.Between(time.Unix(0, 1795960800000000000), time.Unix(0, 1795960900000000000))
	for range 2 {
		warnings = nil
		got, err := store.ReadProbes(ctx, f, q)
		if err != nil || len(got) != 3 || got[0].Lane != "a" || got[1].Lane != "b" || got[2].Lane != "d" {
			t.Fatalf("Read: %+v, %v; want a, b and d", got, err)
		}
		if len(warnings) != 1 {
			t.Errorf("warned %q; want the corrupt line once", warnings)
		}
	}
}

// FuzzRead: no file content makes a read fail or panic.
func FuzzRead(f *testing.F) {
	good := "queue_hourly,kind=free,lane=a worst_queue_s=1,worst_gen_s=2,min_tok_per_s=3,samples=1i,failures=0i,eligible=true 1795960800000000000\n"
	f.Add([]byte(good))
	f.Add([]byte(good + "probe,kind=free,lane=a queue_s=1 1795960800000000001\nqueue_hourly,kind="))
	f.Add([]byte("\n#x\n\x00\r\n" + good))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "s.lp")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := file.Open(path, file.Options{ReadOnly: true, Warn: func(string, ...any) {}})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		from, to := time.Unix(0, math.MinInt64), time.Unix(0, math.MaxInt64)
		err = s.Read(t.Context(), store.Between(from, to), store.Reader{
			Probe:     func(store.Probe) error { return nil },
			Hourly:    func(store.Hourly) error { return nil },
			Heartbeat: func(store.Heartbeat) error { return nil },
		})
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
	})
}
