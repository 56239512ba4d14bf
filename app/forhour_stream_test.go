package app_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/app"
	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
)

// plainStore hides a store's ProbeScanner: ForHour then reads the probes
// whole with Probes, as from InfluxDB.
type plainStore struct{ store.Store }

// ForHour's streamed read of the calibrated rule's probes (File.ScanProbes
// into policy.HourHistory, through the file's index) writes the file that
// the separate reads (Hourly, Probes, the newest probes) give: random
// stores of 40 days, mostly in time order, with days imported late (in
// the window or before it), probes written twice, reservations and
// timeouts, under both rules.
func TestForHourStreamedIsForHourRead(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 40))
			dir := t.TempDir()
			path := filepath.Join(dir, "s.lp")
			w, err := file.Open(path, file.Options{})
			if err != nil {
				t.Fatal(err)
			}
			rec := store.NewRecorder(w, time.UTC)
			start := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
			var days [][]store.Probe
			for d := range 40 {
				var day []store.Probe
				for m := 0; m < 24*60; m += 20 {
					for _, lane := range []string{"free", "paid"} {
						if r.IntN(10) == 0 {
							continue // a round without this lane
						}
						p := store.Probe{Lane: lane, Kind: map[string]string{"free": "free", "paid": "paid"}[lane],
							Time:   start.Add(time.Duration(d*24*60+m)*time.Minute + time.Duration(r.IntN(30))*time.Second),
							QueueS: r.ExpFloat64() * 4, GenS: 1, Tokens: 40, OK: true, Outcome: "ok", Status: 200}
						switch r.IntN(15) {
						case 0:
							p.OK, p.Outcome, p.QueueS, p.GenS, p.Tokens, p.Status = false, "timeout", 20, 0, 0, 0
						case 1:
							p.OK, p.Outcome, p.QueueS, p.GenS, p.Tokens, p.Status = false, store.OutcomeReserved, 0, 0, 0, 0
						}
						day = append(day, p)
						if r.IntN(40) == 0 { // written twice, the second wins
							p.QueueS += 3
							day = append(day, p)
						}
					}
				}
				days = append(days, day)
			}
			// Days [from, to) are imported after the others: before the
			// policies' windows (streamed) or in them (read whole).
			from := r.IntN(len(days))
			to := min(len(days), from+r.IntN(4))
			for i := range days {
				if i < from || i >= to {
					if _, err := rec.Record(context.Background(), days[i]); err != nil {
						t.Fatal(err)
					}
				}
			}
			for i := from; i < to; i++ {
				if _, err := rec.Record(context.Background(), days[i]); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			for _, rule := range []string{"calibrated", "max"} {
				cfg, err := config.Parse(strings.NewReader(`store: {kind: file, path: s.lp}
lanes:
  - {name: free, kind: free, api: openai, base_url: "http://127.0.0.1:1/v1", model: m}
  - {name: paid, kind: paid, api: openai, base_url: "http://127.0.0.1:1/v1", model: m}
policy:
  rule: `+rule+`
  classes: [{name: c, deadline_s: 30, ceiling_tokens: 100, est_tokens: 40, paid_usd_per_1k: 1}]
`), dir)
				if err != nil {
					t.Fatal(err)
				}
				st, err := app.OpenStoreReadOnly(context.Background(), cfg, nil, func(string) (string, bool) { return "", false })
				if err != nil {
					t.Fatal(err)
				}
				for range 4 {
					h := start.Add(time.Duration(24*30+r.IntN(24*11)) * time.Hour)
					var files [2][]byte
					for i, s := range []store.Store{st, plainStore{st}} {
						f, err := app.ForHour(context.Background(), s, cfg, h, nil)
						if err != nil {
							t.Fatal(err)
						}
						if files[i], err = policy.Marshal(f); err != nil {
							t.Fatal(err)
						}
					}
					if !bytes.Equal(files[0], files[1]) {
						t.Errorf("%s %s: streamed\n%s\nread whole\n%s", rule, h.Format(time.RFC3339), files[0], files[1])
					}
				}
				if err := st.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// A lane whose kind changed mid-hour has one record per kind, each the
// aggregate of the hour's probes (store.Rollup): through the policy a
// stale record of the old kind (paid, one ok probe), sorted after the new
// one (free, the timeout), would win and read eligible. It reads
// probe_failed.
func TestKindChangeMidHourThroughThePolicy(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.Parse(strings.NewReader("timezone: UTC\nstore: {kind: file, path: s.lp}\nlanes:\n"+
		"  - {name: x, kind: free, api: openai, base_url: \"http://127.0.0.1:1/v1\", model: m}\n"), dir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := file.Open(cfg.Store.Path, file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rec := store.NewRecorder(f, cfg.Location)
	for _, p := range []store.Probe{
		{Lane: "x", Kind: policy.KindPaid, Time: kindHour0.Add(7 * time.Minute), QueueS: 1, GenS: 1, Tokens: 8, OK: true, Outcome: "ok", Status: 200},
		{Lane: "x", Kind: policy.KindFree, Time: kindHour0.Add(27 * time.Minute), QueueS: 30, Outcome: "timeout"},
	} {
		if _, err := rec.Record(context.Background(), []store.Probe{p}); err != nil {
			t.Fatal(err)
		}
	}
	pf, err := app.ForHour(context.Background(), f, cfg, kindHour0.Add(40*time.Minute), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(pf.Lanes) != 1 || pf.Lanes[0].Eligible || pf.Lanes[0].Reason != policy.ReasonProbeFailed {
		t.Fatalf("policy lanes %+v; want x probe_failed (the timeout after the kind change)", pf.Lanes)
	}
}

var kindHour0 = time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
