package swings

import (
	"math/bits"
	"slices"
	"time"

	"github.com/lanewatch/lanewatch/internal/num"
	"github.com/lanewatch/lanewatch/store"
)

// laneAcc is one lane of a report being built: its figures so far and the
// worsts and calendar days of each hour of day.
type laneAcc struct {
	LaneReport
	worsts [HoursPerDay][]worst
	days   [HoursPerDay][]uint64 // bit i: day i of builder.dayIdx
}

// builder adds one lane-hour's record at a time to a report.
type builder struct {
	r      *Report // its Location, From and To set
	lanes  map[string]*laneAcc
	order  []string
	worstN int // initial capacity of a lane-hour's worsts: the window's days
	// The hour of the last setHour, its hour of day and calendar day.
	hourSet bool
	hourT   time.Time
	hourIn  bool
	hod     int
	day     int
	dayIdx  map[int]int // calendar day (y*10000 + m*100 + d) → bit index
}

func newBuilder(opt Options) *builder {
	loc := store.OrUTC(opt.Location)
	r := &Report{Location: loc, Timezone: loc.String(), From: opt.From, To: opt.To, Days: opt.Days}
	for _, c := range opt.Classes {
		if num.Finite(c.DeadlineS) && c.DeadlineS > 0 {
			r.Classes = append(r.Classes, c)
		}
	}
	b := &builder{r: r, lanes: map[string]*laneAcc{}, dayIdx: map[int]int{}}
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
	if b.hourSet && t.UnixNano() == b.hourT.UnixNano() {
		return b.hourIn
	}
	b.hourSet, b.hourT = true, t
	from, to := b.r.From, b.r.To
	b.hourIn = (from.IsZero() || !t.Before(from)) && (to.IsZero() || t.Before(to))
	if !b.hourIn {
		return false
	}
	local := t.In(b.r.Location)
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
	if wv, ok := recordWorst(worstQ, worstC, samples, failures); ok {
		if l.worsts[h] == nil && b.worstN > 0 {
			l.worsts[h] = make([]worst, 0, b.worstN)
		}
		l.worsts[h] = append(l.worsts[h], wv)
	}
}

// finish lists the lanes (those of lanes first, in order, with their kind
// when it is set; the others by name) and summarises each.
func (b *builder) finish(lanes []Lane) *Report {
	for _, cl := range slices.Backward(lanes) { // the first configured kind wins over the records'
		if l := b.lane(cl.Name); cl.Kind != "" {
			l.Kind = cl.Kind
		}
	}
	listed := make(map[string]bool, len(lanes))
	var order []string
	for _, cl := range lanes {
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
			for _, w := range l.days[h] {
				st.Days += bits.OnesCount64(w)
			}
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

// inLane is a lane of the store's records during a Sites build: its
// lane-hour being merged and the sites it was seen at.
type inLane struct {
	name   string
	merged *laneAcc // its lane in the report (nil until a record in the window)
	gen    int      // the hour (Sites' count) the fields below merge
	kind   string   // the lane-hour's first record's kind
	wq, wc float64
	n, f   int64
	seen   uint64 // the sites of the lane-hour so far (bit: site index)
	sites  uint64 // every site of the lane
	list   []string
	cols   []*laneAcc // by site index: the lane's column for that site
}

// Sites builds Build's report from records handed over in time order, in
// parts (Add), keeping per lane only its figures, never the records. It
// cannot when the records of an hour are not all together (a store
// returns them by time), there are more than 64 sites, or a lane@site
// column's name is a lane of the records: Build the records then.
type Sites struct {
	perSite  bool
	lanes    []Lane // Options.Lanes
	b, bc    *builder
	byName   map[string]*inLane
	all      []*inLane
	sites    []string
	lastSite int
	prev     []*inLane
	cur      []*inLane
	touched  []*inLane
	done     map[int64]bool
	curNS    int64
	gen      int // the hours begun so far
	in       bool
	closed   bool // refused (an Add failed) or finished: Add and Finish refuse
}

// NewSites starts Build's report of opt and perSite.
func NewSites(opt Options, perSite bool) *Sites {
	return &Sites{perSite: perSite, lanes: opt.Lanes, b: newBuilder(opt), bc: newBuilder(opt), byName: map[string]*inLane{}, lastSite: -1, done: map[int64]bool{}}
}

// flush adds the merged lane-hours of the hour being read to the report.
func (s *Sites) flush() {
	if s.in {
		for _, li := range s.touched {
			if li.merged == nil {
				li.merged = s.b.lane(li.name)
			}
			s.b.add(li.merged, li.kind, li.wq, li.wc, li.n, li.f)
		}
	}
	s.touched = s.touched[:0]
}

// Add counts the records hs, which follow those of the Adds before. It
// returns false, and s is done, when the report cannot be built in one
// pass (an hour's records not all together, more than 64 sites).
func (s *Sites) Add(hs []store.Hourly) bool {
	if s.closed {
		return false
	}
	b, bc := s.b, s.bc
	for i := range hs {
		h := &hs[i]
		if ns := h.Hour.UnixNano(); s.gen == 0 || ns != s.curNS {
			if s.gen > 0 {
				s.flush()
				s.done[s.curNS] = true
			}
			if s.done[ns] {
				s.closed = true
				return false
			}
			s.curNS = ns
			s.gen++
			s.in = b.setHour(h.Hour)
			bc.setHour(h.Hour)
			s.prev, s.cur = s.cur, s.prev[:0]
		}
		// The lanes of an hour come in the order of the hour before.
		var li *inLane
		if p := len(s.cur); p < len(s.prev) && s.prev[p].name == h.Lane {
			li = s.prev[p]
		} else if li = s.byName[h.Lane]; li == nil {
			li = &inLane{name: h.Lane}
			s.byName[h.Lane] = li
			s.all = append(s.all, li)
		}
		s.cur = append(s.cur, li)
		if s.lastSite < 0 || s.sites[s.lastSite] != h.Site {
			s.lastSite = slices.Index(s.sites, h.Site)
			if s.lastSite < 0 {
				if len(s.sites) == 64 {
					s.closed = true
					return false
				}
				s.lastSite = len(s.sites)
				s.sites = append(s.sites, h.Site)
			}
		}
		bit := uint64(1) << s.lastSite
		if li.sites&bit == 0 {
			li.sites |= bit
			li.list = append(li.list, h.Site)
		}
		if li.gen != s.gen {
			li.gen, li.seen, li.kind = s.gen, 0, h.Kind
			li.wq, li.wc, li.n, li.f = 0, 0, 0, 0
			s.touched = append(s.touched, li)
		}
		if li.seen&bit != 0 {
			continue // another copy of the lane-hour at this site (a kind changed)
		}
		li.seen |= bit
		li.wq = max(li.wq, h.WorstQueueS)
		li.wc = max(li.wc, h.WorstCensoredS)
		li.n += h.Samples
		li.f += h.Failures
		if s.in && s.perSite {
			for len(li.cols) <= s.lastSite {
				li.cols = append(li.cols, nil)
			}
			col := li.cols[s.lastSite]
			if col == nil {
				col = bc.lane(siteLane(li.name, h.Site))
				li.cols[s.lastSite] = col
			}
			bc.add(col, h.Kind, max(0, h.WorstQueueS), max(0, h.WorstCensoredS), h.Samples, h.Failures)
		}
	}
	return true
}

// Finish returns the report of the records added, or false when it
// cannot be built in one pass (an Add failed, or a column's name is a lane
// of the records). s is done after it.
func (s *Sites) Finish() (*Report, bool) {
	if s.closed {
		return nil, false
	}
	s.closed = true
	s.flush()
	sitesOf := make(map[string][]string, len(s.all))
	for _, li := range s.all {
		sitesOf[li.name] = li.list
	}
	listed, columns := listed(s.lanes, sitesOf, s.perSite)
	b, bc := s.b, s.bc
	if columns {
		for _, li := range s.all {
			for _, site := range li.list {
				if _, clash := s.byName[siteLane(li.name, site)]; clash {
					return nil, false
				}
			}
		}
		// First and Last stay: a column's record has a merged one of its hour.
		b.r.Records += bc.r.Records
		for _, name := range bc.order {
			b.lanes[name] = bc.lanes[name]
			b.order = append(b.order, name)
		}
	}
	return b.finish(listed), true
}
