package file

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"time"

	"github.com/lanewatch/lanewatch/internal/atomicfile"
	"github.com/lanewatch/lanewatch/store"
)

// The sparse index of a store file (docs/schema.md#the-read-index). A
// block whose lines the cheap reader cannot place is read by every query,
// so reads return what they would without the index.

// IndexSuffix names the index of a store file: path + IndexSuffix.
const IndexSuffix = ".idx"

// How an index is cut (variables for the tests).
var (
	indexBlock     int64 = 256 << 10 // bytes a block covers at least (the last one may be shorter)
	indexMinGrowth int64 = 1 << 20   // bytes of new lines before an index is written anew
	indexHashSpan  int64 = 64 << 10  // bytes hashed at each end of the indexed prefix
)

const (
	indexMaxSize = 64 << 20 // bytes of an index file read at most
	indexMagic   = "LWIDX03\n"
	// scanDisorder is how much older than a line before it a line may be
	// and still be handed over in time order.
	scanDisorder = int64(time.Hour)
)

// kinds are the measurements an index describes, by their slot.
var kinds = [3]store.Kind{store.KindProbe, store.KindHourly, store.KindHeartbeat}

func slot(k store.Kind) int { return slices.Index(kinds[:], k) }

// block is one block of the index: the lines from off on.
type block struct {
	off, line int64       // first byte (a line start) and the lines before it
	span      [3][2]int64 // per kind: smallest, largest LineTime; min > max: none
	disorder  [3]bool     // per kind: a line more than scanDisorder older than one before it
	always    bool        // read whatever the query
}

// needed reports whether a read of kind k (its slot) in f's range reads b.
func (b *block) needed(k int, f *store.Filter) bool {
	lo, hi := b.span[k][0], b.span[k][1]
	return b.always || (lo <= hi && f.Overlaps(lo, hi))
}

// index is a store file's index.
type index struct {
	idOK       bool
	dev, ino   uint64
	end, lines int64 // the indexed prefix: bytes (ending at a newline) and lines
	head, tail [sha256.Size]byte
	blocks     []block
	series     *lastLines // nil: not known
}

// lastLines are, per kind (its slot), each series' newest line time and
// the blocks holding lines of the series then: all a newest read before
// the end of the file reads (Query.Newest).
type lastLines [3]map[string]*lastAt

type lastAt struct {
	ns     int64
	blocks []int32 // in file order
}

// What a builder follows of the series at most: past it, none (an index
// of at most 3 x 2^14 series of keys up to 512 bytes and their blocks).
const (
	maxSeries     = 1 << 14 // of a kind
	maxSeriesKey  = 512     // bytes
	maxSeriesSize = 1 << 24 // key and block bytes in all
)

// builder makes the blocks of the lines it is shown, from off on.
type builder struct {
	off, lines int64    // the next line's offset and the lines before it
	newest     [3]int64 // per kind, of every line before
	cur        block
	open       bool
	blocks     []block
	end, ended int64      // the end of the last closed block: bytes, lines
	broken     bool       // offsets no longer known (a line too long, a torn line)
	series     *lastLines // nil: not followed (too many series, or the index knew none)
	size       int        // the series' key and block bytes
}

// note records that the open block holds a line of kind k (its slot) at
// ns, of the series its bytes before the first unescaped space name.
func (b *builder) note(k int, line []byte, ns int64) {
	if b.series == nil {
		return
	}
	i := 0
	for ; i < len(line) && line[i] != ' '; i++ {
		if line[i] == '\\' {
			i++
		}
	}
	key, blk := line[:min(i, len(line))], int32(len(b.blocks))
	m := b.series[k]
	switch e := m[string(key)]; {
	case e == nil && (len(m) >= maxSeries || len(key) > maxSeriesKey):
		b.series = nil
	case e == nil:
		m[string(key)] = &lastAt{ns: ns, blocks: []int32{blk}}
		b.size += len(key) + 4
	case ns > e.ns:
		b.size -= 4 * (len(e.blocks) - 1)
		e.ns, e.blocks = ns, append(e.blocks[:0], blk)
	case ns == e.ns && e.blocks[len(e.blocks)-1] != blk:
		e.blocks = append(e.blocks, blk)
		b.size += 4
	}
	if b.size > maxSeriesSize {
		b.series = nil
	}
}

func (b *builder) add(_ int64, line []byte, terminated bool) error {
	if b.broken {
		return nil
	}
	if !terminated {
		b.stop()
		return nil
	}
	if !b.open {
		b.cur, b.open = block{off: b.off, line: b.lines}, true
		for i := range b.cur.span {
			b.cur.span[i] = [2]int64{math.MaxInt64, math.MinInt64}
		}
	}
	switch k := store.KindOf(line); k {
	case store.KindBlank:
	case store.KindProbe, store.KindHourly, store.KindHeartbeat:
		ns, ok := store.LineTime(line)
		if !ok {
			b.cur.always = true
			break
		}
		i := slot(k)
		b.note(i, line, ns)
		b.cur.span[i] = [2]int64{min(b.cur.span[i][0], ns), max(b.cur.span[i][1], ns)}
		b.cur.disorder[i] = b.cur.disorder[i] || (b.newest[i] != math.MinInt64 && ns < b.newest[i]-scanDisorder)
		b.newest[i] = max(b.newest[i], ns)
	default:
		b.cur.always = true
	}
	b.off += int64(len(line)) + 1
	b.lines++
	if b.off-b.cur.off >= indexBlock {
		b.close()
	}
	return nil
}

// stop ends the blocks before a line too long or torn.
func (b *builder) stop() {
	b.close()
	b.broken = true
}

func (b *builder) close() {
	if b.open {
		b.blocks = append(b.blocks, b.cur)
		b.open = false
		b.end, b.ended = b.off, b.lines
	}
}

// describe returns the blocks of the open file f: its index's, when it
// describes it, then those of the lines after, read now; a last block,
// always read, covers what follows a line too long or torn; and, with use,
// each series' newest lines (nil past the limits). It writes the index
// anew, best effort, after indexMinGrowth new bytes.
func describe(ctx context.Context, path string, f *os.File, fi os.FileInfo, use bool) ([]block, *lastLines, error) {
	b := &builder{newest: [3]int64{math.MinInt64, math.MinInt64, math.MinInt64}}
	if use {
		b.series = &lastLines{{}, {}, {}}
		if ix := loadIndex(path+IndexSuffix, f, fi); ix != nil {
			b.off, b.lines, b.blocks, b.series = ix.end, ix.lines, ix.blocks, ix.series
			for _, k := range ix.blocks {
				for i := range kinds {
					b.newest[i] = max(b.newest[i], k.span[i][1])
				}
			}
		}
	}
	b.end, b.ended = b.off, b.lines
	from := b.off
	if err := scanSection(ctx, f, from, fi.Size(), b.lines, b.add, func(int64) { b.stop() }); err != nil {
		return nil, nil, err
	}
	bytesRead.Add(fi.Size() - from)
	b.close()
	if use && b.end-from >= indexMinGrowth {
		saveIndex(path+IndexSuffix, f, fi, b)
	}
	blocks := b.blocks
	if b.end < fi.Size() { // after a line too long or torn
		blocks = append(blocks, block{off: b.end, line: b.ended, always: true, disorder: [3]bool{true, true, true}})
	}
	return blocks, b.series, nil
}

// scanSection streams the lines of f's bytes [from, to) to fn, numbered
// after the lines before from.
func scanSection(ctx context.Context, f *os.File, from, to, lines int64,
	fn func(n int64, line []byte, terminated bool) error, long func(n int64)) error {
	if to <= from {
		return nil
	}
	return store.ScanLines(ctx, io.NewSectionReader(f, from, to-from), func(n int64, line []byte, terminated bool) error {
		return fn(lines+n, line, terminated)
	}, func(n int64) { long(lines + n) })
}

// prefixHashes returns the SHA-256 of f's first and last span bytes
// before end.
func prefixHashes(f *os.File, end int64) (head, tail [sha256.Size]byte, err error) {
	buf := make([]byte, min(end, indexHashSpan))
	if _, err := f.ReadAt(buf, 0); err != nil {
		return head, tail, err
	}
	head = sha256.Sum256(buf)
	if _, err := f.ReadAt(buf, end-int64(len(buf))); err != nil {
		return head, tail, err
	}
	return head, sha256.Sum256(buf), nil
}

// loadIndex returns the index at path when it is whole and describes the
// open file f, else nil.
func loadIndex(path string, f *os.File, fi os.FileInfo) *index {
	r, err := openShared(path)
	if err != nil {
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(r, indexMaxSize+1))
	_ = r.Close()
	var ix *index
	if err == nil {
		ix, err = decodeIndex(data)
	}
	dev, ino, ok := fileID(fi)
	if err != nil || ok != ix.idOK || dev != ix.dev || ino != ix.ino || ix.end > fi.Size() {
		return nil
	}
	head, tail, err := prefixHashes(f, ix.end)
	var last [1]byte
	if err != nil || head != ix.head || tail != ix.tail {
		return nil
	}
	if _, err := f.ReadAt(last[:], ix.end-1); err != nil || last[0] != '\n' {
		return nil
	}
	return ix
}

// saveIndex writes the index of b's blocks of f atomically, best effort.
func saveIndex(path string, f *os.File, fi os.FileInfo, b *builder) {
	if len(b.blocks) == 0 || b.end <= 0 {
		return
	}
	ix := &index{end: b.end, lines: b.ended, blocks: b.blocks, series: b.series}
	ix.dev, ix.ino, ix.idOK = fileID(fi)
	var err error
	if ix.head, ix.tail, err = prefixHashes(f, b.end); err == nil {
		_ = atomicfile.Write(path, encodeIndex(ix), atomicfile.RemoveStale(time.Hour))
	}
}

// indexHead and blockRecord are an index file's header and blocks as
// written after indexMagic: little-endian, packed, then a CRC-32 of it all.
type indexHead struct {
	IDOK       uint8
	Dev, Ino   uint64
	End, Lines int64
	Head, Tail [sha256.Size]byte
	Blocks     uint64
}

type blockRecord struct {
	Off, Line int64
	Span      [3][2]int64
	Flags     uint8 // bit 0: always; bit 1+i: disorder[i]
}

func encodeIndex(ix *index) []byte {
	le := binary.LittleEndian
	b, _ := binary.Append([]byte(indexMagic), le, indexHead{boolByte(ix.idOK), ix.dev, ix.ino, ix.end, ix.lines, ix.head, ix.tail, uint64(len(ix.blocks))})
	for _, k := range ix.blocks {
		r := blockRecord{k.off, k.line, k.span, boolByte(k.always)}
		for i, d := range k.disorder {
			r.Flags |= boolByte(d) << (i + 1)
		}
		b, _ = binary.Append(b, le, r)
	}
	// Then the series, when known: per kind a count, then each series'
	// name (length, bytes), newest time and blocks (count, indexes).
	if b = append(b, boolByte(ix.series != nil)); ix.series != nil {
		for _, m := range ix.series {
			b = le.AppendUint32(b, uint32(len(m)))
			for _, key := range slices.Sorted(maps.Keys(m)) {
				e := m[key]
				b = append(le.AppendUint16(b, uint16(len(key))), key...)
				b = le.AppendUint32(le.AppendUint64(b, uint64(e.ns)), uint32(len(e.blocks)))
				for _, blk := range e.blocks {
					b = le.AppendUint32(b, uint32(blk))
				}
			}
		}
	}
	return le.AppendUint32(b, crc32.ChecksumIEEE(b))
}

// decodeSeries reads encodeIndex's series of an index's blocks, all of p:
// each series' newest time lies in the spans of the blocks it names.
func decodeSeries(p []byte, blocks []block) (*lastLines, error) {
	n := len(blocks)
	le, r := binary.LittleEndian, bytes.NewReader(p)
	var known uint8
	if binary.Read(r, le, &known) != nil || known > 1 || known == 0 && r.Len() > 0 {
		return nil, errBadIndex
	}
	if known == 0 {
		return nil, nil
	}
	ll := &lastLines{}
	for k := range ll {
		var count uint32
		if binary.Read(r, le, &count) != nil || count > maxSeries {
			return nil, errBadIndex
		}
		ll[k] = make(map[string]*lastAt, count)
		for range count {
			var size uint16
			var at struct {
				NS     int64
				Blocks uint32
			}
			if binary.Read(r, le, &size) != nil || size > maxSeriesKey || int(size) > r.Len() {
				return nil, errBadIndex
			}
			key := make([]byte, size)
			_, _ = r.Read(key) // cannot fail: the size is checked
			if binary.Read(r, le, &at) != nil || at.Blocks < 1 || at.Blocks > uint32(n) || ll[k][string(key)] != nil {
				return nil, errBadIndex
			}
			e := &lastAt{ns: at.NS, blocks: make([]int32, at.Blocks)}
			if binary.Read(r, le, e.blocks) != nil {
				return nil, errBadIndex
			}
			for i, blk := range e.blocks {
				if blk < 0 || int(blk) >= n || i > 0 && blk <= e.blocks[i-1] || e.ns < blocks[blk].span[k][0] || e.ns > blocks[blk].span[k][1] {
					return nil, errBadIndex
				}
			}
			ll[k][string(key)] = e
		}
	}
	if r.Len() > 0 {
		return nil, errBadIndex
	}
	return ll, nil
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

var errBadIndex = errors.New("not a valid store index")

// decodeIndex reads encodeIndex's bytes, refusing any it could not write.
func decodeIndex(data []byte) (*index, error) {
	le := binary.LittleEndian
	var h indexHead
	end := len(data) - 4
	if end < len(indexMagic) || !bytes.HasPrefix(data, []byte(indexMagic)) || crc32.ChecksumIEEE(data[:end]) != le.Uint32(data[end:]) {
		return nil, errBadIndex
	}
	p := data[len(indexMagic):end]
	n, err := binary.Decode(p, le, &h)
	if err != nil || h.IDOK > 1 || h.Blocks == 0 || h.Blocks > uint64(len(p)) || uint64(len(p)-n) < h.Blocks*uint64(binary.Size(blockRecord{})) || h.End <= 0 {
		return nil, errBadIndex
	}
	recs := make([]blockRecord, h.Blocks)
	m, _ := binary.Decode(p[n:], le, recs) // cannot fail: the size is checked
	ix := &index{idOK: h.IDOK == 1, dev: h.Dev, ino: h.Ino, end: h.End, lines: h.Lines, head: h.Head, tail: h.Tail, blocks: make([]block, h.Blocks)}
	for i, r := range recs {
		k := &ix.blocks[i]
		*k = block{off: r.Off, line: r.Line, span: r.Span, always: r.Flags&1 != 0}
		for s := range k.disorder {
			k.disorder[s] = r.Flags&(2<<s) != 0
		}
		switch {
		case r.Flags > 15,
			i == 0 && (k.off != 0 || k.line != 0),
			i > 0 && (k.off <= ix.blocks[i-1].off || k.line <= ix.blocks[i-1].line),
			k.off >= ix.end || k.line >= ix.lines:
			return nil, errBadIndex
		}
	}
	ix.series, err = decodeSeries(p[n+m:], ix.blocks)
	if err != nil {
		return nil, err
	}
	return ix, nil
}
