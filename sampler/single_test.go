package sampler_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/sampler"
	"github.com/lanewatch/lanewatch/sampler/budget"
	"github.com/lanewatch/lanewatch/store/file"
)

// sampler probe's rule, on random sequences of daemon rounds and one-lane
// probes beside the daemon (ProbeLane on a store.SharedFile of the file
// the daemon holds), at random times: the quota group's lanes never get
// more than probes_per_day requests a day between the two, every request
// is in the store, and every hour is the aggregate of its probes. A probe
// the plan leaves out sends nothing and says why.
func TestPropertyProbeLaneBesideTheDaemon(t *testing.T) {
	for seed := range propertySeeds(t) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(uint64(seed), 7))
			perDay := 2 + rnd.IntN(5)
			r := newRigWith(t, false, fmt.Sprintf("quotas:\n  - {name: g, probes_per_day: %d}\n", perDay),
				map[string]string{"a": ", quota: g", "b": ", quota: g", "c": ""}, nil)
			led := &ledger{now: r.now, next: r.lane}
			r.srv.Config.Handler = led
			shared, err := file.Open(filepath.Join(r.dir, "samples.lp"), file.Options{Beside: true})
			if err != nil {
				t.Fatal(err)
			}
			defer shared.Close()
			o, err := r.cfg.SamplerOptions(shared, nil, config.Shard{})
			if err != nil {
				t.Fatal(err)
			}
			o.Now = r.now
			probeSampler := sampler.New(o)
			var steps []string
			fail := func(format string, args ...any) {
				t.Helper()
				t.Fatalf("seed %d, %d a day: %s\nsteps:\n  %s", seed, perDay, fmt.Sprintf(format, args...), strings.Join(steps, "\n  "))
			}
			rebuildOwed := false
			for i := range 40 {
				r.setClock(r.now().Add(time.Duration(1+rnd.IntN(90)) * time.Minute))
				if rnd.IntN(2) == 0 {
					rd, err := r.round(0)
					steps = append(steps, fmt.Sprintf("%d: %s daemon round: probed %d, err %v", i, r.now().Format("01-02T15:04"), len(rd.Samples), err))
				} else {
					lane := []string{"a", "b", "c"}[rnd.IntN(3)]
					before := led.count()
					rd, err := probeSampler.ProbeLane(context.Background(), lane, false)
					if err != nil {
						fail("probe %s: %v", lane, err)
					}
					steps = append(steps, fmt.Sprintf("%d: %s probe %s: probed %d, plan %+v", i, r.now().Format("01-02T15:04"), lane, len(rd.Samples), rd.Plan))
					probed := slices.Contains(rd.Plan.Probe, lane)
					skipped := slices.ContainsFunc(rd.Plan.Skip, func(s budget.Skip) bool { return s.Lane == lane && s.Reason != "" })
					if probed == skipped || (len(rd.Samples) == 1) != probed {
						fail("probe %s: plan %+v with %d samples: want the lane probed once or skipped with a reason", lane, rd.Plan, len(rd.Samples))
					}
					if !probed && led.count() != before {
						fail("probe %s was skipped but sent a request", lane)
					}
				}
				checkMeter(r, led, perDay, &rebuildOwed, fail)
			}
		})
	}
}

// count is how many requests the lanes received so far.
func (l *ledger) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.reqs)
}
