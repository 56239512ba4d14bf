package main

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lanewatch/lanewatch/api"
	"github.com/lanewatch/lanewatch/policy/load"
	"github.com/lanewatch/lanewatch/sampler/page"
	"github.com/lanewatch/lanewatch/store"
)

// writePolicies writes the policy files of the hour and the next, unless
// policy.write is false, and returns their paths; a failure is logged.
func (d *daemon) writePolicies(ctx context.Context, now time.Time) (paths []string) {
	if !d.cfg.Policy.Write || ctx.Err() != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	files, err := load.LiveAndNext(ctx, d.store, d.cfg.PolicyParams(), now)
	for _, f := range files {
		if err != nil {
			break
		}
		var path string
		if path, _, err = d.folder().Write(f, ""); err == nil {
			paths = append(paths, path)
		}
	}
	if err != nil {
		d.log.Warn("policy file not written", "dir", d.cfg.Policy.Out, "err", err)
	}
	return paths
}

func (d *daemon) folder() api.Folder { return d.cfg.APIOptions().Folder }

// hourFile puts the policy file of the hour holding p.Now on the page, or
// why there is none.
func (d *daemon) hourFile(p *page.Page) {
	label := store.HourLabel(p.Now, d.cfg.Location)
	p.PolicyPath = d.folder().Path(label)
	f, _, err := d.folder().Read(label)
	var nf *api.NoFileError
	switch {
	case errors.As(err, &nf):
		p.PolicyErr = err.Error() + "; the sampler writes it after each round (policy.write), policygen -config F too"
	case err != nil:
		p.PolicyErr = err.Error()
	default:
		p.Policy = &f
		if fi, err := os.Stat(p.PolicyPath); err == nil {
			p.PolicyWritten = fi.ModTime()
		}
	}
}

// decisions are the gauges of the hour's policy file, read at each scrape.
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

// Describe describes none: the gauges come and go with the file.
func (decisions) Describe(chan<- *prometheus.Desc) {}

func (c decisions) Collect(ch chan<- prometheus.Metric) {
	f := page.Page{Now: time.Now()}
	if c.d.hourFile(&f); f.Policy == nil {
		return
	}
	gauge := func(d *prometheus.Desc, v float64, label ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, label...)
	}
	for _, l := range f.Policy.Lanes {
		gauge(eligibleDesc, map[bool]float64{true: 1}[l.Eligible], l.Name)
		gauge(nextQueueDesc, l.NextQueueS, l.Name)
	}
	for _, cl := range f.Policy.Classes {
		if c := cl.Cutover; c != nil {
			gauge(cutoverDesc, map[bool]float64{true: c.AfterS}[c.FreeFirst], cl.Name) // as the API's null
		}
	}
	if !f.PolicyWritten.IsZero() {
		gauge(writtenDesc, float64(f.PolicyWritten.UnixMilli())/1e3)
	}
}
