package swings

import (
	"context"
	"errors"

	"github.com/lanewatch/lanewatch/store"
)

// errTwoPasses stops Swings' streamed read: the report needs the records whole.
var errTwoPasses = errors.New("swings: the report needs the records whole")

// Read returns Build's report of the hourly records q selects,
// built while the store hands them over, never held whole. When it cannot
// be (more than 64 sites, a lane named like a lane@site column), they are
// read again whole.
func Read(ctx context.Context, st store.Store, q store.Query, opt Options, perSite bool) (*Report, error) {
	if st == nil {
		return Build(nil, opt, perSite), nil
	}
	s := NewSites(opt, perSite)
	var one [1]store.Hourly
	err := st.Read(ctx, q, store.Reader{Hourly: func(h store.Hourly) error {
		if one[0] = h; !s.Add(one[:]) {
			return errTwoPasses
		}
		return nil
	}})
	if err == nil {
		if rep, ok := s.Finish(); ok {
			return rep, nil
		}
	} else if !errors.Is(err, errTwoPasses) {
		return nil, err
	}
	recs, err := store.ReadHourly(ctx, st, q)
	if err != nil {
		return nil, err
	}
	return Build(recs, opt, perSite), nil
}
