package lanesim

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lanewatch/lanewatch/store"
)

// Every generated probe's truth, written by AppendJSON, reads back by
// ReadTruth under the probe's lane and instant; a probe it never held is
// not found.
func TestReadTruthReadsAppendJSON(t *testing.T) {
	var lines []byte
	var probes []store.Probe
	var truths []ProbeTruth
	opts := HistoryOptions{Start: histStart, Days: 2, Seed: 3, Lanes: []HistoryLane{{"free", "free"}, {"paid", "paid"}}}
	if err := History(opts, func(day []store.Probe, truth []ProbeTruth) error {
		for i := range day {
			lines = append(truth[i].AppendJSON(lines), '\n')
		}
		probes, truths = append(probes, day...), append(truths, truth...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "truth.jsonl")
	if err := os.WriteFile(path, append(lines, "\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	lookup, err := ReadTruth(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range probes {
		median, sigma, ok := lookup(&probes[i])
		if !ok || median != truths[i].MedianS || sigma != truths[i].Sigma {
			t.Fatalf("probe %d (%s %s): got %g %g %v, want %g %g", i, probes[i].Lane, probes[i].Time, median, sigma, ok, truths[i].MedianS, truths[i].Sigma)
		}
	}
	other := probes[0]
	other.Lane = "other"
	if _, _, ok := lookup(&other); ok {
		t.Error("a lane the file does not hold was found")
	}
	if err := os.WriteFile(path, []byte("{\"time\":\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTruth(path); err == nil {
		t.Error("a truncated line read without an error")
	}
}
