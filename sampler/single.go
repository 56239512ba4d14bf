package sampler

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/lanewatch/lanewatch/probe"
)

// ProbeLane runs a round of one owned lane (sampler probe): Run's round,
// but its plan covers lane alone and its hour is read afresh to record it.
func (s *Sampler) ProbeLane(ctx context.Context, lane string, force bool) (*Round, error) {
	t, ok := s.targets[lane]
	if !ok {
		return nil, fmt.Errorf("probe %s: not a lane of this sampler", lane)
	}
	r := &Round{Start: s.opt.Now()}
	start := time.Now() // monotonic, for the duration
	defer func() { r.Duration = time.Since(start) }()
	m := s.meter(ctx, r.Start, r.Start, r.Start.Add(t.Timeout))
	r.Plan, r.MeterErr = s.decide(r.Start, force, m, []string{lane}), m.err
	if !slices.Contains(r.Plan.Probe, lane) {
		return r, nil
	}
	if ctx.Err() != nil {
		r.NotStarted = []string{lane}
		return r, ErrInterrupted
	}
	_, err := s.bookAndProbe(ctx, r, []probe.Target{t}, []time.Duration{0}, m, force, true)
	if err != nil {
		return r, fmt.Errorf("book the probe: %w", err)
	}
	storeCtx, cancel := storeContext(ctx)
	defer cancel()
	if r.Recorded, err = s.rec.Record(storeCtx, r.Points); err != nil {
		return r, fmt.Errorf("store the probe: %w", err)
	}
	if ctx.Err() != nil {
		return r, ErrInterrupted
	}
	return r, nil
}
