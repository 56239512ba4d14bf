package store_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/influxtest"
	"github.com/lanewatch/lanewatch/store"
)

// Both stores keep heartbeats: written, read back equal by sites and
// window (the later write of one instance and time winning), the sites
// they share quotas with or none (an older sampler's), unseen by the probe
// and hourly reads, and skipped by an import.
func TestHeartbeats(t *testing.T) {
	stores := []struct {
		name string
		open func(t *testing.T) store.HeartbeatStore
	}{
		{"file", func(t *testing.T) store.HeartbeatStore {
			st, err := store.OpenFile(filepath.Join(t.TempDir(), "samples.lp"), store.FileOptions{Warn: failOnWarn(t)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			return st
		}},
		{"influxql", func(t *testing.T) store.HeartbeatStore {
			return openSpooled(t, influxtest.URL(t), store.InfluxOptions{Warn: failOnWarn(t)},
				store.SpoolOptions{Path: filepath.Join(t.TempDir(), "spool.lp"), Warn: failOnWarn(t)})
		}},
		{"flux", func(t *testing.T) store.HeartbeatStore {
			return openInflux(t, influxtest.URL(t), store.InfluxOptions{Query: store.QueryFlux, Warn: failOnWarn(t)})
		}},
	}
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	beat := func(inst, site string, at time.Duration) store.Heartbeat {
		return store.Heartbeat{Instance: inst, Shard: "1/2", Site: site, Time: t0.Add(at), Host: "host a",
			StartNS: t0.Add(-time.Hour).UnixNano() + 7, Version: "v1.2.3 (devel)", IntervalS: 60, Sites: "eu,us"}
	}
	older := beat("e", "us", 3*time.Minute)
	older.Sites = ""
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			st := s.open(t)
			ctx := context.Background()
			rewritten := beat("b", "eu", 2*time.Minute)
			rewritten.Version = "v2"
			for _, b := range []store.Heartbeat{
				beat("a", "eu", 0), beat("b", "eu", time.Minute), beat("b", "eu", 2*time.Minute),
				beat("c", "", time.Minute), beat("d", "us", time.Minute), rewritten, older,
			} {
				if err := st.WriteHeartbeat(ctx, b); err != nil {
					t.Fatalf("write %+v: %v", b, err)
				}
			}
			cases := []struct {
				sites    []string
				from, to time.Duration
				want     []store.Heartbeat
			}{
				{[]string{"eu"}, 0, time.Hour, []store.Heartbeat{beat("a", "eu", 0), beat("b", "eu", time.Minute), rewritten}},
				{[]string{"eu"}, time.Second, 2 * time.Minute, []store.Heartbeat{beat("b", "eu", time.Minute)}},
				{[]string{""}, 0, time.Hour, []store.Heartbeat{beat("c", "", time.Minute)}},
				{[]string{"us"}, 2 * time.Minute, time.Hour, []store.Heartbeat{older}},
				{[]string{"us", "eu"}, time.Second, time.Hour, []store.Heartbeat{beat("b", "eu", time.Minute), beat("d", "us", time.Minute), rewritten, older}},
				{[]string{"", "us"}, time.Second, 2 * time.Minute, []store.Heartbeat{beat("c", "", time.Minute), beat("d", "us", time.Minute)}},
				{[]string{}, 0, time.Hour, []store.Heartbeat{}},
			}
			for _, c := range cases {
				got, err := st.Heartbeats(ctx, c.sites, store.Window{From: t0.Add(c.from), To: t0.Add(c.to)})
				if err != nil {
					t.Fatalf("sites %q: %v", c.sites, err)
				}
				if !reflect.DeepEqual(got, c.want) {
					t.Errorf("sites %q [%s, %s): got\n  %+v\nwant\n  %+v", c.sites, c.from, c.to, got, c.want)
				}
			}
			if got := beat("a", "", 0).Start(); !got.Equal(t0.Add(-time.Hour + 7)) {
				t.Errorf("Start() = %s", got)
			}
			ps, err := st.(store.Store).Probes(ctx, store.Between(t0.Add(-time.Hour), t0.Add(time.Hour)))
			if err != nil || len(ps) != 0 {
				t.Errorf("probes read %v, %v; want none beside heartbeats", ps, err)
			}
			hs, err := st.(store.Store).Hourly(ctx, store.Between(t0.Add(-time.Hour), t0.Add(time.Hour)))
			if err != nil || len(hs) != 0 {
				t.Errorf("hourly read %v, %v; want none beside heartbeats", hs, err)
			}
		})
	}
}

// A heartbeat line is one of the schema: instance and shard tags, fields
// in table order; an invalid one is refused before anything is written.
func TestHeartbeatLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "samples.lp")
	st, err := store.OpenFile(path, store.FileOptions{Warn: failOnWarn(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	at := time.Unix(1700000000, 5)
	b := store.Heartbeat{Instance: "h-1-ab", Shard: "0/1", Site: "eu", Time: at, Host: "h", StartNS: 42, Version: "v0", IntervalS: 1.5}
	shared := b
	shared.Time, shared.Sites = at.Add(1), "eu,us"
	for _, b := range []store.Heartbeat{b, shared} {
		if err := st.WriteHeartbeat(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []struct {
		b    store.Heartbeat
		want string
	}{
		{store.Heartbeat{Shard: "0/1", Time: at}, "instance is empty"},
		{store.Heartbeat{Instance: "x", Time: at}, "shard is empty"},
		{store.Heartbeat{Instance: "x", Shard: "0/1"}, "time is zero"},
		{store.Heartbeat{Instance: "x", Shard: "0/1", Time: at, Host: "\xff"}, "host is not valid UTF-8"},
	} {
		if err := st.WriteHeartbeat(context.Background(), bad.b); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("write %+v: %v, want %q", bad.b, err, bad.want)
		}
	}
	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := `sampler_heartbeat,instance=h-1-ab,shard=0/1,site=eu host="h",start_ns=42i,version="v0",interval_s=1.5 1700000000000000005` + "\n" +
		`sampler_heartbeat,instance=h-1-ab,shard=0/1,site=eu host="h",start_ns=42i,version="v0",interval_s=1.5,sites="eu,us" 1700000000000000006` + "\n"
	if !bytes.Equal(body, []byte(want)) {
		t.Errorf("file holds\n  %q\nwant\n  %q", body, want)
	}
	// An import skips it without a warning: a heartbeat is not history.
	dst, err := store.OpenFile(filepath.Join(t.TempDir(), "dst.lp"), store.FileOptions{Warn: failOnWarn(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	res, err := store.Import(context.Background(), store.NewRecorder(dst, time.UTC), bytes.NewReader(body), failOnWarn(t))
	if err != nil || res != (store.Imported{}) {
		t.Errorf("import of a heartbeat: %+v, %v; want nothing imported", res, err)
	}
}
