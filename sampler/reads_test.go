package sampler_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/sampler"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
)

// countingStore counts the calls a round makes to the store it wraps.
type countingStore struct {
	store.Store
	probes, hourly, writes atomic.Int64
}

func (c *countingStore) Read(ctx context.Context, q store.Query, r store.Reader) error {
	if r.Probe != nil {
		c.probes.Add(1)
	}
	if r.Hourly != nil {
		c.hourly.Add(1)
	}
	return c.Store.Read(ctx, q, r)
}

func (c *countingStore) Write(ctx context.Context, b store.Batch) error {
	c.writes.Add(1)
	return c.Store.Write(ctx, b)
}

func (c *countingStore) reset() (probes, hourly, writes int64) {
	return c.probes.Swap(0), c.hourly.Swap(0), c.writes.Swap(0)
}

// A round reads the store once and writes twice: the one read serves the
// back-offs (a lane that answered 429), the budget count (two lanes of a
// quota group) and the hour records the round rewrites, which still equal
// the aggregate of every stored probe of their hour; the writes are the
// reservations, before any request leaves, and the round. (A round that
// books a lane of a quota group reads once more, to confirm the booking:
// none of these, whose group's slot is used or forced.)
func TestRoundReadsOnceWritesOnce(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := make([]byte, 4096)
		n, _ := r.Body.Read(body)
		if strings.Contains(string(body[:n]), `"model":"limited"`) {
			w.Header().Set("Retry-After", "3600")
			http.Error(w, `{"error":{"type":"rate_limit_error"}}`, http.StatusTooManyRequests)
			return
		}
		(&lane{}).ServeHTTP(w, r)
	}))
	defer srv.Close()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("site: eu-1\nsites: [eu-1]\nquotas:\n  - {name: g, probes_per_day: 24}\nstore: {kind: file, path: samples.lp}\nlanes:\n")
	for _, l := range []struct{ name, extra string }{{"free", ""}, {"limited", ""}, {"b1", ", quota: g"}, {"b2", ", quota: g"}} {
		fmt.Fprintf(&b, "  - {name: %s, kind: free, api: openai, base_url: %q, model: %s%s}\n", l.name, srv.URL, l.name, l.extra)
	}
	cfg, err := config.Parse(strings.NewReader(b.String()), dir)
	if err != nil {
		t.Fatal(err)
	}
	file, err := file.Open(filepath.Join(dir, "samples.lp"), file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	st := &countingStore{Store: file}
	o, err := cfg.SamplerOptions(st, nil, config.Shard{})
	if err != nil {
		t.Fatal(err)
	}
	// The rounds' clock runs from the middle of the current hour: the
	// group's slots are its hours, and rounds on either side of an hour's
	// turn (or of midnight, which resets the day's count) would find the
	// forced round's slot unused and probe the group again.
	start := time.Now()
	shift := start.Truncate(time.Hour).Add(30 * time.Minute).Sub(start)
	o.Now = func() time.Time { return time.Now().Add(shift) }
	s := sampler.New(o)
	ctx := context.Background()
	rounds := []struct {
		force  bool
		probed int
		left   int               // the group's probes left today, as the plan counts them
		skips  map[string]string // lane: reason
	}{
		{force: true, probed: 4, left: 22, skips: map[string]string{}}, // every lane; limited answers 429
		// limited backs off; the group spent its slot in the forced round
		{probed: 1, left: 22, skips: map[string]string{"limited": "quota", "b1": "budget", "b2": "budget"}},
		{force: true, probed: 4, left: 20, skips: map[string]string{}},
		{probed: 1, left: 20, skips: map[string]string{"limited": "quota", "b1": "budget", "b2": "budget"}},
	}
	for i, rd := range rounds {
		r, err := s.Run(ctx, rd.force, false)
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		reads, hourlyReads, writes := st.reset()
		if reads != 1 || hourlyReads != 0 || writes != 2 {
			t.Errorf("round %d: %d probe reads, %d hourly reads, %d writes; want 1, 0, 2 (reservations, round)", i, reads, hourlyReads, writes)
		}
		skips := map[string]string{}
		for _, sk := range r.Plan.Skip {
			skips[sk.Lane] = sk.Reason
		}
		if len(r.Samples) != rd.probed || r.Plan.Left["g"] != rd.left || !maps.Equal(skips, rd.skips) {
			t.Errorf("round %d: probed %d, left %d, skips %v; want %d, %d, %v", i, len(r.Samples), r.Plan.Left["g"], skips, rd.probed, rd.left, rd.skips)
		}
		if len(r.Recorded.Hourly) != len(r.Samples) {
			t.Errorf("round %d: %d probes, %d hour records written; want one per probed lane", i, len(r.Samples), len(r.Recorded.Hourly))
		}
		now := o.Now()
		bad, err := store.Check(ctx, file, cfg.Location, store.Window{From: now.Add(-2 * time.Hour), To: now.Add(time.Hour)}, nil)
		if err != nil || len(bad) > 0 {
			t.Fatalf("round %d: hour records that disagree with their probes: %v, %v", i, bad, err)
		}
	}
}
