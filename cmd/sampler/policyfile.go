package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lanewatch/lanewatch/api"
	"github.com/lanewatch/lanewatch/app"
	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/store"
)

// policyTimeout bounds the reads of the policy files a round writes.
const policyTimeout = 2 * time.Minute

// writePolicies writes, after a round at now, the policy file of the hour
// holding now (the live policy as of now) and the next hour's forecast, as
// policygen writes them (app.ForHour and app.Forecast, then
// api.Folder.Write), unless policy.write is false. It returns the paths
// written; a failure is logged, and the round stands.
func (d *daemon) writePolicies(ctx context.Context, now time.Time) []string {
	if !d.cfg.Policy.Write || ctx.Err() != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, policyTimeout)
	defer cancel()
	paths, err := d.writeHour(ctx, now)
	if err != nil {
		d.log.Warn("policy file not written", "dir", d.cfg.Policy.Out, "err", err)
	}
	return paths
}

func (d *daemon) writeHour(ctx context.Context, now time.Time) ([]string, error) {
	live, err := app.ForHour(ctx, d.store, d.cfg, now, nil)
	if err != nil {
		return nil, err
	}
	next := store.HourStart(now, d.cfg.Location).Add(time.Hour)
	day, err := app.Forecast(ctx, d.store, d.cfg, next, nil)
	if err != nil {
		return nil, err
	}
	files := []policy.File{live}
	for _, f := range day {
		if f.Hour == store.HourLabel(next, d.cfg.Location) {
			files = append(files, f)
		}
	}
	var paths []string
	for _, f := range files {
		path, err := d.folder().Write(f, "")
		if err != nil {
			return paths, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}

func (d *daemon) folder() api.Folder { return app.APIOptions(d.cfg).Folder }

// hourFile is the policy file of an hour as the status page and /metrics
// read it: the file, where it is, when it was written, or why it is not
// there.
type hourFile struct {
	policy.File
	path    string
	written time.Time
	err     error
}

// readHourFile reads the policy file of the hour holding now from
// policy.out, whoever wrote it.
func (d *daemon) readHourFile(now time.Time) hourFile {
	label := store.HourLabel(now, d.cfg.Location)
	h := hourFile{path: d.folder().Path(label)}
	var nf *api.NoFileError
	h.File, _, h.err = d.folder().Read(label)
	switch {
	case errors.As(h.err, &nf) && d.cfg.Policy.Write:
		h.err = fmt.Errorf("%w; the sampler writes it after its next round", h.err)
	case errors.As(h.err, &nf):
		h.err = fmt.Errorf("%w; policy.write is false: run policygen -config F (docs/deploy.md)", h.err)
	case h.err == nil:
		if fi, err := os.Stat(h.path); err == nil {
			h.written = fi.ModTime()
		}
	}
	return h
}

// decisions are the gauges of the hour's policy file, read from it at each
// scrape, so that they agree with the file whoever wrote it; no file, no
// gauges.
type decisions struct{ d *daemon }

var (
	eligibleDesc = prometheus.NewDesc("lanewatch_lane_eligible",
		"1 when the current hour's policy file says the lane is eligible, else 0.", []string{"lane"}, nil)
	nextQueueDesc = prometheus.NewDesc("lanewatch_lane_next_queue_seconds",
		"The lane's next_queue_s in the current hour's policy file.", []string{"lane"}, nil)
	cutoverDesc = prometheus.NewDesc("lanewatch_class_cutover_seconds",
		"The class's cutover_after_s in the current hour's policy file (calibrated files; 0 when it does not start free).", []string{"class"}, nil)
	writtenDesc = prometheus.NewDesc("lanewatch_policy_file_timestamp_seconds",
		"When the current hour's policy file was written (its modification time).", nil, nil)
)

func (decisions) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{eligibleDesc, nextQueueDesc, cutoverDesc, writtenDesc} {
		ch <- d
	}
}

func (c decisions) Collect(ch chan<- prometheus.Metric) {
	f := c.d.readHourFile(time.Now())
	if f.err != nil {
		return
	}
	gauge := func(d *prometheus.Desc, v float64, label ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, label...)
	}
	for _, l := range f.Lanes {
		gauge(eligibleDesc, float64(boolInt(l.Eligible)), l.Name)
		gauge(nextQueueDesc, l.NextQueueS, l.Name)
	}
	for _, cl := range f.Classes {
		if cl.Cutover != nil {
			gauge(cutoverDesc, cl.Cutover.AfterS, cl.Name)
		}
	}
	if !f.written.IsZero() {
		gauge(writtenDesc, float64(f.written.UnixMilli())/1e3)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
