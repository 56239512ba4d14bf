package store_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

// A newest read keeps of each series the newest point of each window
// (touching windows apart, overlapping ones one), a later put of one key
// replacing an earlier unless it is a reservation over a probe, and hands
// them on by time and series: hourly points, probes, heartbeats.
func TestNewestOf(t *testing.T) {
	h := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return h.Add(time.Duration(m) * time.Minute) }
	probe := func(lane, kind string, m int, outcome string) store.Probe {
		return store.Probe{Lane: lane, Kind: kind, Time: at(m), Outcome: outcome, QueueS: float64(m)}
	}
	w := func(from, to int) store.Window { return store.Window{From: at(from), To: at(to)} }
	for _, c := range []struct {
		name    string
		windows []store.Window
		put     []store.Probe
		want    []store.Probe
	}{
		{"a window", []store.Window{w(0, 120)},
			[]store.Probe{probe("a", "free", 10, "ok"), probe("a", "paid", 20, "ok"), probe("a", "free", 50, "ok"), probe("b", "free", 5, "ok")},
			[]store.Probe{probe("b", "free", 5, "ok"), probe("a", "paid", 20, "ok"), probe("a", "free", 50, "ok")}},
		{"touching windows stay apart", []store.Window{w(60, 120), w(0, 60)},
			[]store.Probe{probe("a", "free", 10, "ok"), probe("a", "free", 50, "ok"), probe("a", "free", 60, "ok"), probe("a", "free", 70, "ok")},
			[]store.Probe{probe("a", "free", 50, "ok"), probe("a", "free", 70, "ok")}},
		{"overlapping windows are one", []store.Window{w(0, 61), w(60, 120)},
			[]store.Probe{probe("a", "free", 50, "ok"), probe("a", "free", 70, "ok")},
			[]store.Probe{probe("a", "free", 70, "ok")}},
		{"an older point put later does not replace", []store.Window{w(0, 120)},
			[]store.Probe{probe("a", "free", 70, "ok"), probe("a", "free", 50, "ok")},
			[]store.Probe{probe("a", "free", 70, "ok")}},
		{"a later write of the key replaces", []store.Window{w(0, 120)},
			[]store.Probe{probe("a", "free", 70, store.OutcomeReserved), probe("a", "free", 70, "timeout")},
			[]store.Probe{probe("a", "free", 70, "timeout")}},
		{"a later probe replaces a probe", []store.Window{w(0, 120)},
			[]store.Probe{probe("a", "free", 70, "ok"), probe("a", "free", 70, "timeout")},
			[]store.Probe{probe("a", "free", 70, "timeout")}},
		{"a reservation never replaces a probe", []store.Window{w(0, 120)},
			[]store.Probe{probe("a", "free", 70, "ok"), probe("a", "free", 70, store.OutcomeReserved)},
			[]store.Probe{probe("a", "free", 70, "ok")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []store.Probe
			f := store.Query{Windows: c.windows, Newest: true}.Filter()
			r, flush := store.NewestOf(f, store.Reader{Probe: func(p store.Probe) error { got = append(got, p); return nil }})
			for _, p := range c.put {
				if err := r.Probe(p); err != nil {
					t.Fatal(err)
				}
			}
			if len(got) != 0 {
				t.Fatalf("%d points handed on before the flush", len(got))
			}
			if err := flush(); err != nil || !slices.Equal(got, c.want) {
				t.Errorf("flush = %v, %+v; want %+v", err, got, c.want)
			}
		})
	}

	t.Run("hourly points, probes, then heartbeats; an error stops", func(t *testing.T) {
		var order []string
		stop := errors.New("enough")
		f := store.Query{Windows: []store.Window{w(0, 120)}, Newest: true}.Filter()
		r, flush := store.NewestOf(f, store.Reader{
			Heartbeat: func(store.Heartbeat) error { order = append(order, "heartbeat"); return nil },
			Probe:     func(store.Probe) error { order = append(order, "probe"); return stop },
			Hourly:    func(store.Hourly) error { order = append(order, "hourly"); return nil },
		})
		_ = r.Heartbeat(store.Heartbeat{Instance: "i", Time: at(1)})
		_ = r.Probe(probe("a", "free", 2, "ok"))
		_ = r.Probe(probe("b", "free", 3, "ok"))
		_ = r.Hourly(store.Hourly{Lane: "a", Kind: "free", Hour: h})
		if err := flush(); err != stop || !slices.Equal(order, []string{"hourly", "probe"}) {
			t.Errorf("flush = %v after %q; want %v after hourly, probe", err, order, stop)
		}
	})

	t.Run("without Newest the reader is the caller's", func(t *testing.T) {
		n := 0
		r, flush := store.NewestOf(store.Between(at(0), at(120)).Filter(), store.Reader{Probe: func(store.Probe) error { n++; return nil }})
		_ = r.Probe(probe("a", "free", 1, "ok"))
		if err := flush(); err != nil || n != 1 {
			t.Errorf("flush = %v after %d points handed on; want nil after 1", err, n)
		}
	})
}

// A query selects the points of its windows (from included, to not), its
// sites and its lanes (not applied to heartbeats); an empty window, an
// empty list of sites or lanes, or no window at all selects nothing.
func TestFilter(t *testing.T) {
	h := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	hour := store.Between(h, h.Add(time.Hour))
	for _, c := range []struct {
		name  string
		q     store.Query
		empty bool
		probe store.Probe
		beat  store.Heartbeat
		want  [2]bool // the probe, the heartbeat selected
	}{
		{"the window's start", hour, false, store.Probe{Lane: "a", Time: h}, store.Heartbeat{Instance: "i", Time: h}, [2]bool{true, true}},
		{"the window's end", hour, false, store.Probe{Lane: "a", Time: h.Add(time.Hour)}, store.Heartbeat{Instance: "i", Time: h.Add(time.Hour)}, [2]bool{false, false}},
		{"another site", hour.Site("eu"), false, store.Probe{Lane: "a", Site: "us", Time: h}, store.Heartbeat{Instance: "i", Site: "us", Time: h}, [2]bool{false, false}},
		{"its site", hour.Site("eu"), false, store.Probe{Lane: "a", Site: "eu", Time: h}, store.Heartbeat{Instance: "i", Site: "eu", Time: h}, [2]bool{true, true}},
		{"another lane: heartbeats have none", hour.OfLanes("b"), false, store.Probe{Lane: "a", Time: h}, store.Heartbeat{Instance: "a", Time: h}, [2]bool{false, true}},
		{"its lane", hour.OfLanes("a"), false, store.Probe{Lane: "a", Time: h}, store.Heartbeat{Instance: "a", Time: h}, [2]bool{true, true}},
		{"no window", store.Query{}, true, store.Probe{}, store.Heartbeat{}, [2]bool{}},
		{"an empty window", store.Between(h, h), true, store.Probe{Lane: "a", Time: h}, store.Heartbeat{Instance: "i", Time: h}, [2]bool{}},
		{"no site", store.Query{Windows: hour.Windows, Sites: []string{}}, true, store.Probe{}, store.Heartbeat{}, [2]bool{}},
		{"no lane", store.Query{Windows: hour.Windows, Lanes: []string{}}, true, store.Probe{}, store.Heartbeat{}, [2]bool{}},
	} {
		f := c.q.Filter()
		if f.Empty() != c.empty {
			t.Errorf("%s: Empty() = %t, want %t", c.name, f.Empty(), c.empty)
		}
		if c.empty {
			continue
		}
		if got := [2]bool{store.Selects(f, &c.probe), store.Selects(f, &c.beat)}; got != c.want {
			t.Errorf("%s: selects the probe, the heartbeat: %v, want %v", c.name, got, c.want)
		}
	}
}
