package replay

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/seal"
	"github.com/agent-trace-witness/witness/verify"
	"github.com/agent-trace-witness/witness/why"
)

// LoadOptions say what Load reads and how the runs are judged.
type LoadOptions struct {
	// GraphFile is the witness graph (JSON-LD) to replay, unless Logs is set.
	GraphFile string
	// Logs, when set, reads the logs of one run, joined into the graph
	// replayed (graph.BuildRun) in place of GraphFile.
	Logs func() ([]graph.LogInput, error)
	// Remove are the removals; for a run of several logs their LOGNAME:eN
	// forms are resolved to node IRIs in place (why.Resolve).
	Remove []string
	// SealFile, when set, is the seal the observed and counterfactual runs
	// are judged against (SealJudge), with the keys Keys returns.
	SealFile string
	Keys     func() (seal.VerifyOptions, error)
	// Judge is a judge given by the caller; the graph is then read whole.
	Judge Judge
	// Whole reads the graph whole even without Judge or Prepare (verdict
	// sources, a DOT picture need the graph).
	Whole bool
	// Prepare, when set, sees the graph read whole before the engine is
	// built (a what-if policy adding removals); done true stops Load with
	// no engine and Prepare's error.
	Prepare func(g *graph.Graph) (done bool, err error)
	// MemoryLimit sets the runtime's soft memory limit to MemoryLimit when
	// the graph is read straight into the index and GOMEMLIMIT is unset.
	MemoryLimit bool
	// Progress, when set, wraps the graph file as it is read (the CLI's
	// progress line, internal/progress); it must hand back the bytes it
	// reads unchanged.
	Progress func(name string, r io.Reader) io.Reader
}

// graphReader is the graph file f read through o.Progress.
func (o LoadOptions) graphReader(f io.Reader) io.Reader {
	if o.Progress == nil {
		return f
	}
	return o.Progress(o.GraphFile, f)
}

// Load reads the graph or the run into an engine and returns it with the
// judge of its runs (nil without a seal or a judge given). A graph file
// with no judge given, no Prepare and not Whole is read straight into
// the engine's index without holding the graph (EngineBuilder); with a
// seal the same scan judges the observed run and keeps the projection
// the counterfactual is judged from (verify.GraphScan), the judge reading
// the file again only when that projection cannot say it. A nil engine
// and a nil error: Prepare has answered.
func Load(o LoadOptions) (*Engine, Judge, error) {
	if o.Logs == nil && o.Prepare == nil && o.Judge == nil && !o.Whole {
		eng, j, err := loadStreamed(o)
		switch {
		case err == nil:
			return eng, j, nil
		case exitcode.Of(err) != exitcode.Tampered || !strings.HasPrefix(err.Error(), "index graph:"):
			return nil, nil, err
		}
		// a repeated IRI the scan could not see (an unsorted document):
		// read the graph whole, which names the element
	}
	g, err := loadGraph(o)
	if err != nil {
		return nil, nil, err
	}
	if o.Prepare != nil {
		if done, err := o.Prepare(g); done || err != nil {
			return nil, nil, err
		}
	}
	eng, err := NewEngine(g)
	if err != nil {
		return nil, nil, fmt.Errorf("replay %s: %w", o.GraphFile, err)
	}
	j := o.Judge
	if j == nil && o.SealFile != "" {
		sj, err := newLoadJudge(o)
		if err != nil {
			return nil, nil, err
		}
		j = sj
	}
	return eng, j, nil
}

// newLoadJudge is the SealJudge of o.
func newLoadJudge(o LoadOptions) (*SealJudge, error) {
	keys, err := o.Keys()
	if err != nil {
		return nil, err
	}
	return NewSealJudge(o.SealFile, keys, o.GraphFile)
}

// loadGraph reads the graph whole: the run joined, or the graph file.
func loadGraph(o LoadOptions) (*graph.Graph, error) {
	if o.Logs == nil {
		f, err := os.Open(o.GraphFile)
		if err != nil {
			return nil, exitcode.Input("read graph", err, "check the path given to --graph; make the graph with 'witness graph --events FILE --out FILE'")
		}
		defer f.Close()
		return graph.ReadJSONLD(o.graphReader(f), filepath.Base(o.GraphFile))
	}
	logs, err := o.Logs()
	if err != nil {
		return nil, err
	}
	run, err := graph.BuildRun(logs, graph.Options{})
	if err != nil {
		return nil, err
	}
	if len(run.Logs) > 1 {
		for i, r := range o.Remove {
			iri, err := why.Resolve(run.Graph, r, run.Logs)
			if err != nil {
				return nil, err
			}
			o.Remove[i] = iri
		}
	}
	return run.Graph, nil
}

// loadStreamed reads the graph file straight into the engine's index
// (EngineBuilder, as NewEngineJSONLD). With a seal the same scan feeds
// verify's check of the document (verify.GraphScan): the judge then holds
// the observed run's judgement and the scan's projection, from which it
// judges the counterfactual too (GraphScan.CheckWithout), whose relation
// nodes the engine finds from the referrers its builder kept. An error of
// the seal comes after the graph's, as on the in-memory path.
func loadStreamed(o LoadOptions) (*Engine, Judge, error) {
	f, err := os.Open(o.GraphFile)
	if err != nil {
		return nil, nil, exitcode.Input("read graph", err, "check the path given to --graph; make the graph with 'witness graph --events FILE --out FILE'")
	}
	defer f.Close()
	if o.MemoryLimit && os.Getenv("GOMEMLIMIT") == "" {
		// the live heap is the engine: collect before the heap doubles it
		debug.SetMemoryLimit(MemoryLimit)
	}
	var j *SealJudge
	var jerr error
	var gs *verify.GraphScan
	if o.SealFile != "" {
		j, jerr = newLoadJudge(o)
		if jerr == nil && j.sealOnly == nil {
			// a judgement is verdict and findings: no digest; the
			// projection is kept for the counterfactual's judgement
			gs = verify.NewGraphScan(j.plan, verify.GraphScanOptions{NoDigest: true, Without: true})
		}
	}
	// with a seal, the builder keeps who refers to each relation node:
	// the counterfactual check then needs no read of the file to find
	// the relation nodes it drops
	b := newEngineBuilderWith(engineBuilderOptions{Referrers: o.SealFile != ""})
	err = graph.ScanJSONLDView(o.graphReader(f), filepath.Base(o.GraphFile), func(v *graph.NodeView) error {
		b.Add(v)
		if gs != nil {
			gs.Add(v)
		}
		return nil
	})
	if err != nil {
		b.Discard()
		if gs != nil {
			gs.Discard()
		}
		return nil, nil, err
	}
	eng, err := b.Finish()
	if err != nil {
		if gs != nil {
			gs.Discard()
		}
		return nil, nil, err
	}
	if jerr != nil {
		return nil, nil, jerr
	}
	if gs != nil {
		if err := j.judgeScan(gs); err != nil {
			return nil, nil, err
		}
	}
	if j == nil {
		return eng, nil, nil
	}
	return eng, j, nil
}

// judgeScan judges the observed run from the engine's scan gs, reading
// the file again only when the scan cannot say it, and keeps gs's
// projection for the counterfactual.
func (j *SealJudge) judgeScan(gs *verify.GraphScan) error {
	r := j.report()
	err := gs.Check(r, j.plan, j.name, func() (io.Reader, func(), error) {
		g, err := j.open()
		if err != nil {
			return nil, nil, err
		}
		return g, func() { g.Close() }, nil
	})
	if err != nil {
		return err
	}
	r.Finish()
	j.observed = judgementOf(r)
	j.scan = gs
	return nil
}
