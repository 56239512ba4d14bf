package store

import (
	"context"
	"errors"
	"time"
)

// Reader receives the points a Read selects: one callback per measurement,
// each called in time order; a nil callback's measurement is not read.
type Reader struct {
	Probe     func(Probe) error
	Hourly    func(Hourly) error
	Heartbeat func(Heartbeat) error
}

// Read streams the points q selects to r's callbacks, each measurement in
// time order (then lane, kind and site), replacements applied: hourly
// records, then probes, then heartbeats.
//
// It is the one read the callers of a store make; it adapts the store's
// methods until Read is a method of Store.
func Read(ctx context.Context, st Store, q Query, r Reader) error {
	if r.Hourly != nil {
		err := EachHourly(ctx, st, q, func(hour []Hourly) error {
			for _, h := range hour {
				if err := r.Hourly(h); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if r.Probe != nil {
		ps, err := orderedProbes(ctx, st, q)
		if err != nil {
			return err
		}
		for _, p := range ps {
			if err := r.Probe(p); err != nil {
				return err
			}
		}
	}
	if r.Heartbeat != nil {
		hs, ok := st.(HeartbeatStore)
		if !ok {
			return errors.New("store keeps no heartbeats")
		}
		m := q.matcher()
		if m.empty() {
			return nil
		}
		w := Window{From: time.Unix(0, m.spans[0][0]), To: time.Unix(0, m.spans[len(m.spans)-1][1])}
		bs, err := hs.Heartbeats(ctx, q.Sites, w)
		if err != nil {
			return err
		}
		for _, b := range bs {
			if err := r.Heartbeat(b); err != nil {
				return err
			}
		}
	}
	return nil
}

// orderedProbes reads the probes q selects in time order: a store's scan
// when it streams them in order, else a whole read.
func orderedProbes(ctx context.Context, st Store, q Query) ([]Probe, error) {
	if sc, ok := st.(ProbeScanner); ok {
		var ps []Probe
		ordered, err := sc.ScanProbes(ctx, q, func(p Probe) error {
			ps = append(ps, p)
			return nil
		})
		if err != nil || ordered {
			return ps, err
		}
	}
	return st.Probes(ctx, q)
}
