package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/lanewatch/lanewatch/internal/atomicfile"
	"github.com/lanewatch/lanewatch/store/lineproto"
)

// The sparse index of a store file (path + IndexSuffix) lets a read that
// wants a few days of a year skip the rest of the file. It is a zone map:
// for each block of about indexBlock bytes, the smallest and largest
// timestamp of its probe lines and of its hourly lines. A block is read
// when its span of the kind wanted meets the query's time range, so the
// index is correct however the lines are ordered (an import of older
// history, a rebuilt hour: that block's span is wide and it is read). It
// only ever describes a prefix of the file that ends at a newline; what
// follows is read line by line as without an index, and the index is
// extended once that tail has grown by indexMinGrowth.
//
// An index is used only when it is whole (its CRC), made for this file (the
// device and inode: a prune renames a new file over the store) and the file
// still begins and ends its indexed prefix with the bytes it had (SHA-256
// of the first and the last indexHashSpan bytes of the prefix: the file was
// not cut short and rewritten). Otherwise it is ignored and rebuilt by the
// read. It is written atomically (temp file, fsync, rename), so a crash
// leaves the old index or the new one. A block holding a line that a scan
// warns about (of no known measurement) or whose timestamp the cheap
// reader cannot read is read by every query, so the warnings and the
// points read are the ones a scan without the index gives.

// IndexSuffix names the index of a read-only File store: path + IndexSuffix.
const IndexSuffix = ".idx"

const (
	indexBlock     = 256 << 10 // bytes a block covers at least (the last one may be shorter)
	indexMinGrowth = 1 << 20   // bytes of new lines before an index is written or extended
	indexHashSpan  = 64 << 10  // bytes hashed at each end of the indexed prefix
	indexMaxSize   = 64 << 20  // bytes of an index file read at most
	indexMagic     = "LWIDX01\n"
	indexStale     = time.Hour // age of a temp file of a killed index write before it is removed
)

// indexConf is where a File's index lives and how it is cut.
type indexConf struct {
	path                    string
	block, growth, hashSpan int64 // indexBlock, indexMinGrowth, indexHashSpan but in tests
	// read counts the bytes of the store file the reads through the index
	// went through, for tests.
	read atomic.Int64
}

func newIndexConf(store string) *indexConf {
	return &indexConf{path: store + IndexSuffix, block: indexBlock, growth: indexMinGrowth, hashSpan: indexHashSpan}
}

// indexBlockInfo is one block of the index: the lines from off on.
type indexBlockInfo struct {
	off, line int64       // first byte (a line start) and the lines before it
	span      [2][2]int64 // per kind (0 probe, 1 hourly): smallest, largest LineTime; min > max: none
	always    bool        // read whatever the query
}

// lpIndex is a store file's index.
type lpIndex struct {
	idOK       bool
	dev, ino   uint64
	end, lines int64 // the indexed prefix: bytes (ending at a newline) and lines
	head, tail [sha256.Size]byte
	blocks     []indexBlockInfo
}

func newIndexBlock(off, line int64) indexBlockInfo {
	b := indexBlockInfo{off: off, line: line}
	for k := range b.span {
		b.span[k] = [2]int64{math.MaxInt64, math.MinInt64}
	}
	return b
}

// note widens the block's spans by line.
func (b *indexBlockInfo) note(line []byte) {
	k := 0
	switch kindOf(line) {
	case kindSkip, kindHeartbeat: // heartbeat reads do not use the index (needed)
		return
	case kindProbe:
	case kindHourly:
		k = 1
	default:
		b.always = true
		return
	}
	ns, ok := lineproto.LineTime(line)
	if !ok {
		b.always = true
		return
	}
	b.span[k][0] = min(b.span[k][0], ns)
	b.span[k][1] = max(b.span[k][1], ns)
}

// needed reports whether a scan for lines of kind want in m's time range
// must read the block.
func (b *indexBlockInfo) needed(want pointKind, m *matcher) bool {
	if b.always {
		return true
	}
	k := 0
	switch want {
	case kindProbe:
	case kindHourly:
		k = 1
	default:
		return true
	}
	lo, hi := b.span[k][0], b.span[k][1]
	return lo <= hi && m.overlaps(lo, hi)
}

// overlaps reports whether a window of m holds a time in [lo, hi].
func (m *matcher) overlaps(lo, hi int64) bool {
	i, _ := slices.BinarySearchFunc(m.spans, lo, func(s [2]int64, t int64) int {
		if s[1] <= t {
			return -1
		}
		return 1
	})
	return i < len(m.spans) && m.spans[i][0] <= hi
}

// indexBuilder makes the blocks of the lines it is shown, from off on.
type indexBuilder struct {
	off, lines int64 // the next line's offset and the lines before it
	size       int64 // bytes a block covers at least
	cur        indexBlockInfo
	open       bool
	blocks     []indexBlockInfo
	end, ended int64 // the end of the last closed block: bytes, lines
	broken     bool  // offsets no longer known (a line too long, a torn line)
}

func newIndexBuilder(off, lines, size int64) *indexBuilder {
	return &indexBuilder{off: off, lines: lines, size: size, end: off, ended: lines}
}

func (b *indexBuilder) add(line []byte, terminated bool) {
	if b.broken {
		return
	}
	if !terminated {
		b.stop()
		return
	}
	if !b.open {
		b.cur, b.open = newIndexBlock(b.off, b.lines), true
	}
	b.cur.note(line)
	b.off += int64(len(line)) + 1
	b.lines++
	if b.off-b.cur.off >= b.size {
		b.close()
	}
}

// stop ends the index before the line being read: its length is unknown
// (too long) or it is not whole (torn).
func (b *indexBuilder) stop() {
	b.close()
	b.broken = true
}

func (b *indexBuilder) close() {
	if !b.open {
		return
	}
	b.blocks = append(b.blocks, b.cur)
	b.open = false
	b.end, b.ended = b.off, b.lines
}

// scanIndexed is readLocked for a store file with the index ix: it
// streams to fn the lines of the blocks a scan for kind want in m's range
// needs, then every line after the indexed prefix, and writes the index
// anew when that tail has grown enough (best effort: a folder it cannot
// write to leaves the file unindexed).
func scanIndexed(ctx context.Context, path string, ix *indexConf, want pointKind, m *matcher,
	fn func(n int64, line []byte, terminated bool) error, long func(n int64)) error {
	f, err := openShared(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return unpathOf(err, path)
	}
	size := fi.Size()
	idx := loadIndex(ix, f, fi)
	var from, lines int64
	var blocks []indexBlockInfo
	if idx != nil {
		for i := 0; i < len(idx.blocks); {
			if !idx.blocks[i].needed(want, m) {
				i++
				continue
			}
			j := i + 1
			for j < len(idx.blocks) && idx.blocks[j].needed(want, m) {
				j++
			}
			to := idx.end
			if j < len(idx.blocks) {
				to = idx.blocks[j].off
			}
			if err := scanSection(ctx, f, idx.blocks[i].off, to, idx.blocks[i].line, fn, long, nil); err != nil {
				return unpathOf(err, path)
			}
			ix.read.Add(to - idx.blocks[i].off)
			i = j
		}
		from, lines, blocks = idx.end, idx.lines, idx.blocks
	}
	b := newIndexBuilder(from, lines, ix.block)
	if err := scanSection(ctx, f, from, size, lines, fn, long, b); err != nil {
		return unpathOf(err, path)
	}
	ix.read.Add(size - from)
	b.close()
	if b.end-from >= ix.growth && b.end > from {
		saveIndex(ix, f, fi, b.end, b.ended, append(slices.Clip(blocks), b.blocks...))
	}
	return nil
}

// scanSection streams the lines of f's bytes [from, to) to fn, numbered
// after the lines lines before from, showing each to b when b is not nil.
func scanSection(ctx context.Context, f *os.File, from, to, lines int64,
	fn func(n int64, line []byte, terminated bool) error, long func(n int64), b *indexBuilder) error {
	if to <= from {
		return nil
	}
	return lineproto.ScanLines(ctx, io.NewSectionReader(f, from, to-from), func(n int64, line []byte, terminated bool) error {
		if b != nil {
			b.add(line, terminated)
		}
		return fn(lines+n, line, terminated)
	}, func(n int64) {
		if b != nil {
			b.stop()
		}
		if long != nil {
			long(lines + n)
		}
	})
}

// prefixHashes returns the SHA-256 of f's first and last span bytes
// before end.
func prefixHashes(f *os.File, end, span int64) (head, tail [sha256.Size]byte, err error) {
	buf := make([]byte, min(end, span))
	if _, err := f.ReadAt(buf, 0); err != nil {
		return head, tail, err
	}
	head = sha256.Sum256(buf)
	if _, err := f.ReadAt(buf, end-int64(len(buf))); err != nil {
		return head, tail, err
	}
	return head, sha256.Sum256(buf), nil
}

// loadIndex returns ix's index when it is whole and describes the open
// file f, else nil.
func loadIndex(ix *indexConf, f *os.File, fi os.FileInfo) *lpIndex {
	data, err := readIndexFile(ix.path)
	if err != nil {
		return nil
	}
	idx, err := decodeIndex(data)
	if err != nil {
		return nil
	}
	dev, ino, ok := fileID(fi)
	if ok != idx.idOK || dev != idx.dev || ino != idx.ino || idx.end > fi.Size() {
		return nil
	}
	head, tail, err := prefixHashes(f, idx.end, ix.hashSpan)
	if err != nil || head != idx.head || tail != idx.tail {
		return nil
	}
	var last [1]byte
	if _, err := f.ReadAt(last[:], idx.end-1); err != nil || last[0] != '\n' {
		return nil
	}
	return idx
}

// readIndexFile reads the index file at path, refusing anything but a
// regular file: opening a named pipe would block the read.
func readIndexFile(path string) ([]byte, error) {
	if e := notRegular(path); e != nil {
		return nil, e
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	if e := fstatNotRegular(f); e != nil {
		return nil, e
	}
	data, err := io.ReadAll(io.LimitReader(f, indexMaxSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > indexMaxSize {
		return nil, errors.New("index too large")
	}
	return data, nil
}

// saveIndex writes the index of f's prefix of end bytes and lines lines,
// made of blocks, to ix.path atomically. Failing is not an error: the next
// read scans the file and tries again.
func saveIndex(ix *indexConf, f *os.File, fi os.FileInfo, end, lines int64, blocks []indexBlockInfo) {
	if len(blocks) == 0 || end <= 0 {
		return
	}
	idx := &lpIndex{end: end, lines: lines, blocks: blocks}
	idx.dev, idx.ino, idx.idOK = fileID(fi)
	var err error
	if idx.head, idx.tail, err = prefixHashes(f, end, ix.hashSpan); err != nil {
		return
	}
	_ = atomicfile.Write(ix.path, encodeIndex(idx), atomicfile.RemoveStale(indexStale))
}

const indexBlockBytes = 8*6 + 1

func encodeIndex(idx *lpIndex) []byte {
	le := binary.LittleEndian
	b := make([]byte, 0, len(indexMagic)+1+8*4+2*sha256.Size+8+len(idx.blocks)*indexBlockBytes+4)
	b = append(b, indexMagic...)
	b = append(b, boolByte(idx.idOK))
	b = le.AppendUint64(b, idx.dev)
	b = le.AppendUint64(b, idx.ino)
	b = le.AppendUint64(b, uint64(idx.end))
	b = le.AppendUint64(b, uint64(idx.lines))
	b = append(b, idx.head[:]...)
	b = append(b, idx.tail[:]...)
	b = le.AppendUint64(b, uint64(len(idx.blocks)))
	for _, k := range idx.blocks {
		b = le.AppendUint64(b, uint64(k.off))
		b = le.AppendUint64(b, uint64(k.line))
		for _, s := range k.span {
			b = le.AppendUint64(b, uint64(s[0]))
			b = le.AppendUint64(b, uint64(s[1]))
		}
		b = append(b, boolByte(k.always))
	}
	return le.AppendUint32(b, crc32.ChecksumIEEE(b))
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

var errBadIndex = errors.New("not a valid store index")

// decodeIndex reads encodeIndex's bytes, refusing any that it could not
// have written: a torn or altered file, blocks out of order.
func decodeIndex(data []byte) (*lpIndex, error) {
	le := binary.LittleEndian
	fixed := len(indexMagic) + 1 + 8*4 + 2*sha256.Size + 8
	if len(data) < fixed+4 || !bytes.HasPrefix(data, []byte(indexMagic)) {
		return nil, errBadIndex
	}
	body, sum := data[:len(data)-4], le.Uint32(data[len(data)-4:])
	if crc32.ChecksumIEEE(body) != sum {
		return nil, errBadIndex
	}
	p := body[len(indexMagic):]
	idx := &lpIndex{}
	switch p[0] {
	case 0:
	case 1:
		idx.idOK = true
	default:
		return nil, errBadIndex
	}
	p = p[1:]
	u64 := func() uint64 { v := le.Uint64(p); p = p[8:]; return v }
	idx.dev, idx.ino = u64(), u64()
	idx.end, idx.lines = int64(u64()), int64(u64())
	copy(idx.head[:], p)
	copy(idx.tail[:], p[sha256.Size:])
	p = p[2*sha256.Size:]
	n := u64()
	if n == 0 || uint64(len(p)) != n*indexBlockBytes || idx.end <= 0 {
		return nil, errBadIndex
	}
	idx.blocks = make([]indexBlockInfo, n)
	for i := range idx.blocks {
		k := &idx.blocks[i]
		k.off, k.line = int64(u64()), int64(u64())
		for s := range k.span {
			k.span[s][0], k.span[s][1] = int64(u64()), int64(u64())
		}
		switch p[0] {
		case 0:
		case 1:
			k.always = true
		default:
			return nil, errBadIndex
		}
		p = p[1:]
		switch {
		case i == 0 && (k.off != 0 || k.line != 0),
			i > 0 && (k.off <= idx.blocks[i-1].off || k.line <= idx.blocks[i-1].line),
			k.off >= idx.end || k.line >= idx.lines:
			return nil, errBadIndex
		}
	}
	return idx, nil
}
