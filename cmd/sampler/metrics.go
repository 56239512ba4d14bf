package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lanewatch/lanewatch/api"
	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/internal/httpserve"
	"github.com/lanewatch/lanewatch/internal/redact"
	"github.com/lanewatch/lanewatch/sampler"
	"github.com/lanewatch/lanewatch/sampler/budget"
	"github.com/lanewatch/lanewatch/sampler/page"
	"github.com/lanewatch/lanewatch/store"
)

// metrics are the sampler's own Prometheus metrics, on a private registry.
type metrics struct {
	reg         *prometheus.Registry
	probes      *prometheus.CounterVec
	skipped     *prometheus.CounterVec
	notStarted  *prometheus.CounterVec
	lastQueue   *prometheus.GaugeVec
	quotaLeft   *prometheus.GaugeVec
	budgetLeft  *prometheus.GaugeVec
	roundDur    prometheus.Histogram
	spool       prometheus.Gauge
	storeErrs   prometheus.Counter
	standby     prometheus.Gauge
	lastRound   prometheus.Gauge
	interval    prometheus.Gauge
	budgetReset *prometheus.GaugeVec
	groups      []budget.Group

	lastErr    atomic.Pointer[string] // why the last round was not stored; nil when it was
	rounds     atomic.Int64
	standbyWhy atomic.Pointer[string] // the last round's reason to stand by; nil while active
}

func newMetrics(site, shard string, groups []budget.Group) *metrics {
	m := &metrics{reg: prometheus.NewRegistry(), groups: groups}
	f := promauto.With(m.reg)
	counters := func(name, help string, labels ...string) *prometheus.CounterVec {
		return f.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	gauges := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return f.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	}
	gauge := func(name, help string) prometheus.Gauge {
		return f.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	}
	m.probes = counters("lanewatch_probes_total", "Probes by lane and outcome.", "lane", "outcome")
	m.skipped = counters("lanewatch_probes_skipped_total", "Lanes a round left out, by lane and reason (budget, quota, meter, sites).", "lane", "reason")
	m.notStarted = counters("lanewatch_probes_not_started_total", "Probes a round chose but never started because the sampler was stopping (not stored).", "lane")
	m.lastQueue = gauges("lanewatch_last_queue_seconds", "Queue time (request written to first token) of the lane's last ok probe.", "lane")
	m.quotaLeft = gauges("lanewatch_quota_remaining", "Requests the lane's rate-limit headers said remain, at its last probe that sent them.", "lane")
	m.budgetLeft = gauges("lanewatch_budget_left", "Probes the quota group's budget still allows today.", "quota")
	m.roundDur = f.NewHistogram(prometheus.HistogramOpts{
		Name: "lanewatch_round_duration_seconds", Help: "Wall time of a round: probes plus store write.",
		Buckets: []float64{0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1200},
	})
	m.spool = gauge("lanewatch_spool_points", "Points waiting in the store spool for replay.")
	m.storeErrs = f.NewCounter(prometheus.CounterOpts{Name: "lanewatch_store_errors_total", Help: "Rounds whose write the store refused."})
	m.lastRound = gauge("lanewatch_last_round_timestamp_seconds", "When the last round that was stored started (none before the first).")
	m.interval = gauge("lanewatch_round_interval_seconds", "The longest gap between two rounds of the schedule, plus the jitter.")
	m.budgetReset = gauges("lanewatch_budget_reset_timestamp_seconds", "When the quota group's day ends and its budget is whole again.", "quota")
	m.standby = gauges("lanewatch_standby", "1 while an earlier-started instance of this shard and site probes it and this one stands by, else 0.",
		"site", "shard").WithLabelValues(site, shard)
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) onStandby() bool { return m.standbyWhy.Load() != nil }

func (m *metrics) observeRound(r *sampler.Round, err error, spooled int) {
	if r.Duty != nil {
		if r.Duty.Active {
			m.standby.Set(0)
			m.standbyWhy.Store(nil)
		} else {
			m.standby.Set(1)
			why := r.Duty.Reason
			m.standbyWhy.Store(&why)
			m.rounds.Add(1)
			m.lastErr.Store(nil) // nothing to store
			return
		}
	}
	for _, s := range r.Samples {
		m.probes.WithLabelValues(s.Lane, string(s.Outcome)).Inc()
		if s.OK() {
			m.lastQueue.WithLabelValues(s.Lane).Set(s.QueueS())
		}
		if s.QuotaKnown {
			m.quotaLeft.WithLabelValues(s.Lane).Set(float64(s.QuotaRemaining))
		}
	}
	for _, sk := range r.Plan.Skip {
		m.skipped.WithLabelValues(sk.Lane, sk.Reason).Inc()
	}
	for _, l := range r.NotStarted {
		m.notStarted.WithLabelValues(l).Inc()
	}
	for _, g := range m.groups {
		if left, ok := r.Plan.Left[g.Name]; ok {
			m.budgetLeft.WithLabelValues(g.Name).Set(float64(left))
			next := store.DayStart(g.DayStart(r.Start).Add(26*time.Hour), g.Location)
			m.budgetReset.WithLabelValues(g.Name).Set(float64(next.Unix()))
		}
	}
	m.roundDur.Observe(r.Duration.Seconds())
	m.spool.Set(float64(spooled))
	m.rounds.Add(1)
	if err != nil {
		m.storeErrs.Inc()
		msg := err.Error()
		m.lastErr.Store(&msg)
	} else {
		m.lastRound.Set(float64(r.Start.UnixMilli()) / 1e3)
		m.lastErr.Store(nil)
	}
}

// problem is why the daemon is unhealthy, "" when it is not.
func (m *metrics) problem() string {
	if why := m.standbyWhy.Load(); why != nil {
		return *why
	}
	if e := m.lastErr.Load(); e != nil {
		return "last round was not stored: " + *e
	}
	return ""
}

// statusLoadTimeout bounds the status page's store reads.
const statusLoadTimeout = 10 * time.Second

// handler serves the status page /, /metrics, /healthz and the JSON API.
func (d *daemon) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/api/", api.Handler(d.cfg.APIOptions()))
	mux.Handle("/", page.Handler(func(ctx context.Context) page.Page {
		ctx, cancel := context.WithTimeout(ctx, statusLoadTimeout) // a stuck store must not hold requests
		defer cancel()
		p := d.s.Status(ctx)
		p.Store = d.storeName()
		p.NextRound = d.nextRound()
		d.hourFile(&p)
		if why := d.metrics.problem(); why != "" {
			p.Healthy, p.Problem = false, why
		}
		return p
	}))
	mux.Handle("/metrics", promhttp.HandlerFor(d.metrics.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		next := ""
		if t := d.nextRound(); !t.IsZero() {
			next = ", next round at " + t.UTC().Format(time.RFC3339)
		}
		if why := d.metrics.problem(); why != "" {
			http.Error(w, why+next, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, "ok: %d rounds%s\n", d.metrics.rounds.Load(), next)
	})
	return mux
}

// storeName names the store for people, without credentials.
func (d *daemon) storeName() string {
	if d.cfg.Store.Kind == config.StoreInflux {
		return "influx " + redact.URL(d.cfg.Store.URL) + " bucket " + d.cfg.Store.Bucket
	}
	return "file " + d.cfg.Store.Path
}

// serve serves handler on addr until the returned stop is called.
func (d *daemon) serve(addr string) (string, func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("-listen: %w", err)
	}
	srv, capped := httpserve.New(ln, d.handler(), d.httpLimits)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(capped); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.log.Error("http server", "err", err)
		}
	}()
	d.log.Info("serving metrics", "addr", ln.Addr().String(), "paths", "/ /metrics /healthz /api/v1/")
	return ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}
