package store

// The hour keys ("2026-11-30T14", wall-clock time in the config's zone):
// the one rule every package uses, across DST and half-hour zones.

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// HourLayout is how an hour is written.
const HourLayout = "2006-01-02T15"

// HourStart returns the start, in loc (nil: UTC), of the wall-clock hour
// that holds t; in a repeated hour, of t's own occurrence of it.
func HourStart(t time.Time, loc *time.Location) time.Time {
	lt := t.In(OrUTC(loc))
	into := time.Duration(lt.Minute())*time.Minute +
		time.Duration(lt.Second())*time.Second +
		time.Duration(lt.Nanosecond())
	start := lt.Add(-into)
	if start.Minute() != 0 || start.Second() != 0 || start.Nanosecond() != 0 || start.Hour() != lt.Hour() {
		// The offset changed inside this hour: use the wall-clock date.
		start = time.Date(lt.Year(), lt.Month(), lt.Day(), lt.Hour(), 0, 0, 0, lt.Location())
	}
	return start
}

// HourLabel returns the key of the hour holding t: "YYYY-MM-DDTHH" in loc.
func HourLabel(t time.Time, loc *time.Location) string {
	return t.In(OrUTC(loc)).Format(HourLayout)
}

var hourRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}$`)

// ParseHour parses an hour key in loc and returns the start of that hour
// (of a repeated hour, its first occurrence; a skipped one is an error).
func ParseHour(s string, loc *time.Location) (time.Time, error) {
	loc = OrUTC(loc)
	if !hourRE.MatchString(s) {
		return time.Time{}, fmt.Errorf("hour %q: want YYYY-MM-DDTHH", s)
	}
	t, err := time.ParseInLocation(HourLayout, s, loc)
	if err != nil {
		return time.Time{}, fmt.Errorf("hour %q: want YYYY-MM-DDTHH (%s)", s, dateProblem(err))
	}
	// ParseInLocation normalises a skipped hour: take the earliest match.
	var first time.Time
	for _, c := range []time.Time{t.Add(-time.Hour), t, t.Add(time.Hour)} {
		c = HourStart(c, loc)
		if HourLabel(c, loc) == s && (first.IsZero() || c.Before(first)) {
			first = c
		}
	}
	if first.IsZero() {
		return time.Time{}, fmt.Errorf("hour %s: does not exist in %s (DST change)", s, loc)
	}
	return first, nil
}

var dayRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// ParseDay parses a day "YYYY-MM-DD" and returns its noon in loc.
func ParseDay(s string, loc *time.Location) (time.Time, error) {
	loc = OrUTC(loc)
	if !dayRE.MatchString(s) {
		return time.Time{}, fmt.Errorf("day %q: want YYYY-MM-DD", s)
	}
	t, err := time.ParseInLocation(time.DateOnly, s, loc)
	if err != nil {
		return time.Time{}, fmt.Errorf("day %q: want YYYY-MM-DD (%s)", s, dateProblem(err))
	}
	return time.Date(t.Year(), t.Month(), t.Day(), 12, 0, 0, 0, loc), nil
}

// dateProblem says which part of a well-shaped date is out of range.
func dateProblem(err error) string {
	var pe *time.ParseError
	if errors.As(err, &pe) && pe.Message != "" {
		return strings.TrimPrefix(pe.Message, ": ")
	}
	return "out of range"
}

// DayStart returns the first instant of the calendar day holding t in loc.
func DayStart(t time.Time, loc *time.Location) time.Time {
	lt := t.In(OrUTC(loc))
	return time.Date(lt.Year(), lt.Month(), lt.Day(), 0, 0, 0, 0, lt.Location())
}

// OrUTC returns loc, or time.UTC for nil.
func OrUTC(loc *time.Location) *time.Location {
	if loc == nil {
		return time.UTC
	}
	return loc
}

// RetentionCut keeps days days of probes at now, on an hour's start in loc
// so that no hour keeps part of its probes.
func RetentionCut(now time.Time, days int, loc *time.Location) time.Time {
	return HourStart(now.Add(-time.Duration(days)*24*time.Hour), loc)
}
