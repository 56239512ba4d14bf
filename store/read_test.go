package store_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

// Read hands each measurement's points over in time order, and only those
// of the measurements asked for.
func TestReadStreamsEachMeasurementInTimeOrder(t *testing.T) {
	st, err := store.OpenFile(filepath.Join(t.TempDir(), "s.lp"), store.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	probes := []store.Probe{
		{Lane: "b", Kind: "free", Time: h.Add(2 * time.Minute), QueueS: 1, OK: true, Outcome: "ok"},
		{Lane: "a", Kind: "free", Time: h.Add(time.Minute), QueueS: 2, OK: true, Outcome: "ok"},
	}
	hourly := []store.Hourly{{Lane: "a", Kind: "free", Hour: h, WorstQueueS: 2, Samples: 1, Eligible: true}}
	ctx := context.Background()
	if err := st.Write(ctx, probes, hourly); err != nil {
		t.Fatal(err)
	}
	if err := st.WriteHeartbeat(ctx, store.Heartbeat{Instance: "i", Shard: "0/1", Time: h.Add(3 * time.Minute), StartNS: h.UnixNano()}); err != nil {
		t.Fatal(err)
	}
	var got []string
	err = store.Read(ctx, st, store.Between(h, h.Add(time.Hour)), store.Reader{
		Probe:     func(p store.Probe) error { got = append(got, "probe "+p.Lane); return nil },
		Hourly:    func(x store.Hourly) error { got = append(got, "hourly "+x.Lane); return nil },
		Heartbeat: func(b store.Heartbeat) error { got = append(got, "beat "+b.Instance); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"hourly a", "probe a", "probe b", "beat i"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	got = nil
	if err := store.Read(ctx, st, store.Between(h, h.Add(time.Hour)), store.Reader{Hourly: func(x store.Hourly) error { got = append(got, x.Lane); return nil }}); err != nil || len(got) != 1 {
		t.Fatalf("hourly alone: %v %v", got, err)
	}
}
