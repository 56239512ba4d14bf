package load_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/internal/influxtest"
	"github.com/lanewatch/lanewatch/internal/lanesim"
	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/policy/load"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
	"github.com/lanewatch/lanewatch/store/influx"
)

// zoneHistory is ten days of generated probes of two free lanes and a
// paid one, every day recorded as a sampler would (one Record a day).
func zoneHistory(t *testing.T) [][]store.Probe {
	t.Helper()
	var days [][]store.Probe
	err := lanesim.History(lanesim.HistoryOptions{Start: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC), Days: 10, Seed: 5,
		Lanes: []lanesim.HistoryLane{{Name: "free", Kind: "free"}, {Name: "free2", Kind: "free"}, {Name: "paid", Kind: "paid"}}},
		func(day []store.Probe, _ []lanesim.ProbeTruth) error {
			days = append(days, append([]store.Probe(nil), day...))
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return days
}

// recordIn writes the probes to a new file store at path, its hours keyed
// in loc (the zone of the sampler that stored them).
func recordIn(t *testing.T, path string, loc *time.Location, days [][]store.Probe) *file.Store {
	t.Helper()
	st, err := file.Open(path, file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	record(t, st, loc, days)
	return st
}

func record(t *testing.T, st store.Store, loc *time.Location, days [][]store.Probe) {
	t.Helper()
	rec := store.NewRecorder(st, loc)
	for _, d := range days {
		if _, err := rec.Record(context.Background(), d); err != nil {
			t.Fatal(err)
		}
	}
}

func zoneConfig(t *testing.T, dir, zone, rule string) *config.Config {
	t.Helper()
	return parse(t, dir, `timezone: `+zone+`
store: {kind: file, path: x.lp}
lanes:
  - {name: free, kind: free, api: openai, base_url: "http://127.0.0.1:1/v1", model: m}
  - {name: free2, kind: free, api: openai, base_url: "http://127.0.0.1:1/v1", model: m}
  - {name: paid, kind: paid, api: openai, base_url: "http://127.0.0.1:1/v1", model: m}
policy:
  rule: `+rule+`
  lookback_days: 3
  classes: [{name: c, deadline_s: 60, ceiling_tokens: 4000, est_tokens: 800, paid_usd_per_1k: 0.002}]
`)
}

// Changing timezone after sampling: the lanes were sampled with hours
// keyed in UTC, then the config says another zone. Before, a zone whose
// offset is not a whole number of hours from UTC (Kathmandu +5:45, Kolkata
// +5:30) found no record at its hours and wrote no_recent_sample for every
// lane, exit 0. Now its hours are rebuilt from the probes: the live and
// forecast files are byte for byte those of a store sampled in the new
// zone from the start. A whole-hour change (Berlin) keys the same
// instants and always did.
func TestTimezoneChangedAfterSampling(t *testing.T) {
	days := zoneHistory(t)
	dir := t.TempDir()
	utc := recordIn(t, filepath.Join(dir, "utc.lp"), time.UTC, days)
	defer utc.Close()
	zoneChanged(t, dir, utc, func(t *testing.T, loc *time.Location) store.Store {
		st := recordIn(t, filepath.Join(t.TempDir(), "native.lp"), loc, days)
		t.Cleanup(func() { st.Close() })
		return st
	}, []string{"Asia/Kathmandu", "Asia/Kolkata", "Europe/Berlin"})
}

// The same on InfluxDB (a real influxd; skipped without one): its reads
// take the same path.
func TestTimezoneChangedAfterSamplingInflux(t *testing.T) {
	srv := influxtest.Start(t)
	days := zoneHistory(t)
	open := func(t *testing.T, name string) *influx.Store {
		db := srv.CreateDB(t, name)
		st, err := influx.Open(context.Background(), influx.Options{URL: srv.URL, Bucket: db + "/autogen"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	utc := open(t, "zone_utc")
	record(t, utc, time.UTC, days)
	n := 0
	zoneChanged(t, t.TempDir(), utc, func(t *testing.T, loc *time.Location) store.Store {
		n++
		st := open(t, fmt.Sprintf("zone_native_%d", n))
		record(t, st, loc, days)
		return st
	}, []string{"Asia/Kathmandu", "Europe/Berlin"})
}

// zoneChanged checks that policies in each zone read from utc (hours keyed
// in UTC) are those of a store sampled in that zone (native).
func zoneChanged(t *testing.T, dir string, utc store.Store, native func(*testing.T, *time.Location) store.Store, zones []string) {
	for _, zone := range zones {
		for _, rule := range []string{policy.RuleMax, policy.RuleCalibrated} {
			t.Run(zone+"/"+rule, func(t *testing.T) {
				cfg := zoneConfig(t, dir, zone, rule)
				native := native(t, cfg.Location)
				for _, h := range []time.Time{
					time.Date(2026, 11, 29, 14, 0, 0, 0, cfg.Location),
					time.Date(2026, 11, 29, 23, 0, 0, 0, cfg.Location),
					time.Date(2026, 11, 29, 14, 31, 0, 0, cfg.Location), // an instant inside the hour
				} {
					got, want := forHour(t, utc, cfg, h), forHour(t, native, cfg, h)
					for _, l := range got.Lanes {
						if l.Reason == policy.ReasonNoRecentSample {
							t.Errorf("%s: lane %s no_recent_sample after the zone changed", h, l.Name)
						}
					}
					if g, w := marshal(t, got), marshal(t, want); !bytes.Equal(g, w) {
						t.Errorf("%s: the file from hours keyed in UTC\n%s\nwant the file of a store sampled in %s\n%s", h, g, zone, w)
					}
				}
				got, _, err := load.Forecast(context.Background(), utc, cfg.PolicyParams(), time.Date(2026, 11, 29, 0, 0, 0, 0, cfg.Location), nil)
				if err != nil {
					t.Fatal(err)
				}
				want, _, err := load.Forecast(context.Background(), native, cfg.PolicyParams(), time.Date(2026, 11, 29, 0, 0, 0, 0, cfg.Location), nil)
				if err != nil {
					t.Fatal(err)
				}
				sameFiles(t, "forecast from hours keyed in UTC", got, want)
			})
		}
	}
}

// When the probes behind hours keyed in another zone are gone (pruned by
// store.retention_days), the hours cannot be rebuilt: one line that names
// timezone and what to do, and no file quieter than the probes sent.
func TestTimezoneChangedProbesPruned(t *testing.T) {
	days := zoneHistory(t)
	dir := t.TempDir()
	st := recordIn(t, filepath.Join(dir, "utc.lp"), time.UTC, days)
	defer st.Close()
	if _, err := st.Prune(context.Background(), time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	cfg := zoneConfig(t, dir, "Asia/Kathmandu", policy.RuleMax)
	_, _, err := load.ForHour(context.Background(), st, cfg.PolicyParams(), time.Date(2026, 11, 29, 14, 0, 0, 0, cfg.Location), nil)
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "timezone Asia/Kathmandu") || !strings.Contains(err.Error(), "set timezone back") {
		t.Fatalf("ForHour over pruned probes of hours keyed in UTC: %v; want one line naming timezone and the fix", err)
	}
	var gone, of int
	if _, scanErr := fmt.Sscanf(err.Error()[strings.Index(err.Error(), " and ")+5:], "%d of its %d probes", &gone, &of); scanErr != nil || gone <= 0 || gone > of {
		t.Errorf("%v: want how many of the hour's probes are gone (%d of %d)", err, gone, of)
	}
	// The hours the probes still cover are rebuilt (a lookback that no
	// longer reaches the pruned days).
	cfg1 := zoneConfig(t, dir, "Asia/Kathmandu", policy.RuleMax)
	cfg1.Policy.LookbackDays = 1
	if _, _, err := load.ForHour(context.Background(), st, cfg1.PolicyParams(), time.Date(2026, 11, 29, 14, 0, 0, 0, cfg.Location), nil); err != nil {
		t.Fatalf("lookback 1 within the probes kept: %v", err)
	}
}

// every10 is an ok probe of lane every 10 minutes in [from, to), waiting
// 2 s, 30 s at slow.
func every10(lane string, from, to, slow time.Time) []store.Probe {
	var ps []store.Probe
	for t := from; t.Before(to); t = t.Add(10 * time.Minute) {
		p := store.Probe{Lane: lane, Kind: "free", Time: t, QueueS: 2, GenS: 1, Tokens: 16, OK: true, Outcome: "ok", Status: 200}
		if t.Equal(slow) {
			p.QueueS = 30
		}
		ps = append(ps, p)
	}
	return ps
}

// An hour keyed in another zone is rebuilt only from all the probes it
// counted. Read in Kathmandu at 2026-11-29 14:00 with lookback_days 1, the
// first such hour is 09:00 UTC on the 28th, of 6 probes; the error says
// how many of them are gone, whether retention pruned the hour whole or
// part way, or a hole lies in the probes after older ones (points deleted
// from InfluxDB by hand).
func TestTimezoneChangedHourMissingProbes(t *testing.T) {
	hour := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	probes := every10("free", hour.Add(-9*time.Hour), hour.Add(25*time.Hour), time.Time{})
	for _, tc := range []struct {
		name     string
		prune    time.Time            // retention's cut (zero: none)
		keep     func(time.Time) bool // the probes stored (nil: all)
		gone, of int                  // 0 of 0: no error
	}{
		{"every probe there", time.Time{}, nil, 0, 0},
		{"pruned whole", hour.Add(time.Hour), nil, 6, 6},
		{"pruned part way", hour.Add(25 * time.Minute), nil, 3, 6},
		{"a hole after older probes", time.Time{}, func(t time.Time) bool { return !t.Before(hour.Add(40*time.Minute)) || t.Before(hour) }, 4, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			st, err := file.Open(filepath.Join(dir, "x.lp"), file.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			stored := probes
			if tc.keep != nil {
				stored = nil
				for _, p := range probes {
					if tc.keep(p.Time) {
						stored = append(stored, p)
					}
				}
			}
			// The hours as a sampler in UTC recorded them, from every probe.
			if err := st.Write(context.Background(), store.Batch{Probes: stored, Hourly: store.Rollup(probes, time.UTC)}); err != nil {
				t.Fatal(err)
			}
			if !tc.prune.IsZero() {
				if _, err := st.Prune(context.Background(), tc.prune); err != nil {
					t.Fatal(err)
				}
			}
			cfg := zoneConfig(t, dir, "Asia/Kathmandu", policy.RuleMax)
			cfg.Policy.LookbackDays = 1
			_, _, err = load.ForHour(context.Background(), st, cfg.PolicyParams(), time.Date(2026, 11, 29, 14, 0, 0, 0, cfg.Location), nil)
			if tc.of == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			want := fmt.Sprintf("lane free at 2026-11-28T09:00:00Z was keyed in another zone and %d of its %d probes are no longer stored", tc.gone, tc.of)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("ForHour: %v; want the error that says %q", err, want)
			}
		})
	}
}

// A store sampled in Kathmandu, then for a day in UTC, read in Kathmandu:
// the hours keyed in UTC are rebuilt from their probes, and an hour keyed
// in Kathmandu stands as recorded, though retention pruned part of its
// probes (a 30 s wait among them): the same file as before the prune.
func TestTimezoneChangedKeepsTheHoursKeyedInTheZone(t *testing.T) {
	npt, err := time.LoadLocation("Asia/Kathmandu")
	if err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	st, err := file.Open(filepath.Join(dir, "x.lp"), file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// The lookback hour, 14:00 in Kathmandu on the 28th, is 08:15 UTC.
	record(t, st, npt, [][]store.Probe{every10("free", day, day.Add(24*time.Hour), day.Add(8*time.Hour+20*time.Minute))})
	record(t, st, time.UTC, [][]store.Probe{every10("free", day.Add(24*time.Hour), day.Add(34*time.Hour), time.Time{})})
	cfg := zoneConfig(t, dir, "Asia/Kathmandu", policy.RuleMax)
	cfg.Policy.LookbackDays = 1
	h := time.Date(2026, 11, 29, 14, 0, 0, 0, npt)
	before := marshal(t, forHour(t, st, cfg, h))
	if !bytes.Contains(before, []byte("next_queue_s: 30")) {
		t.Fatalf("before the prune, no lane with the lookback hour's 30 s wait:\n%s", before)
	}
	if _, err := st.Prune(context.Background(), day.Add(8*time.Hour+35*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if after := marshal(t, forHour(t, st, cfg, h)); !bytes.Equal(after, before) {
		t.Errorf("after retention pruned part of an hour keyed in the zone:\n%s\nwant as before\n%s", after, before)
	}
}
