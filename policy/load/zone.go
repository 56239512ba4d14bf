package load

import (
	"fmt"
	"slices"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

// zone sorts the records of a policy's hours as a read hands them over:
// one keyed in the policy's zone is kept; one keyed in a zone a fraction
// of an hour away (sampled under UTC, read in Asia/Kathmandu) starts no
// hour of the policy's, whose hours are rebuilt from the probes
// (store.Rollup). Read hands the records over before the probes.
type zone struct {
	loc     *time.Location
	hours   []store.Window
	kept    map[laneHour]bool
	foreign []store.Hourly // keyed in another zone
	sent    []store.Probe  // the probes of the hours, once foreign ones came
}

type laneHour struct {
	lane, site string
	hour       int64
}

func newZone(loc *time.Location, hours []store.Window) *zone {
	return &zone{loc: store.OrUTC(loc), hours: hours, kept: map[laneHour]bool{}}
}

// in reports whether t lies in one of z's hours, widened by margin.
func (z *zone) in(t time.Time, margin time.Duration) bool {
	return slices.ContainsFunc(z.hours, func(w store.Window) bool { return !t.Before(w.From.Add(-margin)) && t.Before(w.To.Add(margin)) })
}

// keep reports whether h is a record of z's hours keyed in z's zone.
func (z *zone) keep(h store.Hourly) bool {
	switch {
	case !z.in(h.Hour, 0):
		return false
	case store.HourStart(h.Hour, z.loc).Equal(h.Hour):
		z.kept[laneHour{h.Lane, h.Site, h.Hour.Unix()}] = true
		return true
	}
	z.foreign = append(z.foreign, h)
	return false
}

// probe keeps p for a rebuild: records keyed in another zone came, and p
// lies within an hour of z's hours.
func (z *zone) probe(p store.Probe) {
	if z.foreign != nil && z.in(p.Time, time.Hour) {
		z.sent = append(z.sent, p)
	}
}

// rebuild hands record the records of z's hours that none kept covers,
// rebuilt from the probes; a record keyed in another zone with fewer
// probes left than it counted (store.retention_days pruned them) is an
// error, not a policy quieter than the probes that were sent.
func (z *zone) rebuild(record func(store.Hourly)) error {
	if z.foreign == nil {
		return nil
	}
	times := map[[2]string][]time.Time{} // per lane and site, in time order
	for _, p := range z.sent {
		if store.Sent(p) {
			k := [2]string{p.Lane, p.Site}
			times[k] = append(times[k], p.Time)
		}
	}
	for _, r := range z.foreign {
		ts := times[[2]string{r.Lane, r.Site}]
		from, _ := slices.BinarySearchFunc(ts, r.Hour, time.Time.Compare)
		to, _ := slices.BinarySearchFunc(ts, r.Hour.Add(time.Hour), time.Time.Compare)
		if n := int64(to - from); n < r.Samples {
			return fmt.Errorf("timezone %s: the hourly record of lane %s at %s was keyed in another zone and %d of its %d probes are no longer stored (store.retention_days), so its hour cannot be rebuilt: set timezone back to the zone the lanes were sampled in",
				z.loc, r.Lane, r.Hour.UTC().Format(time.RFC3339), r.Samples-n, r.Samples)
		}
	}
	for _, h := range store.Rollup(z.sent, z.loc) {
		if z.in(h.Hour, 0) && !z.kept[laneHour{h.Lane, h.Site, h.Hour.Unix()}] {
			record(h)
		}
	}
	return nil
}
