package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
)

// A lane that timed out at 30 s before its first token in one probe of an
// hour waited at least 30 s: that hour's next_queue_s is at least 30 in the
// live policy, in the next days' forecast, and swings shows >30.0 — where
// the ok probes alone say 3 s.
func TestCensoredTimeoutCounts(t *testing.T) {
	fx := newFixture(t, "UTC")
	h := time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)
	st, err := file.Open(fx.store, file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := store.NewRecorder(st, time.UTC)
	var ps []store.Probe
	for i, m := range []int{7, 27, 47} {
		at := h.Add(time.Duration(m) * time.Minute)
		p := store.Probe{Lane: "free", Kind: "free", Time: at, QueueS: 3, GenS: 0.5, Tokens: 12, OK: true, Outcome: "ok", Status: 200}
		if i == 1 { // timed out 30 s after the request was written, no token
			p = store.Probe{Lane: "free", Kind: "free", Time: at, QueueS: 30, OK: false, Outcome: "timeout", Status: 200}
		}
		ps = append(ps, p, store.Probe{Lane: "paid", Kind: "paid", Time: at.Add(time.Second), QueueS: 1, GenS: 0.2, Tokens: 12, OK: true, Outcome: "ok", Status: 200})
	}
	if _, err := rec.Record(context.Background(), ps); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	live := runOK(t, &env{}, "", "-config", fx.config, "-hour", "2026-11-29T14", "-print")
	f, err := policy.ParseFile([]byte(live.stdout))
	if err != nil {
		t.Fatal(err)
	}
	if l := f.Lanes[0]; l.NextQueueS < 30 || l.Reason != policy.ReasonProbeFailed {
		t.Errorf("live policy: free %+v; want next_queue_s >= 30 and probe_failed (eligibility unchanged)", l)
	}

	fc := runOK(t, &env{}, "", "-config", fx.config, "-day", "2026-11-30", "-print")
	docs := strings.Split(fc.stdout, "\n---\n")
	if len(docs) != 24 {
		t.Fatalf("%d forecast files, want 24", len(docs))
	}
	f, err = policy.ParseFile([]byte(docs[14]))
	if err != nil {
		t.Fatal(err)
	}
	if l := f.Lanes[0]; f.Hour != "2026-11-30T14" || l.NextQueueS < 30 {
		t.Errorf("forecast %s: free %+v; want next_queue_s >= 30", f.Hour, l)
	}

	now := func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) }
	sw := runOK(t, &env{now: now}, "", "swings", "-config", fx.config, "-days", "3")
	if !strings.Contains(sw.stdout, ">30.0") {
		t.Errorf("swings does not show the censored hour as >30.0:\n%s", sw.stdout)
	}
}

// Before the first sampler round the store file does not exist: a fresh
// install, not an error. The hour's file says never_sampled for every lane
// and policygen exits 0 with a note, so CI fails safe rather than red.
func TestFreshInstall(t *testing.T) {
	fx := newFixture(t, "UTC")
	r := (&env{}).exec(t, "", "-config", fx.config, "-hour", "2026-11-30T14", "-print")
	if r.code != 0 || !strings.Contains(r.stderr, "nothing sampled yet") || strings.Count(r.stderr, "\n") != 1 {
		t.Fatalf("exit %d, stderr %q; want 0 and one note", r.code, r.stderr)
	}
	f, err := policy.ParseFile([]byte(r.stdout[strings.Index(r.stdout, "\n")+1:]))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range f.Lanes {
		if l.Eligible || l.Reason != policy.ReasonNeverSampled {
			t.Errorf("lane %+v; want never_sampled", l)
		}
	}
}

// A lane with history, asked about an hour past it, has no recent sample,
// with its last sample: it is not never_sampled. An hour further past than
// the window a policy reads (docs/policy.md#eligibility; here 8 days)
// knows no probe of it: never_sampled, last_sample null.
func TestFarHourIsNoRecentSample(t *testing.T) {
	fx := newFixture(t, "UTC")
	fx.seed(t, history(time.UTC, time.Date(2026, 11, 30, 14, 30, 0, 0, time.UTC), 1))
	for _, tc := range []struct {
		hour   string
		reason string
	}{
		{"2026-12-07T09", policy.ReasonNoRecentSample},
		{"2027-06-01T09", policy.ReasonNeverSampled},
	} {
		r := runOK(t, &env{}, "", "-config", fx.config, "-hour", tc.hour, "-print")
		f, err := policy.ParseFile([]byte(r.stdout[strings.Index(r.stdout, "\n")+1:]))
		if err != nil {
			t.Fatal(err)
		}
		if l := f.Lanes[0]; l.Reason != tc.reason || l.LastSample.IsZero() != (tc.reason == policy.ReasonNeverSampled) {
			t.Fatalf("%s: free %+v; want %s", tc.hour, l, tc.reason)
		}
	}
}
