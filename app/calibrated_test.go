package app_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/app"
	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/internal/lanesim"
	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
)

// The calibrated rule's live file from a store: the same whether the
// embedded file streams its probes in time order or must be read whole (an
// import appended older history late), and what policy.ForHourProbes makes
// of the store's probes of twice the window.
func TestForHourCalibratedReadsTheProbes(t *testing.T) {
	hist := lanesim.HistoryOptions{Start: time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC), Days: 40, Seed: 3,
		Lanes: []lanesim.HistoryLane{{Name: "free", Kind: "free"}, {Name: "paid", Kind: "paid"}}}
	var days [][]store.Probe
	if err := lanesim.History(hist, func(day []store.Probe) error {
		days = append(days, append([]store.Probe(nil), day...))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	write := func(path string, order []int) {
		st, err := file.Open(path, file.Options{})
		if err != nil {
			t.Fatal(err)
		}
		rec := store.NewRecorder(st, time.UTC)
		for _, i := range order {
			if _, err := rec.Record(context.Background(), days[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	inOrder := make([]int, len(days))
	late := make([]int, 0, len(days)) // days 10.. first, then 0..9
	for i := range days {
		inOrder[i] = i
		if i >= 10 {
			late = append(late, i)
		}
	}
	for i := range 10 {
		late = append(late, i)
	}
	write(filepath.Join(dir, "a.lp"), inOrder)
	write(filepath.Join(dir, "b.lp"), late)
	h := time.Date(2026, 11, 8, 14, 0, 0, 0, time.UTC)
	var files [][]byte
	for _, name := range []string{"a.lp", "b.lp"} {
		cfg, err := config.Parse(strings.NewReader(`store: {kind: file, path: `+name+`}
lanes:
  - {name: free, kind: free, api: openai, base_url: "http://127.0.0.1:1/v1", model: m}
  - {name: paid, kind: paid, api: openai, base_url: "http://127.0.0.1:1/v1", model: m}
policy:
  classes: [{name: c, deadline_s: 60, ceiling_tokens: 100, est_tokens: 10, coverage: 0.9}]
`), dir)
		if err != nil {
			t.Fatal(err)
		}
		st, err := app.OpenStoreReadOnly(context.Background(), cfg, nil, func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatal(err)
		}
		f, err := app.ForHour(context.Background(), st, cfg, h, nil)
		if err != nil {
			t.Fatal(err)
		}
		data, err := policy.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, data)
		if name == "a.lp" {
			p := app.Params(cfg)
			end := h.Add(time.Hour)
			ps, _ := store.ReadProbes(context.Background(), st, store.Query{Windows: []store.Window{{From: end.AddDate(0, 0, -28), To: end}}})
			hs, _ := store.ReadHourly(context.Background(), st, store.Query{Windows: app.HourWindows(p, h)})
			latest, _ := store.ReadProbes(context.Background(), st, store.Query{Windows: []store.Window{{From: end.Add(-3 * time.Hour), To: end}}})
			want, _ := policy.Marshal(policy.ForHourProbes(p, hs, ps, policy.States(latest, cfg.Location), h))
			if !bytes.Equal(data, want) {
				t.Errorf("app.ForHour:\n%s\npolicy.ForHourProbes of the store's probes:\n%s", data, want)
			}
			if f.Rule != policy.RuleCalibrated || !bytes.Contains(data, []byte("coverage: 0.9\n")) {
				t.Errorf("not a calibrated file with the class's coverage:\n%s", data)
			}
		}
		st.Close()
	}
	if !bytes.Equal(files[0], files[1]) {
		t.Errorf("streamed:\n%s\nread whole:\n%s", files[0], files[1])
	}
}
