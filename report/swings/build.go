package swings

import (
	"math/bits"
	"slices"
	"time"

	"github.com/lanewatch/lanewatch/hours"
	"github.com/lanewatch/lanewatch/internal/num"
	"github.com/lanewatch/lanewatch/series"
)

// laneAcc is one lane of a report being built: its figures so far and the
// worsts and calendar days of each hour of day.
type laneAcc struct {
	LaneReport
	worsts [HoursPerDay][]worst
	days   [HoursPerDay][]uint64 // bit i: day i of builder.dayIdx
}

// builder adds one lane-hour's record at a time to a report (Compute's
// loop, shared with ComputeMerged).
type builder struct {
	r      *Report
	loc    *time.Location
	from   time.Time
	to     time.Time
	lanes  map[string]*laneAcc
	order  []string
	worstN int // initial capacity of a lane-hour's worsts: the window's days

	// The hour of the last setHour: records come by time, so an hour's
	// calendar day and hour of day are worked out once.
	hourSet bool
	hourNS  int64
	hourT   time.Time
	hourIn  bool
	hod     int
	day     int
	dayIdx  map[int]int // calendar day (y*10000 + m*100 + d) → bit index
}

func newBuilder(opt Options) *builder {
	loc := hours.OrUTC(opt.Location)
	r := &Report{Location: loc, Timezone: loc.String(), From: opt.From, To: opt.To, Days: opt.Days}
	for _, c := range opt.Classes {
		if num.Finite(c.DeadlineS) && c.DeadlineS > 0 {
			r.Classes = append(r.Classes, c)
		}
	}
	b := &builder{r: r, loc: loc, from: opt.From, to: opt.To, lanes: map[string]*laneAcc{}, dayIdx: map[int]int{}}
	if !opt.From.IsZero() && opt.To.After(opt.From) {
		if d := opt.To.Sub(opt.From).Hours() / 24; d < 62 {
			b.worstN = int(d) + 2
		}
	}
	return b
}

// lane returns the lane named name, created (and listed) on first use.
func (b *builder) lane(name string) *laneAcc {
	l, ok := b.lanes[name]
	if !ok {
		l = &laneAcc{LaneReport: LaneReport{Name: name}}
		for h := range l.Hours {
			l.Hours[h].Hour = h
		}
		b.lanes[name] = l
		b.order = append(b.order, name)
	}
	return l
}

// setHour makes t the hour of the next adds and reports whether it lies in
// the window.
func (b *builder) setHour(t time.Time) bool {
	ns := t.UnixNano()
	if b.hourSet && ns == b.hourNS {
		return b.hourIn
	}
	b.hourSet, b.hourNS, b.hourT = true, ns, t
	b.hourIn = (b.from.IsZero() || !t.Before(b.from)) && (b.to.IsZero() || t.Before(b.to))
	if !b.hourIn {
		return false
	}
	local := t.In(b.loc)
	b.hod = local.Hour()
	y, m, d := local.Date()
	key := y*10000 + int(m)*100 + d
	i, ok := b.dayIdx[key]
	if !ok {
		i = len(b.dayIdx)
		b.dayIdx[key] = i
	}
	b.day = i
	return true
}

// add counts one lane-hour's record (of the hour of the last setHour, in
// the window) with the given kind and fields in lane l.
func (b *builder) add(l *laneAcc, kind string, worstQ, worstC float64, samples, failures int64) {
	if l.Kind == "" {
		l.Kind = kind
	}
	h := b.hod
	st := &l.Hours[h]
	w, bit := b.day/64, uint64(1)<<(b.day%64)
	if len(l.days[h]) <= w {
		l.days[h] = append(l.days[h], make([]uint64, w+1-len(l.days[h]))...)
	}
	l.days[h][w] |= bit
	samples, failures = max(samples, 0), max(failures, 0)
	st.Samples += samples
	st.Failures += failures
	l.Samples += samples
	l.Failures += failures
	l.Records++
	b.r.Records++
	t := b.hourT
	if b.r.First.IsZero() || t.Before(b.r.First) {
		b.r.First = t
	}
	if t.After(b.r.Last) {
		b.r.Last = t
	}
	if wv, ok := recordWorst(series.Hourly{WorstQueueS: worstQ, WorstCensoredS: worstC}, samples, failures); ok {
		if l.worsts[h] == nil && b.worstN > 0 {
			l.worsts[h] = make([]worst, 0, b.worstN)
		}
		l.worsts[h] = append(l.worsts[h], wv)
	}
}

// finish lists the lanes (those of lanes first, in order, with their kind
// when it is set; the others by name) and summarises each.
func (b *builder) finish(lanes []Lane) *Report {
	listed := make(map[string]bool, len(lanes))
	kindSet := map[string]bool{}
	var order []string
	for _, cl := range lanes {
		l := b.lane(cl.Name)
		// The first configured kind wins over the records' (Compute used to
		// set it before reading any record).
		if cl.Kind != "" && !kindSet[cl.Name] {
			l.Kind, kindSet[cl.Name] = cl.Kind, true
		}
		if !listed[cl.Name] {
			listed[cl.Name] = true
			order = append(order, cl.Name)
		}
	}
	rest := make([]string, 0, len(b.lanes)-len(order))
	for _, name := range b.order {
		if !listed[name] {
			rest = append(rest, name)
		}
	}
	slices.Sort(rest)
	order = append(order, rest...)

	r := b.r
	r.Lanes = make([]LaneReport, 0, len(order))
	for _, name := range order {
		l := b.lanes[name]
		for h := range l.Hours {
			st := &l.Hours[h]
			n := 0
			for _, w := range l.days[h] {
				n += bits.OnesCount64(w)
			}
			st.Days = n
			w := l.worsts[h]
			st.Measured = len(w)
			if len(w) > 0 {
				st.WorstS, st.Censored, st.MedianS, st.MedianCensored = summarise(w)
			}
		}
		l.Swing = swingOf(l.Hours[:])
		r.Lanes = append(r.Lanes, l.LaneReport)
	}
	return r
}
