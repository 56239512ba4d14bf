package store_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
	"github.com/lanewatch/lanewatch/store/storetest"
)

// countingStore is a real file store that counts the points of each Write.
type countingStore struct {
	*file.Store
	writes []int // points per Write
	fail   error
}

func (c *countingStore) Write(ctx context.Context, b store.Batch) error {
	if c.fail != nil {
		return c.fail
	}
	c.writes = append(c.writes, b.Len())
	return c.Store.Write(ctx, b)
}

func newCounting(t *testing.T) *countingStore {
	f, err := file.Open(filepath.Join(t.TempDir(), "dst.lp"), file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return &countingStore{Store: f}
}

func TestImport(t *testing.T) {
	ns := hour0.UnixNano()
	probe := func(i int) string {
		return fmt.Sprintf("probe,kind=free,lane=a queue_s=%d,gen_s=1,headers_s=0.5,tokens=4i,ok=true,outcome=\"ok\",status=200i %d\n", i, ns+int64(i))
	}
	hourly := func(worst int) string {
		return fmt.Sprintf("queue_hourly,kind=free,lane=a worst_queue_s=%d,worst_gen_s=1,min_tok_per_s=4,samples=1i,failures=0i,eligible=true %d\n", worst, ns)
	}
	var big strings.Builder
	for i := range 12000 {
		big.WriteString(probe(i))
	}
	for _, c := range []struct {
		name    string
		before  string // already in the store
		in      string
		want    store.Imported
		writes  []int
		worst   float64 // final worst_queue_s of lane a's hour
		samples int64   // and its samples
		warn    string
	}{
		{"empty", "", "", store.Imported{}, nil, -1, 0, ""},
		{"hourly lines are rebuilt from the probes, not copied", "", probe(1) + hourly(5) + probe(2) + hourly(9),
			store.Imported{Probes: 2, Hourly: 1, Skipped: 2}, []int{3}, 2, 2, ""},
		{"batches of 5000", "", big.String() + hourly(3),
			store.Imported{Probes: 12000, Hourly: 3, Skipped: 1}, []int{5001, 5001, 2001}, 11999, 12000, ""},
		{"bad lines are skipped with a warning", "", probe(1) + "junk\n" + hourly(4) + "queue_hourly,kind=free,lane=a worst_q",
			store.Imported{Probes: 1, Hourly: 1, Skipped: 1}, []int{2}, 1, 1, "line=2"},
		{"an old hourly line never rolls the hour back", probe(100), probe(1) + hourly(5),
			store.Imported{Probes: 1, Hourly: 1, Skipped: 1}, []int{2}, 100, 2, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dst := newCounting(t)
			rec := store.NewRecorder(dst, time.UTC)
			if c.before != "" {
				if _, err := store.Import(ctx, rec, strings.NewReader(c.before), storetest.FailOnWarn(t)); err != nil {
					t.Fatal(err)
				}
				dst.writes = nil
			}
			var w storetest.Warnings
			got, err := store.Import(ctx, rec, strings.NewReader(c.in), w.Warn)
			if err != nil || got != c.want {
				t.Fatalf("Import = %+v, %v; want %+v, nil", got, err, c.want)
			}
			if fmt.Sprint(dst.writes) != fmt.Sprint(c.writes) {
				t.Errorf("writes of %v points, want %v", dst.writes, c.writes)
			}
			if c.warn == "" && w.Count() > 0 || c.warn != "" && !strings.Contains(w.All(), c.warn) {
				t.Errorf("warnings %q, want %q", w.All(), c.warn)
			}
			if c.worst >= 0 {
				hs, err := store.ReadHourly(ctx, dst, store.Between(hour0, hour0.Add(time.Hour)))
				if err != nil || len(hs) != 1 || hs[0].WorstQueueS != c.worst || hs[0].Samples != c.samples {
					t.Errorf("Hourly = %+v, %v; want worst %v over %d samples", hs, err, c.worst, c.samples)
				}
			}
		})
	}
	t.Run("a failing store stops the import", func(t *testing.T) {
		dst := newCounting(t)
		dst.fail = errors.New("disk full")
		_, err := store.Import(ctx, store.NewRecorder(dst, nil), strings.NewReader(probe(1)+probe(2)), nil)
		if err == nil || !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), "line 2") {
			t.Fatalf("Import = %v; want the store's error and the line", err)
		}
	})
	t.Run("a cancelled context stops the import", func(t *testing.T) {
		dst := newCounting(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := store.Import(cctx, store.NewRecorder(dst, nil), strings.NewReader(probe(1)), nil)
		if !errors.Is(err, context.Canceled) || len(dst.writes) != 0 {
			t.Fatalf("Import = %v after %v writes; want context.Canceled and no write", err, dst.writes)
		}
	})
}

// A heartbeat line is skipped without a warning: a heartbeat is a sign of
// life of its day, not history.
func TestImportSkipsHeartbeats(t *testing.T) {
	line := `sampler_heartbeat,instance=h-1-ab,shard=0/1,site=eu host="h",start_ns=42i,version="v0",interval_s=1.5,sites="eu,us" 1700000000000000006` + "\n"
	dst := newCounting(t)
	res, err := store.Import(ctx, store.NewRecorder(dst, time.UTC), strings.NewReader(line), storetest.FailOnWarn(t))
	if err != nil || res != (store.Imported{}) || len(dst.writes) != 0 {
		t.Errorf("import of a heartbeat: %+v, %v, writes %v; want nothing imported", res, err, dst.writes)
	}
}

// An import of a source without end (a device, a line that never ends,
// corrupt lines without end) stops when its context is done, with one
// line.
func TestImportEndlessStopsOnCancel(t *testing.T) {
	for name, src := range endlessSources(t) {
		t.Run(name, func(t *testing.T) {
			rec := store.NewRecorder(newCounting(t), time.UTC)
			err := promptly(t, func(ctx context.Context) error {
				_, err := store.Import(ctx, rec, src(), nil)
				return err
			})
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q is more than one line", err)
			}
		})
	}
}
