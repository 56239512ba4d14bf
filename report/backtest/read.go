package backtest

import (
	"context"
	"fmt"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

// Read replays the probes from opts.ReadFrom() to opts.To in one read
// and returns the report and the time of the first probe read (zero: none).
func Read(ctx context.Context, st store.Store, opts Options) (Report, time.Time, error) {
	b, err := New(opts)
	if err != nil {
		return Report{}, time.Time{}, err
	}
	if st == nil {
		return b.Report(), time.Time{}, nil
	}
	var first time.Time
	var addErr error
	err = st.Read(ctx, store.Between(opts.ReadFrom(), opts.To), store.Reader{Probe: func(p store.Probe) error {
		if first.IsZero() {
			first = p.Time
		}
		addErr = b.Add(p)
		return addErr
	}})
	switch {
	case addErr != nil:
		return Report{}, time.Time{}, addErr
	case err != nil:
		return Report{}, time.Time{}, fmt.Errorf("store: read probes: %w", err)
	}
	return b.Report(), first, nil
}
