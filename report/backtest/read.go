package backtest

import (
	"context"
	"fmt"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

// Read replays the probes from opts.ReadFrom() to opts.To in one read
// and returns the report and the time of the first probe read (zero: none).
// The store is read on its own goroutine, a batch of probes ahead of the
// replay, so that reading and replaying a year take two cores, not one.
func Read(ctx context.Context, st store.Store, opts Options) (Report, time.Time, error) {
	b, err := New(opts)
	if err != nil {
		return Report{}, time.Time{}, err
	}
	if st == nil {
		return b.Report(), time.Time{}, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	const batch = 4096
	batches := make(chan []store.Probe, 4)
	readErr := make(chan error, 1)
	go func() {
		defer close(batches)
		buf := make([]store.Probe, 0, batch)
		send := func() error {
			select {
			case batches <- buf:
				buf = make([]store.Probe, 0, batch)
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		err := st.Read(ctx, store.Between(opts.ReadFrom(), opts.To), store.Reader{Probe: func(p store.Probe) error {
			if buf = append(buf, p); len(buf) == batch {
				return send()
			}
			return nil
		}})
		if err == nil && len(buf) > 0 {
			err = send()
		}
		readErr <- err
	}()
	var first time.Time
	var addErr error
	for ps := range batches {
		if addErr != nil {
			continue // drained until the reader sees the cancel
		}
		if first.IsZero() {
			first = ps[0].Time
		}
		for _, p := range ps {
			if addErr = b.Add(p); addErr != nil {
				cancel()
				break
			}
		}
	}
	err = <-readErr
	switch {
	case addErr != nil:
		return Report{}, time.Time{}, addErr
	case err != nil:
		return Report{}, time.Time{}, fmt.Errorf("store: read probes: %w", err)
	}
	return b.Report(), first, nil
}
