package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/lanesim"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
)

// TestHistoryHarshFileUnchanged pins the store file of the default profile:
// its sha256 is the one lanesim history wrote before profiles existed, for
// the same flags, with and without -profile harsh and -truth.
func TestHistoryHarshFileUnchanged(t *testing.T) {
	const want = "fc2bacfb5db2c9e690e1757fd0f6162a2bacc5dd114d941105c6ea15425891a9"
	dir := t.TempDir()
	for i, extra := range [][]string{nil, {"-profile", "harsh"}, {"-truth", filepath.Join(dir, "truth.jsonl")}} {
		path := filepath.Join(dir, "h"+string(rune('a'+i))+".lp")
		args := append([]string{"-days", "14", "-start", "2026-11-01", "-seed", "5", "-out", path}, extra...)
		if code, _, errs := history(t, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != want {
			t.Errorf("%v: sha256 %x, want %s", extra, sum, want)
		}
	}
}

type truthLine struct {
	Time    time.Time `json:"time"`
	Lane    string    `json:"lane"`
	MedianS float64   `json:"median_s"`
	Sigma   float64   `json:"sigma"`
	Outage  bool      `json:"outage"`
}

func readTruth(t *testing.T, path string) []truthLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []truthLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l truthLine
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			t.Fatalf("truth line %q: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestHistoryTruthFile writes a mild history with its truth, reads both
// back and checks that the truth file has one line per stored probe (same
// lane and time, in order) and that per lane and hour of day the stored
// probes' median queue is the median of their true medians, within 4
// standard errors (outage probes and 429s left out, a timeout counted as
// long).
func TestHistoryTruthFile(t *testing.T) {
	dir := t.TempDir()
	storePath, truthPath := filepath.Join(dir, "h.lp"), filepath.Join(dir, "truth.jsonl")
	const days = 120
	if code, _, errs := history(t, "-days", "120", "-start", "2026-01-01", "-seed", "2", "-profile", "mild", "-paid-faults",
		"-lanes", "free,free2,paid", "-out", storePath, "-truth", truthPath); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	st, err := file.Open(storePath, file.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	probes, err := store.ReadProbes(context.Background(), st, store.Between(start, start.AddDate(0, 0, days)))
	if err != nil {
		t.Fatal(err)
	}
	truth := readTruth(t, truthPath)
	if len(truth) != len(probes) || len(probes) < 3*72*days*9/10 {
		t.Fatalf("%d truth lines, %d probes", len(truth), len(probes))
	}
	type cell struct {
		lane string
		hour int
	}
	queues, medians, sigma := map[cell][]float64{}, map[cell][]float64{}, map[cell]float64{}
	for i, p := range probes {
		tr := truth[i]
		if !tr.Time.Equal(p.Time) || tr.Lane != p.Lane {
			t.Fatalf("line %d: truth of %s at %s, probe of %s at %s", i+1, tr.Lane, tr.Time, p.Lane, p.Time)
		}
		if tr.Outage || p.Outcome == "rate_limited" {
			continue
		}
		q := p.QueueS
		if p.Outcome == "timeout" {
			q = math.Inf(1)
		}
		k := cell{p.Lane, p.Time.Hour()}
		queues[k], medians[k] = append(queues[k], q), append(medians[k], tr.MedianS)
		sigma[k] = max(sigma[k], tr.Sigma)
	}
	median := func(xs []float64) float64 {
		s := slices.Clone(xs)
		slices.Sort(s)
		return s[len(s)/2]
	}
	for k, qs := range queues {
		emp, tru := median(qs), median(medians[k])
		se := 1.2533 * math.Hypot(sigma[k], 0.1) / math.Sqrt(float64(len(qs)))
		if math.Abs(math.Log(emp/tru)) > 4*se {
			t.Errorf("%s at %02dh (%d probes): median queue %.3f s, true median %.3f s", k.lane, k.hour, len(qs), emp, tru)
		}
	}
	if len(queues) != 72 {
		t.Errorf("%d lane-hours of day, want 72", len(queues))
	}
}

func TestHistoryTruthFlags(t *testing.T) {
	dir := t.TempDir()
	storePath, truthPath := filepath.Join(dir, "h.lp"), filepath.Join(dir, "t.jsonl")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-out", storePath, "-profile", "gentle"}, 2, "lanesim: history: -profile: profile \"gentle\": want one of " + lanesim.ProfileNames() + "\n"},
		{[]string{"-out", storePath, "-profile", "pareto", "-truth", truthPath}, 2, "lanesim: history: -truth: the pareto profile's waits are not lognormal: it has no truth an oracle can read\n"},
		{[]string{"-out", storePath, "-shift", "3"}, 2, "lanesim: history: -shift needs -shift-at (or a profile with a shift: drop, rise)\n"},
		{[]string{"-out", storePath, "-profile", "rise", "-shift", "-1"}, 2, "lanesim: history: -shift: want a finite number above 0, got -1\n"},
		{[]string{"-out", storePath, "-truth", storePath}, 2, "lanesim: history: -truth: " + storePath + " is the store file\n"},
	} {
		if code, _, errs := history(t, tc.args...); code != tc.code || errs != tc.want {
			t.Errorf("%v: exit %d, stderr %q\nwant %d, %q", tc.args, code, errs, tc.code, tc.want)
		}
	}
	if err := os.WriteFile(truthPath, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := history(t, "-days", "1", "-start", "2026-11-01", "-out", storePath, "-truth", truthPath)
	if code != 1 || errs != "lanesim: history: "+truthPath+" exists; use -force to replace it\n" {
		t.Errorf("truth file exists: exit %d, stderr %q", code, errs)
	}
	if _, err := os.Stat(storePath); err == nil {
		t.Error("a refused -truth still wrote the store")
	}
	if code, _, errs := history(t, "-days", "1", "-start", "2026-11-01", "-out", storePath, "-truth", truthPath, "-force"); code != 0 {
		t.Fatalf("-force: exit %d: %s", code, errs)
	}
	if lines := readTruth(t, truthPath); len(lines) < 3*72*9/10 {
		t.Errorf("%d truth lines for a day of three lanes", len(lines))
	}
}
