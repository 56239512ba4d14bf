package policy

// hourIndex holds a lane's records by hour start (Unix s): slots, one an
// hour from base on, for the hours on that grid, and a map for any hour
// start off it (a zone whose offset moved by less than an hour). A replay
// reads every lane's lookback hours at every hour, so a slot is an index,
// not a hash.
type hourIndex struct {
	base  int64
	slots [][]rec
	odd   map[int64][]rec
}

// slot returns the index of hour start k in slots and whether k is on the
// grid (it may be out of range; off the grid it means nothing).
func (x *hourIndex) slot(k int64) (int64, bool) {
	d := k - x.base
	return d / 3600, d%3600 == 0
}

// get returns the records of hour start k.
func (x *hourIndex) get(k int64) []rec {
	if i, on := x.slot(k); on {
		if i >= 0 && i < int64(len(x.slots)) {
			return x.slots[i]
		}
		return nil
	}
	return x.odd[k]
}

// set makes rs the records of hour start k.
func (x *hourIndex) set(k int64, rs []rec) {
	if x.slots == nil {
		x.base = k
	}
	i, on := x.slot(k)
	if !on {
		if x.odd == nil {
			x.odd = map[int64][]rec{}
		}
		x.odd[k] = rs
		return
	}
	if i < 0 { // an older hour: grow at the front, by at least the length, so that a read in reverse order stays linear
		grow := max(-i, int64(len(x.slots)))
		slots := make([][]rec, grow+int64(len(x.slots)))
		copy(slots[grow:], x.slots)
		x.slots, x.base, i = slots, x.base-grow*3600, i+grow
	}
	for i >= int64(len(x.slots)) {
		x.slots = append(x.slots, nil)
	}
	x.slots[i] = rs
}

// dropBefore removes the hours before cut, calling f with each removed
// hour's records, and reports whether it removed any.
func (x *hourIndex) dropBefore(cut int64, f func([]rec)) bool {
	dropped := false
	for k, rs := range x.odd {
		if k < cut {
			f(rs)
			delete(x.odd, k)
			dropped = true
		}
	}
	n := int64(0)
	if cut > x.base {
		n = min((cut-x.base+3599)/3600, int64(len(x.slots)))
	}
	for _, rs := range x.slots[:n] {
		if rs != nil {
			f(rs)
			dropped = true
		}
	}
	x.slots = x.slots[n:]
	x.base += n * 3600
	return dropped
}
