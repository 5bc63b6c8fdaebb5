// Command witness-bench is the benchmark harness behind `make bench`
// (scripts/bench.d/30-graph.sh): it generates deterministic synthetic event
// logs and times one operation per process, printing one JSON line with the
// wall time, events per second and the process's peak RSS (getrusage).
//
//	witness-bench gen N FILE            write a synthetic log of N events, a valid capture (session id derived, end signed by $WITNESS_KEYRING's active key when set)
//	witness-bench floor FILE            read FILE and sha256 it (the floor)
//	witness-bench stream FILE           canonical N-Quads, streamed (witness graph --format nquads);
//	                                    WITNESS_BENCH_STAGES=1 prints the stages' wall times to stderr
//	witness-bench jsonld FILE OUT       the graph's JSON-LD, streamed (witness graph), to OUT
//	witness-bench readgraph DOC.jsonld  read a graph file back (graph.ReadJSONLD; quads: its nodes)
//	witness-bench jsongold DOC.jsonld   json-gold: ToRDF + URDNA2015 + serialise
package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"time"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/graph/ldoracle"
	"github.com/agent-trace-witness/witness/internal/synthlog"
	"github.com/agent-trace-witness/witness/keyring"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "witness-bench:", err)
		os.Exit(1)
	}
}

type result struct {
	Op      string  `json:"op"`
	File    string  `json:"file"`
	Events  int64   `json:"events,omitempty"`
	Quads   int64   `json:"quads,omitempty"`
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
	MaxRSS  int64   `json:"max_rss_mib"`
	Digest  string  `json:"digest,omitempty"`
	Runs    int     `json:"runs,omitempty"`          // stream, jsonld: sorted runs (1: nothing spilled)
	Spilled int64   `json:"spilled_bytes,omitempty"` // stream, jsonld: bytes of the runs written to temporary files
}

func run(args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("usage: witness-bench gen|floor|stream|jsonld|jsongold ARGS")
	}
	op := args[0]
	r := result{Op: op, File: args[1]}
	if p := os.Getenv("WITNESS_BENCH_CPUPROFILE"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	t0 := time.Now()
	do, ok := ops[op]
	if !ok {
		return fmt.Errorf("unknown op %q", op)
	}
	keep, err := do(args, &r) // what the heap profile shows (readgraph: the graph)
	if err != nil {
		return err
	}
	r.Seconds = time.Since(t0).Seconds()
	if p := os.Getenv("WITNESS_BENCH_MEMPROFILE"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		runtime.GC()
		if err := pprof.WriteHeapProfile(f); err != nil {
			return err
		}
		f.Close()
		runtime.KeepAlive(keep)
	}
	r.MaxRSS = maxRSS()
	b, _ := json.Marshal(r)
	fmt.Println(string(b))
	return nil
}

// ops are the operations of witness-bench, by name.
var ops = map[string]func(args []string, r *result) (any, error){
	"gen":       opGen,
	"floor":     opFloor,
	"stream":    opStream,
	"jsonld":    opJsonld,
	"readgraph": opReadgraph,
	"jsongold":  opJsongold,
}

// opGen is the gen op.
func opGen(args []string, r *result) (any, error) {
	if len(args) != 3 {
		return nil, fmt.Errorf("usage: witness-bench gen N FILE")
	}
	n, err := strconv.Atoi(args[1])
	if err != nil {
		return nil, err
	}
	f, err := os.Create(args[2])
	if err != nil {
		return nil, err
	}
	// a valid capture: the session id derived from the header, the
	// end signed by the active key of $WITNESS_KEYRING when there is
	// one, so that verify judges the whole log (issue 33)
	var signers []eventlog.Signer
	if p := os.Getenv(keyring.EnvKeyring); p != "" {
		kr, err := keyring.OpenExisting(p, keyring.Options{})
		if err != nil {
			return nil, fmt.Errorf("gen: keyring %s: %w", p, err)
		}
		sg, err := kr.ActiveSigner()
		if err != nil {
			return nil, fmt.Errorf("gen: keyring %s: %w", p, err)
		}
		signers = append(signers, sg)
	}
	if err := synthlog.GenerateWith(f, n, 1, synthlog.Options{Signers: signers}); err != nil {
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	r.File, r.Events = args[2], int64(n)
	return nil, nil
}

// opFloor is the floor op.
func opFloor(args []string, r *result) (any, error) {
	f, err := os.Open(args[1])
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	br := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := br.ReadSlice('\n')
		h.Write(line)
		if len(line) > 0 {
			r.Events++
		}
		if err == io.EOF {
			break
		}
		if err != nil && err != bufio.ErrBufferFull {
			return nil, err
		}
	}
	r.Digest = hex.EncodeToString(h.Sum(nil))
	st, _ := f.Stat()
	r.Bytes = st.Size()
	return nil, nil
}

// opStream is the stream op.
func opStream(args []string, r *result) (any, error) {
	f, err := os.Open(args[1])
	if err != nil {
		return nil, err
	}
	defer f.Close()
	so := graph.StreamOptions{}
	if os.Getenv("WITNESS_BENCH_STAGES") != "" {
		so.Stages = &graph.StreamStages{}
	}
	st, err := graph.StreamNQuads(graph.NewEventSource(f, args[1]), io.Discard, graph.Options{}, so)
	if err != nil {
		return nil, err
	}
	if g := so.Stages; g != nil {
		fmt.Fprintf(os.Stderr, "stages (wall s): map %.2f merge %.2f drain %.2f; waits: mapper in %.2f out %.2f, packer %.2f, merge %.2f, expander %.2f\n",
			g.Map.Seconds(), g.Merge.Seconds(), g.Drain.Seconds(), g.MapWaitIn.Seconds(), g.MapWaitOut.Seconds(),
			g.PackWaitSort.Seconds(), g.MergeWaitOut.Seconds(), g.ExpandWait.Seconds())
	}
	r.Events, r.Quads, r.Bytes, r.Digest, r.Runs, r.Spilled = st.Events, st.Quads, st.Bytes, st.Digest, st.Runs, st.Spilled
	return nil, nil
}

// opJsonld is the jsonld op.
func opJsonld(args []string, r *result) (any, error) {
	if len(args) != 3 {
		return nil, fmt.Errorf("usage: witness-bench jsonld FILE OUT")
	}
	f, err := os.Open(args[1])
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out, err := os.Create(args[2])
	if err != nil {
		return nil, err
	}
	st, err := graph.StreamJSONLD(graph.NewEventSource(f, args[1]), out, graph.Options{}, graph.StreamOptions{})
	if err != nil {
		return nil, err
	}
	if err := out.Close(); err != nil {
		return nil, err
	}
	r.Events, r.Quads, r.Bytes, r.Digest, r.Runs, r.Spilled = st.Events, st.Quads, st.Bytes, st.Digest, st.Runs, st.Spilled
	return nil, nil
}

// opReadgraph is the readgraph op.
func opReadgraph(args []string, r *result) (any, error) {
	f, err := os.Open(args[1])
	if err != nil {
		return nil, err
	}
	defer f.Close()
	g, err := graph.ReadJSONLD(f, args[1])
	if err != nil {
		return nil, err
	}
	r.Quads = int64(g.Len())
	return g, nil
}

// opJsongold is the jsongold op.
func opJsongold(args []string, r *result) (any, error) {
	doc, err := os.ReadFile(args[1])
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	cw := &counter{w: h}
	if err := ldoracle.Canonicalize(doc, &ldoracle.Loader{}, cw); err != nil {
		return nil, err
	}
	r.Bytes, r.Quads = cw.n, cw.lines
	r.Digest = hex.EncodeToString(h.Sum(nil))
	return nil, nil
}

type counter struct {
	w     io.Writer
	n     int64
	lines int64
}

func (c *counter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	c.lines += int64(bytes.Count(p, []byte{'\n'}))
	return c.w.Write(p)
}
