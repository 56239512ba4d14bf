package policy

import (
	"iter"
	"math"
	"slices"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

// History indexes hourly records by lane, hour and site, for ForHour and
// for a replay (policygen backtest) that keeps it up to date. It is not
// safe for concurrent use.
type History struct {
	loc     *time.Location
	lanes   map[string]*laneHistory
	keys    map[lookKey][]int64 // the hours a lookback reads, shared by every lane
	waitBuf []WaitDist          // ClassesAt's lanes' wait distributions, reused
}

// lookKey names the hour starts of wall-clock hour hh on each of the days
// days before date d.
type lookKey struct {
	d        civil
	hh, days int
}

// laneHistory is one lane's records and what its figures keep of them.
type laneHistory struct {
	byHour   hourIndex             // hour start (Unix s) → one record per site
	ever     int                   // records with samples
	looks    map[memoKey]*lookMemo // LaneAt's lookback figures
	lastMemo int64                 // at least the latest hour of looks
	lastKey  int64                 // the hour of the newest Add
	lastRecs []rec                 // and its records
	blocks   [24][]rec             // by UTC hour of day, where an hour's first record goes
	obs      []obsEntry            // AddProbe's, in time order
	obsBase  int                   // observations dropped from obs's front
	cals     []laneCal             // one per lookback
}

// rec is what the rules read of a store.Hourly, in 64 bytes.
type rec struct {
	Site                                    string
	At                                      int64 // the hour's start, Unix s
	WorstQueueS, WorstCensoredS, MinTokPerS float64
	Samples, Failures                       int
}

// hour returns the lane's records of the hour starting at Unix second k.
func (lh *laneHistory) hour(k int64) []rec {
	if k == lh.lastKey && lh.lastRecs != nil {
		return lh.lastRecs
	}
	return lh.byHour.get(k)
}

// lookMemo is the lookback part of a lane's figures for one hour and
// lookback, and the newest record's hour (MinInt64: none).
type lookMemo struct {
	stat   stat
	newest int64
}

type memoKey struct {
	hour int64 // the policy's hour, Unix s
	days int
}

// NewHistory returns an empty History keying hours in loc (nil: UTC).
func NewHistory(loc *time.Location) *History {
	return &History{loc: store.OrUTC(loc), lanes: map[string]*laneHistory{}, keys: map[lookKey][]int64{}}
}

// HourHistory is the History of recs before the end of the hour holding
// `hour`: with AddProbe and x.ForHour, ForHourProbes on a streamed read.
func HourHistory(p Params, recs []store.Hourly, hour time.Time) *History {
	loc := store.OrUTC(p.Location)
	end := store.HourStart(hour, loc).Add(time.Hour)
	x := NewHistory(loc)
	for _, r := range recs {
		if r.Hour.Before(end) {
			x.Add(r)
		}
	}
	return x
}

// Add adds r, replacing the record of the same lane, site and hour. A
// record with Samples <= 0 counts as no record.
func (x *History) Add(r store.Hourly) {
	lh := x.lane(r.Lane)
	k := r.Hour.Unix()
	n := rec{Site: r.Site, At: k, WorstQueueS: r.WorstQueueS, WorstCensoredS: r.WorstCensoredS, MinTokPerS: r.MinTokPerS,
		Samples: int(r.Samples), Failures: int(r.Failures)}
	if k < lh.lastMemo {
		for m := range lh.looks {
			if k < m.hour {
				delete(lh.looks, m)
			}
		}
	}
	rs := lh.hour(k)
	for i := range rs {
		if rs[i].Site == r.Site {
			if rs[i].Samples > 0 {
				lh.ever--
			}
			rs[i] = n
			if n.Samples > 0 {
				lh.ever++
			}
			lh.lastKey, lh.lastRecs = k, rs
			return
		}
	}
	if n.Samples > 0 {
		lh.ever++
	}
	if len(rs) == 0 { // from the hour of day's block: a lookback's records sit together in memory
		b := &lh.blocks[(k/3600%24+24)%24]
		if len(*b) == 0 {
			*b = make([]rec, 32)
		}
		rs, *b = (*b)[:1:1], (*b)[1:]
		rs[0] = n
	} else {
		rs = append(rs, n)
	}
	lh.byHour.set(k, rs)
	lh.lastKey, lh.lastRecs = k, rs
}

// Drop removes the records and probes of hours before `before`; a
// calibrator already made keeps what it learned, so drop only hours older
// than every lookback.
func (x *History) Drop(before time.Time) {
	cut := before.Unix()
	for _, lh := range x.lanes {
		lh.dropObs(cut)
		dropped := lh.byHour.dropBefore(cut, func(rs []rec) {
			for i := range rs {
				if rs[i].Samples > 0 {
					lh.ever--
				}
			}
		})
		if dropped {
			clear(lh.looks)
			lh.lastKey, lh.lastRecs = 0, nil
		}
	}
}

// lookback returns the lane's lookback figures for hour h over days days.
func (x *History) lookback(lh *laneHistory, days int, h time.Time) *lookMemo {
	k := memoKey{h.Unix(), days}
	if m := lh.looks[k]; m != nil {
		return m
	}
	m := &lookMemo{newest: math.MinInt64}
	lt := h.In(x.loc)
	for r := range x.lookbackRecs(lh, civilOf(lt), lt.Hour(), days) {
		m.stat.add(r)
		m.newest = max(m.newest, r.At)
	}
	if len(lh.looks) >= 32 {
		clear(lh.looks)
	}
	lh.looks[k] = m
	lh.lastMemo = max(lh.lastMemo, k.hour)
	return m
}

// lookbackRecs yields the lane's records with samples of wall-clock hour
// hh on each of the days days before date d.
func (x *History) lookbackRecs(lh *laneHistory, d civil, hh, days int) iter.Seq[*rec] {
	return func(yield func(*rec) bool) {
		for _, u := range x.lookbackHours(d, hh, days) {
			rs := lh.byHour.get(u)
			for i := range rs {
				if rs[i].Samples > 0 && !yield(&rs[i]) {
					return
				}
			}
		}
	}
}

// lookbackHours is the package's lookbackHours, cached for every lane.
func (x *History) lookbackHours(d civil, hh, days int) []int64 {
	k := lookKey{d, hh, days}
	if ks, ok := x.keys[k]; ok {
		return ks
	}
	if len(x.keys) >= 64 {
		clear(x.keys)
	}
	x.keys[k] = lookbackHours(nil, x.loc, d, hh, days)
	return x.keys[k]
}

// lookbackHours appends to keys the starts (Unix s) of wall-clock hour hh
// in loc on each of the days days before date d.
func lookbackHours(keys []int64, loc *time.Location, d civil, hh, days int) []int64 {
	for back := 1; back <= days; back++ {
		keys = sameHour(keys, loc, addDays(d, -back), hh)
	}
	return keys
}

// sameHour appends to keys the starts (Unix s) of wall-clock hour hh in loc
// on date d: two on a fall-back day, none on a day that skipped it.
func sameHour(keys []int64, loc *time.Location, d civil, hh int) []int64 {
	t := time.Date(int(d/10000), time.Month(d/100%100), int(d%100), hh, 0, 0, 0, loc)
	_, before := t.Add(-time.Hour).Zone()
	_, after := t.Add(time.Hour).Zone()
	_, at := t.Zone()
	if before == at && at == after { // no offset change near t: t is the hour itself
		return append(keys, t.Unix())
	}
	n := len(keys)
	for _, c := range [3]time.Time{t.Add(-time.Hour), t, t.Add(time.Hour)} {
		c = store.HourStart(c, loc)
		lt := c.In(loc)
		u := c.Unix()
		if civilOf(lt) == d && lt.Hour() == hh && !slices.Contains(keys[n:], u) {
			keys = append(keys, u)
		}
	}
	return keys
}

// civil is a calendar date as yyyymmdd, so that dates compare as integers.
type civil int

func civilOf(t time.Time) civil {
	y, m, d := t.Date()
	return civil(y*10000 + int(m)*100 + d)
}

// addDays returns the date n days after d.
func addDays(d civil, n int) civil {
	return civilOf(time.Date(int(d/10000), time.Month(d/100%100), int(d%100)+n, 12, 0, 0, 0, time.UTC))
}
