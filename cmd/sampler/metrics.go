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
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lanewatch/lanewatch/probe"
)

// metrics are the sampler's own Prometheus metrics, on a private registry.
type metrics struct {
	reg        *prometheus.Registry
	probes     *prometheus.CounterVec
	lastQueue  *prometheus.GaugeVec
	roundDur   prometheus.Histogram
	spool      prometheus.Gauge
	storeErrs  prometheus.Counter
	lastStored atomic.Bool // last round's write succeeded (for /healthz)
	rounds     atomic.Int64
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		probes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lanewatch_probes_total", Help: "Probes by lane and outcome.",
		}, []string{"lane", "outcome"}),
		lastQueue: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "lanewatch_last_queue_seconds", Help: "Queue time (start to first token) of the lane's last ok probe.",
		}, []string{"lane"}),
		roundDur: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "lanewatch_round_duration_seconds", Help: "Wall time of a round: probes plus store write.",
			Buckets: []float64{0.5, 1, 2, 5, 10, 30, 60, 120, 300},
		}),
		spool: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "lanewatch_spool_points", Help: "Points waiting in the store spool for replay.",
		}),
		storeErrs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "lanewatch_store_errors_total", Help: "Rounds whose write the store refused.",
		}),
	}
	m.reg.MustRegister(m.probes, m.lastQueue, m.roundDur, m.spool, m.storeErrs,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.lastStored.Store(true)
	return m
}

func (m *metrics) observeProbe(s probe.Sample) {
	m.probes.WithLabelValues(s.Lane, string(s.Outcome)).Inc()
	if s.OK() {
		m.lastQueue.WithLabelValues(s.Lane).Set(s.QueueS())
	}
}

func (m *metrics) observeRound(d time.Duration, err error, spooled int) {
	m.roundDur.Observe(d.Seconds())
	m.spool.Set(float64(spooled))
	m.rounds.Add(1)
	if err != nil {
		m.storeErrs.Inc()
	}
	m.lastStored.Store(err == nil)
}

// metricsHandler serves /metrics and /healthz.
func (s *sampler) metricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !s.metrics.lastStored.Load() {
			http.Error(w, "last round was not stored", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, "ok: %d rounds\n", s.metrics.rounds.Load())
	})
	return mux
}

// serveMetrics serves metricsHandler on addr until the returned stop function
// is called; it returns the address it listens on.
func (s *sampler) serveMetrics(addr string) (string, func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("-listen: %w", err)
	}
	srv := &http.Server{Handler: s.metricsHandler(), ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("metrics server", "err", err)
		}
	}()
	s.log.Info("serving metrics", "addr", ln.Addr().String())
	return ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}
