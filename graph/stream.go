package graph

import (
	"bufio"
	"bytes"
	"container/heap"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"time"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/offheap"
)

// StreamOptions bound the memory of StreamNQuads.
type StreamOptions struct {
	// RunBytes is the size of one in-memory run of quad lines before it is
	// sorted and spilled to a temporary file (default 64 MiB; two runs
	// are in memory at once, one filling while the other is sorted).
	RunBytes int
	// TempDir holds the spilled runs (default os.TempDir()); they are
	// removed before StreamNQuads returns.
	TempDir string
	// Stages, if not nil, receives the wall times of the stream's stages
	// (for benchmarks: they vary from run to run).
	Stages *StreamStages

	// faultAfterRelease: the run memory is made inaccessible instead of
	// unmapped when the stream ends, so a late access faults (tests; the
	// build tag witness_offheapcheck turns it on for every stream).
	faultAfterRelease bool
}

// StreamStages are the wall times of a stream: its two phases, and how
// long a stage waited for the next one (a stage that waits is not the
// one holding the pipeline up).
type StreamStages struct {
	Map   time.Duration // read, decode, map, pack, sort and spill, to the last run sorted
	Merge time.Duration // merge the runs into the sink
	Drain time.Duration // after the merge: the last bytes expanded, hashed and written

	MapWaitIn    time.Duration // the mapper waiting for decoded events
	MapWaitOut   time.Duration // the mapper waiting for the packer
	PackWaitSort time.Duration // the packer waiting for the sorter (a free run)
	MergeWaitOut time.Duration // the merge waiting for the expander (N-Quads)
	ExpandWait   time.Duration // the expander waiting for the hash and the write
}

// StreamStats describes a streamed canonicalisation.
type StreamStats struct {
	Events int64 // events read
	Quads  int64 // distinct quads written
	Bytes  int64 // bytes written
	Runs   int   // sorted runs (1: everything fit in memory)
	// Spilled is the bytes of the runs written to temporary files (for
	// benchmarks: the volume the sort moves through the disk cache)
	Spilled int64
	Digest  string // sha256 hex of the bytes written: the graph digest
}

// defaultRunBytes is the default StreamOptions.RunBytes.
const defaultRunBytes = 64 << 20

// StreamNQuads writes the RDFC-1.0 canonical N-Quads of the event log src to
// w without building the graph: each event's quads are grouped by subject
// into blocks, blocks are collected into bounded runs that are sorted (in a
// second goroutine) and spilled to temporary files, and the runs are merged,
// de-duplicated and hashed while written. The bytes equal
// Build(src).WriteNQuads. Peak memory is about 2×RunBytes plus one record
// per block.
func StreamNQuads(src EventSource, w io.Writer, opts Options, so StreamOptions) (StreamStats, error) {
	h := sha256.New()
	cw := &countWriter{w: w}
	aw := newAsyncWriter(1<<20, h, cw)
	stats, err := streamBlocks(src, opts, so, false, aw.block)
	t := time.Now()
	if cerr := aw.Close(); err == nil {
		err = cerr
	}
	if so.Stages != nil {
		so.Stages.Drain = time.Since(t)
		if aw.ex != nil {
			so.Stages.MergeWaitOut, so.Stages.ExpandWait = aw.ex.waitIn, aw.ex.waitOut
		}
	}
	if err != nil {
		return stats, err
	}
	stats.Bytes = cw.n
	stats.Digest = hex.EncodeToString(h.Sum(nil))
	return stats, nil
}

// streamBlocks maps the events of src to quad blocks, sorts them
// externally and calls sink with each subject's merged block (its
// "<subject>" key, then its sorted, distinct lines without the key), in
// "<subject>" order, or, byID, in subject IRI order (the JSON-LD @graph
// order: "<a/e1>" follows "<a/e10>" but a/e1 precedes a/e10). sink returns
// the number of lines it wrote. A block whose key begins with keyMark
// stands for "<" + the session base + "/" (pre, passed beside it) + the
// rest of its key; other blocks come with a nil pre. Stats.Bytes and
// Digest are left to the caller.
//
// The runs' bytes live outside the Go heap (internal/offheap: the
// collector would otherwise pace itself against 2×RunBytes of live
// chunks and let garbage fill as much fresh memory again). They are
// released when sortAndMerge returns: by then every goroutine that
// touches them (the packer, the sorter) has ended and every sink call
// has returned, on every path, and no sink keeps a slice of a block
// (each copies what it keeps: asyncWriter's expander, nqReorder). A
// panic skips the release and leaves the memory mapped.
func streamBlocks(src EventSource, opts Options, so StreamOptions, byID bool, sink blockSink) (StreamStats, error) {
	// huge pages (linux): a fresh page costs a fault, and a run fills its
	// chunks whole (docs/design/scale-history.md, "Memory is time on this
	// machine")
	ar := offheap.New(offheap.Options{HugePages: true, FaultAfterRelease: so.faultAfterRelease || faultAfterReleaseAll})
	stats, err := sortAndMerge(src, opts, so, byID, sink, ar)
	if rerr := ar.Release(); rerr != nil && err == nil {
		err = fmt.Errorf("graph: run memory: %w", rerr)
	}
	return stats, err
}

// sortAndMerge is streamBlocks, its runs' chunks taken from ar; every
// goroutine it starts that touches them has ended when it returns.
func sortAndMerge(src EventSource, opts Options, so StreamOptions, byID bool, sink blockSink, ar *offheap.Arena) (StreamStats, error) {
	if so.RunBytes <= 0 {
		so.RunBytes = defaultRunBytes
	}
	var sg StreamStages
	t0 := time.Now()
	if so.Stages != nil {
		defer func() { *so.Stages = sg }()
	}
	st := &streamer{so: so, byID: byID, runCh: make(chan *run, 1), done: make(chan error, 1), free: make(chan *run, 2)}
	// a run's records, sized for blocks of ~100 bytes: growing them by
	// copies costs more than the memory
	st.free <- &run{recs: make([]rec, 0, so.RunBytes/100), arena: ar}
	st.free <- &run{recs: make([]rec, 0, so.RunBytes/100), arena: ar}
	go st.sorter()
	defer st.cleanup()

	// the mapper keeps copies of the few strings it keeps (the lines
	// become garbage once mapped)
	if fr, ok := src.(*eventlog.FastReader); ok {
		fr.ShareLines(true)
	}
	// events are decoded in goroutines of their own, in batches, in order
	stop := make(chan struct{})
	defer close(stop)
	var bch <-chan evBatch
	if fr, ok := src.(*eventlog.FastReader); ok {
		bch = decodeParallel(fr, stop)
	} else {
		bch = decodeSerial(src, stop)
	}

	// the mapped lines of a batch of events are packed into runs in a
	// goroutine of their own; a few batches in flight (~300 KB each) let
	// the mapper run ahead while the packer is descheduled
	pk := &packer{st: st, runBytes: so.RunBytes, byID: byID, in: make(chan *evLines, packerBatches-1), free: make(chan *evLines, packerBatches), out: make(chan *run, 1)}
	for i := 0; i < packerBatches; i++ {
		pk.free <- &evLines{}
	}
	go pk.loop()
	stopPacker := func() *run {
		close(pk.in)
		return <-pk.out
	}
	var ev *evLines
	var m *mapper
	m = newMapper(opts, func(s, p string, o Term) error {
		if ev.prefix == nil && m.base != "" {
			// the session's base is set before its first statement, and
			// never changes: every line is coded against one prefix
			ev.prefix = []byte("<" + m.base + "/")
		}
		ev.add(s, p, o)
		return nil
	})
	var stats StreamStats
	var srcErr error
	for {
		t := time.Now()
		b, ok := <-bch
		t1 := time.Now()
		sg.MapWaitIn += t1.Sub(t)
		if !ok {
			break
		}
		ev = <-pk.free
		sg.MapWaitOut += time.Since(t1)
		ev.reset()
		if ev.prefix == nil && m.base != "" {
			ev.prefix = []byte("<" + m.base + "/")
		}
		for _, e := range b.evs {
			if err := m.event(e); err != nil {
				stopPacker()
				st.abort()
				return stats, evidenceError(placeEventError(src, err, false))
			}
			stats.Events++
			if ev.prefix == nil {
				ev.prefix = []byte("<" + m.base + "/")
			}
			ev.endEvent()
		}
		pk.in <- ev
		if b.err != nil && b.err != io.EOF {
			srcErr = b.err
			break
		}
	}
	cur := stopPacker()
	if srcErr != nil {
		st.abort()
		var pe *eventlog.ParseError
		if errors.As(srcErr, &pe) {
			return stats, evidenceError(srcErr)
		}
		return stats, srcErr
	}
	// what needs the whole log (the session's one end time)
	ev = &evLines{prefix: cur.prefix}
	if err := m.finish(); err != nil {
		st.abort()
		return stats, evidenceError(err)
	}
	ev.endEvent()
	ev.flushInto(cur)
	// the last run stays in memory, sorted while the sorter spills the
	// run before it (the two cores busy, not one after the other)
	close(st.runCh)
	cur.sortRecords(byID)
	if err := <-st.done; err != nil {
		return stats, err
	}
	stats.Runs = len(st.files) + 1
	stats.Spilled = st.spilled
	sg.PackWaitSort = pk.wait
	t1 := time.Now()
	sg.Map = t1.Sub(t0)
	n, err := st.merge(cur, sink)
	sg.Merge = time.Since(t1)
	stats.Quads = n
	return stats, err
}

// evBatch is a batch of decoded events, then the error that ended the
// log (io.EOF) or its decoding, if any.
type evBatch struct {
	evs []*eventlog.Event
	err error
}

// decodeBatch is how many events a batch holds.
const decodeBatch = 512

// decodeSerial decodes the events of src in a goroutine, in batches.
func decodeSerial(src EventSource, stop <-chan struct{}) <-chan evBatch {
	bch := make(chan evBatch, 4)
	go func() {
		defer close(bch)
		for {
			evs := make([]*eventlog.Event, 0, decodeBatch)
			var err error
			for len(evs) < decodeBatch {
				var e *eventlog.Event
				e, err = src.Next()
				if err != nil {
					break
				}
				evs = append(evs, e)
			}
			select {
			case bch <- evBatch{evs, err}:
			case <-stop:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return bch
}

// lineBatch is a batch of raw lines read for the decoders: line i is
// buf[ends[i-1]:ends[i]] (from 0 for i=0), numbered first+i; the last
// may lack its newline (partial); err ended the reading after them.
type lineBatch struct {
	buf     []byte
	ends    []int
	first   int64
	partial bool
	err     error
	res     chan evBatch
}

// decodeParallel reads the lines of fr in one goroutine and decodes them
// in several (the mapper is sequential, decoding is not), and delivers
// the events in log order with the errors Next would return, where it
// would return them.
func decodeParallel(fr *eventlog.FastReader, stop <-chan struct{}) <-chan evBatch {
	workers := runtime.GOMAXPROCS(0)
	if workers > 4 {
		workers = 4
	}
	jobs := make(chan *lineBatch, workers)
	order := make(chan *lineBatch, 2*workers+2)
	free := make(chan []byte, 2*workers+4)
	go func() {
		defer close(jobs)
		defer close(order)
		for {
			lb := &lineBatch{res: make(chan evBatch, 1), ends: make([]int, 0, decodeBatch)}
			select {
			case lb.buf = <-free:
				lb.buf = lb.buf[:0]
			default:
				// room for a batch of typical (~400 byte) lines
				lb.buf = make([]byte, 0, decodeBatch*512)
			}
			for len(lb.ends) < decodeBatch {
				line, num, partial, err := fr.ReadLine()
				if err != nil {
					lb.err = err
					break
				}
				if len(lb.ends) == 0 {
					lb.first = num
				}
				lb.buf = append(lb.buf, line...)
				lb.ends = append(lb.ends, len(lb.buf))
				lb.partial = partial
			}
			select {
			case order <- lb:
			case <-stop:
				return
			}
			select {
			case jobs <- lb:
			case <-stop:
				return
			}
			if lb.err != nil {
				return
			}
		}
	}()
	for i := 0; i < workers; i++ {
		go func() {
			for lb := range jobs {
				evs := make([]*eventlog.Event, 0, len(lb.ends))
				var err error
				start := 0
				for i, end := range lb.ends {
					var e *eventlog.Event
					e, err = fr.DecodeLine(lb.buf[start:end], lb.first+int64(i), lb.partial && i == len(lb.ends)-1)
					if err != nil {
						break
					}
					evs = append(evs, e)
					start = end
				}
				if err == nil {
					err = lb.err
				}
				// the events hold copies: the buffer is free
				select {
				case free <- lb.buf:
				default:
				}
				lb.buf = nil
				lb.res <- evBatch{evs, err}
			}
		}()
	}
	out := make(chan evBatch, 2)
	go func() {
		defer close(out)
		for lb := range order {
			var b evBatch
			select {
			case b = <-lb.res:
			case <-stop:
				return
			}
			select {
			case out <- b:
			case <-stop:
				return
			}
			if b.err != nil {
				return
			}
		}
	}()
	return out
}

func evidenceError(err error) error {
	return wrapTampered(err)
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// evLines collects the compact quad lines (streamline.go) of a batch of
// events, by subject.
type evLines struct {
	prefix   []byte   // "<" + the session base + "/", once known
	subs     []string // the subjects of the events, in the order first seen
	subStart int      // first subject of the current event
	last     int      // index in subs of the last subject
	buf      []byte
	lines    []evLine
	lineEnd  int // first line of the current event
	evs      []evSpan
	idx      []int
}

type evLine struct {
	sub      int32
	off, end int32
}

// evSpan is one event of a batch: its subjects and lines.
type evSpan struct {
	s0, s1, l0, l1 int32
}

func (e *evLines) reset() {
	e.subs, e.subStart, e.last, e.buf, e.lines, e.lineEnd, e.evs = e.subs[:0], 0, 0, e.buf[:0], e.lines[:0], 0, e.evs[:0]
}

func (e *evLines) add(s, p string, o Term) {
	si := e.last
	if si < e.subStart || si >= len(e.subs) || e.subs[si] != s {
		si = -1
		for i := e.subStart; i < len(e.subs); i++ {
			if e.subs[i] == s {
				si = i
				break
			}
		}
		if si < 0 {
			si = len(e.subs)
			e.subs = append(e.subs, s)
		}
		e.last = si
	}
	off := len(e.buf)
	e.buf = appendLinePre(e.buf, e.prefix, p, o)
	e.lines = append(e.lines, evLine{sub: int32(si), off: int32(off), end: int32(len(e.buf))})
}

// endEvent closes the current event.
func (e *evLines) endEvent() {
	e.evs = append(e.evs, evSpan{int32(e.subStart), int32(len(e.subs)), int32(e.lineEnd), int32(len(e.lines))})
	e.subStart, e.lineEnd = len(e.subs), len(e.lines)
}

func (e *evLines) line(i int) []byte {
	l := e.lines[i]
	return e.buf[l.off:l.end]
}

// flushInto appends to r one block per subject of event x: its
// "<subject>" key, then its sorted, distinct lines, copied once, straight
// into the run.
func (e *evLines) flushInto1(r *run, x evSpan) {
	for si := x.s0; si < x.s1; si++ {
		s := e.subs[si]
		idx := e.idx[:0]
		for i := x.l0; i < x.l1; i++ {
			if e.lines[i].sub == si {
				idx = append(idx, int(i))
			}
		}
		if len(idx) > 1 {
			e.sortLines(idx)
			// drop duplicates
			w := 1
			for i := 1; i < len(idx); i++ {
				if !bytes.Equal(e.line(idx[i]), e.line(idx[w-1])) {
					idx[w] = idx[i]
					w++
				}
			}
			idx = idx[:w]
		}
		e.idx = idx
		ks := s // the key: '<' + s + '>', or keyMark + s after the prefix + '>'
		mark := byte('<')
		if pl := len(r.prefix) - 1; pl > 0 && len(s) >= pl && s[:pl] == string(r.prefix[1:]) {
			ks, mark = s[pl:], keyMark
		}
		size := len(ks) + 2
		for _, i := range idx {
			l := e.lines[i]
			size += int(l.end - l.off)
		}
		dst := r.reserve(size, len(ks)+2)
		dst = append(dst, mark)
		dst = append(dst, ks...)
		dst = append(dst, '>')
		r.setKey(dst)
		for _, i := range idx {
			dst = append(dst, e.line(i)...)
		}
	}
}

// sortLines sorts the lines idx of one subject (a handful: an insertion
// sort, comparing first the 8 leading bytes of each line as a number).
func (e *evLines) sortLines(idx []int) {
	if len(idx) > 32 {
		slices.SortFunc(idx, func(a, b int) int { return bytes.Compare(e.line(a), e.line(b)) })
		return
	}
	var keys [32]uint64
	for i, li := range idx {
		keys[i] = linePrefix(e.line(li))
	}
	for i := 1; i < len(idx); i++ {
		k, li := keys[i], idx[i]
		j := i
		for ; j > 0; j-- {
			pk := keys[j-1]
			if pk < k || (pk == k && bytes.Compare(e.line(idx[j-1]), e.line(li)) <= 0) {
				break
			}
			keys[j], idx[j] = pk, idx[j-1]
		}
		keys[j], idx[j] = k, li
	}
}

// linePrefix is the first 8 bytes of l as a big-endian number (zeros
// after a shorter l): prefixes compare as the lines do, or are equal.
func linePrefix(l []byte) uint64 {
	if len(l) >= 8 {
		return binary.BigEndian.Uint64(l)
	}
	var b [8]byte
	copy(b[:], l)
	return binary.BigEndian.Uint64(b[:])
}

// flushInto appends the blocks of every event of e to r.
func (e *evLines) flushInto(r *run) {
	if r.prefix == nil {
		r.prefix = e.prefix
	}
	for _, x := range e.evs {
		e.flushInto1(r, x)
	}
}

// packerBatches is how many batches of mapped events the mapper and the
// packer share.
const packerBatches = 8

// packer packs batches of mapped events into runs and hands full runs to
// the sorter; on closing its input it hands back the run being filled.
type packer struct {
	st       *streamer
	runBytes int
	byID     bool
	in       chan *evLines
	free     chan *evLines
	out      chan *run
	wait     time.Duration // waiting for a free run (read after out)
}

func (p *packer) loop() {
	cur := <-p.st.free
	cur.reset()
	cur.byID = p.byID
	for ev := range p.in {
		for _, x := range ev.evs {
			if cur.prefix == nil {
				cur.prefix = ev.prefix
			}
			ev.flushInto1(cur, x)
			if cur.size >= p.runBytes {
				t := time.Now()
				p.st.send(cur)
				cur = <-p.st.free
				p.wait += time.Since(t)
				cur.reset()
				cur.byID, cur.prefix = p.byID, ev.prefix
			}
		}
		p.free <- ev
	}
	p.out <- cur
}

// blockSink receives the merged blocks; see streamBlocks.
type blockSink func(pre, blk []byte) (int64, error)

// keyMark begins the key of a block whose subject IRI begins with the
// session base and '/': the key is keyMark, the rest of the IRI, '>'.
// (Run memory, spills and merges carry ~27 bytes less per block.)
const keyMark = 0x01

// cmpKey orders two sort keys, either of which may begin with keyMark
// standing for pre, as the keys they stand for.
func cmpKey(a, b, pre []byte) int {
	am, bm := len(a) > 0 && a[0] == keyMark, len(b) > 0 && b[0] == keyMark
	switch {
	case am && bm:
		return bytes.Compare(a[1:], b[1:])
	case !am && !bm:
		return bytes.Compare(a, b)
	case am:
		return cmpExpanded(pre, a[1:], b)
	default:
		return -cmpExpanded(pre, b[1:], a)
	}
}

// cmpExpanded compares pre+rest with raw.
func cmpExpanded(pre, rest, raw []byte) int {
	n := min(len(pre), len(raw))
	if c := bytes.Compare(pre[:n], raw[:n]); c != 0 {
		return c
	}
	if len(raw) < len(pre) {
		return 1
	}
	return bytes.Compare(rest, raw[len(pre):])
}

// lineKey returns "<subject>" of a quad line.
func lineKey(l []byte) []byte {
	return l[:bytes.IndexByte(l, '>')+1]
}

// rec is one block of a run: the "<subject>" key, then the sorted, distinct
// lines of that subject without it, at
// chunks[c][off:off+n].
type rec struct {
	ch        int32  // the chunk's index << 1, | 1 if the key starts with keyMark
	off, n, k int32  // k: length of the "<subject>" key
	p, p2     uint64 // 16 key bytes after keyMark, big-endian: a fast first comparison
}

// a rec is 32 bytes: a run of 64 MiB holds ~700k of them, sorted by
// moving them (the flag keeps it from 40)
func (x *rec) c() int32 { return x.ch >> 1 }

// chunkSize is the unit of run memory: blocks never straddle chunks, so a
// run grows without copying and is reused without zeroing.
const chunkSize = 4 << 20

type run struct {
	prefix  []byte // "<urn:witness:<session>/", shared by most keys
	byID    bool   // order keys by subject IRI (without the closing '>')
	chunks  [][]byte
	cur     int  // chunk being filled
	pending *rec // the last reserved block, whose key is filled in by setKey
	size    int  // bytes in the run
	recs    []rec
	arena   *offheap.Arena // where chunks come from (outside the Go heap)
}

// reset empties r, keeping its chunks for reuse.
func (r *run) reset() {
	for i := range r.chunks {
		r.chunks[i] = r.chunks[i][:0]
	}
	r.cur, r.size, r.recs = 0, 0, r.recs[:0]
}

// reserve records a block of size bytes (key: the length of its
// "<subject>") and returns the empty slice to append its bytes to.
func (r *run) reserve(size, key int) []byte {
	for {
		if r.cur == len(r.chunks) {
			r.chunks = append(r.chunks, r.arena.Alloc(max(chunkSize, size)))
		}
		c := r.chunks[r.cur]
		if cap(c)-len(c) >= size {
			r.recs = append(r.recs, rec{ch: int32(r.cur) << 1, off: int32(len(c)), n: int32(size), k: int32(key)})
			r.chunks[r.cur] = c[:len(c)+size]
			r.pending = &r.recs[len(r.recs)-1]
			r.size += size
			return c[len(c):]
		}
		if len(c) == 0 { // an oversized block gets a chunk of its own
			// (the smaller one stays in the arena until it is released)
			r.chunks[r.cur] = r.arena.Alloc(size)
			continue
		}
		r.cur++
	}
}

// setKey records the fast comparison prefix of the last reserved block.
func (r *run) setKey(key []byte) {
	x := r.pending
	if key[0] != keyMark {
		return
	}
	rest := key[1:]
	if r.byID {
		rest = rest[:len(rest)-1]
	}
	var b [16]byte
	copy(b[:], rest)
	x.p, x.p2 = binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
	x.ch |= 1
}

func (r *run) block(i int) []byte {
	x := r.recs[i]
	return r.chunks[x.c()][x.off : x.off+x.n]
}

// sortRecords orders blocks by subject; blocks of one subject stay separate
// and are merged when written.
func (r *run) sortRecords(byID bool) {
	// without the closing '>' of the key, byID
	drop := int32(0)
	if byID {
		drop = 1
	}
	// blocks of one subject are merged whatever their order: no need for a
	// stable sort (runsort.go)
	r.sortRecs(drop)
}

// sortKey is the part of a "<subject>" key blocks are ordered by.
func sortKey(key []byte, byID bool) []byte {
	if byID {
		return key[:len(key)-1]
	}
	return key
}

// streamer owns the sorting goroutine and the spilled runs.
type streamer struct {
	so    StreamOptions
	byID  bool
	runCh chan *run
	free  chan *run
	done  chan error
	files []*os.File
	// spilled counts the bytes written to files (the sorter's; read
	// after done)
	spilled int64
}

func (st *streamer) send(r *run) error {
	st.runCh <- r
	return nil
}

func (st *streamer) abort() {
	close(st.runCh)
	<-st.done
}

func (st *streamer) cleanup() {
	for _, f := range st.files {
		f.Close()
		os.Remove(f.Name())
	}
}

// sorter sorts each full run and spills it as a sequence of
// uvarint(len)+block, blocks of one subject merged.
func (st *streamer) sorter() {
	var err error
	for r := range st.runCh {
		if err == nil {
			err = st.spill(r)
		}
		st.free <- r
	}
	st.done <- err
}

func (st *streamer) spill(r *run) error {
	r.sortRecords(st.byID)
	f, err := os.CreateTemp(st.so.TempDir, "witness-graph-run-*")
	if err != nil {
		return fmt.Errorf("graph: temporary run file: %w", err)
	}
	st.files = append(st.files, f)
	bw := bufio.NewWriterSize(f, 1<<20)
	var lenBuf [binary.MaxVarintLen64]byte
	it := &memIter{r: r}
	for {
		blk, ok := it.next()
		if !ok {
			break
		}
		n := binary.PutUvarint(lenBuf[:], uint64(len(blk)))
		st.spilled += int64(n + len(blk))
		bw.Write(lenBuf[:n])
		if _, err := bw.Write(blk); err != nil {
			return fmt.Errorf("graph: write run %s: %w", f.Name(), err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("graph: write run %s: %w", f.Name(), err)
	}
	_, err = f.Seek(0, io.SeekStart)
	return err
}

// blockIter yields blocks in subject order, one block per subject.
type blockIter interface {
	next() ([]byte, bool)
}

// memIter iterates a sorted in-memory run, merging blocks of one subject.
type memIter struct {
	r        *run
	i        int
	buf, alt []byte // merge buffers, swapped at each merge
	key      []byte // the key of the blocks being merged
}

func (m *memIter) next() ([]byte, bool) {
	if m.i >= len(m.r.recs) {
		return nil, false
	}
	blk := m.r.block(m.i)
	k := m.r.recs[m.i].k
	m.i++
	if m.i >= len(m.r.recs) || !m.sameKey(m.i, blk[:k]) {
		return blk, true
	}
	m.key = append(m.key[:0], blk[:k]...)
	m.buf = append(m.buf[:0], blk...)
	for m.i < len(m.r.recs) && m.sameKey(m.i, m.key) {
		m.alt = mergeBlocks(m.alt[:0], m.buf, m.r.block(m.i))
		m.buf, m.alt = m.alt, m.buf
		m.i++
	}
	return m.buf, true
}

// sameKey reports whether block i of the run has the key key.
func (m *memIter) sameKey(i int, key []byte) bool {
	x := m.r.recs[i]
	return int(x.k) == len(key) && bytes.Equal(m.r.chunks[x.c()][x.off:x.off+x.k], key)
}

// fileIter reads a spilled run.
type fileIter struct {
	br   *bufio.Reader
	buf  []byte
	pend int // bytes of the last block, peeked, to discard
	err  error
}

func (f *fileIter) next() ([]byte, bool) {
	if f.pend > 0 {
		f.br.Discard(f.pend)
		f.pend = 0
	}
	n, err := binary.ReadUvarint(f.br)
	if err != nil {
		if err != io.EOF {
			f.err = err
		}
		return nil, false
	}
	// a block that fits in the reader's buffer is read in place (valid
	// until the next call)
	if n <= uint64(f.br.Size()) {
		blk, err := f.br.Peek(int(n))
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			f.err = err
			return nil, false
		}
		f.pend = int(n)
		return blk, true
	}
	if cap(f.buf) < int(n) {
		f.buf = make([]byte, n)
	}
	f.buf = f.buf[:n]
	if _, err := io.ReadFull(f.br, f.buf); err != nil {
		f.err = err
		return nil, false
	}
	return f.buf, true
}

// mergeBlocks merges two blocks of one subject (key, then sorted,
// distinct lines without the key) into dst, dropping duplicates.
func mergeBlocks(dst, a, b []byte) []byte {
	k := len(lineKey(a))
	out := append(dst[:0], a[:k]...)
	a, b = a[k:], b[k:]
	for len(a) > 0 || len(b) > 0 {
		var la, lb []byte
		if len(a) > 0 {
			la = a[:bytes.IndexByte(a, '\n')+1]
		}
		if len(b) > 0 {
			lb = b[:bytes.IndexByte(b, '\n')+1]
		}
		switch {
		case lb == nil:
			out, a = append(out, la...), a[len(la):]
		case la == nil:
			out, b = append(out, lb...), b[len(lb):]
		default:
			switch c := bytes.Compare(la, lb); {
			case c < 0:
				out, a = append(out, la...), a[len(la):]
			case c > 0:
				out, b = append(out, lb...), b[len(lb):]
			default:
				out, a, b = append(out, la...), a[len(la):], b[len(lb):]
			}
		}
	}
	return out
}

type mergeItem struct {
	pre      []byte // what keyMark stands for
	blk, key []byte
	sk       []byte // the sort key: key, or key without '>' (byID)
	it       blockIter
}

type mergeHeap []*mergeItem

func (h mergeHeap) Len() int { return len(h) }
func (h mergeHeap) Less(i, j int) bool {
	return cmpKey(h[i].sk, h[j].sk, h[i].pre) < 0
}
func (h mergeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }

// secondHas reports whether another item than the top has key: the
// smallest of the top's children is the second smallest item.
func (h mergeHeap) secondHas(key []byte) bool {
	for _, c := range []int{1, 2} {
		if c < len(h) && bytes.Equal(h[c].key, key) {
			return true
		}
	}
	return false
}
func (h *mergeHeap) Push(x any) { *h = append(*h, x.(*mergeItem)) }
func (h *mergeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// merge passes the union of the spilled runs and the in-memory run to
// sink, in order, blocks of one subject merged, and returns the number of
// lines sink wrote. A block passed to sink is only valid during the call.
func (st *streamer) merge(last *run, sink blockSink) (int64, error) {
	pre := last.prefix
	preOf := func([]byte) []byte { return pre }
	its := []blockIter{&memIter{r: last}}
	var fits []*fileIter
	for _, f := range st.files {
		fi := &fileIter{br: bufio.NewReaderSize(f, 1<<20)}
		fits = append(fits, fi)
		its = append(its, fi)
	}
	var h mergeHeap
	for _, it := range its {
		if blk, ok := it.next(); ok {
			k := lineKey(blk)
			h = append(h, &mergeItem{pre: pre, blk: blk, key: k, sk: sortKey(k, st.byID), it: it})
		}
	}
	heap.Init(&h)
	var count int64
	var acc, alt, key []byte
	for h.Len() > 0 {
		top := h[0]
		advance := func(item *mergeItem) {
			if blk, ok := item.it.next(); ok {
				item.blk, item.key = blk, lineKey(blk)
				item.sk = sortKey(item.key, st.byID)
				heap.Fix(&h, 0)
			} else {
				heap.Pop(&h)
			}
		}
		if !h.secondHas(top.key) {
			// the common case: no other run holds this subject
			n, err := sink(preOf(top.blk), top.blk)
			count += n
			if err != nil {
				return count, err
			}
			advance(top)
			continue
		}
		// copied: advancing an iterator reuses its buffer
		key = append(key[:0], top.key...)
		acc = append(acc[:0], top.blk...)
		advance(top)
		for h.Len() > 0 && bytes.Equal(h[0].key, key) {
			alt = mergeBlocks(alt, acc, h[0].blk)
			acc, alt = alt, acc
			advance(h[0])
		}
		n, err := sink(preOf(acc), acc)
		count += n
		if err != nil {
			return count, err
		}
	}
	for _, fi := range fits {
		if fi.err != nil {
			return count, fmt.Errorf("graph: read run: %w", fi.err)
		}
	}
	return count, nil
}

// asyncWriter hashes and writes in goroutines of their own while the
// merge goes on: full buffers go through one goroutine per writer in turn
// (a pipeline: the hash of one buffer overlaps the write of the one
// before), then come back empty. Blocks (block) are copied in their
// compact form into batches that one more goroutine expands into N-Quads
// lines (expander), so the merge, the expansion, the hash and the write
// each have a goroutine; bytes passed to Write after a block follow it
// through the expander, in order.
type asyncWriter struct {
	buf   []byte
	size  int
	full  chan []byte
	empty chan []byte
	done  chan error
	n     int // writers
	ex    *expander
}

const asyncBuffers = 4

func newAsyncWriter(size int, ws ...io.Writer) *asyncWriter {
	a := &asyncWriter{buf: make([]byte, 0, size), size: size, full: make(chan []byte, asyncBuffers),
		empty: make(chan []byte, asyncBuffers), done: make(chan error, len(ws)), n: len(ws)}
	for i := 1; i < asyncBuffers; i++ {
		a.empty <- make([]byte, 0, size)
	}
	in := a.full
	for i, w := range ws {
		var out chan []byte
		if i < len(ws)-1 {
			out = make(chan []byte, asyncBuffers)
		}
		go func(w io.Writer, in, out chan []byte) {
			var err error
			for b := range in {
				if err == nil {
					_, err = w.Write(b)
				}
				if out != nil {
					out <- b
				} else {
					a.empty <- b[:0]
				}
			}
			if out != nil {
				close(out)
			}
			a.done <- err
		}(w, in, out)
		in = out
	}
	return a
}

func (a *asyncWriter) Write(p []byte) (int, error) {
	if a.ex != nil {
		a.ex.raw(p)
		return len(p), nil
	}
	return a.write(p), nil
}

func (a *asyncWriter) write(p []byte) int {
	n := len(p)
	for len(p) > 0 {
		room := a.size - len(a.buf)
		if room <= 0 {
			a.flush()
			continue
		}
		k := min(room, len(p))
		a.buf = append(a.buf, p[:k]...)
		p = p[k:]
	}
	return n
}

func (a *asyncWriter) flush() {
	a.full <- a.buf
	a.buf = <-a.empty
}

// block writes the N-Quads lines of a block (a "<subject>" key, then
// compact lines) and returns how many; the lines are expanded in the
// expander's goroutine, and an error there (a line that is not compact)
// comes from Close.
func (a *asyncWriter) block(pre, blk []byte) (int64, error) {
	if a.ex == nil {
		a.ex = newExpander(a)
	}
	a.ex.block(pre, blk)
	// the key holds no '\n': one per line
	return int64(bytes.Count(blk, []byte{'\n'})), nil
}

// Close flushes, waits for the writers and returns the first error.
func (a *asyncWriter) Close() error {
	var first error
	if a.ex != nil {
		first = a.ex.close()
	}
	if len(a.buf) > 0 {
		a.full <- a.buf
	}
	close(a.full)
	for i := 0; i < a.n; i++ {
		if err := <-a.done; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// expander turns batches of compact blocks into N-Quads lines in a
// goroutine of its own, writing them to its asyncWriter's buffers.
type expander struct {
	cur   *exBatch
	full  chan *exBatch
	empty chan *exBatch
	done  chan error
	// waitIn: the caller waiting for an empty batch; waitOut: the
	// goroutine waiting for an empty output buffer (read after close)
	waitIn, waitOut time.Duration
}

// exBatch is a run of entries: data[ends[i-1]:ends[i]] (from 0 for i=0)
// is what kinds[i] says.
type exBatch struct {
	pre   []byte // what a key beginning with keyMark stands for
	data  []byte
	ends  []int
	kinds []uint8
}

// the kinds of an exBatch entry
const (
	exBlock    = iota // a block, its key not marked (pre nil)
	exBlockPre        // a block whose key may begin with keyMark (pre)
	exRaw             // bytes written as they are
)

const (
	exBatchBytes = 1 << 20
	exBatches    = 4
)

func newExpander(a *asyncWriter) *expander {
	e := &expander{full: make(chan *exBatch, exBatches), empty: make(chan *exBatch, exBatches), done: make(chan error, 1)}
	for i := 0; i < exBatches; i++ {
		e.empty <- &exBatch{data: make([]byte, 0, exBatchBytes)}
	}
	e.cur = <-e.empty
	go func() {
		var err error
		for b := range e.full {
			start := 0
			for i, end := range b.ends {
				if err == nil {
					switch k := b.kinds[i]; k {
					case exRaw:
						a.write(b.data[start:end])
					default:
						var pre []byte
						if k == exBlockPre {
							pre = b.pre
						}
						a.buf, _, err = appendNQuadsBlock(a.buf, pre, b.data[start:end])
						if len(a.buf) >= a.size {
							t := time.Now()
							a.flush()
							e.waitOut += time.Since(t)
						}
					}
				}
				start = end
			}
			b.data, b.ends, b.kinds, b.pre = b.data[:0], b.ends[:0], b.kinds[:0], nil
			e.empty <- b
		}
		e.done <- err
	}()
	return e
}

func (e *expander) add(p []byte, kind uint8) {
	e.cur.data = append(e.cur.data, p...)
	e.cur.ends = append(e.cur.ends, len(e.cur.data))
	e.cur.kinds = append(e.cur.kinds, kind)
	if len(e.cur.data) >= exBatchBytes {
		t := time.Now()
		e.full <- e.cur
		e.cur = <-e.empty
		e.waitIn += time.Since(t)
	}
}

func (e *expander) block(pre, blk []byte) {
	if pre == nil {
		e.add(blk, exBlock)
		return
	}
	// one pre per batch (the merge has one)
	if e.cur.pre != nil && !bytes.Equal(e.cur.pre, pre) {
		e.full <- e.cur
		e.cur = <-e.empty
	}
	e.cur.pre = pre
	e.add(blk, exBlockPre)
}

func (e *expander) raw(p []byte) {
	e.add(p, exRaw)
}

// close expands what is left and returns the first error.
func (e *expander) close() error {
	if len(e.cur.ends) > 0 {
		e.full <- e.cur
	}
	close(e.full)
	return <-e.done
}
