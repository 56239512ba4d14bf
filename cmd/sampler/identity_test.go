package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/store"
)

// A heartbeat is live for two intervals, so the interval is the longest
// gap between two rounds, not the shortest: an uneven schedule's active
// instance must not look dead in its long gap.
func TestLongestGap(t *testing.T) {
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		spec string
		want time.Duration
	}{
		{"@every 90s", 90 * time.Second},
		{"7,27,47 * * * *", 20 * time.Minute},
		{"0,5 * * * *", 55 * time.Minute},
		{"0 9,17 * * *", 16 * time.Hour},
		{"0 9 * * 1", 7 * 24 * time.Hour},
		{"not a schedule", 0},
	}
	for _, c := range cases {
		if _, got := config.Gaps(c.spec, time.UTC, now); got != c.want {
			t.Errorf("config.Gaps(%q) longest = %s, want %s", c.spec, got, c.want)
		}
	}
}

// Each start is a new instance, host-pid-random; its interval adds the
// jitter to the schedule's longest gap.
func TestNewIdentity(t *testing.T) {
	cfg := &config.Config{Schedule: "@every 1m", Location: time.UTC, Jitter: config.Duration(30 * time.Second)}
	start := time.Now()
	a, b := newIdentity(cfg, start), newIdentity(cfg, start)
	if a.Instance == b.Instance {
		t.Errorf("two starts share the instance %s", a.Instance)
	}
	if !regexp.MustCompile(`^.+-[0-9]+-[0-9a-f]{8}$`).MatchString(a.Instance) || a.Host == "" || a.Version == "" {
		t.Errorf("identity %+v: want host-pid-hex, a host and a version", a)
	}
	if a.Interval != 90*time.Second || !a.Start.Equal(start) {
		t.Errorf("interval %s start %s, want 1m30s and %s", a.Interval, a.Start, start)
	}
}

// What the heartbeats say once is logged once per key, and the memory of
// it stays bounded however many instances a store's points name: past
// maxTold keys it starts afresh.
func TestFirstTime(t *testing.T) {
	d := &daemon{told: map[string]bool{}}
	if !d.firstTime("ignored a") || d.firstTime("ignored a") || !d.firstTime("ignored b") {
		t.Fatal("firstTime: want true once per key, then false")
	}
	for i := range 3 * maxTold {
		d.firstTime(fmt.Sprint("ignored x", i))
		if len(d.told) > maxTold {
			t.Fatalf("after %d keys the daemon remembers %d, more than %d", i+1, len(d.told), maxTold)
		}
	}
}

// A site that lists other sites is logged once while it does, again if it
// starts anew; when none does any more the daemon says the sites agree.
func TestLogSites(t *testing.T) {
	var buf bytes.Buffer
	d := &daemon{cfg: &config.Config{Sites: []string{"iad1", "fra1"}}, log: slog.New(slog.NewTextHandler(&buf, nil))}
	iad := store.Heartbeat{Instance: "i", Host: "h", Site: "iad1", Sites: "fra1,iad1,sgp1"}
	sgp := store.Heartbeat{Instance: "s", Host: "h", Site: "sgp1", Sites: "sgp1"}
	for _, c := range []struct {
		disagree []store.Heartbeat
		want     string // the lines logged, "" for none
	}{
		{[]store.Heartbeat{iad}, "level=ERROR msg=\"sites disagree: site iad1 shares the account quotas with the sites fra1,iad1,sgp1, this one with fra1,iad1; their lanes are not probed until every site lists the same sites\" other_site=iad1 other_sites=fra1,iad1,sgp1 sites=fra1,iad1 instance=i host=h\n"},
		{[]store.Heartbeat{iad}, ""},
		{[]store.Heartbeat{iad, sgp}, "other_site=sgp1"},
		{[]store.Heartbeat{sgp}, ""},
		{nil, "level=INFO msg=\"sites agree: every site sharing the account quotas lists the same sites; their lanes are probed again\" sites=fra1,iad1\n"},
		{nil, ""},
		{[]store.Heartbeat{iad}, "other_site=iad1"},
	} {
		buf.Reset()
		d.logSites(c.disagree)
		got := regexp.MustCompile(`time=\S+ `).ReplaceAllString(buf.String(), "")
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) || strings.Count(got, "\n") > 1 {
			t.Errorf("after %d disagreeing: logged %q, want %q", len(c.disagree), got, c.want)
		}
	}
}
