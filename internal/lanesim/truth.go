package lanesim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/lanewatch/lanewatch/store"
)

// ReadTruth reads the JSON lines of ProbeTruth.AppendJSON (lanesim history
// -truth) from path and returns the lookup of a probe's truth, by lane and
// instant: its median and sigma, false when the file has none.
func ReadTruth(path string) (func(*store.Probe) (median, sigma float64, ok bool), error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	type key struct {
		lane string
		ns   int64
	}
	byKey := map[key]ProbeTruth{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var t ProbeTruth
		if err := json.Unmarshal(sc.Bytes(), &t); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		byKey[key{t.Lane, t.Time.UnixNano()}] = t
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return func(p *store.Probe) (float64, float64, bool) {
		t, ok := byKey[key{p.Lane, p.Time.UnixNano()}]
		return t.MedianS, t.Sigma, ok
	}, nil
}
