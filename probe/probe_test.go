package probe

import (
	"context"
	"testing"
	"time"
)

// Zero and negative Target fields take the defaults; set ones are kept.
func TestTargetDefaults(t *testing.T) {
	def := Target{Timeout: DefaultTimeout, MaxBytes: DefaultMaxBytes, MaxLine: DefaultMaxLine, MaxTokens: DefaultMaxTokens, Prompt: DefaultPrompt}
	for _, c := range []struct {
		name string
		in   Target
		want Target
	}{
		{"zero", Target{}, def},
		{"negative", Target{Timeout: -1, MaxBytes: -1, MaxLine: -1, MaxTokens: -1}, def},
		{"set", Target{Timeout: time.Second, MaxBytes: 1, MaxLine: 2, MaxTokens: 3, Prompt: "p"},
			Target{Timeout: time.Second, MaxBytes: 1, MaxLine: 2, MaxTokens: 3, Prompt: "p"}},
	} {
		if got := c.in.withDefaults(); got != c.want {
			t.Errorf("%s: withDefaults = %+v, want %+v", c.name, got, c.want)
		}
	}
}

// A timed-out probe ends at its deadline when the deadline fell after its
// start, and at the moment it gave up when the caller's deadline had
// already passed before the probe started (never before its start).
func TestTimeoutEndsAtTheDeadline(t *testing.T) {
	start := time.Now()
	dl := start.Add(20 * time.Millisecond)
	ctx, cancel := context.WithDeadline(context.Background(), dl)
	defer cancel()
	<-ctx.Done()
	time.Sleep(10 * time.Millisecond) // give up well after the deadline
	r := &run{s: Sample{Start: start}}
	if f := r.timeout(ctx); f.Outcome != Timeout || !r.s.End.Equal(dl) {
		t.Fatalf("timeout: %s, end %v after start; want timeout, end at the deadline (%v)", f.Outcome, r.s.End.Sub(start), dl.Sub(start))
	}

	past, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	r = &run{s: Sample{Start: time.Now()}}
	before := time.Now()
	r.timeout(past)
	if r.s.End.Before(before) {
		t.Fatalf("timeout with a deadline before the start: end %v before the start", r.s.Start.Sub(r.s.End))
	}
}

// An API key may hold printable ASCII, spaces and tabs, but no other
// control character.
func TestValidHeaderValue(t *testing.T) {
	for _, c := range []struct {
		in string
		ok bool
	}{
		{"sk-abc", true}, {"a b", true}, {"a\tb", true}, {"~", true}, {"", true},
		{"a\nb", false}, {"a\rb", false}, {"\x00", false}, {"\x1f", false}, {"\x7f", false},
	} {
		if got := validHeaderValue(c.in); got != c.ok {
			t.Errorf("validHeaderValue(%q) = %v, want %v", c.in, got, c.ok)
		}
	}
}
