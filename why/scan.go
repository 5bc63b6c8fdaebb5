package why

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"

	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/jsonpath"
	"github.com/agent-trace-witness/witness/internal/jsontree"
)

// ExplainJSONLD is Explain on the graph document r (written by 'witness
// graph', one log or a joined run), read twice without holding the whole
// graph: Subgraph keeps the nodes Explain reads, and Explain runs on them.
// The chain is the one Explain gives on the whole graph. The logs come from
// opts.Logs or, without them, from the graph's session nodes (LogsOf).
func ExplainJSONLD(r io.ReadSeeker, name, node string, opts Options) (*Chain, error) {
	sub, model, err := subgraph(r, name, node, opts)
	if err != nil {
		return nil, err
	}
	return explain(sub, node, opts, model)
}

// Subgraph reads the graph document r in two passes (graph.ScanJSONLDView,
// with its errors) and returns the part of it that Explain(g, node, opts)
// reads on the whole graph g: the capture session nodes (the logs' names),
// the nodes the chain walks, the nodes they point to and the nodes their
// excerpts come from. The first pass keeps a causal index (IRIs interned
// to int32, the causal edges, which nodes are transparent or context,
// where each node's element is) and resolves node; the walk runs on the
// index (the walk Explain runs); the second pass keeps the nodes found,
// reading only their elements when the document was streamed
// (graph.NodeView.Span), or the document again up to the last of them when
// it was read whole. An unknown or ambiguous node is Resolve's usage
// error. r is read from its current offset, then rewound to it.
func Subgraph(r io.ReadSeeker, name, node string, opts Options) (*graph.Graph, error) {
	g, _, err := subgraph(r, name, node, opts)
	return g, err
}

// subgraph is Subgraph, and whether the document holds a model channel's
// nodes (which the part kept may not).
func subgraph(r io.ReadSeeker, name, node string, opts Options) (*graph.Graph, bool, error) {
	model := false
	at, err := r.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, false, exitcode.New(exitcode.Failure, fmt.Errorf("read graph %s: %w", name, err), "")
	}
	ix := newCausalIndex()
	_, id := splitRef(node)
	refIsNode := false
	var cands []string
	sessions := graph.New()
	count := 0
	err = graph.ScanJSONLDView(r, name, func(v *graph.NodeView) error {
		if err := ix.add(v); err != nil {
			return exitcode.New(exitcode.Tampered, fmt.Errorf("graph %w", &jsontree.Error{File: name,
				Field: jsonpath.Member(jsonpath.Index(`$["@graph"]`, count), "@id"), Msg: err.Error() + " (" + string(v.ID) + ")"}),
				"the graph is not a witness PROV graph; regenerate it with 'witness graph --events FILE'")
		}
		count++
		if string(v.ID) == node {
			refIsNode = true
		}
		if string(firstLiteral(v, graph.WEventID)) == id {
			cands = append(cands, string(v.ID))
		}
		if v.HasType(graph.WModelTurn) || v.HasType(graph.WModelMessage) {
			model = true
		}
		if v.HasType(graph.WCaptureSession) {
			return sessions.AddNode(v.Node())
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	logs := opts.Logs
	if len(logs) == 0 {
		logs = LogsOf(sessions)
	}
	start := node
	if !refIsNode {
		// a document read whole gives its nodes in ID order, a streamed
		// one in document order: Resolve sees them in ID order
		sort.Strings(cands)
		if start, err = resolveAmong(node, cands, logs); err != nil {
			return nil, false, err
		}
	}
	max := opts.MaxSteps
	if max <= 0 {
		max = 1000
	}
	startK, _ := ix.ids.Lookup(start)
	keep := ix.keep(startK, max)
	want := 0
	for k := range keep {
		if ix.flags[k]&flagNode != 0 {
			want++
		}
	}
	kept := idsOnly(ix.ids, keep)
	// the second pass reads the elements of the nodes kept, where the
	// first found them, as a document of their own; a document read
	// whole has no spans: the second pass reads it again, up to the last
	// node kept
	var src io.Reader = r
	fromSpans := ix.spans
	if fromSpans {
		doc, err := ix.elements(r, at, keep)
		if err != nil {
			return nil, false, exitcode.New(exitcode.Failure, fmt.Errorf("read graph %s: %w", name, err), "")
		}
		src = bytes.NewReader(doc)
	}
	ix = nil
	if _, err := r.Seek(at, io.SeekStart); err != nil {
		return nil, false, exitcode.New(exitcode.Failure, fmt.Errorf("read graph %s: %w", name, err), "")
	}
	// the session nodes of the first pass name the logs; the second pass
	// ends at the last node kept (the first pass has read the document
	// to its end; the elements read at their spans are the nodes kept)
	sub := sessions
	err = graph.ScanJSONLDView(src, name, func(v *graph.NodeView) error {
		if _, ok := kept[string(v.ID)]; !ok {
			return nil
		}
		want--
		if sub.Node(string(v.ID)) == nil {
			if err := sub.AddNode(v.Node()); err != nil {
				return err
			}
		}
		if want == 0 {
			return errAllFound
		}
		return nil
	})
	if err != nil && err != errAllFound {
		if fromSpans { // the file changed since the first pass
			return nil, false, exitcode.New(exitcode.Failure, fmt.Errorf("read graph %s: the nodes of the first reading: %w (the file changed?)", name, err), "")
		}
		return nil, false, err
	}
	if want != 0 {
		return nil, false, exitcode.New(exitcode.Failure, fmt.Errorf("read graph %s: %d nodes of the first reading are not in the second (the file changed?)", name, want), "")
	}
	return sub, model, nil
}

// errAllFound ends the second pass of Subgraph.
var errAllFound = errors.New("all nodes found")

// elements reads the @graph elements of the document nodes of keep from
// r (the document began at offset at), at the spans the first pass saw,
// and returns them as a document of their own, in document order.
func (ix *causalIndex) elements(r io.ReadSeeker, at int64, keep map[int32]bool) ([]byte, error) {
	var ks []int32
	for k := range keep {
		if ix.flags[k]&flagNode != 0 {
			ks = append(ks, k)
		}
	}
	slices.SortFunc(ks, func(a, b int32) int { return cmp.Compare(ix.off[a], ix.off[b]) })
	doc := []byte(`{"@context":` + graph.ContextJSON + `,"@graph":[`)
	for j, k := range ks {
		if j > 0 {
			doc = append(doc, ',')
		}
		if _, err := r.Seek(at+ix.off[k], io.SeekStart); err != nil {
			return nil, err
		}
		doc = slices.Grow(doc, int(ix.n[k]))
		n := len(doc)
		doc = doc[:n+int(ix.n[k])]
		if _, err := io.ReadFull(r, doc[n:]); err != nil {
			return nil, err
		}
	}
	return append(doc, "]}"...), nil
}

// idsOnly returns the IRIs of ids whose number keep holds.
func idsOnly(ids *iriTable, keep map[int32]bool) map[string]int32 {
	out := make(map[string]int32, len(keep))
	for k := range keep {
		out[string(ids.bytes(k))] = k
	}
	return out
}

// Node flags of a causal index.
const (
	flagNode        = 1 << iota // a node of the document (not only pointed to)
	flagFollowed                // not context (followed)
	flagTransparent             // walked through, not printed (transparent)
)

// causalIndex is what Explain's walk reads of a graph, for every node:
// IRIs interned to int32, flags, and the causal targets in Explain's
// order (predicate by predicate in causal's order, sorted within one).
type causalIndex struct {
	ids     *iriTable
	flags   []uint8
	edges   []int32
	first   []int32 // the targets of node k start at edges[first[k]], count[k] of them
	count   []int32
	scratch [][]byte
	buf     []byte
	aux     map[int32]int32 // a model turn: its output message, where its excerpt comes from
	// off and n are where node k's element is in the document, when
	// spans holds (every node came with its span)
	off   []int64
	n     []uint32
	spans bool
}

func newCausalIndex() *causalIndex {
	return &causalIndex{ids: newIRITable(), aux: map[int32]int32{}, spans: true}
}

// internBytes returns the number of iri, giving it the next one if it is
// new.
func (ix *causalIndex) internBytes(iri []byte) int32 {
	k := ix.ids.InternBytes(iri)
	if int(k) < len(ix.flags) {
		return k
	}
	ix.flags = append(ix.flags, 0)
	ix.first = append(ix.first, 0)
	ix.count = append(ix.count, 0)
	ix.off = append(ix.off, 0)
	ix.n = append(ix.n, 0)
	return k
}

// errDuplicate is the error of a node whose IRI an earlier node has.
var errDuplicate = errors.New("duplicate node")

// add indexes the node of view v.
func (ix *causalIndex) add(v *graph.NodeView) error {
	if len(ix.flags) >= 1<<31-1 {
		return errors.New("too many nodes for the causal index")
	}
	k := ix.internBytes(v.ID)
	if ix.flags[k]&flagNode != 0 {
		return errDuplicate
	}
	f := uint8(flagNode)
	if followedTypes(v.Types) {
		f |= flagFollowed
	}
	if v.HasType(graph.WArguments) || v.HasType(graph.WRequestParams) { // transparent
		f |= flagTransparent
	}
	ix.flags[k] |= f
	if off, n := v.Span(); n > 0 && n <= math.MaxUint32 {
		ix.off[k], ix.n[k] = off, uint32(n)
	} else {
		ix.spans = false
	}
	ix.first[k] = int32(len(ix.edges))
	for _, p := range causal {
		refs := ix.scratch[:0]
		for _, t := range propVals(v, p) {
			if len(t.IRI) > 0 {
				refs = append(refs, t.IRI)
			}
		}
		slices.SortFunc(refs, bytes.Compare)
		for _, r := range refs {
			ix.edges = append(ix.edges, ix.internBytes(r))
		}
		clear(refs)
		ix.scratch = refs[:0]
	}
	ix.count[k] = int32(len(ix.edges)) - ix.first[k]
	if v.HasType(graph.WModelTurn) {
		if i := bytes.LastIndex(v.ID, []byte("/turn/")); i >= 0 {
			msg := append(append(append(ix.buf[:0], v.ID[:i]...), "/msg/"...), v.ID[i+len("/turn/"):]...)
			ix.aux[k] = ix.internBytes(msg)
			ix.buf = msg[:0]
		}
	}
	return nil
}

// propVals returns the values of v under pred (none without it).
func propVals(v *graph.NodeView, pred string) []graph.TermView {
	for _, p := range v.Props {
		if p.Pred == pred {
			return p.Vals
		}
	}
	return nil
}

// firstLiteral is Node.Value on a view: the first literal of v under
// pred, or nothing.
func firstLiteral(v *graph.NodeView, pred string) []byte {
	for _, t := range propVals(v, pred) {
		if len(t.IRI) == 0 {
			return t.Lex
		}
	}
	return nil
}

// keep runs Explain's walk from start on the index and returns the nodes
// Explain reads: each walked node, every target it points to (Explain
// looks at each target's types) and a model turn's output message.
func (ix *causalIndex) keep(start int32, max int) map[int32]bool {
	keep := map[int32]bool{start: true}
	isNode := func(k int32) bool { return ix.flags[k]&flagNode != 0 }
	isTransparent := func(k int32) bool { return ix.flags[k]&flagTransparent != 0 }
	edges := func(k int32, fn func(to int32, pred string)) {
		keep[k] = true
		if m, ok := ix.aux[k]; ok {
			keep[m] = true
		}
		for _, t := range ix.edges[ix.first[k] : ix.first[k]+ix.count[k]] {
			if ix.flags[t]&(flagNode|flagFollowed) == flagNode|flagFollowed {
				keep[t] = true
				fn(t, "")
			}
		}
	}
	walk(start, max, isNode, isTransparent, edges, func(walkItem[int32], int) {})
	return keep
}

// ExplainLog is Explain on the graph of one event log, read from r (name
// is the path as given), without holding the graph: the log is streamed
// into a JSON-LD document in a temporary file of tempDir
// (graph.StreamRunJSONLD; "" is the system's), which ExplainJSONLD reads;
// the steps are named by the log as BuildRun names it. The chain is the
// one Explain gives on BuildRun's graph of the log.
func ExplainLog(r io.Reader, name, node string, gopts graph.Options, tempDir string, opts Options) (*Chain, error) {
	f, err := os.CreateTemp(tempDir, "witness-why-*.jsonld")
	if err != nil {
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("why: temporary graph: %w", err), "give a writable directory with --tmp DIR")
	}
	defer os.Remove(f.Name())
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	rl, _, err := graph.StreamRunJSONLD(r, name, bw, gopts, graph.StreamOptions{TempDir: tempDir})
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		if errors.As(err, new(*exitcode.Error)) {
			return nil, err
		}
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("why: temporary graph: %w", err), "")
	}
	if len(opts.Logs) == 0 {
		opts.Logs = []graph.RunLog{rl}
	}
	return ExplainJSONLD(f, name, node, opts)
}
