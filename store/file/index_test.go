package file

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

// indexWorld is a store file a test writes at random and reads both
// through a read-only store with a (tiny-block) index and without one.
type indexWorld struct {
	t      *testing.T
	rng    *rand.Rand
	path   string
	w      *Store
	t0     time.Time
	newest time.Time
	probes []store.Probe // written, for rewrites
}

func newIndexWorld(t *testing.T, seed uint64) *indexWorld {
	t.Helper()
	path := filepath.Join(t.TempDir(), "samples.lp")
	w, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	return &indexWorld{t: t, rng: rand.New(rand.NewPCG(seed, 19)), path: path, w: w, t0: t0, newest: t0}
}

var indexLanes = []string{"a", "b", "c"}

// round writes one batch: probes mostly a little after the newest, some
// hours or days older (an import, a rebuilt hour), some rewriting a point
// already written, some reservations; the hourly points of their
func (iw *indexWorld) round() {
	r := iw.rng
	var ps []store.Probe
	var hs []store.Hourly
	for range 1 + r.IntN(12) {
		var p store.Probe
		switch k := r.IntN(10); {
		case k == 0 && len(iw.probes) > 0: // rewrite
			p = iw.probes[r.IntN(len(iw.probes))]
			p.QueueS = float64(r.IntN(100)) / 4
		case k == 1: // out of order: up to ten days back
			p = iw.probe(iw.newest.Add(-time.Duration(r.Int64N(int64(240 * time.Hour)))))
		default:
			iw.newest = iw.newest.Add(time.Duration(r.Int64N(int64(40 * time.Minute))))
			p = iw.probe(iw.newest.Add(-time.Duration(r.Int64N(int64(2 * time.Minute)))))
		}
		if r.IntN(8) == 0 {
			p.OK, p.Outcome, p.Status, p.QueueS = false, "reserved", 0, 0
		}
		ps = append(ps, p)
		iw.probes = append(iw.probes, p)
		hs = append(hs, store.Hourly{Lane: p.Lane, Kind: p.Kind, Site: p.Site, Hour: p.Time.Truncate(time.Hour),
			WorstQueueS: p.QueueS, Samples: int64(1 + r.IntN(3)), Eligible: p.OK})
	}
	if err := iw.w.Write(context.Background(), store.Batch{Probes: ps, Hourly: hs}); err != nil {
		iw.t.Fatal(err)
	}
	if r.IntN(6) == 0 {
		iw.raw([]string{
			"# a comment",
			"",
			"cpu,host=a usage=1 1795960800000000000", // no known measurement: always warned about
			"probe,kind=free,lane=a queue_s=oops 1795960800000000000", // corrupt, its time readable
			"probe,kind=free,lane=b queue_s=1,ok=true,outcome=\"ok\"", // no timestamp
			"queue_hourly,kind=free,lane=c worst_queue_s=1 17959608000000000x",
		}[r.IntN(6)] + "\n")
	}
}

func (iw *indexWorld) probe(at time.Time) store.Probe {
	r := iw.rng
	lane := indexLanes[r.IntN(len(indexLanes))]
	site := []string{"", "x"}[r.IntN(2)]
	return store.Probe{Lane: lane, Kind: "free", Site: site, Time: at.Truncate(time.Millisecond), QueueS: float64(r.IntN(400)) / 8,
		GenS: 1, Tokens: 16, OK: true, Outcome: "ok", Status: 200}
}

// raw appends s to the file as it is.
func (iw *indexWorld) raw(s string) {
	f, err := os.OpenFile(iw.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		iw.t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	if _, err := f.WriteString(s); err != nil {
		iw.t.Fatal(err)
	}
}

func (iw *indexWorld) read() []byte {
	data, err := os.ReadFile(iw.path)
	if err != nil {
		iw.t.Fatal(err)
	}
	return data
}

// rewrite writes lines over the file in place (the same inode).
func (iw *indexWorld) rewrite(lines [][]byte) {
	f, err := os.OpenFile(iw.path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		iw.t.Fatal(err)
	}
	for _, l := range lines {
		if _, err := f.Write(append(l, '\n')); err != nil {
			iw.t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		iw.t.Fatal(err)
	}
}

// query is a random query over the world's span.
func (iw *indexWorld) query() store.Query {
	r := iw.rng
	span := iw.newest.Sub(iw.t0) + 48*time.Hour
	var q store.Query
	for range 1 + r.IntN(3) {
		from := iw.t0.Add(-24*time.Hour + time.Duration(r.Int64N(int64(span))))
		q.Windows = append(q.Windows, store.Window{From: from, To: from.Add(time.Duration(r.Int64N(int64(36 * time.Hour))))})
	}
	if r.IntN(5) == 0 {
		q.Windows = []store.Window{{From: iw.t0.Add(-time.Hour), To: iw.newest.Add(time.Hour)}}
	}
	switch r.IntN(4) {
	case 0:
		q.Sites = []string{"x"}
	case 1:
		q.Sites = []string{""}
	}
	if r.IntN(3) == 0 {
		q.Lanes = indexLanes[:1+r.IntN(2)]
	}
	if r.IntN(3) == 0 { // a newest read, mostly up to after the newest line (raw's too): the index picks its blocks
		q.Newest = true
		if end := time.Unix(0, 1795960800000000000).Add(time.Hour); r.IntN(3) > 0 {
			q.Windows = append(q.Windows, store.Window{From: iw.newest.Add(-time.Duration(r.Int64N(int64(72 * time.Hour)))), To: end})
		}
	}
	return q
}

// warnLog records a store's warnings.
type warnLog struct{ got []string }

func (l *warnLog) warn(msg string, args ...any) { l.got = append(l.got, fmt.Sprint(msg, args)) }

// openPair opens the file read-only twice: with an index of blocks of a
// few lines written after every read that finds new lines, and without.
func (iw *indexWorld) openPair() (idx, plain *Store, idxLog, plainLog *warnLog) {
	idxLog, plainLog = &warnLog{}, &warnLog{}
	idx, err := Open(iw.path, Options{ReadOnly: true, Warn: idxLog.warn})
	if err != nil {
		iw.t.Fatal(err)
	}
	plain, err = Open(iw.path, Options{ReadOnly: true, Warn: plainLog.warn})
	if err != nil {
		iw.t.Fatal(err)
	}
	plain.noIndex = true
	return idx, plain, idxLog, plainLog
}

// tinyIndex cuts the indexes of the test in blocks of block bytes, written
// anew after every read that finds new lines.
func tinyIndex(t *testing.T, block int64) {
	b, g, h := indexBlock, indexMinGrowth, indexHashSpan
	indexBlock, indexMinGrowth, indexHashSpan = block, 1, 1024
	t.Cleanup(func() { indexBlock, indexMinGrowth, indexHashSpan = b, g, h })
}

// readAll is what every read of q returns from st, with the warnings.
type readAll struct {
	Probes     []store.Probe
	Hourly     []store.Hourly
	Heartbeats []store.Heartbeat
	Warned     []string
}

func readEvery(t *testing.T, st *Store, log *warnLog, q store.Query) readAll {
	t.Helper()
	ctx := context.Background()
	log.got = nil
	var r readAll
	var err error
	if r.Probes, err = store.ReadProbes(ctx, st, q); err != nil {
		t.Fatal(err)
	}
	if r.Hourly, err = store.ReadHourly(ctx, st, q); err != nil {
		t.Fatal(err)
	}
	if r.Heartbeats, err = store.ReadHeartbeats(ctx, st, q); err != nil {
		t.Fatal(err)
	}
	r.Warned = log.got
	return r
}

// readsDiffer says where got and want first differ ("": nowhere).
func readsDiffer(got, want readAll) string {
	for _, c := range []struct {
		what      string
		got, want any
		n, m      int
	}{
		{"Probes", got.Probes, want.Probes, len(got.Probes), len(want.Probes)},
		{"Hourly", got.Hourly, want.Hourly, len(got.Hourly), len(want.Hourly)},
		{"Heartbeats", got.Heartbeats, want.Heartbeats, len(got.Heartbeats), len(want.Heartbeats)},
		{"warnings", got.Warned, want.Warned, len(got.Warned), len(want.Warned)},
	} {
		if reflect.DeepEqual(c.got, c.want) {
			continue
		}
		g, w := reflect.ValueOf(c.got), reflect.ValueOf(c.want)
		for i := range min(c.n, c.m) {
			if !reflect.DeepEqual(g.Index(i).Interface(), w.Index(i).Interface()) {
				return fmt.Sprintf("%s [%d] is %+v, want %+v (%d in all, want %d)", c.what, i, g.Index(i), w.Index(i), c.n, c.m)
			}
		}
		return fmt.Sprintf("%s: %d, want %d", c.what, c.n, c.m)
	}
	return ""
}

// The index changes nothing a read returns or warns about (a newest read,
// which reads only its series' newest blocks, nothing it returns): random
// files of probes and hourly points, mostly in time order but with older
// points, rewritten points, reservations and lines of every kind a scan skips,
// read through a read-only store with an index (made at the first read,
// extended as the file grows, dropped when a prune renames a new file over
// the store) and through one without, for every read the store has.
func TestIndexedReadsAreTheScansReads(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			tinyIndex(t, 300)
			iw := newIndexWorld(t, seed)
			idx, plain, idxLog, plainLog := iw.openPair()
			used := false
			check := func(stage string) {
				t.Helper()
				for i := range 25 {
					q := iw.query()
					before := bytesRead.Load()
					got := readEvery(t, idx, idxLog, q)
					read := bytesRead.Load() - before
					want := readEvery(t, plain, plainLog, q)
					if q.Newest { // it reads less than a scan, so warns of less
						got.Warned, want.Warned = nil, nil
					}
					if d := readsDiffer(got, want); d != "" {
						t.Fatalf("%s, query %d %+v: through the index, %s", stage, i, q, d)
					}
					fi, err := os.Stat(iw.path)
					if err != nil {
						t.Fatal(err)
					}
					used = used || read < 3*fi.Size()
				}
			}
			for range 60 {
				iw.round()
			}
			check("first")
			if _, err := os.Stat(iw.path + IndexSuffix); err != nil {
				t.Fatalf("no index after the reads: %v", err)
			}
			for range 40 {
				iw.round()
			}
			check("grown")
			if _, err := iw.w.Prune(context.Background(), iw.t0.Add(48*time.Hour)); err != nil {
				t.Fatal(err)
			}
			check("pruned")
			for range 20 {
				iw.round()
			}
			iw.raw("probe,kind=free,lane=a queue_s=1 17") // torn: no newline
			check("torn tail")
			if !used {
				t.Error("no read skipped a block: the index was never used")
			}
		})
	}
}

// A newest read up to after the file's newest line reads, through the
// index, the blocks of its series' newest lines alone, and returns what a
// scan returns; a corrupt newest line has it read them all, for the line
// before it.
func TestIndexNewestReadsTheNewestBlocks(t *testing.T) {
	tinyIndex(t, 300)
	iw := newIndexWorld(t, 3)
	ctx := context.Background()
	for i := range 400 {
		iw.newest = iw.t0.Add(time.Duration(i) * 10 * time.Minute)
		if err := iw.w.Write(ctx, store.Batch{Probes: []store.Probe{iw.probe(iw.newest)}}); err != nil {
			t.Fatal(err)
		}
	}
	idx, plain, _, _ := iw.openPair()
	q := store.Query{Windows: []store.Window{{From: iw.t0, To: iw.newest.Add(time.Hour)}}, Newest: true}
	if _, err := store.ReadProbes(ctx, idx, store.Between(iw.t0, iw.t0.Add(time.Hour))); err != nil { // writes the index
		t.Fatal(err)
	}
	fi, err := os.Stat(iw.path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		stage, then string
	}{
		{"the index", "probe,kind=free,lane=b queue_s=oops\n"},
		{"a corrupt line without a time", fmt.Sprintf("probe,kind=free,lane=a queue_s=oops %d\n", iw.newest.Add(time.Minute).UnixNano())},
		{"a corrupt newest line of lane a", ""},
	} {
		if _, err := store.ReadProbes(ctx, idx, store.Between(iw.t0, iw.t0.Add(time.Hour))); err != nil { // the index of the new lines
			t.Fatal(err)
		}
		before := bytesRead.Load()
		got, err := store.ReadProbes(ctx, idx, q)
		read := bytesRead.Load() - before
		want, werr := store.ReadProbes(ctx, plain, q)
		if err != nil || werr != nil || len(want) != 6 || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: through the index %+v, %v; a scan %+v, %v", c.stage, got, err, want, werr)
		}
		if c.then != "" && read > fi.Size()/10 {
			t.Errorf("%s: read %d bytes of %d", c.stage, read, fi.Size())
		}
		iw.raw(c.then)
	}

	// A lane name past what the index follows: it follows none, and is
	// still read back.
	long := iw.probe(iw.newest.Add(time.Hour))
	long.Lane = strings.Repeat("l", maxSeriesKey)
	if err := iw.w.Write(ctx, store.Batch{Probes: []store.Probe{long}}); err != nil {
		t.Fatal(err)
	}
	q.Windows[0].To = long.Time.Add(time.Hour)
	got, err := store.ReadProbes(ctx, idx, q)
	want, werr := store.ReadProbes(ctx, plain, q)
	if err != nil || werr != nil || !reflect.DeepEqual(got, want) || len(want) != 7 {
		t.Fatalf("a long lane: through the index %d probes, %v; a scan %d, %v", len(got), err, len(want), werr)
	}
	data, err := os.ReadFile(iw.path + IndexSuffix)
	if err != nil {
		t.Fatal(err)
	}
	if ix, err := decodeIndex(data); err != nil || ix.series != nil {
		t.Errorf("the index after a long lane: %v, following series %t; want one following none", err, ix != nil && ix.series != nil)
	}
}

// A read through an index skips what the query does not need: a day of a
// month written in time order reads a small part of the file, and reading
// it again (nothing new) does not rewrite the index.
func TestIndexSkipsBlocks(t *testing.T) {
	tinyIndex(t, 1024)
	iw := newIndexWorld(t, 1)
	ctx := context.Background()
	for d := range 30 {
		var ps []store.Probe
		for h := range 24 {
			for _, l := range indexLanes {
				ps = append(ps, store.Probe{Lane: l, Kind: "free", Time: iw.t0.Add(time.Duration(24*d+h) * time.Hour), QueueS: 1, OK: true, Outcome: "ok"})
			}
		}
		if err := iw.w.Write(ctx, store.Batch{Probes: ps}); err != nil {
			t.Fatal(err)
		}
		// A daemon writes a heartbeat every round: its lines sit in
		// every block and must not make the blocks always read.
		hb := store.Heartbeat{Instance: "a", Shard: "1/1", Time: iw.t0.Add(time.Duration(24*d+23) * time.Hour), Host: "h",
			StartNS: iw.t0.UnixNano(), Version: "v", IntervalS: 1200}
		if err := iw.w.Write(ctx, store.Batch{Heartbeats: []store.Heartbeat{hb}}); err != nil {
			t.Fatal(err)
		}
	}
	ro, err := Open(iw.path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	bytesRead.Store(0)
	day := store.Between(iw.t0.Add(10*24*time.Hour), iw.t0.Add(11*24*time.Hour))
	fi, err := os.Stat(iw.path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.ReadProbes(ctx, ro, day); err != nil { // makes the index
		t.Fatal(err)
	}
	if got := bytesRead.Swap(0); got < fi.Size() {
		t.Errorf("first read went through %d bytes, want the whole file, %d", got, fi.Size())
	}
	made, err := os.Stat(iw.path + IndexSuffix)
	if err != nil {
		t.Fatal(err)
	}
	got, err := store.ReadProbes(ctx, ro, day)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 24*len(indexLanes) {
		t.Errorf("read %d probes of the day, want %d", len(got), 24*len(indexLanes))
	}
	if read := bytesRead.Load(); read > fi.Size()/10 {
		t.Errorf("a day of 30 read %d bytes of %d through the index", read, fi.Size())
	}
	again, err := os.Stat(iw.path + IndexSuffix)
	if err != nil {
		t.Fatal(err)
	}
	if !again.ModTime().Equal(made.ModTime()) || again.Size() != made.Size() {
		t.Error("a read with nothing new rewrote the index")
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
}

// An index that does not describe the file is not used, whatever happened
// to either: the store file rewritten in place (same inode, other lines),
// cut short, the index torn, altered, empty or not a file. The reads are
// those without an index, and a usable index is written again.
func TestIndexStaleOrBrokenIsRebuilt(t *testing.T) {
	cases := []struct {
		name  string
		spoil func(t *testing.T, iw *indexWorld)
	}{
		{"store rewritten in place, a line moved to the end", func(t *testing.T, iw *indexWorld) {
			// Same length, same inode, same first bytes: the tail hash sees it.
			lines := slices.Collect(splitLines(iw.read()))
			i := len(lines) / 2
			moved := lines[i]
			iw.rewrite(append(append(slices.Delete(lines, i, i+1), lines[i+1:]...)[:len(lines)-1], moved))
		}},
		{"store rewritten in place, a timestamp changed at the start", func(t *testing.T, iw *indexWorld) {
			// Same length, same inode, same last bytes: the head hash sees it.
			lines := slices.Collect(splitLines(iw.read()))
			for i, l := range lines {
				if store.KindOf(l) == store.KindProbe {
					ns, _ := store.LineTime(l)
					later := fmt.Sprint(ns + int64(240*time.Hour))
					lines[i] = append(l[:len(l)-len(later)], later...)
					break
				}
			}
			iw.rewrite(lines)
		}},
		{"store replaced by a copy of itself (renamed over it)", func(t *testing.T, iw *indexWorld) {
			// The same bytes, another file: an index is for one file.
			tmp := iw.path + ".copy"
			if err := os.WriteFile(tmp, iw.read(), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, iw.path); err != nil {
				t.Fatal(err)
			}
		}},
		{"store cut short and grown again", func(t *testing.T, iw *indexWorld) {
			fi, err := os.Stat(iw.path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(iw.path, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
			iw.raw("\n")
			for range 40 {
				iw.round()
			}
		}},
		{"index torn", func(t *testing.T, iw *indexWorld) {
			fi, err := os.Stat(iw.path + IndexSuffix)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(iw.path+IndexSuffix, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
		}},
		{"index altered", func(t *testing.T, iw *indexWorld) {
			data, err := os.ReadFile(iw.path + IndexSuffix)
			if err != nil {
				t.Fatal(err)
			}
			data[len(data)/2] ^= 0x40
			if err := os.WriteFile(iw.path+IndexSuffix, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"index empty", func(t *testing.T, iw *indexWorld) {
			if err := os.WriteFile(iw.path+IndexSuffix, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"index a named pipe", func(t *testing.T, iw *indexWorld) {
			fifo, ok := makeFIFOIn(t, t.TempDir())
			if !ok {
				t.Skip("no named pipes here")
			}
			if err := os.Rename(fifo, iw.path+IndexSuffix); err != nil {
				t.Fatal(err)
			}
		}},
		{"index a folder", func(t *testing.T, iw *indexWorld) {
			if err := os.Remove(iw.path + IndexSuffix); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(iw.path+IndexSuffix, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tinyIndex(t, 300)
			iw := newIndexWorld(t, 7)
			for range 80 {
				iw.round()
			}
			idx, plain, idxLog, plainLog := iw.openPair()
			all := store.Between(iw.t0.Add(-24*time.Hour), iw.newest.Add(time.Hour))
			readEvery(t, idx, idxLog, all) // makes the index
			hour := store.Between(iw.t0.Add(5*time.Hour), iw.t0.Add(6*time.Hour))
			narrow := func() int64 {
				t.Helper()
				before := bytesRead.Load()
				if _, err := store.ReadProbes(context.Background(), idx, hour); err != nil {
					t.Fatal(err)
				}
				return bytesRead.Load() - before
			}
			if read, size := narrow(), int64(len(iw.read())); read >= size {
				t.Fatalf("an hour's read went through %d bytes of %d before the index was spoiled", read, size)
			}
			tc.spoil(t, iw)
			if read, size := narrow(), int64(len(iw.read())); read < size {
				t.Errorf("the first read after went through %d bytes, want the whole file (%d): the index was used", read, size)
			}
			for i := range 20 {
				q := iw.query()
				if d := readsDiffer(readEvery(t, idx, idxLog, q), readEvery(t, plain, plainLog, q)); d != "" {
					t.Fatalf("query %d %+v: through the index, %s", i, q, d)
				}
			}
			if tc.name == "index a folder" || tc.name == "index a named pipe" {
				return // nothing can be written in its place
			}
			f, err := os.Open(iw.path)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = f.Close() }()
			fi, err := f.Stat()
			if err != nil {
				t.Fatal(err)
			}
			if loadIndex(iw.path+IndexSuffix, f, fi) == nil {
				t.Error("no usable index after the reads")
			}
		})
	}
}

// splitLines yields data's lines without their newlines.
func splitLines(data []byte) func(func([]byte) bool) {
	return func(yield func([]byte) bool) {
		for len(data) > 0 {
			i := slices.Index(data, '\n')
			if i < 0 {
				yield(data)
				return
			}
			if !yield(slices.Clone(data[:i])) {
				return
			}
			data = data[i+1:]
		}
	}
}

// decodeIndex refuses what encodeIndex could not have written.
func TestDecodeIndexRefuses(t *testing.T) {
	good := &index{idOK: true, dev: 1, ino: 2, end: 100, lines: 10, blocks: []block{
		{span: [3][2]int64{{0, 2}, {1, 0}, {1, 0}}, disorder: [3]bool{false, true, false}},
		{off: 50, line: 5, span: [3][2]int64{{1, 2}, {3, 4}, {5, 6}}, always: true, disorder: [3]bool{true, false, true}},
	}, series: &lastLines{{"probe,kind=free,lane=a": {ns: 2, blocks: []int32{0, 1}}, "probe,kind=free,lane=b\\ c": {ns: 1, blocks: []int32{1}}}, {}, {}}}
	data := encodeIndex(good)
	got, err := decodeIndex(data)
	if err != nil || !reflect.DeepEqual(got, good) {
		t.Fatalf("round trip: %+v, %v; want %+v", got, err, good)
	}
	unknown := *good
	unknown.series = nil
	if got, err := decodeIndex(encodeIndex(&unknown)); err != nil || !reflect.DeepEqual(got, &unknown) {
		t.Fatalf("round trip without series: %+v, %v; want %+v", got, err, &unknown)
	}
	bad := func(mod func(*index)) []byte {
		c := *good
		c.blocks = slices.Clone(good.blocks)
		c.series = &lastLines{{"a": {ns: 2, blocks: []int32{0, 1}}}, {}, {}}
		mod(&c)
		return encodeIndex(&c)
	}
	cases := map[string][]byte{
		"empty":                     nil,
		"magic only":                []byte(indexMagic),
		"torn":                      data[:len(data)-10],
		"bad crc":                   append(slices.Clone(data[:len(data)-1]), data[len(data)-1]^1),
		"no blocks":                 bad(func(c *index) { c.blocks = nil }),
		"first block not 0":         bad(func(c *index) { c.blocks[0].off = 1 }),
		"blocks out of order":       bad(func(c *index) { c.blocks[1].off = 0 }),
		"block past the end":        bad(func(c *index) { c.blocks[1].off = 100 }),
		"lines past the end":        bad(func(c *index) { c.blocks[1].line = 10 }),
		"nothing indexed":           bad(func(c *index) { c.end = 0 }),
		"series past a block":       bad(func(c *index) { c.series[0]["a"].blocks = []int32{2} }),
		"series blocks again":       bad(func(c *index) { c.series[0]["a"].blocks = []int32{1, 1} }),
		"series without block":      bad(func(c *index) { c.series[0]["a"].blocks = nil }),
		"series time off its block": bad(func(c *index) { c.series[0]["a"].ns = 3 }),
		"series bytes after":        binary.LittleEndian.AppendUint32(append(slices.Clone(data[:len(data)-4]), 0), crc32.ChecksumIEEE(append(slices.Clone(data[:len(data)-4]), 0))),
	}
	for name, data := range cases {
		if _, err := decodeIndex(data); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}
