package sampler

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/lanewatch/lanewatch/probe"
)

// ProbeLane runs a round of one owned lane (sampler probe): the round Run
// runs, but its plan covers lane alone. The meter reads every owned lane,
// so a Sampler that owns the other lanes of lane's quota group counts
// their requests: the lane is probed only when its group's slot is unused
// and its cap allows one more, and it is not backing off (force: anyway;
// the probe still counts). The reservation is written, and confirmed
// against the bookings other samplers made at the same moment (a lost one
// is withdrawn: the lane skipped, budget), before the request leaves, and
// the probe replaces it, with its hour record read afresh. The Round's
// Plan says why the lane was skipped when it was; a lane that is not
// owned is an error.
func (s *Sampler) ProbeLane(ctx context.Context, lane string, force bool) (*Round, error) {
	t, ok := s.targets[lane]
	if !ok {
		return nil, fmt.Errorf("probe %s: not a lane of this sampler", lane)
	}
	r := &Round{Start: s.now()}
	start := time.Now() // monotonic, for the duration
	m := s.meter(ctx, r.Start, r.Start, r.Start.Add(t.Timeout))
	r.Plan, r.MeterErr = s.decide(r.Start, force, m, []string{lane}), m.err
	if !slices.Contains(r.Plan.Probe, lane) {
		r.Duration = time.Since(start)
		return r, nil
	}
	if ctx.Err() != nil {
		r.NotStarted, r.Duration = []string{lane}, time.Since(start)
		return r, ErrInterrupted
	}
	if _, err := s.bookAndProbe(ctx, r, []probe.Target{t}, []time.Duration{0}, m, force, true); err != nil {
		r.Duration = time.Since(start)
		return r, fmt.Errorf("book the probe: %w", err)
	}
	// Record reads the lane's hour again, after the probe: a daemon beside
	// this one may have stored a probe of it since the meter's read, and
	// the hour record rewritten here must count it (a daemon's write in the
	// moment between that read and this write is not seen; sampler rollup
	// repairs such an hour). The hours of the daemon's unsettled
	// reservations are the daemon's to rebuild, not this probe's.
	storeCtx, cancel := storeContext(ctx)
	defer cancel()
	rec, err := s.rec.Record(storeCtx, r.Points)
	r.Recorded = rec
	r.Duration = time.Since(start)
	if err != nil {
		return r, fmt.Errorf("store the probe: %w", err)
	}
	if ctx.Err() != nil {
		return r, ErrInterrupted
	}
	return r, nil
}
