package app

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

// hourlyIn reads the hourly records of q for a policy whose hours are
// keyed in loc (the config's timezone). A store sampled under another zone
// whose offset differs from loc's by a fraction of an hour (UTC, then
// Asia/Kathmandu) holds records whose hour starts no hour of loc: the
// policy would find no basis and call every lane no_recent_sample. Those
// records are left out and the hours of q are rebuilt from the probes
// (store.Rollup in loc), as the sampler would have stored them; a record
// keyed in loc is kept as stored. A zone a whole number of hours away
// keys the same instants, and its records are used as they are.
//
// When a record keyed in another zone has fewer probes left in the store
// than it counted (store.retention_days pruned them), its hour cannot be
// rebuilt: the error says so in one line, rather than a policy quieter
// than the probes that were sent.
func hourlyIn(ctx context.Context, st store.Store, loc *time.Location, q store.Query) ([]store.Hourly, error) {
	recs, err := store.ReadHourly(ctx, st, q)
	if err != nil {
		return nil, fmt.Errorf("store: read hourly records: %w", err)
	}
	type key struct {
		lane, site string
		hour       int64
	}
	kept := recs[:0:0]
	var other []store.Hourly
	have := map[key]bool{}
	for _, r := range recs {
		if store.HourStart(r.Hour, loc).Equal(r.Hour) {
			kept = append(kept, r)
			have[key{r.Lane, r.Site, r.Hour.Unix()}] = true
		} else {
			other = append(other, r)
		}
	}
	if len(other) == 0 {
		return recs, nil
	}
	// The probes of q's hours and of every hour a foreign record covers
	// (it starts inside a window, so it ends within an hour after it).
	wide := q
	wide.Windows = make([]store.Window, len(q.Windows))
	for i, w := range q.Windows {
		wide.Windows[i] = store.Window{From: w.From.Add(-time.Hour), To: w.To.Add(time.Hour)}
	}
	probes, err := store.ReadProbes(ctx, st, wide)
	if err != nil {
		return nil, fmt.Errorf("store: read probes to rebuild the hours of timezone %s: %w", loc, err)
	}
	sent := map[[2]string][]time.Time{} // per lane and site, the sent probes' times, sorted
	for _, p := range probes {
		if store.Sent(p) {
			k := [2]string{p.Lane, p.Site}
			sent[k] = append(sent[k], p.Time)
		}
	}
	for _, ts := range sent {
		slices.SortFunc(ts, time.Time.Compare)
	}
	for _, r := range other {
		ts := sent[[2]string{r.Lane, r.Site}]
		from, _ := slices.BinarySearchFunc(ts, r.Hour, time.Time.Compare)
		to, _ := slices.BinarySearchFunc(ts, r.Hour.Add(time.Hour), time.Time.Compare)
		if n := int64(to - from); n < r.Samples {
			return nil, fmt.Errorf("timezone %s: the hourly record of lane %s at %s was keyed in another zone and %d of its %d probes are no longer stored (store.retention_days), so its hour cannot be rebuilt: set timezone back to the zone the lanes were sampled in",
				loc, r.Lane, r.Hour.UTC().Format(time.RFC3339), r.Samples-n, r.Samples)
		}
	}
	for _, r := range store.Rollup(probes, loc) {
		in := false
		for _, w := range q.Windows {
			in = in || w.Contains(r.Hour)
		}
		if in && !have[key{r.Lane, r.Site, r.Hour.Unix()}] {
			kept = append(kept, r)
		}
	}
	return kept, nil
}
