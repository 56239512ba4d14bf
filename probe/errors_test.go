package probe

import (
	"strings"
	"testing"
)

// safeToken lets through 1 to 48 bytes of letters, digits and _.:/+- and
// nothing else; each range is checked at both ends and one past them.
func TestSafeToken(t *testing.T) {
	for _, c := range []struct {
		in   string
		safe bool
	}{
		{"", false},
		{"a", true},
		{strings.Repeat("x", 48), true},
		{strings.Repeat("x", 49), false},
		{"az", true}, {"AZ", true}, {"09", true}, {"_.:/+-", true},
		{"rate_limit_error", true}, {"text/event-stream", true},
		{"`", false}, {"{", false}, // 'a'-1, 'z'+1
		{"@", false}, {"[", false}, // 'A'-1, 'Z'+1
		{";", false}, {"a;b", false}, // ('0'-1 and '9'+1 are '/' and ':', both in the list)
		{"a b", false}, {"é", false}, {"a\n", false}, {"a*", false},
	} {
		want := ""
		if c.safe {
			want = c.in
		}
		if got := safeToken(c.in); got != want {
			t.Errorf("safeToken(%q) = %q, want %q", c.in, got, want)
		}
	}
}

// safeHeader lets through up to 64 bytes of printable ASCII (0x20-0x7e).
func TestSafeHeader(t *testing.T) {
	for _, c := range []struct {
		in   string
		safe bool
	}{
		{"", true},
		{"7", true},
		{" ~", true}, // 0x20 and 0x7e
		{"\x1f", false},
		{"\x7f", false},
		{"Wed, 21 Oct 2015 07:28:00 GMT", true},
		{strings.Repeat("9", 64), true},
		{strings.Repeat("9", 65), false},
		{"7\xff", false},
	} {
		want := ""
		if c.safe {
			want = c.in
		}
		if got := safeHeader(c.in); got != want {
			t.Errorf("safeHeader(%q) = %q, want %q", c.in, got, want)
		}
	}
}

// An Error's text names the lane and outcome, then the detail when there
// is one.
func TestErrorText(t *testing.T) {
	for _, c := range []struct {
		e    Error
		want string
	}{
		{Error{Lane: "l1", Outcome: Timeout, Detail: "deadline exceeded after 1.0s"}, `probe lane "l1": timeout: deadline exceeded after 1.0s`},
		{Error{Lane: "l1", Outcome: Empty}, `probe lane "l1": empty`},
	} {
		if got := c.e.Error(); got != c.want {
			t.Errorf("Error() = %q, want %q", got, c.want)
		}
	}
}

// A detail of exactly maxDetail (160) bytes is kept whole; one byte more is
// cut to 160 and marked.
func TestScrubAtTheCap(t *testing.T) {
	at := strings.Repeat("d", maxDetail)
	for _, c := range []struct{ in, want string }{
		{at, at},
		{at + "e", at + "..."},
	} {
		if got := scrub(c.in, ""); got != c.want {
			t.Errorf("scrub(%d bytes) = %d bytes %q..., want %d bytes", len(c.in), len(got), got[len(got)-4:], len(c.want))
		}
	}
}

func TestScrub(t *testing.T) {
	tests := []struct{ name, in, key, want string }{
		{"key removed", "bad sk-1 here", "sk-1", "bad [redacted] here"},
		{"no key set", "bad sk-1 here", "", "bad sk-1 here"},
		{"long cut", string(make([]byte, 200)), "", string(make([]byte, maxDetail)) + "..."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := scrub(tt.in, tt.key); got != tt.want {
				t.Errorf("scrub = %q, want %q", got, tt.want)
			}
		})
	}
}
