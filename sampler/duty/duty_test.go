package duty

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// hb is a heartbeat of instance id of shard 0/2 at site eu, started start
// after t0, written at (after t0), interval 10 s.
func hb(id string, start, at time.Duration) store.Heartbeat {
	return store.Heartbeat{Instance: id, Shard: "0/2", Site: "eu", Host: "host-" + id, Time: t0.Add(at),
		StartNS: t0.Add(start).UnixNano(), IntervalS: 10}
}

func TestDecide(t *testing.T) {
	const iv = 10 * time.Second
	now := t0.Add(time.Minute)
	self := hb("b", 5*time.Second, time.Minute)
	other := func(f func(*store.Heartbeat)) store.Heartbeat {
		b := hb("a", 0, 55*time.Second)
		f(&b)
		return b
	}
	cases := []struct {
		name   string
		beats  []store.Heartbeat
		self   store.Heartbeat
		active bool
		holder string
		live   int
		reason string
	}{
		{"alone", nil, self, true, "b", 1, "active: no other live instance of shard 0/2 at site eu"},
		{"only its own beats", []store.Heartbeat{self, hb("b", 5*time.Second, 50*time.Second)}, self, true, "b", 1, "no other live"},
		{"an earlier start probes", []store.Heartbeat{hb("a", 0, 55*time.Second), self}, self, false, "a", 2,
			"standby: instance a on host host-a (started 2026-03-01T10:00:00Z, heartbeat 5s ago) probes shard 0/2 at site eu; this one resumes once that heartbeat is 17.5s old"},
		{"a later start stands by", []store.Heartbeat{other(func(b *store.Heartbeat) { b.StartNS = t0.Add(9 * time.Second).UnixNano() })}, self, true, "b", 2,
			"active: the earliest started of 2 live instances"},
		{"same start: the smaller id", []store.Heartbeat{other(func(b *store.Heartbeat) { b.StartNS = self.StartNS })}, self, false, "a", 2, "standby: instance a"},
		{"same start: self the smaller id", []store.Heartbeat{other(func(b *store.Heartbeat) { b.StartNS, b.Instance = self.StartNS, "c" })}, self, true, "b", 2, "active"},
		{"stale: two intervals old", []store.Heartbeat{other(func(b *store.Heartbeat) { b.Time = now.Add(-20 * time.Second) })}, self, true, "b", 1, "no other live"},
		{"stale: two less a quarter", []store.Heartbeat{other(func(b *store.Heartbeat) { b.Time = now.Add(-17500 * time.Millisecond) })}, self, true, "b", 1, "no other live"},
		{"live: just under that", []store.Heartbeat{other(func(b *store.Heartbeat) { b.Time = now.Add(-17500*time.Millisecond + time.Millisecond) })}, self, false, "a", 2,
			"heartbeat 17.499s ago"},
		{"live: one interval and a jitter old", []store.Heartbeat{other(func(b *store.Heartbeat) { b.Time = now.Add(-13 * time.Second) })}, self, false, "a", 2, "standby"},
		{"its own interval counts", []store.Heartbeat{other(func(b *store.Heartbeat) { b.Time, b.IntervalS = now.Add(-50*time.Second), 30 })}, self, false, "a", 2,
			"resumes once that heartbeat is 52.5s old"},
		{"no interval: self's", []store.Heartbeat{other(func(b *store.Heartbeat) { b.Time, b.IntervalS = now.Add(-17*time.Second), 0 })}, self, false, "a", 2, "standby"},
		{"far ahead of now: ignored", []store.Heartbeat{other(func(b *store.Heartbeat) { b.Time = now.Add(18 * time.Second) })}, self, true, "b", 1, "no other live"},
		{"a little ahead: live", []store.Heartbeat{other(func(b *store.Heartbeat) { b.Time = now.Add(5 * time.Second) })}, self, false, "a", 2, "standby"},
		{"another shard", []store.Heartbeat{other(func(b *store.Heartbeat) { b.Shard = "1/2" })}, self, true, "b", 1, "no other live"},
		{"another site", []store.Heartbeat{other(func(b *store.Heartbeat) { b.Site = "" })}, self, true, "b", 1, "no other live"},
		{"no site", []store.Heartbeat{}, func() store.Heartbeat { s := self; s.Site = ""; return s }(), true, "b", 1,
			"active: no other live instance of shard 0/2"},
		{"the holder's newest beat", []store.Heartbeat{hb("a", 0, 45*time.Second), hb("a", 0, 58*time.Second), hb("a", 0, 50*time.Second)}, self, false, "a", 2,
			"heartbeat 2s ago"},
		{"three: the earliest", []store.Heartbeat{hb("c", 2*time.Second, 55*time.Second), hb("a", 3*time.Second, 55*time.Second), self}, self, false, "c", 3, "instance c"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Decide(c.beats, c.self, now, iv)
			if d.Active != c.active || d.Holder.Instance != c.holder || d.Live != c.live || !strings.Contains(d.Reason, c.reason) {
				t.Errorf("Decide = active %v holder %s live %d %q; want %v %s %d containing %q",
					d.Active, d.Holder.Instance, d.Live, d.Reason, c.active, c.holder, c.live, c.reason)
			}
		})
	}
}

// A heartbeat that no sampler could have written is ignored, whatever its
// start, and reported once per instance (issue 28: one point with
// interval_s 5e9 held the shard for 277 years, 5e9 s × 1.75): an interval
// outside 0 to MaxInterval (0 names none: the reader's applies), a start
// after the beat's time by more than its lifetime or more than MaxUptime
// before it, a time more than its lifetime ahead of the reader's clock.
func TestDecideIgnoresImplausibleBeats(t *testing.T) {
	const iv = 10 * time.Second
	now := t0.Add(time.Minute)
	self := hb("b", 5*time.Second, time.Minute)
	a := func(f func(*store.Heartbeat)) store.Heartbeat {
		b := hb("a", 0, 55*time.Second) // live, started before self
		f(&b)
		return b
	}
	cases := []struct {
		name    string
		beats   []store.Heartbeat
		active  bool
		live    int
		ignored string // "" none, else a part of a's reason
	}{
		{"the forged interval of the issue", []store.Heartbeat{a(func(b *store.Heartbeat) { b.IntervalS = 5e9 })}, true, 1, "interval_s 5e+09"},
		{"an interval just over the longest", []store.Heartbeat{a(func(b *store.Heartbeat) { b.IntervalS = MaxInterval.Seconds() + 1 })}, true, 1, "interval_s"},
		{"the longest interval", []store.Heartbeat{a(func(b *store.Heartbeat) { b.IntervalS = MaxInterval.Seconds() })}, false, 2, ""},
		{"a negative interval", []store.Heartbeat{a(func(b *store.Heartbeat) { b.IntervalS = -10 })}, true, 1, "interval_s -10"},
		{"a NaN interval", []store.Heartbeat{a(func(b *store.Heartbeat) { b.IntervalS = math.NaN() })}, true, 1, "interval_s NaN"},
		{"an infinite interval", []store.Heartbeat{a(func(b *store.Heartbeat) { b.IntervalS = math.Inf(1) })}, true, 1, "interval_s +Inf"},
		{"no interval: the reader's", []store.Heartbeat{a(func(b *store.Heartbeat) { b.IntervalS = 0 })}, false, 2, ""},
		{"a start ten years and more before", []store.Heartbeat{a(func(b *store.Heartbeat) { b.StartNS = b.Time.Add(-MaxUptime - time.Second).UnixNano() })}, true, 1, "start_ns"},
		{"a start at the epoch", []store.Heartbeat{a(func(b *store.Heartbeat) { b.StartNS = 0 })}, true, 1, "start_ns 1970-01-01T00:00:00Z"},
		{"a start just under ten years before", []store.Heartbeat{a(func(b *store.Heartbeat) { b.StartNS = b.Time.Add(-MaxUptime).UnixNano() })}, false, 2, ""},
		{"a start after its time by more than its lifetime", []store.Heartbeat{a(func(b *store.Heartbeat) { b.StartNS = b.Time.Add(18 * time.Second).UnixNano() })}, true, 1, "start_ns"},
		{"a start a little after its time (a clock stepped back)", []store.Heartbeat{a(func(b *store.Heartbeat) { b.StartNS = b.Time.Add(time.Second).UnixNano() })}, true, 2, ""},
		{"a time far ahead", []store.Heartbeat{a(func(b *store.Heartbeat) { b.Time = now.Add(time.Hour) })}, true, 1, "ahead of this host's clock"},
		{"a time just past its lifetime ahead", []store.Heartbeat{a(func(b *store.Heartbeat) { b.Time = now.Add(17500 * time.Millisecond) })}, true, 1, "ahead"},
		{"a time a little ahead", []store.Heartbeat{a(func(b *store.Heartbeat) { b.Time = now.Add(5 * time.Second) })}, false, 2, ""},
		{"a forged beat beside a good one of the same instance", []store.Heartbeat{a(func(b *store.Heartbeat) { b.IntervalS = 5e9 }), hb("a", 0, 50*time.Second)}, false, 2, "interval_s 5e+09"},
		{"another site's forged beat", []store.Heartbeat{a(func(b *store.Heartbeat) { b.IntervalS, b.Site = 5e9, "us" })}, true, 1, "interval_s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Decide(c.beats, self, now, iv)
			if d.Active != c.active || d.Live != c.live {
				t.Errorf("Decide = active %v live %d (%s); want active %v live %d", d.Active, d.Live, d.Reason, c.active, c.live)
			}
			switch {
			case c.ignored == "" && len(d.Ignored) > 0:
				t.Errorf("ignored %+v; want none", d.Ignored)
			case c.ignored != "" && (len(d.Ignored) != 1 || d.Ignored[0].Beat.Instance != "a" || !strings.Contains(d.Ignored[0].Err.Error(), c.ignored)):
				t.Errorf("ignored %+v; want a's beat alone, saying %q", d.Ignored, c.ignored)
			}
		})
	}
	// Two implausible beats of one instance: reported once.
	two := []store.Heartbeat{a(func(b *store.Heartbeat) { b.IntervalS = 5e9 }), a(func(b *store.Heartbeat) { b.IntervalS, b.Time = -1, now })}
	if d := Decide(two, self, now, iv); len(d.Ignored) != 1 {
		t.Errorf("two implausible beats of one instance: ignored %+v, want it once", d.Ignored)
	}
}

// The sites that share account quotas must list the same sites: a live
// beat of another site that lists others than self is reported, each
// instance's newest (issue 28). A beat that lists none (a sampler
// older than the field, or one without shared quotas) or a stale or
// implausible one says nothing; nor does a beat of self's own site, nor
// any beat when self lists none.
func TestDecideSitesDisagree(t *testing.T) {
	const iv = 10 * time.Second
	now := t0.Add(time.Minute)
	self := hb("b", 5*time.Second, time.Minute)
	self.Sites = "eu,us"
	at := func(id, site, sites string, ago time.Duration) store.Heartbeat {
		b := hb(id, 0, time.Minute-ago)
		b.Site, b.Sites, b.Shard = site, sites, "1/3"
		return b
	}
	cases := []struct {
		name  string
		self  string // self's Sites
		beats []store.Heartbeat
		want  []string // instances reported
	}{
		{"the same sites", "eu,us", []store.Heartbeat{at("u", "us", "eu,us", time.Second)}, nil},
		{"another site lists one more", "eu,us", []store.Heartbeat{at("u", "us", "ap,eu,us", time.Second)}, []string{"u"}},
		{"another site lists one fewer", "eu,us", []store.Heartbeat{at("u", "us", "us", time.Second)}, []string{"u"}},
		{"an older sampler says none", "eu,us", []store.Heartbeat{at("u", "us", "", time.Second)}, nil},
		{"a stale beat", "eu,us", []store.Heartbeat{at("u", "us", "ap,eu,us", 20*time.Second)}, nil},
		{"an implausible beat", "eu,us", []store.Heartbeat{func() store.Heartbeat {
			b := at("u", "us", "ap,eu,us", time.Second)
			b.IntervalS = 5e9
			return b
		}()}, nil},
		{"self's own site", "eu,us", []store.Heartbeat{at("e", "eu", "ap,eu,us", time.Second)}, nil},
		{"self lists none", "", []store.Heartbeat{at("u", "us", "ap,eu,us", time.Second)}, nil},
		{"each instance's newest", "eu,us", []store.Heartbeat{at("u", "us", "ap,eu,us", 5*time.Second), at("u", "us", "eu,us", time.Second), at("w", "us", "us", 3*time.Second), at("v", "us", "us", 3*time.Second)}, []string{"v", "w"}},
		{"two sites", "eu,us", []store.Heartbeat{at("u", "us", "ap,eu,us", time.Second), at("p", "ap", "ap,eu,us", time.Second)}, []string{"p", "u"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			me := self
			me.Sites = c.self
			d := Decide(c.beats, me, now, iv)
			var got []string
			for _, b := range d.Disagree {
				got = append(got, b.Instance)
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("Disagree names %v, want %v", got, c.want)
			}
			if !d.Active || d.Live != 1 {
				t.Errorf("another site's beats changed the rule: %+v", d)
			}
		})
	}
}

// For any set of heartbeats of one shard and site, the live instances that
// read them agree: exactly one of them is active, it is the one every other
// names, and no stale or far-future beat, nor one of another shard or
// site, nor an implausible one, changes the outcome.
func TestExactlyOneActive(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 2))
	for iter := range 5000 {
		now := t0.Add(time.Duration(rng.Int64N(int64(time.Hour))))
		n := 1 + rng.IntN(6)
		var beats, noise []store.Heartbeat
		var live []store.Heartbeat // each live instance's newest beat
		for i := range n {
			id := fmt.Sprintf("i%d", rng.IntN(4)*10+i) // distinct ids, random order
			iv := time.Duration(1+rng.IntN(60)) * time.Second
			// Starts collide often: the tie-break matters.
			start := now.Add(-time.Duration(rng.IntN(3)) * time.Minute).UnixNano()
			life := 2*iv - iv/4
			b := store.Heartbeat{Instance: id, Shard: "1/3", Site: "s", StartNS: start, IntervalS: iv.Seconds(),
				Time: now.Add(-time.Duration(rng.Int64N(int64(life))))}
			if b.Time.Equal(now.Add(-life)) {
				b.Time = b.Time.Add(time.Nanosecond)
			}
			live = append(live, b)
			beats = append(beats, b)
			for range rng.IntN(3) { // older beats of the same instance, live or not
				old := b
				old.Time = b.Time.Add(-time.Duration(rng.Int64N(int64(4 * iv))))
				beats = append(beats, old)
			}
		}
		for range rng.IntN(4) { // dead instances, early starts; other shards and sites
			iv := time.Duration(1+rng.IntN(60)) * time.Second
			b := store.Heartbeat{Instance: fmt.Sprintf("dead%d", rng.IntN(100)), Shard: "1/3", Site: "s",
				StartNS: now.Add(-24 * time.Hour).UnixNano(), IntervalS: iv.Seconds()}
			switch rng.IntN(6) {
			case 0:
				b.Time = now.Add(-(2*iv - iv/4) - time.Duration(rng.Int64N(int64(time.Hour))))
			case 1:
				b.Time = now.Add(2*iv - iv/4 + time.Duration(rng.Int64N(int64(time.Hour))))
			case 2:
				b.Time, b.Shard = now, "0/3"
			case 3:
				b.Time, b.Site = now, ""
			case 4: // implausible: forged or corrupt
				b.Time, b.IntervalS = now, []float64{5e9, -1, math.NaN(), math.Inf(1)}[rng.IntN(4)]
			case 5:
				b.Time, b.StartNS = now, []int64{0, -1, now.Add(time.Hour).UnixNano()}[rng.IntN(3)]
			}
			noise = append(noise, b)
		}
		rng.Shuffle(len(beats), func(i, j int) { beats[i], beats[j] = beats[j], beats[i] })
		all := append(append([]store.Heartbeat(nil), beats...), noise...)
		rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		active, holders := 0, map[string]bool{}
		for _, self := range live {
			iv := time.Duration(self.IntervalS * float64(time.Second))
			d := Decide(all, self, now, iv)
			if d.Active {
				active++
			}
			holders[d.Holder.Instance] = true
			if d.Live != n {
				t.Fatalf("iter %d: %s sees %d live instances, want %d", iter, self.Instance, d.Live, n)
			}
			if clean := Decide(beats, self, now, iv); clean.Active != d.Active || clean.Holder.Instance != d.Holder.Instance {
				t.Fatalf("iter %d: stale, future or foreign beats changed %s's decision", iter, self.Instance)
			}
		}
		if active != 1 || len(holders) != 1 {
			t.Fatalf("iter %d: %d active, holders %v; want exactly one\n%+v", iter, active, holders, all)
		}
	}
}
