package load

import (
	"fmt"
	"slices"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

// rebuild refuses to rebuild the hours of loc from the probes sent when a
// record keyed in another zone has fewer probes left than it counted
// (store.retention_days pruned them): the error says so in one line,
// rather than a policy quieter than the probes that were sent.
func rebuild(foreign []store.Hourly, sent []store.Probe, loc *time.Location) error {
	times := map[[2]string][]time.Time{} // per lane and site, in time order
	for _, p := range sent {
		if store.Sent(p) {
			k := [2]string{p.Lane, p.Site}
			times[k] = append(times[k], p.Time)
		}
	}
	for _, r := range foreign {
		ts := times[[2]string{r.Lane, r.Site}]
		from, _ := slices.BinarySearchFunc(ts, r.Hour, time.Time.Compare)
		to, _ := slices.BinarySearchFunc(ts, r.Hour.Add(time.Hour), time.Time.Compare)
		if n := int64(to - from); n < r.Samples {
			return fmt.Errorf("timezone %s: the hourly record of lane %s at %s was keyed in another zone and %d of its %d probes are no longer stored (store.retention_days), so its hour cannot be rebuilt: set timezone back to the zone the lanes were sampled in",
				loc, r.Lane, r.Hour.UTC().Format(time.RFC3339), r.Samples-n, r.Samples)
		}
	}
	return nil
}
