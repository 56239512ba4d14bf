package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// -day today and -day tomorrow are the days that hold the env's clock, and
// the one after it, in the config's timezone (not the machine's, not UTC),
// and write the same files as the date spelled out.
func TestDayTodayTomorrow(t *testing.T) {
	for _, tc := range []struct {
		name, tz string
		now      time.Time
		today    string
		tomorrow string
	}{
		{"UTC", "UTC", time.Date(2026, 11, 30, 23, 30, 0, 0, time.UTC), "2026-11-30", "2026-12-01"},
		// 20:00 UTC is 01:30 the next day in India: its today is UTC's tomorrow.
		{"Kolkata ahead of UTC", "Asia/Kolkata", time.Date(2026, 11, 30, 20, 0, 0, 0, time.UTC), "2026-12-01", "2026-12-02"},
		// 03:00 UTC is still the evening before in New York; its tomorrow
		// is the 23-hour spring-forward day.
		{"New York behind UTC", "America/New_York", time.Date(2026, 3, 8, 3, 0, 0, 0, time.UTC), "2026-03-07", "2026-03-08"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, tc.tz)
			fx.seed(t, history(fx.loc, tc.now, 8))
			for _, c := range []struct{ word, date string }{{"today", tc.today}, {"tomorrow", tc.tomorrow}} {
				byWord := filepath.Join(fx.dir, c.word)
				byDate := filepath.Join(fx.dir, c.word+"-by-date")
				r := runOK(t, &env{now: func() time.Time { return tc.now }}, "", "-config", fx.config, "-day", c.word, "-out", byWord)
				paths := strings.Fields(r.stdout)
				if len(paths) != 24 {
					t.Fatalf("-day %s: %d files, want 24:\n%s", c.word, len(paths), r.stdout)
				}
				for i, p := range paths {
					if want := filepath.Join(byWord, fmt.Sprintf("%sT%02d.yaml", c.date, i)); p != want {
						t.Fatalf("-day %s: file %d is %s, want %s", c.word, i, p, want)
					}
				}
				// The date spelled out does not read the clock (env.exec
				// fails the test if it does) and writes the same bytes.
				runOK(t, &env{}, "", "-config", fx.config, "-day", c.date, "-out", byDate)
				for i := range 24 {
					name := fmt.Sprintf("%sT%02d.yaml", c.date, i)
					a, errA := os.ReadFile(filepath.Join(byWord, name))
					b, errB := os.ReadFile(filepath.Join(byDate, name))
					if errA != nil || errB != nil || !bytes.Equal(a, b) {
						t.Fatalf("-day %s and -day %s differ in %s (%v, %v)", c.word, c.date, name, errA, errB)
					}
				}
			}
		})
	}
}

func TestDayBadWord(t *testing.T) {
	fx := newFixture(t, "UTC")
	for _, v := range []string{"yesterday", "Tomorrow", "today+1"} {
		r := (&env{now: time.Now}).exec(t, "", "-config", fx.config, "-day", v)
		if r.code != 2 || !strings.Contains(r.stderr, "want YYYY-MM-DD, today or tomorrow") {
			t.Errorf("-day %q: exit %d, stderr %q; want 2 and the accepted forms", v, r.code, r.stderr)
		}
	}
}
