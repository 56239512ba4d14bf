package sampler_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/internal/influxtest"
	"github.com/lanewatch/lanewatch/sampler"
	"github.com/lanewatch/lanewatch/sampler/budget"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/influx"
)

// siteReq is one request the lane server received: from which site, for
// which lane, at the samplers' clock.
type siteReq struct {
	site, lane string
	at         time.Time
}

// siteLedger is a lane server that records which site sent each request
// (each site's config points at its own path prefix).
type siteLedger struct {
	lane  lane
	clock func() time.Time
	mu    sync.Mutex
	reqs  []siteReq
}

func (l *siteLedger) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	site, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	body := make([]byte, 4096)
	n, _ := r.Body.Read(body)
	model := ""
	if i := strings.Index(string(body[:n]), `"model":"`); i >= 0 {
		model = strings.SplitN(string(body[:n])[i+9:], `"`, 2)[0]
	}
	l.mu.Lock()
	l.reqs = append(l.reqs, siteReq{site, model, l.clock()})
	l.mu.Unlock()
	r.Body = readCloser{strings.NewReader(string(body[:n]))}
	l.lane.ServeHTTP(w, r)
}

// Issue 21: three sites probing one account's lanes share its budget. Three
// samplers (fra1, iad1, sgp1, each its own store handle, as on three
// machines) against one InfluxDB, one account-scope group of 12 probes a
// day, on the default schedule for a simulated week: each round counts
// every site's requests of the day, the lane server gets exactly
// probes_per_day requests of the group a day (never more; every slot is
// used while all sites are up), each from the site SlotOwner gives the
// slot, and each site's probes fall in every hour of the day. Then a day
// with sgp1 down: its slots go unused, the others spend no more.
func TestSitesShareAccountQuota(t *testing.T) {
	url := influxtest.URL(t)
	db := influxtest.NewDB(t, url)
	sites := []string{"fra1", "iad1", "sgp1"}
	const perDay = 12

	var mu sync.Mutex
	clock := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	led := &siteLedger{lane: lane{delay: map[string]time.Duration{}, hang: map[string]bool{}}, clock: now}
	srv := httptest.NewServer(led)
	t.Cleanup(srv.Close)

	var cfg *config.Config
	samplers := make([]*sampler.Sampler, len(sites))
	for i, site := range sites {
		samplers[i], cfg = siteSampler(t, url, db, srv.URL, site, sites, perDay, now, nil)
	}
	if cfg.Schedule != "7,27,47 * * * *" {
		t.Fatalf("the default schedule is %q; this test assumes 7,27,47 * * * *", cfg.Schedule)
	}
	sched, err := cron.ParseStandard(cfg.Schedule)
	if err != nil {
		t.Fatal(err)
	}
	group := cfg.Groups()[0]
	if len(group.Sites) != len(sites) {
		t.Fatalf("group %+v: want the config's sites", group)
	}

	// A week with every site up, then a day with sgp1 down.
	start := clock
	week := start.Add(7 * 24 * time.Hour)
	end := week.Add(24 * time.Hour)
	for at := sched.Next(start.Add(-time.Second)); at.Before(end); at = sched.Next(at) {
		mu.Lock()
		clock = at
		mu.Unlock()
		sentToday := 0
		for _, r := range led.reqs {
			if !r.at.Before(group.DayStart(at)) {
				sentToday++
			}
		}
		// The machines run their rounds at the same moment.
		var wg sync.WaitGroup
		for i, s := range samplers {
			if sites[i] == "sgp1" && !at.Before(week) {
				continue // down
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := s.Run(context.Background(), false, false)
				if err != nil {
					t.Errorf("%s round at %s: %v", sites[i], at.Format(time.RFC3339), err)
					return
				}
				// Each site counts the whole group's requests, every site's
				// (and maybe the booking of the slot's owner in this round,
				// when that landed before its read).
				if got := r.Plan.Sent["g"]; got < sentToday || got > sentToday+1 {
					t.Errorf("%s round at %s counts %d requests of the group today, the lane server got %d before the round", sites[i], at.Format(time.RFC3339), got, sentToday)
				}
			}()
		}
		wg.Wait()
		if t.Failed() {
			return
		}
	}

	perDayCount := map[string]int{}
	hoursOf := map[string]map[int]bool{}
	for _, r := range led.reqs {
		perDayCount[r.at.Format(time.DateOnly)]++
		if owner := budget.SlotOwner(group, r.at); owner != r.site {
			t.Errorf("%s probed %s at %s, a slot of %s", r.site, r.lane, r.at.Format(time.RFC3339), owner)
		}
		if hoursOf[r.site] == nil {
			hoursOf[r.site] = map[int]bool{}
		}
		hoursOf[r.site][r.at.Hour()] = true
	}
	for day := start; day.Before(end); day = day.Add(24 * time.Hour) {
		// A site down loses its slots: the others do not spend them.
		want := perDay
		if !day.Before(week) {
			want = perDay * 2 / 3
		}
		if n := perDayCount[day.Format(time.DateOnly)]; n != want {
			t.Errorf("%s: the group's lanes got %d requests from the sites, want %d (probes_per_day %d)", day.Format(time.DateOnly), n, want, perDay)
		}
	}
	for _, site := range sites {
		var missing []int
		for h := range 24 {
			if !hoursOf[site][h] {
				missing = append(missing, h)
			}
		}
		if len(missing) > 0 {
			t.Errorf("%s probed in %d hours of the day within a week; missing %v", site, len(hoursOf[site]), missing)
		}
	}
}

// siteSampler is the sampler of site on a handle of its own to the
// InfluxDB database db (as on a machine of its own), wrapped by wrap when
// not nil: lanes a and b of one account-scope group g of perDay probes a
// day shared by sites (listed in that order), their requests sent to
// root/site, on the clock now.
func siteSampler(t *testing.T, url, db, root, site string, sites []string, perDay int, now func() time.Time, wrap func(*influx.Store) store.Store) (*sampler.Sampler, *config.Config) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "site: %s\nsites: [%s]\nquotas:\n  - {name: g, probes_per_day: %d}\nstore: {kind: file, path: unused.lp}\nlanes:\n",
		site, strings.Join(sites, ", "), perDay)
	for _, l := range []string{"a", "b"} {
		fmt.Fprintf(&b, "  - {name: %s, kind: free, api: openai, base_url: %q, model: %s, timeout: 2s, quota: g}\n", l, root+"/"+site+"/v1", l)
	}
	cfg, err := config.Parse(strings.NewReader(b.String()), t.TempDir())
	if err != nil {
		t.Fatalf("config: %v\n%s", err, b.String())
	}
	in, err := influx.Open(context.Background(), influx.Options{URL: url, Bucket: db + "/autogen"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close() })
	var st store.Store = in
	if wrap != nil {
		st = wrap(in)
	}
	o, err := cfg.SamplerOptions(st, nil, config.Shard{})
	if err != nil {
		t.Fatal(err)
	}
	o.Now = now
	return sampler.New(o), cfg
}

// gatedStore is one site's store whose first probe read of an armed round
// returns only once every sampler of the round has read: each plans
// without the others' bookings, as samplers on one schedule at different
// sites do when their rounds start at one moment.
type gatedStore struct {
	*influx.Store
	armed atomic.Bool
	gate  *atomic.Pointer[sync.WaitGroup]
}

func (s *gatedStore) Read(ctx context.Context, q store.Query, r store.Reader) error {
	err := s.Store.Read(ctx, q, r)
	if r.Probe != nil && s.armed.CompareAndSwap(true, false) {
		g := s.gate.Load()
		g.Done()
		g.Wait()
	}
	return err
}

// Issue 28: sites that list the same sites in another order share the
// slots all the same. fra1 lists [fra1, iad1], iad1 [iad1, fra1]; their
// rounds start at one moment and each reads the store before the other
// books. Over two days every slot of the group gets exactly one request,
// from the site SlotOwner names by either list; before, both sites owned
// every other slot (two requests in it) and neither the rest.
func TestSitesInAnyOrderShareTheSlots(t *testing.T) {
	url := influxtest.URL(t)
	db := influxtest.NewDB(t, url)
	const perDay = 12

	var mu sync.Mutex
	clock := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	led := &siteLedger{lane: lane{delay: map[string]time.Duration{}, hang: map[string]bool{}}, clock: now}
	srv := httptest.NewServer(led)
	t.Cleanup(srv.Close)

	gate := &atomic.Pointer[sync.WaitGroup]{}
	sites, lists := []string{"fra1", "iad1"}, [][]string{{"fra1", "iad1"}, {"iad1", "fra1"}}
	var stores []*gatedStore
	var samplers []*sampler.Sampler
	var groups []budget.Group
	for i, site := range sites {
		s, cfg := siteSampler(t, url, db, srv.URL, site, lists[i], perDay, now, func(in *influx.Store) store.Store {
			st := &gatedStore{Store: in, gate: gate}
			stores = append(stores, st)
			return st
		})
		samplers = append(samplers, s)
		groups = append(groups, cfg.Groups()[0])
	}
	sched, err := cron.ParseStandard("7,27,47 * * * *")
	if err != nil {
		t.Fatal(err)
	}
	start := clock
	end := start.Add(2 * 24 * time.Hour)
	for at := sched.Next(start.Add(-time.Second)); at.Before(end); at = sched.Next(at) {
		mu.Lock()
		clock = at
		mu.Unlock()
		g := &sync.WaitGroup{}
		g.Add(len(samplers))
		gate.Store(g)
		var wg sync.WaitGroup
		for i, s := range samplers {
			stores[i].armed.Store(true)
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := s.Run(context.Background(), false, false); err != nil {
					t.Errorf("round at %s: %v", at.Format(time.RFC3339), err)
				}
			}()
		}
		wg.Wait()
		if t.Failed() {
			return
		}
	}

	perSlot := map[time.Time][]string{}
	for _, r := range led.reqs {
		slot, ok := budget.SlotStart(groups[0], r.at)
		if !ok {
			t.Errorf("%s probed %s at %s, before the day's first slot", r.site, r.lane, r.at.Format(time.RFC3339))
			continue
		}
		perSlot[slot] = append(perSlot[slot], r.site)
		for i, g := range groups {
			if owner := budget.SlotOwner(g, r.at); owner != r.site {
				t.Errorf("%s probed %s at %s, a slot of %s by %s's list %v", r.site, r.lane, r.at.Format(time.RFC3339), owner, sites[i], lists[i])
			}
		}
	}
	for slot, who := range perSlot {
		if len(who) > 1 {
			t.Errorf("the slot at %s got %d requests, from %v", slot.Format(time.RFC3339), len(who), who)
		}
	}
	if n := len(led.reqs); n != 2*perDay {
		t.Errorf("the group's lanes got %d requests in two days, want %d (every slot used once)", n, 2*perDay)
	}
}

// Issue 28: sites that list different sites cannot agree on the slots'
// owners, and each counts only the requests of the sites it lists. Their
// heartbeats (real InfluxDB) now say which sites each lists: fra1 lists
// [fra1, iad1], iad1 [fra1, iad1, sgp1]. Each round that reads the
// other's live heartbeat names it (Round.Duty.Disagree) and probes none
// of the shared group's lanes (skip reason sites), counts still reported;
// an older sampler's heartbeat, which lists none, changes nothing. Once
// iad1 is restarted with fra1's list and its old instance's heartbeat
// has gone stale, the sites probe again, one request a slot.
func TestSitesThatDisagreeProbeNoSharedSlot(t *testing.T) {
	url := influxtest.URL(t)
	db := influxtest.NewDB(t, url)
	const perDay = 72 // a slot a round
	const iv = 20*time.Minute + 30*time.Second

	var mu sync.Mutex
	clock := time.Date(2026, 11, 30, 23, 47, 0, 0, time.UTC)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	set := func(at time.Time) { mu.Lock(); clock = at; mu.Unlock() }
	led := &siteLedger{lane: lane{delay: map[string]time.Duration{}, hang: map[string]bool{}}, clock: now}
	srv := httptest.NewServer(led)
	t.Cleanup(srv.Close)
	requests := func() int { led.mu.Lock(); defer led.mu.Unlock(); return len(led.reqs) }
	start := func(site, instance string, sites []string) *sampler.Sampler {
		s, _ := siteSampler(t, url, db, srv.URL, site, sites, perDay, now, nil)
		s.SetIdentity(sampler.Identity{Instance: instance, Host: "h-" + instance, Version: "test", Start: now().Add(-time.Minute), Interval: iv})
		return s
	}
	run := func(s *sampler.Sampler, name string) *sampler.Round {
		t.Helper()
		r, err := s.Run(context.Background(), false, false)
		if err != nil || r.DutyErr != nil || !r.Duty.Active {
			t.Fatalf("%s at %s: %v, %v, %+v", name, now().Format(time.RFC3339), err, r.DutyErr, r.Duty)
		}
		return r
	}
	refuses := func(r *sampler.Round, name, other, otherSites string) {
		t.Helper()
		if len(r.Duty.Disagree) != 1 || r.Duty.Disagree[0].Site != other || r.Duty.Disagree[0].Sites != otherSites {
			t.Errorf("%s at %s: disagree %+v, want %s's heartbeat listing %s", name, now().Format(time.RFC3339), r.Duty.Disagree, other, otherSites)
		}
		if len(r.Plan.Probe) != 0 || len(r.Plan.Skip) != 2 || r.Plan.Skip[0].Reason != budget.SkipSites || r.Plan.Skip[1].Reason != budget.SkipSites {
			t.Errorf("%s at %s: probe %v skip %v; want a and b skipped: sites", name, now().Format(time.RFC3339), r.Plan.Probe, r.Plan.Skip)
		}
		if _, ok := r.Plan.Left["g"]; !ok {
			t.Errorf("%s at %s: no count of the group (%+v)", name, now().Format(time.RFC3339), r.Plan)
		}
	}

	fra1 := start("fra1", "fra1-a", []string{"fra1", "iad1"})
	// An older sampler at iad1 (of another shard), whose heartbeat lists
	// no sites: fra1 cannot tell, and probes its slots as before.
	st, err := influx.Open(context.Background(), influx.Options{URL: url, Bucket: db + "/autogen"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if err := st.Write(context.Background(), store.Batch{Heartbeats: []store.Heartbeat{store.Heartbeat{Instance: "iad1-old", Shard: "1/2", Site: "iad1", Time: now(), Host: "old",
		StartNS: now().Add(-time.Hour).UnixNano(), Version: "older", IntervalS: iv.Seconds()}}}); err != nil {
		t.Fatal(err)
	}
	r := run(fra1, "fra1")
	if len(r.Duty.Disagree) != 0 || len(r.Plan.Probe) != 1 {
		t.Fatalf("fra1 beside an older sampler: disagree %+v, probe %v skip %v; want it to probe its slot", r.Duty.Disagree, r.Plan.Probe, r.Plan.Skip)
	}

	// iad1 lists sgp1 too. Its first round sees fra1's heartbeat; from
	// then on neither probes the group.
	set(time.Date(2026, 12, 1, 0, 7, 0, 0, time.UTC))
	run(fra1, "fra1") // has not seen iad1 yet
	iad1 := start("iad1", "iad1-a", []string{"fra1", "iad1", "sgp1"})
	refuses(run(iad1, "iad1"), "iad1", "fra1", "fra1,iad1")
	before := requests()
	for range 4 {
		set(now().Add(20 * time.Minute))
		refuses(run(fra1, "fra1"), "fra1", "iad1", "fra1,iad1,sgp1")
		refuses(run(iad1, "iad1"), "iad1", "fra1", "fra1,iad1")
	}
	if n := requests() - before; n != 0 {
		t.Fatalf("the sites that disagree sent %d requests of the group", n)
	}

	// iad1 restarts with fra1's list: while the old instance's heartbeat
	// is live, fra1 refuses and the new instance stands by; then both
	// probe, one request a slot.
	iad1 = start("iad1", "iad1-b", []string{"iad1", "fra1"})
	group := func() *config.Config {
		_, cfg := siteSampler(t, url, db, srv.URL, "fra1", []string{"fra1", "iad1"}, perDay, now, nil)
		return cfg
	}().Groups()[0]
	slots := map[time.Time]int{}
	before = requests()
	for i := range 9 {
		set(now().Add(20 * time.Minute))
		rf, err := fra1.Run(context.Background(), false, false)
		if err != nil {
			t.Fatal(err)
		}
		ri, err := iad1.Run(context.Background(), false, false)
		if err != nil {
			t.Fatal(err)
		}
		if i >= 2 && (!rf.Duty.Active || !ri.Duty.Active || len(rf.Duty.Disagree) != 0 || len(ri.Duty.Disagree) != 0) {
			t.Errorf("at %s, %d rounds after the restart: %+v and %+v; want both active, agreeing", now().Format(time.RFC3339), i+1, rf.Duty, ri.Duty)
		}
		for _, x := range []*sampler.Round{rf, ri} {
			if len(x.Plan.Probe) > 0 {
				slot, _ := budget.SlotStart(group, now())
				slots[slot] += len(x.Plan.Probe)
			}
		}
	}
	if n := requests() - before; n < 6 || n != len(slots) {
		t.Errorf("after the restart the sites sent %d requests in %d slots (%v); want one in each of at least 6", n, len(slots), slots)
	}
}
