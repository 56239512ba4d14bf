package store

// The hour keys: the one rule every lanewatch package uses to say which
// hour an instant belongs to ("2026-11-30T14", wall-clock time in the
// config's zone), so that the sampler's hourly records, the policy files
// and every report agree, including in zones whose offset is not a whole
// number of hours (India, Nepal, Newfoundland) and across DST changes.

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// HourLayout is how an hour is written: wall-clock time in the config's zone.
const HourLayout = "2006-01-02T15"

// DayLayout is how a day is written.
const DayLayout = "2006-01-02"

// HourStart returns the start of the wall-clock hour that holds t, as hours run
// in loc (nil means UTC). In the repeated hour of a fall-back, each instant
// maps to the start of its own occurrence of that hour. The result is in loc.
func HourStart(t time.Time, loc *time.Location) time.Time {
	lt := t.In(OrUTC(loc))
	into := time.Duration(lt.Minute())*time.Minute +
		time.Duration(lt.Second())*time.Second +
		time.Duration(lt.Nanosecond())
	start := lt.Add(-into)
	if start.Minute() != 0 || start.Second() != 0 || start.Nanosecond() != 0 || start.Hour() != lt.Hour() {
		// The offset changed inside this hour (a zone whose DST shift is
		// not a whole hour): fall back to the wall-clock date.
		start = time.Date(lt.Year(), lt.Month(), lt.Day(), lt.Hour(), 0, 0, 0, lt.Location())
	}
	return start
}

// HourLabel returns the key of the hour holding t: "YYYY-MM-DDTHH" in loc.
func HourLabel(t time.Time, loc *time.Location) string {
	return t.In(OrUTC(loc)).Format(HourLayout)
}

var hourRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}$`)

// ParseHour parses an hour key "YYYY-MM-DDTHH" in loc and returns the start of
// that hour. A key of another shape ("2026-11-30T5") is a format error; an
// hour that a DST change skips is an error naming the zone; an hour that a
// DST change repeats gives its first occurrence.
func ParseHour(s string, loc *time.Location) (time.Time, error) {
	loc = OrUTC(loc)
	if !hourRE.MatchString(s) {
		return time.Time{}, fmt.Errorf("hour %q: want YYYY-MM-DDTHH", s)
	}
	t, err := time.ParseInLocation(HourLayout, s, loc)
	if err != nil {
		return time.Time{}, fmt.Errorf("hour %q: want YYYY-MM-DDTHH (%s)", s, dateProblem(err))
	}
	// time.ParseInLocation normalises a skipped hour and picks either
	// occurrence of a repeated one: check, and take the earliest match.
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

// ParseDay parses a day "YYYY-MM-DD" and returns noon of that day in loc (a
// time that exists on every day, whatever the DST rules).
func ParseDay(s string, loc *time.Location) (time.Time, error) {
	loc = OrUTC(loc)
	if !dayRE.MatchString(s) {
		return time.Time{}, fmt.Errorf("day %q: want YYYY-MM-DD", s)
	}
	t, err := time.ParseInLocation(DayLayout, s, loc)
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

// DayStart returns the start of the calendar day holding t in loc (the
// first instant of that date, which a DST change at midnight may move).
func DayStart(t time.Time, loc *time.Location) time.Time {
	lt := t.In(OrUTC(loc))
	return time.Date(lt.Year(), lt.Month(), lt.Day(), 0, 0, 0, 0, lt.Location())
}

// OrUTC returns loc, or time.UTC for nil: the zone of every API here that
// takes a nil location as UTC.
func OrUTC(loc *time.Location) *time.Location {
	if loc == nil {
		return time.UTC
	}
	return loc
}

// RetentionCut is the cut that keeps days days of probes at now: the
// start of the hour (in loc) days×24 h before now, so that no hour keeps
// part of its probes (a rollup of a kept hour sees all of them).
func RetentionCut(now time.Time, days int, loc *time.Location) time.Time {
	return HourStart(now.Add(-time.Duration(days)*24*time.Hour), loc)
}
