// Package sampler runs the probe rounds: which of its shard's lanes a round
// probes, the probes, and the round recorded in the store (docs/budgets.md,
// docs/deploy.md).
package sampler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/lanewatch/lanewatch/probe"
	"github.com/lanewatch/lanewatch/sampler/budget"
	"github.com/lanewatch/lanewatch/sampler/duty"
	"github.com/lanewatch/lanewatch/store"
)

// DefaultStoreTimeout bounds each of a round's store writes on its own.
const DefaultStoreTimeout = 2 * time.Minute

// storeContext is the context of one store write of a round, which a
// stopping sampler still makes.
func storeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), DefaultStoreTimeout)
}

// SpreadStep is how far apart a round's probe starts are (BENCHMARKS.md).
const (
	SpreadStep = 2 * time.Millisecond
	MaxSpread  = 10 * time.Second
)

// ErrInterrupted is returned by an interruptible round cut short.
var ErrInterrupted = errors.New("interrupted: the round was cut short; the probes sent are stored as cancelled")

// ErrNotBooked is wrapped by a round whose reservations could not be written.
var ErrNotBooked = errors.New("reservations not written: no lane probed this round")

// FutureReach is how far past now a round reads the store (a clock
// stepped back).
const FutureReach = 366 * 24 * time.Hour

// Options wire a Sampler (config.SamplerOptions builds them).
type Options struct {
	Store       store.Store
	Site        string         // the site the probes are tagged with, "" for none
	Schedule    string         // the cron schedule, as the status page shows it
	Location    *time.Location // hours and back-offs are keyed in it
	Concurrency int            // probes at once
	Targets     []probe.Target // the lanes this sampler probes, in config order, with their keys
	Groups      []budget.Group // the quota groups with every lane of the config
	Shard       Shard
	Chart       Chart            // nil draws none
	Now         func() time.Time // the clock points are stamped with; nil is time.Now
}

// Shard is the part of the lanes a sampler probes: shard Index of Count.
type Shard struct{ Index, Count int }

// String is the shard as the -shard flag takes it: "2/5".
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// Sampler probes the lanes its shard owns.
type Sampler struct {
	opt     Options
	rec     *store.Recorder
	targets map[string]probe.Target
	owned   []string       // config order
	groupOf map[string]int // a budgeted lane's index in opt.Groups

	mu     sync.Mutex
	seen   map[string]store.Probe // newest probe of each lane this process stored
	detail map[string]detail      // what each lane's newest probe of this process said (status.go)
	duty   dutyState              // heartbeats and standby (duty.go)
}

// New returns a Sampler of the targets.
func New(o Options) *Sampler {
	s := &Sampler{opt: o, rec: store.NewRecorder(o.Store, o.Location), targets: map[string]probe.Target{},
		groupOf: map[string]int{}, seen: map[string]store.Probe{}, detail: map[string]detail{}}
	if s.opt.Now == nil {
		s.opt.Now = time.Now
	}
	if s.opt.Shard.Count < 1 {
		s.opt.Shard = Shard{Index: 0, Count: 1}
	}
	for _, t := range o.Targets {
		s.targets[t.Lane] = t
		s.owned = append(s.owned, t.Lane)
	}
	for gi, g := range o.Groups {
		for _, l := range g.Lanes {
			s.groupOf[l] = gi
		}
	}
	return s
}

// Owned returns the lanes this sampler's shard owns, in config order.
func (s *Sampler) Owned() []string { return slices.Clone(s.owned) }

// Shard returns the shard this sampler probes.
func (s *Sampler) Shard() Shard { return s.opt.Shard }

// Round is what one round did.
type Round struct {
	Start    time.Time
	Plan     budget.Plan
	MeterErr error          // the store could not be read: budgets unknown (their lanes skipped)
	Samples  []probe.Sample // the probes that ran, in config order
	// NotStarted are lanes chosen whose probe never started: the sampler
	// was stopping.
	NotStarted []string
	Points     []store.Probe // as stored, in the plan's order
	Recorded   store.Recorded
	Duration   time.Duration  // probes and store write
	Duty       *duty.Decision // nil without an Identity; on standby it probed nothing
	DutyErr    error          // a heartbeat could not be written or read
}

// Run runs one round: it reads the store once, plans, books, probes, and
// stores the probes, each replacing its reservation. A cancelled ctx stops
// new probes from starting; interruptible (-once) also cuts those in flight
// short, stored as cancelled (ErrInterrupted). force probes every owned
// lane (the probes still count). A sampler with an Identity first applies
// package duty (duty.go).
func (s *Sampler) Run(ctx context.Context, force, interruptible bool) (*Round, error) {
	r := &Round{Start: s.opt.Now()}
	start := time.Now() // monotonic, for the duration
	defer func() { r.Duration = time.Since(start) }()
	if r.Duty, r.DutyErr = s.checkDuty(ctx, r.Start); r.Duty != nil && !r.Duty.Active {
		return r, nil // standby: another instance of the shard probes
	}
	// One read serves the plan and the hour records the round rewrites.
	m := s.meter(ctx, r.Start, r.Start, r.Start.Add(s.WorstRound()))
	r.Plan, r.MeterErr = s.decide(r.Start, force, m, s.owned), m.err
	m.prior.Rebuild = append(m.prior.Rebuild, s.healing(m.prior.Probes, r.Start)...)

	targets := make([]probe.Target, 0, len(r.Plan.Probe))
	for _, l := range r.Plan.Probe {
		targets = append(targets, s.targets[l])
	}
	if ctx.Err() != nil && len(targets) > 0 { // stopping before the round began: book nothing
		r.NotStarted = slices.Clone(r.Plan.Probe)
		if interruptible {
			return r, ErrInterrupted
		}
		return r, nil
	}
	points, err := s.bookAndProbe(ctx, r, targets, s.offsets(len(targets)), m, force, interruptible)
	if err != nil {
		return r, fmt.Errorf("book the round: %w", err)
	}
	storeCtx, cancel := storeContext(ctx)
	defer cancel()
	r.Recorded, err = s.rec.RecordWith(storeCtx, points, m.prior)
	if err != nil {
		return r, fmt.Errorf("store round: %w", err)
	}
	s.mu.Lock()
	for _, p := range points {
		if q, ok := s.seen[p.Lane]; store.Sent(p) && (!ok || p.Time.After(q.Time)) {
			s.seen[p.Lane] = p
		}
	}
	s.mu.Unlock()
	if interruptible && ctx.Err() != nil {
		return r, ErrInterrupted
	}
	return r, nil
}

// bookAndProbe books the targets' requests in one write (ErrNotBooked),
// withdraws those confirm says lost their slot, probes the rest and
// returns their points. It fills r's Samples, NotStarted and Points.
func (s *Sampler) bookAndProbe(ctx context.Context, r *Round, targets []probe.Target, offsets []time.Duration, m reading, force, interruptible bool) ([]store.Probe, error) {
	booked := s.book(targets, offsets, m.prior.Probes)
	storeCtx, cancel := storeContext(ctx)
	defer cancel()
	if len(booked) > 0 {
		if err := store.Booked(s.opt.Store.Write(storeCtx, store.Batch{Probes: booked})); err != nil {
			// Release what may have been stored; a failure leaves it counted.
			_ = s.opt.Store.Write(storeCtx, store.Batch{Probes: released(booked)})
			return nil, fmt.Errorf("%w: %w", ErrNotBooked, err)
		}
	}
	if lost := s.confirm(ctx, storeCtx, r.Start, booked, force); len(lost) > 0 {
		var out []store.Probe
		for _, i := range lost {
			out = append(out, booked[i])
			r.Plan = withdrawn(r.Plan, booked[i].Lane, s.owned)
		}
		s.withdraw(storeCtx, out)
		keep := func(i int) bool { return !slices.Contains(lost, i) }
		targets, offsets, booked = kept(targets, keep), kept(offsets, keep), kept(booked, keep)
	}
	runs := s.probeAll(ctx, targets, offsets, interruptible)
	points := make([]store.Probe, len(runs))
	for i, pr := range runs {
		switch {
		case !pr.started:
			r.NotStarted = append(r.NotStarted, targets[i].Lane)
			points[i] = released(booked[i : i+1])[0]
		default:
			r.Samples = append(r.Samples, pr.sample)
			points[i] = Point(pr.sample, s.opt.Site, booked[i].Time)
			s.mu.Lock()
			s.detail[points[i].Lane] = detail{points[i].Time, pr.sample.Detail}
			s.mu.Unlock()
			if pr.cancelled {
				points[i] = cancelledPoint(points[i], pr.sample)
			}
		}
	}
	r.Points = points
	return points, nil
}

func kept[T any](xs []T, keep func(i int) bool) []T {
	var out []T
	for i, x := range xs {
		if keep(i) {
			out = append(out, x)
		}
	}
	return out
}

// withdrawn returns the plan with lane moved from its probes to its skips,
// in config order.
func withdrawn(p budget.Plan, lane string, order []string) budget.Plan {
	p.Probe = slices.DeleteFunc(slices.Clone(p.Probe), func(l string) bool { return l == lane })
	p.Skip = append(slices.Clone(p.Skip), budget.Skip{Lane: lane, Reason: budget.SkipBudget})
	slices.SortStableFunc(p.Skip, func(a, b budget.Skip) int {
		return cmp.Compare(slices.Index(order, a.Lane), slices.Index(order, b.Lane))
	})
	return p
}

// probeRun is one target's part of a round.
type probeRun struct {
	sample    probe.Sample
	started   bool
	cancelled bool // cut short by the round's ctx (interruptible), not ended by the lane
}

// probeAll probes the targets, at most Concurrency at once, probe i
// starting at its offset or when a slot frees, whichever is later, none
// once ctx ends; probes in flight run on unless interruptible.
func (s *Sampler) probeAll(ctx context.Context, targets []probe.Target, offsets []time.Duration, interruptible bool) []probeRun {
	probeCtx := context.WithoutCancel(ctx)
	if interruptible {
		probeCtx = ctx
	}
	runs := make([]probeRun, len(targets))
	sem := make(chan struct{}, max(s.opt.Concurrency, 1))
	var wg sync.WaitGroup
	begin := time.Now()
	for i, t := range targets {
		if !waitUntil(ctx, begin.Add(offsets[i])) {
			break
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		runs[i].started = true
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			// The probe's error is its outcome, already in the sample.
			sm, _ := probe.Run(probeCtx, t)
			sm.Lane, sm.Kind = t.Lane, t.Kind
			runs[i].sample = sm
			runs[i].cancelled = interruptible && !sm.OK() && probeCtx.Err() != nil
		}()
	}
	wg.Wait()
	return runs
}

// offsets are the start offsets of a round's n probes: shard i of N starts
// at i×SpreadStep and then every N×SpreadStep, within MaxSpread.
func (s *Sampler) offsets(n int) []time.Duration {
	count := s.opt.Shard.Count
	window := min(time.Duration(n*count)*SpreadStep, MaxSpread)
	offsets := probe.Spread(n, window)
	phase := time.Duration(s.opt.Shard.Index) * min(SpreadStep, window/time.Duration(max(n*count, 1)))
	for i := range offsets {
		offsets[i] += phase
	}
	return offsets
}

// waitUntil waits until t or until ctx ends; it reports whether t came.
func waitUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	select {
	case <-time.After(d): // an unreferenced timer is collected (Go 1.23)
		return true
	case <-ctx.Done():
		return false
	}
}

// Point is the stored form (docs/schema.md) of a probe at site, booked at
// its reservation's time.
func Point(sm probe.Sample, site string, booked time.Time) store.Probe {
	wait, _ := sm.Wait()
	return store.Probe{
		Lane:           sm.Lane,
		Kind:           sm.Kind,
		Site:           site,
		Time:           booked.Round(0).UTC(),
		QueueS:         wait,
		GenS:           sm.GenS(),
		HeadersS:       sm.HeadersS(),
		ConnectS:       sm.ConnectS(),
		Tokens:         int64(sm.Tokens),
		OK:             sm.OK(),
		Outcome:        string(sm.Outcome),
		Status:         int64(sm.Status),
		QuotaRemaining: sm.QuotaRemaining,
		QuotaKnown:     sm.QuotaKnown,
		QuotaResetS:    sm.QuotaWait().Seconds(),
	}
}

// WorstRound is how long a round of the owned lanes can take when every
// probe runs to its timeout.
func (s *Sampler) WorstRound() time.Duration {
	c := max(s.opt.Concurrency, 1)
	waves := (len(s.owned) + c - 1) / c
	return time.Duration(waves)*s.longestTimeout() + min(time.Duration(len(s.owned)*s.opt.Shard.Count)*SpreadStep, MaxSpread)
}

// settleWithin is how long after its booking a round of the owned lanes
// settles a reservation at most.
func (s *Sampler) settleWithin() time.Duration {
	return DefaultStoreTimeout + ConfirmWait + s.WorstRound() + DefaultStoreTimeout
}

func (s *Sampler) longestTimeout() time.Duration {
	var longest time.Duration
	for _, l := range s.owned {
		longest = max(longest, s.targets[l].Timeout)
	}
	return longest
}

// RoundWarning says when a round could outlast the schedule's interval.
func (s *Sampler) RoundWarning(interval time.Duration) string {
	worst := s.WorstRound()
	if interval <= 0 || worst <= interval {
		return ""
	}
	return fmt.Sprintf("a round of %d lanes at %d in flight with a %s timeout can take %s, longer than the schedule's %s interval; %s",
		len(s.owned), s.opt.Concurrency, s.longestTimeout(), worst.Round(time.Second), interval, s.RoundRemedy())
}

// RoundRemedy says what shortens a round that is too long.
func (s *Sampler) RoundRemedy() string {
	if len(s.owned) <= s.opt.Concurrency {
		return "lower the lanes' timeout or space the schedule" // every probe is in flight already
	}
	return fmt.Sprintf("raise concurrency (%d) or lower the lanes' timeout", s.opt.Concurrency)
}
