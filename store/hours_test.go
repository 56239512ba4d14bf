package store

import (
	"strings"
	"testing"
	"time"
)

func mustLoc(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestStart(t *testing.T) {
	kolkata := mustLoc(t, "Asia/Kolkata")
	ny := mustLoc(t, "America/New_York")
	cases := []struct {
		name string
		t    time.Time
		loc  *time.Location
		want string // RFC 3339 of the start
	}{
		{"utc", time.Date(2026, 11, 30, 14, 47, 3, 5, time.UTC), nil, "2026-11-30T14:00:00Z"},
		{"half-hour offset", time.Date(2026, 11, 30, 9, 10, 0, 0, time.UTC), kolkata, "2026-11-30T14:00:00+05:30"},
		{"half-hour offset, before the half", time.Date(2026, 11, 30, 8, 59, 0, 0, time.UTC), kolkata, "2026-11-30T14:00:00+05:30"},
		{"fall-back first 01h", time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC), ny, "2026-11-01T01:00:00-04:00"},
		{"fall-back second 01h", time.Date(2026, 11, 1, 6, 30, 0, 0, time.UTC), ny, "2026-11-01T01:00:00-05:00"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := HourStart(c.t, c.loc).Format(time.RFC3339); got != c.want {
				t.Errorf("Start = %s, want %s", got, c.want)
			}
		})
	}
}

func TestParse(t *testing.T) {
	ny := mustLoc(t, "America/New_York")
	good := []struct {
		s    string
		loc  *time.Location
		want string
	}{
		{"2026-11-30T14", nil, "2026-11-30T14:00:00Z"},
		{"2026-11-01T01", ny, "2026-11-01T01:00:00-04:00"}, // the repeated hour: first occurrence
	}
	for _, c := range good {
		got, err := ParseHour(c.s, c.loc)
		if err != nil || got.Format(time.RFC3339) != c.want {
			t.Errorf("ParseHour(%q) = %v, %v; want %s", c.s, got, err, c.want)
		}
	}
	bad := []struct {
		s, loc, want string
	}{
		{"2026-11-30T5", "UTC", `hour "2026-11-30T5": want YYYY-MM-DDTHH`},
		{"2026-11-30 14", "UTC", "want YYYY-MM-DDTHH"},
		{"2026-11-30T25", "UTC", "hour out of range"},
		{"2026-02-30T01", "UTC", "day out of range"},
		{"2026-03-08T02", "America/New_York", "does not exist in America/New_York (DST change)"},
	}
	for _, c := range bad {
		_, err := ParseHour(c.s, mustLoc(t, c.loc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseHour(%q) error = %v, want it to say %q", c.s, err, c.want)
		}
	}
}

func TestParseDay(t *testing.T) {
	got, err := ParseDay("2026-12-01", nil)
	if err != nil || !got.Equal(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)) {
		t.Fatalf("ParseDay = %v, %v", got, err)
	}
	for _, s := range []string{"2026-12-1", "2026-13-01", "tomorrow"} {
		if _, err := ParseDay(s, nil); err == nil || !strings.Contains(err.Error(), "want YYYY-MM-DD") {
			t.Errorf("ParseDay(%q) error = %v", s, err)
		}
	}
}

func TestLabelRoundTrip(t *testing.T) {
	loc := mustLoc(t, "Asia/Kathmandu") // +05:45
	for h := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC); h.Year() == 2026; h = h.Add(97 * time.Minute) {
		s := HourStart(h, loc)
		p, err := ParseHour(HourLabel(s, loc), loc)
		if err != nil || !p.Equal(s) {
			t.Fatalf("ParseHour(HourLabel(%s)) = %v, %v", s, p, err)
		}
	}
}
