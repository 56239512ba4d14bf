package backtest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

// readTarget is how many probes one store read aims at: the window is
// read in spans of about this many probes, so memory stays bounded however
// long the window.
const readTarget = 75_000

// Run replays the probes st holds from opts.ReadFrom() to opts.To and
// returns the report.
func Run(ctx context.Context, st store.Store, opts Options) (Report, error) {
	b, err := New(opts)
	if err != nil {
		return Report{}, err
	}
	restart := func() error { // the store turned out not to be in time order
		b, err = New(opts)
		return err
	}
	if err := feed(ctx, st, opts.ReadFrom(), opts.To, func(p store.Probe) error { return b.Add(p) }, restart); err != nil {
		return Report{}, err
	}
	return b.Report(), nil
}

// feed reads the probes of [from, to) from st in time order and hands them
// to add, in spans of about readTarget probes (a week first, then as
// long as the probe rate seen so far allows), so that no read holds the
// whole window. The next span is read while add works through the current
// one: the store's decoding and the replay share the two cores.
//
// A store that streams in time order (the embedded file, as a sampler
// writes it) is read in one pass instead, without holding any span; when
// the pass finds it out of order, restart wipes what add was given and the
// window is read in spans.
func feed(ctx context.Context, st store.Store, from, to time.Time, add func(store.Probe) error, restart func() error) error {
	if sc, ok := st.(store.ProbeScanner); ok {
		ordered, err := scanFeed(ctx, sc, from, to, add)
		if err != nil {
			return err
		}
		if ordered {
			return nil
		}
		if err := restart(); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	type span struct {
		probes []store.Probe
		err    error
	}
	spans := make(chan span) // unbuffered: at most one span waits
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(spans)
		const day = 24 * time.Hour
		length := 7 * day
		for t := from; t.Before(to); {
			end := t.Add(length)
			if end.After(to) {
				end = to
			}
			ps, err := st.Probes(ctx, store.Between(t, end))
			if err != nil {
				err = fmt.Errorf("store: read probes: %w", err)
			}
			select {
			case spans <- span{ps, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
			if perDay := float64(len(ps)) / end.Sub(t).Hours() * 24; perDay > 0 {
				length = time.Duration(readTarget/perDay) * day
			} else {
				length *= 4
			}
			length = min(max(length, day), 92*day)
			t = end
		}
	})
	defer func() {
		cancel() // a reader waiting to hand over a span gives up
		wg.Wait()
	}()
	for sp := range spans {
		if sp.err != nil {
			return sp.err
		}
		for _, p := range sp.probes {
			if err := add(p); err != nil {
				return err
			}
		}
	}
	return ctx.Err()
}

// scanFeed streams the probes of [from, to) from sc to add: the store
// decodes in one goroutine while add replays in this one, batches between
// them. It reports false when sc cannot stream them in time order, having
// perhaps added the probes before the first one out of order.
func scanFeed(ctx context.Context, sc store.ProbeScanner, from, to time.Time, add func(store.Probe) error) (bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	const size = 4096
	batches := make(chan []store.Probe, 2)
	free := make(chan []store.Probe, 4) // batches added, for reuse
	var ordered bool
	var scanErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(batches)
		b := make([]store.Probe, 0, size)
		ordered, scanErr = sc.ScanProbes(ctx, store.Between(from, to), func(p store.Probe) error {
			if b = append(b, p); len(b) == size {
				select {
				case batches <- b:
				case <-ctx.Done():
					return ctx.Err()
				}
				select {
				case b = <-free:
				default:
					b = make([]store.Probe, 0, size)
				}
			}
			return nil
		})
		if scanErr == nil && len(b) > 0 {
			select {
			case batches <- b:
			case <-ctx.Done():
			}
		}
	}()
	var addErr error
	for b := range batches {
		for _, p := range b {
			if addErr == nil {
				addErr = add(p)
			}
		}
		if addErr != nil {
			cancel()
		}
		select {
		case free <- b[:0]:
		default:
		}
	}
	<-done
	switch {
	case addErr != nil:
		return true, addErr
	case scanErr != nil:
		return true, fmt.Errorf("store: read probes: %w", scanErr)
	}
	return ordered, nil
}
