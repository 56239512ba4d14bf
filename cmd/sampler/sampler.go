package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/internal/cli"
	"github.com/lanewatch/lanewatch/internal/httpserve"
	"github.com/lanewatch/lanewatch/sampler"
	"github.com/lanewatch/lanewatch/sampler/budget"
	"github.com/lanewatch/lanewatch/store"
)

// daemon is one sampler process.
type daemon struct {
	cfg        *config.Config
	store      store.Store
	s          *sampler.Sampler
	log        *slog.Logger
	metrics    *metrics
	httpLimits httpserve.Limits // of the -listen server's visitors

	cron  *cron.Cron
	entry cron.EntryID

	mu        sync.Mutex
	next      time.Time            // when the next scheduled round runs
	backedOff map[string]time.Time // lanes whose back-off was logged, until when
	told      map[string]bool      // heartbeat news logged once (identity.go)
	disagree  map[string]bool      // "site sites" logged (identity.go)
	interval  time.Duration        // the schedule's shortest

	pruned string // the day (in the config's zone) maybePrune last pruned
}

// newDaemon loads the config, resolves the lanes' keys and opens the store;
// shardFlag, when not empty, overrides the config's shard.
func newDaemon(ctx context.Context, path, shardFlag string, log *slog.Logger, lookupEnv func(string) (string, bool)) (*daemon, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	var sh config.Shard
	if shardFlag != "" {
		if sh, err = config.ParseShard(shardFlag); err != nil {
			return nil, cli.Usagef("-shard: %w", err)
		}
	}
	st, err := config.OpenStore(ctx, cfg, config.Writer, log.Warn, lookupEnv)
	if err != nil {
		return nil, err
	}
	o, err := cfg.SamplerOptions(st, lookupEnv, sh)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	s := sampler.New(o)
	d := &daemon{cfg: cfg, store: st, s: s, log: log, metrics: newMetrics(cfg.Site, s.Shard().String(), o.Groups),
		httpLimits: httpserve.DefaultLimits(), backedOff: map[string]time.Time{}, told: map[string]bool{}, interval: cfg.Interval()}
	d.metrics.reg.MustRegister(decisions{d})
	if w := s.RoundWarning(d.interval); w != "" {
		log.Warn("config: " + w)
	}
	return d, nil
}

func (d *daemon) close() {
	if err := d.store.Close(); err != nil {
		d.log.Error("store close", "err", err)
	}
}

// round runs one round and feeds the metrics.
func (d *daemon) round(ctx context.Context, force, interruptible bool) (*sampler.Round, error) {
	r, err := d.s.Run(ctx, force, interruptible)
	if r != nil {
		d.metrics.observeRound(r, err, d.store.Status().Spooled)
	}
	return r, err
}

// once runs one round and prints what was probed, skipped and stored.
func (d *daemon) once(ctx context.Context, stdout io.Writer, force bool) error {
	if sh := d.s.Shard(); sh.Count > 1 {
		owned := d.s.Owned()
		fmt.Fprintf(stdout, "shard %s owns %d of %d lanes: %s\n", sh, len(owned), len(d.cfg.Lanes), strings.Join(owned, ", "))
	}
	r, err := d.round(ctx, force, true)
	if r != nil {
		printRound(stdout, d.cfg, r)
		for _, p := range d.writePolicies(ctx, time.Now()) {
			fmt.Fprintf(stdout, "policy file %s\n", p)
		}
	}
	if n := d.store.Status().Spooled; n > 0 {
		fmt.Fprintf(stdout, "store unreachable: %d points wait in the spool %s and are replayed at the next round\n", n, d.cfg.Store.Spool)
	}
	return err
}

// printRound prints one row per lane of the round: its probe, or why it was
// skipped.
func printRound(w io.Writer, cfg *config.Config, r *sampler.Round) {
	kinds := map[string]string{}
	for _, l := range cfg.Lanes {
		kinds[l.Name] = l.Kind
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "lane\tkind\toutcome\tstatus\tqueue_s\tgen_s\ttokens\tsource\t")
	var notes []string
	for _, sm := range r.Samples {
		status := "-"
		if sm.Status != 0 {
			status = fmt.Sprint(sm.Status)
		}
		wait, exact := sm.Wait()
		queue := fmt.Sprintf("%.3f", wait)
		if !exact {
			queue = fmt.Sprintf(">%.1f", wait) // a lower bound
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.3f\t%d\t%s\t\n",
			sm.Lane, sm.Kind, sm.Outcome, status, queue, sm.GenS(), sm.Tokens, cmp.Or(string(sm.TokensSource), "-"))
		switch {
		case sm.RetryAfter != "":
			notes = append(notes, fmt.Sprintf("%s: %s, Retry-After %s", sm.Lane, sm.Outcome, sm.RetryAfter))
		case sm.Detail != "":
			notes = append(notes, fmt.Sprintf("%s: %s", sm.Lane, sm.Detail))
		}
		if sm.QuotaKnown && sm.QuotaRemaining <= 0 {
			notes = append(notes, fmt.Sprintf("%s: no requests remain (the lane backs off)", sm.Lane))
		}
	}
	for _, sk := range r.Plan.Skip {
		fmt.Fprintf(tw, "%s\t%s\tskipped\t-\t-\t-\t-\t-\t\n", sk.Lane, kinds[sk.Lane])
		notes = append(notes, fmt.Sprintf("%s: skipped: %s", sk.Lane, sk))
	}
	for _, l := range r.NotStarted {
		notes = append(notes, fmt.Sprintf("%s: not probed: the round was stopping", l))
	}
	tw.Flush()
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
	if r.MeterErr != nil {
		fmt.Fprintf(w, "budgets unknown (store unreadable: %v): budgeted lanes skipped\n", r.MeterErr)
	}
	for _, name := range slices.Sorted(maps.Keys(r.Plan.Left)) {
		fmt.Fprintf(w, "quota %s: %d probes left today\n", name, r.Plan.Left[name])
	}
}

// run runs rounds on the cron schedule until ctx is cancelled, then waits
// for the round in flight.
func (d *daemon) run(ctx context.Context) error {
	c, schedulerDone := newCron(d.cfg.Location, d.log)
	id, err := c.AddFunc(d.cfg.Schedule, func() { d.scheduledRound(ctx) })
	if err != nil {
		return fmt.Errorf("schedule: %w", err)
	}
	d.cron, d.entry = c, id
	d.startHeartbeat(time.Now())
	d.log.Info("sampler started", "lanes", len(d.s.Owned()), "of", len(d.cfg.Lanes), "shard", d.s.Shard().String(),
		"site", d.cfg.Site, "schedule", d.cfg.Schedule, "timezone", d.cfg.Location.String(), "store", d.cfg.Store.Kind)
	c.Start()
	d.setNext(c.Entry(id))
	<-ctx.Done()
	d.log.Info("sampler stopping: waiting for the round in flight")
	<-c.Stop().Done()
	<-schedulerDone
	d.log.Info("sampler stopped")
	return nil
}

// setNext remembers and logs when the next round runs.
func (d *daemon) setNext(e cron.Entry) {
	next := e.Next
	if next.IsZero() && e.Schedule != nil {
		next = e.Schedule.Next(time.Now().In(d.cfg.Location))
	}
	d.mu.Lock()
	d.next = next
	d.mu.Unlock()
	d.log.Info("next round", "at", next.Format(time.RFC3339))
}

func (d *daemon) nextRound() time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.next
}

// scheduledRound waits a random jitter, then runs and logs one round.
func (d *daemon) scheduledRound(ctx context.Context) {
	defer func() { d.setNext(d.cron.Entry(d.entry)) }()
	if j := d.cfg.Jitter.D(); j > 0 {
		t := time.NewTimer(rand.N(j))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
	if ctx.Err() != nil {
		return
	}
	d.maybePrune(ctx, time.Now())
	wasStandby := d.metrics.onStandby()
	r, err := d.round(ctx, false, false)
	if d.logDuty(r, wasStandby) {
		return // on standby: another instance probes the shard
	}
	failed := 0
	for _, sm := range r.Samples {
		if !sm.OK() {
			failed++
			args := []any{"lane", sm.Lane, "outcome", string(sm.Outcome), "status", sm.Status, "detail", sm.Detail}
			if sm.RetryAfter != "" {
				args = append(args, "retry_after", sm.RetryAfter)
			}
			d.log.Warn("probe failed", args...)
		}
	}
	d.logSkips(r)
	if len(r.NotStarted) > 0 {
		d.log.Warn("probes not started: the sampler was stopping", "lanes", strings.Join(r.NotStarted, ","))
	}
	if r.MeterErr != nil {
		d.log.Warn("budgets unknown: the store could not be read; budgeted lanes skipped", "err", r.MeterErr)
	}
	d.writePolicies(ctx, time.Now())
	if d.interval > 0 && r.Duration > d.interval {
		d.log.Warn(fmt.Sprintf("round took %s, longer than the schedule's %s interval: the next round was skipped; %s",
			r.Duration.Round(time.Second), d.interval, d.s.RoundRemedy()))
	}
	if err != nil {
		d.log.Error(roundTrouble(err), "err", err, "probes", len(r.Samples), "spooled", d.store.Status().Spooled)
		return
	}
	d.log.Info("round stored", "probes", len(r.Samples), "failed", failed, "skipped", len(r.Plan.Skip),
		"spooled", d.store.Status().Spooled)
}

// roundTrouble says, for the log, where a round that failed left its points.
func roundTrouble(err error) string {
	var re *store.RefusedError
	switch {
	case errors.Is(err, sampler.ErrNotBooked):
		return "round not probed: its reservations could not be written"
	case errors.Is(err, store.ErrHoursNotRebuilt):
		return "round stored without its hours: the store cannot be read (run sampler rollup once it can)"
	case errors.As(err, &re) && re.DeadLetter != "":
		return "round refused by the store: its points are in the dead-letter file " + re.DeadLetter
	}
	return "round not stored (its reservations, written before the probes, still count them)"
}

// logSkips logs a lane's back-off once, when it starts.
func (d *daemon) logSkips(r *sampler.Round) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, sk := range r.Plan.Skip {
		if sk.Reason != budget.SkipQuota {
			continue
		}
		if until, ok := d.backedOff[sk.Lane]; ok && until.Equal(sk.Until) {
			continue
		}
		d.backedOff[sk.Lane] = sk.Until
		d.log.Warn("lane backs off: its quota is spent or it answered 429", "lane", sk.Lane, "until", sk.Until.UTC().Format(time.RFC3339))
	}
}

func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("-log-level: want debug, info, warn or error, got %q", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, errors.New("-log-format: want text or json")
}
