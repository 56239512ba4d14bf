package store_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/storetest"
)

func TestFileContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := store.OpenFile(filepath.Join(t.TempDir(), "data", "samples.lp"), store.FileOptions{Warn: failOnWarn(t)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// warnings collects Warn calls.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) warn(msg string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	b.WriteString(msg)
	for i := 0; i+1 < len(args); i += 2 {
		fmt.Fprintf(&b, " %v=%v", args[i], args[i+1])
	}
	w.msgs = append(w.msgs, b.String())
}

func (w *warnings) all() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.msgs, "\n")
}

func (w *warnings) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.msgs)
}

func failOnWarn(t *testing.T) func(string, ...any) {
	return func(msg string, args ...any) {
		t.Errorf("unexpected warning: %s %v", msg, args)
	}
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

func TestFileLineFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "deep", "er", "samples.lp")
	s, err := store.OpenFile(path, store.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p := store.Probe{Lane: "free", Kind: "free", Time: hour0.Add(7*time.Minute + 3*time.Second + 5), QueueS: 35.25, GenS: 1.5, HeadersS: 0.125, Tokens: 16, OK: true, Outcome: `stream_error "x"`, Status: 200}
	q := store.Probe{Lane: "or", Kind: "free", Site: "fra1", Time: hour0.Add(8 * time.Minute), QueueS: 2, ConnectS: 0.25, Outcome: "rate_limited", Status: 429,
		QuotaKnown: true, QuotaRemaining: 0, QuotaResetS: 3600}
	h := store.Hourly{Lane: "a b", Kind: "paid", Hour: hour0, WorstQueueS: 1, WorstGenS: 0, MinTokPerS: 41.5, Samples: 3, Failures: 1, Eligible: false, WorstCensoredS: 30.5}
	if err := s.Write(ctx, []store.Probe{p, q}, []store.Hourly{h}); err != nil {
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

func TestFileBadLines(t *testing.T) {
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
			var w warnings
			s, err := store.OpenFile(path, store.FileOptions{ReadOnly: true, Warn: w.warn})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			hs, err := s.Hourly(ctx, store.Between(hour0.Add(-time.Hour), hour0.Add(24*time.Hour)))
			if err != nil {
				t.Fatalf("Hourly: %v (bad lines must not be fatal)", err)
			}
			if len(hs) != c.hourly {
				t.Errorf("Hourly returned %d points, want %d: %+v", len(hs), c.hourly, hs)
			}
			if c.warnHourly == "" && w.count() > 0 {
				t.Errorf("unexpected warnings: %s", w.all())
			}
			if c.warnHourly != "" && !strings.Contains(w.all(), c.warnHourly) {
				t.Errorf("warnings %q do not mention %q", w.all(), c.warnHourly)
			}
			ps, err := s.Probes(ctx, store.Between(hour0.Add(-time.Hour), hour0.Add(24*time.Hour)))
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
func TestFileAppendAfterTornTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "samples.lp")
	s, err := store.OpenFile(path, store.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, []store.Probe{probeAt("a", 0, 1)}, []store.Hourly{hourlyAt("a", 0, 1)}); err != nil {
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

	var w warnings
	s, err = store.OpenFile(path, store.FileOptions{Warn: w.warn})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !strings.Contains(w.all(), "torn") || !strings.Contains(w.all(), "line=3") {
		t.Errorf("open warnings = %q, want a torn line 3", w.all())
	}
	if err := s.Write(ctx, []store.Probe{probeAt("b", time.Minute, 2)}, nil); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if n := bytes.Count(b, []byte("\n")); n != 3 || !bytes.HasSuffix(b, []byte("\n")) {
		t.Fatalf("file has %d lines, want 3 whole lines:\n%s", n, b)
	}
	ps, err := s.Probes(ctx, store.Between(hour0, hour0.Add(time.Hour)))
	if err != nil || len(ps) != 2 || ps[1].Lane != "b" || ps[1].QueueS != 2 {
		t.Fatalf("Probes = %+v, %v; want a then b(2)", ps, err)
	}
	if w.count() != 1 {
		t.Errorf("warnings after repair: %s", w.all())
	}
}

func TestFileLocking(t *testing.T) {
	path := filepath.Join(t.TempDir(), "samples.lp")
	w1, err := store.OpenFile(path, store.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("second writer is refused, naming the path", func(t *testing.T) {
		_, err := store.OpenFile(path, store.FileOptions{})
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "in use") {
			t.Fatalf("second OpenFile = %v; want an in-use error naming %s", err, path)
		}
	})
	t.Run("reader works while the writer holds the lock", func(t *testing.T) {
		if err := w1.Write(ctx, nil, []store.Hourly{hourlyAt("a", 0, 5)}); err != nil {
			t.Fatal(err)
		}
		r, err := store.OpenFile(path, store.FileOptions{ReadOnly: true})
		if err != nil {
			t.Fatalf("read-only open while locked: %v", err)
		}
		defer r.Close()
		hs, err := r.Hourly(ctx, store.Between(hour0, hour0.Add(time.Hour)))
		if err != nil || len(hs) != 1 || hs[0].WorstQueueS != 5 {
			t.Fatalf("reader Hourly = %+v, %v", hs, err)
		}
		if err := r.Write(ctx, nil, []store.Hourly{hourlyAt("a", 0, 6)}); err == nil || !strings.Contains(err.Error(), "read-only") {
			t.Fatalf("Write on read-only store = %v; want a read-only error", err)
		}
	})
	t.Run("lock is released by Close", func(t *testing.T) {
		if err := w1.Close(); err != nil {
			t.Fatal(err)
		}
		w2, err := store.OpenFile(path, store.FileOptions{})
		if err != nil {
			t.Fatalf("OpenFile after Close: %v", err)
		}
		_ = w2.Close()
	})
	t.Run("closed store refuses calls", func(t *testing.T) {
		if err := w1.Write(ctx, nil, nil); err == nil {
			t.Error("Write after Close succeeded")
		}
		if _, err := w1.Hourly(ctx, store.Between(hour0, hour0.Add(time.Hour))); err == nil {
			t.Error("Hourly after Close succeeded")
		}
	})
	t.Run("read-only open of a missing file fails", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "nope.lp")
		_, err := store.OpenFile(missing, store.FileOptions{ReadOnly: true})
		if err == nil || !strings.Contains(err.Error(), missing) {
			t.Fatalf("OpenFile = %v; want an error naming %s", err, missing)
		}
	})
}

// A reader running while rounds are appended never sees half a round.
func TestFileReadWhileWriting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "samples.lp")
	w, err := store.OpenFile(path, store.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var warn warnings
	r, err := store.OpenFile(path, store.FileOptions{ReadOnly: true, Warn: warn.warn})
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
			if err := w.Write(ctx, ps, nil); err != nil {
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
		ps, err := r.Probes(ctx, store.Between(hour0, hour0.Add(time.Hour)))
		if err != nil {
			t.Fatal(err)
		}
		if len(ps)%lanes != 0 {
			t.Fatalf("reader saw %d probes: half a round", len(ps))
		}
	}
	if warn.count() > 0 {
		t.Errorf("reader warned: %s", warn.all())
	}
}

func TestFileReplacementAcrossRounds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "samples.lp")
	s, err := store.OpenFile(path, store.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 3 {
		if err := s.Write(ctx, nil, []store.Hourly{hourlyAt("a", 0, float64(i)), hourlyAt("b", 0, float64(10+i))}); err != nil {
			t.Fatal(err)
		}
	}
	hs, err := s.Hourly(ctx, store.Between(hour0, hour0.Add(time.Hour)))
	if err != nil || len(hs) != 2 || hs[0].WorstQueueS != 2 || hs[1].WorstQueueS != 12 {
		t.Fatalf("Hourly = %+v, %v; want a=2, b=12 (the last rewrite)", hs, err)
	}
	// Reopened, the rule still holds: it is in the file, not in memory.
	_ = s.Close()
	r, err := store.OpenFile(path, store.FileOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	hs, err = r.Hourly(ctx, store.Between(hour0, hour0.Add(time.Hour)))
	if err != nil || len(hs) != 2 || hs[0].WorstQueueS != 2 {
		t.Fatalf("after reopen Hourly = %+v, %v", hs, err)
	}
}

func TestFileReadCancelled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "samples.lp")
	s, err := store.OpenFile(path, store.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ps []store.Probe
	for i := range 70000 {
		ps = append(ps, probeAt("a", time.Duration(i)*time.Millisecond, 1))
	}
	if err := s.Write(ctx, ps, nil); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Probes(cctx, store.Between(hour0, hour0.Add(time.Hour))); err == nil {
		t.Fatal("Probes with a cancelled context succeeded")
	}
}

// ScanProbes streams a sampler's file in time order (a round's probes are
// written in lane order, their times a little apart), each point once, the
// later line of a rewritten point winning; it stops at a line more than an
// hour older than one before it, and says so.
func TestFileScanProbes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.lp")
	f, err := store.OpenFile(path, store.FileOptions{})
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
	}
	for _, r := range rounds {
		if err := f.Write(ctx, r, nil); err != nil {
			t.Fatal(err)
		}
	}
	var got []store.Probe
	ordered, err := f.ScanProbes(ctx, store.Between(hour0, hour0.Add(time.Hour)), func(p store.Probe) error {
		got = append(got, p)
		return nil
	})
	if err != nil || !ordered {
		t.Fatalf("ScanProbes = %v, %v", ordered, err)
	}
	want, err := f.Probes(ctx, store.Between(hour0, hour0.Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) { // what Probes says, in the same order
		t.Fatalf("ScanProbes gave\n %+v\nProbes gives\n %+v", got, want)
	}
	if got[4].QueueS != 40 {
		t.Errorf("rewritten point %+v, want the later line's queue 40", got[4])
	}
	// An import of older history appends lines out of order: declined.
	if err := f.Write(ctx, []store.Probe{at("a", -2*time.Hour, 9)}, nil); err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	ordered, err = f.ScanProbes(ctx, store.Between(hour0.Add(-3*time.Hour), hour0.Add(time.Hour)), func(p store.Probe) error {
		got = append(got, p)
		return nil
	})
	if err != nil || ordered {
		t.Fatalf("ScanProbes over an out-of-order file = %v, %v; want false, nil", ordered, err)
	}
	if !slices.IsSortedFunc(got, func(a, b store.Probe) int { return a.Time.Compare(b.Time) }) {
		t.Fatalf("before it stopped, ScanProbes gave points out of order: %+v", got)
	}
}

// ScanProbes and Probes read the same lines: one whose timestamp the cheap
// reader cannot take (a CRLF line end, a trailing space) is decoded in
// full by both, and a corrupt one skipped by both, with a warning.
func TestFileScanProbesReadsWhatProbesReads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.lp")
	lines := "probe,kind=free,lane=a queue_s=1,ok=true,outcome=\"ok\" 1795960800000000000\r\n" +
		"probe,kind=free,lane=b queue_s=2,ok=true,outcome=\"ok\" 1795960801000000000 \n" +
		"probe,kind=free,lane=c queue_s=oops 1795960802000000000\n" +
		"probe,kind=free,lane=d queue_s=4,ok=true,outcome=\"ok\" 1795960803000000000\n"
	if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	var warnings []string
	f, err := store.OpenFile(path, store.FileOptions{ReadOnly: true, Warn: func(msg string, _ ...any) { warnings = append(warnings, msg) }})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	q := store.Between(time.Unix(0, 1795960800000000000), time.Unix(0, 1795960900000000000))
	want, err := f.Probes(ctx, q)
	if err != nil || len(want) != 3 {
		t.Fatalf("Probes: %d points, %v; want a, b and d", len(want), err)
	}
	probesWarned := slices.Clone(warnings)
	warnings = nil
	var got []store.Probe
	ordered, err := f.ScanProbes(ctx, q, func(p store.Probe) error {
		got = append(got, p)
		return nil
	})
	if err != nil || !ordered || !slices.Equal(got, want) {
		t.Fatalf("ScanProbes = %v, %v:\n %+v\nProbes:\n %+v", ordered, err, got, want)
	}
	if !slices.Equal(warnings, probesWarned) || len(warnings) != 1 {
		t.Errorf("ScanProbes warned %q, Probes %q; want the corrupt line once each", warnings, probesWarned)
	}
}
