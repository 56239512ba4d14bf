package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/internal/storeopen"
	"github.com/lanewatch/lanewatch/probe"
	"github.com/lanewatch/lanewatch/series"
)

// sampler owns one configuration, its store and the current hour's probes.
type sampler struct {
	cfg     *config.Config
	store   series.Store
	log     *slog.Logger
	targets []probe.Target
	metrics *metrics
	probeFn func(context.Context, probe.Target) (probe.Sample, error)

	rec *series.Recorder
}

func newSampler(ctx context.Context, path string, log *slog.Logger, lookupEnv func(string) (string, bool)) (*sampler, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	targets := make([]probe.Target, 0, len(cfg.Lanes))
	for _, l := range cfg.Lanes {
		key, err := l.APIKey(lookupEnv)
		if err != nil {
			return nil, err
		}
		targets = append(targets, probe.Target{
			Lane:         l.Name,
			Kind:         l.Kind,
			API:          probe.API(l.API),
			BaseURL:      l.BaseURL,
			Model:        l.Model,
			APIKey:       key,
			Prompt:       l.Prompt,
			MaxTokens:    l.MaxTokens,
			Timeout:      l.Timeout.D(),
			IncludeUsage: *l.IncludeUsage,
		})
	}
	warn := func(msg string, args ...any) { log.Warn(msg, args...) }
	st, err := storeopen.Open(ctx, cfg, warn, lookupEnv)
	if err != nil {
		return nil, err
	}
	return &sampler{
		cfg:     cfg,
		store:   st,
		rec:     series.NewRecorder(st, cfg.Location),
		log:     log,
		targets: targets,
		metrics: newMetrics(),
		probeFn: probe.Run,
	}, nil
}

func (s *sampler) close() {
	if err := s.store.Close(); err != nil {
		s.log.Error("store close", "err", err)
	}
}

// roundTimeout bounds one round: the slowest lane's timeout plus room to store.
func (s *sampler) roundTimeout() time.Duration {
	var longest time.Duration
	for _, t := range s.targets {
		longest = max(longest, t.Timeout)
	}
	return longest + time.Minute
}

// errInterrupted is returned by an interruptible round cut short by a signal.
var errInterrupted = errors.New("interrupted: the round was cut short and not stored")

// round probes every lane (at most cfg.Concurrency at once), then stores the
// probes and the refreshed hourly worst of each lane in one write. The
// daemon's rounds run detached from shutdown, so a round in flight is always
// stored; an interruptible round (-once at a terminal) stops at the signal
// and stores nothing, since probes cut short would read as lane failures.
func (s *sampler) round(parent context.Context, interruptible bool) ([]probe.Sample, error) {
	base := context.WithoutCancel(parent)
	if interruptible {
		base = parent
	}
	ctx, cancel := context.WithTimeout(base, s.roundTimeout())
	defer cancel()
	start := time.Now()

	samples := make([]probe.Sample, len(s.targets))
	sem := make(chan struct{}, s.cfg.Concurrency)
	var wg sync.WaitGroup
	for i, t := range s.targets {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			// The probe's error is its outcome, already in the sample:
			// a failed probe is data, not an error of the round.
			samples[i], _ = s.probeFn(ctx, t)
			samples[i].Lane, samples[i].Kind = t.Lane, t.Kind
		}()
	}
	wg.Wait()
	if interruptible && parent.Err() != nil {
		return samples, errInterrupted
	}

	points := make([]series.Probe, len(samples))
	for i, sm := range samples {
		points[i] = toPoint(sm)
		s.metrics.observeProbe(sm)
	}
	_, err := s.rec.Record(ctx, points)
	s.metrics.observeRound(time.Since(start), err, s.spoolDepth())
	if err != nil {
		return samples, fmt.Errorf("store round: %w", err)
	}
	return samples, nil
}

func toPoint(sm probe.Sample) series.Probe {
	return series.Probe{
		Lane:     sm.Lane,
		Kind:     sm.Kind,
		Time:     sm.Start.Round(0).UTC(),
		QueueS:   sm.QueueS(),
		GenS:     sm.GenS(),
		HeadersS: sm.HeadersS(),
		Tokens:   int64(sm.Tokens),
		OK:       sm.OK(),
		Outcome:  string(sm.Outcome),
		Status:   int64(sm.Status),
	}
}

func (s *sampler) spoolDepth() int { return series.SpoolDepth(s.store) }

// once runs one round and prints a table of what was stored.
func (s *sampler) once(ctx context.Context, stdout io.Writer) error {
	samples, err := s.round(ctx, true)
	printTable(stdout, samples)
	if n := s.spoolDepth(); n > 0 {
		fmt.Fprintf(stdout, "store unreachable: %d points wait in the spool %s and are replayed at the next round\n", n, s.cfg.Store.Spool)
	}
	return err
}

func printTable(w io.Writer, samples []probe.Sample) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "lane\tkind\toutcome\tstatus\tqueue_s\tgen_s\ttokens\tsource\t")
	var notes []string
	for _, sm := range samples {
		status := "-"
		if sm.Status != 0 {
			status = fmt.Sprint(sm.Status)
		}
		src := string(sm.TokensSource)
		if src == "" {
			src = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.3f\t%.3f\t%d\t%s\t\n",
			sm.Lane, sm.Kind, sm.Outcome, status, sm.QueueS(), sm.GenS(), sm.Tokens, src)
		switch {
		case sm.RetryAfter != "":
			notes = append(notes, fmt.Sprintf("%s: %s, Retry-After %s", sm.Lane, sm.Outcome, sm.RetryAfter))
		case sm.Detail != "":
			notes = append(notes, fmt.Sprintf("%s: %s", sm.Lane, sm.Detail))
		}
	}
	tw.Flush()
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
}

// daemon runs rounds on the cron schedule until ctx is cancelled, then waits
// for the in-flight round to be stored.
func (s *sampler) daemon(ctx context.Context) error {
	c, schedulerDone := newCron(s.cfg.Location, s.log)
	_, err := c.AddFunc(s.cfg.Schedule, func() { s.scheduledRound(ctx) })
	if err != nil {
		return fmt.Errorf("schedule: %w", err)
	}
	s.log.Info("sampler started", "lanes", len(s.targets), "schedule", s.cfg.Schedule,
		"timezone", s.cfg.Location.String(), "store", s.cfg.Store.Kind)
	c.Start()
	<-ctx.Done()
	s.log.Info("sampler stopping: waiting for the round in flight")
	<-c.Stop().Done()
	<-schedulerDone
	s.log.Info("sampler stopped")
	return nil
}

// scheduledRound waits a random jitter, then runs and logs one round.
func (s *sampler) scheduledRound(ctx context.Context) {
	if j := s.cfg.Jitter.D(); j > 0 {
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
	samples, err := s.round(ctx, false)
	failed := 0
	for _, sm := range samples {
		if !sm.OK() {
			failed++
			args := []any{"lane", sm.Lane, "outcome", string(sm.Outcome), "status", sm.Status, "detail", sm.Detail}
			if sm.RetryAfter != "" {
				args = append(args, "retry_after", sm.RetryAfter)
			}
			s.log.Warn("probe failed", args...)
		}
	}
	if err != nil {
		s.log.Error("round not stored", "err", err, "probes", len(samples))
		return
	}
	s.log.Info("round stored", "probes", len(samples), "failed", failed, "spooled", s.spoolDepth())
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
