package backtest

import (
	"context"
	"fmt"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

// Run replays the probes st holds from opts.ReadFrom() to opts.To and
// returns the report.
func Run(ctx context.Context, st store.Store, opts Options) (Report, error) {
	b, err := New(opts)
	if err != nil {
		return Report{}, err
	}
	if err := feed(ctx, st, opts.ReadFrom(), opts.To, b.Add); err != nil {
		return Report{}, err
	}
	return b.Report(), nil
}

// feed streams the probes of [from, to) from st to add, in time order,
// without holding them: the store decodes in one goroutine while add
// replays in this one, batches between them.
func feed(ctx context.Context, st store.Store, from, to time.Time, add func(store.Probe) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	const size = 4096
	batches := make(chan []store.Probe, 2)
	free := make(chan []store.Probe, 4) // batches added, for reuse
	var scanErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(batches)
		b := make([]store.Probe, 0, size)
		scanErr = st.Read(ctx, store.Between(from, to), store.Reader{Probe: func(p store.Probe) error {
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
		}})
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
		return addErr
	case scanErr != nil:
		return fmt.Errorf("store: read probes: %w", scanErr)
	}
	return nil
}
