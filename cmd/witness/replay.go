package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/replay"
	"github.com/agent-trace-witness/witness/seal"
	"github.com/agent-trace-witness/witness/verify"
	"github.com/agent-trace-witness/witness/why"
)

// replayOptions are the flags of `witness replay`. Verdict sources other
// verbs' packages provide (the firewall's --what-if-policy) append to
// sources from their own flags.
type replayOptions struct {
	graphFile string
	// events are the logs of one run, joined into the graph replayed
	// (graph.BuildRun), in place of graphFile.
	events   []string
	remove   []string
	sealFile string
	keys     keyringOptions
	output   outputOptions
	format   string
	rank     bool
	top      int
	// sources feed the verdict overlay (replay.VerdictSource).
	sources []replay.VerdictSource
	// whatIfPolicy is a message-policy file (--what-if-policy): the messages
	// it would have withheld or refused in enforcement mode are removed, and
	// its verdicts join the overlay (see applyWhatIfPolicy in firewall.go).
	whatIfPolicy string
	// judge verifies the observed and counterfactual graphs (built from
	// sealFile); nil without --seal.
	judge replay.Judge
}

func newReplayCmd(a *app) *cobra.Command {
	var o replayOptions
	c := &cobra.Command{
		Use:   "replay (--graph FILE | --events FILE ...) (--remove IRI ... | --rank)",
		Short: "Compute a counterfactual on a witness graph: what if these actions had not happened",
		Long: `replay answers "what if this action had not happened" on a witness PROV graph:
the compensation set (every node that depends, transitively, on a removed node
through prov:used, prov:wasGeneratedBy, prov:wasInformedBy, prov:wasDerivedFrom),
the actions whose effects cannot be undone, the share of the run's actions that
would disappear (synergy_residual), and, with --seal, verify's findings and
verdict on the observed and the counterfactual run side by side.

--remove takes a node IRI or an event id (e12: the primary node of that
event). --rank computes one counterfactual per action and ranks them by blast
radius. replay reads the graph only; it never re-runs anything and never
re-creates what was deleted. See docs/replay.md.

--events (repeatable) replays the logs of one run joined into one graph, as
'witness graph' joins them, in place of --graph: removing an untrusted tool
result then puts the model turns that read it and the actions they asked
for in the compensation set, across channels, and with --seal the verdict
overlay shows whether the injection-provenance finding disappears. With
several logs, --remove also takes LOGNAME:eN (docs/design/causal-join.md).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReplay(a, &o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.graphFile, "graph", "", "witness graph (JSON-LD, from 'witness graph')")
	f.StringArrayVar(&o.events, "events", nil, "event log of the run to replay in place of --graph; repeat for each log of the run")
	f.StringArrayVar(&o.remove, "remove", nil, "node IRI or event id to remove (repeatable)")
	f.StringVar(&o.sealFile, "seal", "", "seal to verify the observed and counterfactual runs against (drift and verdict overlays)")
	o.keys.AddFlags(c, keyUse{Legacy: true})
	o.output.AddFlags(c, "write the output to FILE instead of stdout", true)
	f.StringVar(&o.format, "format", "json", "output format: json, text or dot")
	f.BoolVar(&o.rank, "rank", false, "rank every action by the blast radius of removing it alone")
	f.IntVar(&o.top, "top", 0, "with --rank, list only the first N actions (0: all)")
	f.StringVar(&o.whatIfPolicy, "what-if-policy", "", "message-policy file: remove what it would have withheld or refused (enforcement) and add its verdicts")
	return c
}

// runReplay reads the graph, computes the counterfactual or the ranking and
// writes it. Nothing is written when anything fails.
func runReplay(a *app, o *replayOptions) error {
	switch o.format {
	case "json", "text", "dot":
	default:
		return usageError(fmt.Errorf("unknown --format %q", o.format), "use --format json, text or dot")
	}
	if o.rank && len(o.remove) > 0 {
		return usageError(fmt.Errorf("--rank and --remove exclude each other"), "--rank removes each action in turn; drop --remove")
	}
	if o.rank && o.sealFile != "" {
		return usageError(fmt.Errorf("--seal applies to one counterfactual, not to --rank"), "drop --seal, or replay one action with --remove IRI --seal FILE")
	}
	if o.rank && o.format == "dot" {
		return usageError(fmt.Errorf("--rank has no dot picture"), "use --format json or text with --rank")
	}
	if !o.rank && len(o.remove) == 0 && o.whatIfPolicy == "" {
		return usageError(fmt.Errorf("nothing to remove"), "name a node with --remove IRI (or an event id such as e3), or rank every action with --rank")
	}
	if (o.graphFile == "") == (len(o.events) == 0) {
		return usageError(fmt.Errorf("give exactly one of --graph and --events"), "replay a graph file (--graph FILE) or the logs of a run (--events FILE, repeated)")
	}
	if o.top < 0 {
		return usageError(fmt.Errorf("--top %d is negative", o.top), "use --top N with N >= 0")
	}
	o.output.Reads(append([]string{o.graphFile, o.sealFile, o.whatIfPolicy, o.keys.Input(a)}, o.events...)...)
	if err := o.output.Check(a); err != nil {
		return err
	}
	eng, err := replayEngine(a, o)
	if eng == nil || err != nil {
		return err
	}
	var buf bytes.Buffer
	if o.rank {
		r := eng.Rank(o.top)
		if o.format == "text" {
			err = r.WriteText(&buf)
		} else {
			err = replay.WriteJSON(&buf, r)
		}
	} else {
		if o.sealFile != "" && o.judge == nil {
			j, jerr := newVerifyJudge(a, o)
			if jerr != nil {
				return jerr
			}
			o.judge = j
		}
		r, cerr := eng.Counterfactual(replay.Options{Remove: o.remove, Judge: o.judge, Sources: o.sources})
		if cerr != nil {
			return cerr
		}
		switch o.format {
		case "text":
			err = r.WriteText(&buf)
		case "dot":
			err = eng.WriteDOT(&buf, r)
		default:
			err = replay.WriteJSON(&buf, r)
		}
	}
	if err != nil {
		return err
	}
	// a device or pipe (/dev/null, /dev/stdout) is written in place
	return o.output.Write(a, buf.Bytes())
}

// replayEngine reads the graph or the run into a replay engine. A graph
// file replayed without a judge given by another verb, verdict sources, a
// what-if policy or a DOT picture is read straight into replay's index
// (replay.NewEngineJSONLD), without holding the graph; with --seal the
// same read judges the observed run and its projection the
// counterfactual one (replayEngineJSONLD), the judge reading the file
// again only when that projection cannot. A nil engine and a nil error:
// the what-if policy has answered.
func replayEngine(a *app, o *replayOptions) (*replay.Engine, error) {
	if len(o.events) == 0 && o.whatIfPolicy == "" && o.judge == nil && len(o.sources) == 0 && o.format != "dot" {
		f, err := os.Open(o.graphFile)
		if err != nil {
			return nil, exitcode.Input("read graph", err, "check the path given to --graph; make the graph with 'witness graph --events FILE --out FILE'")
		}
		defer f.Close()
		if os.Getenv("GOMEMLIMIT") == "" {
			// the live heap is the engine: collect before the heap doubles it
			debug.SetMemoryLimit(replay.MemoryLimit)
		}
		eng, err := replayEngineJSONLD(a, o, f)
		switch {
		case err == nil:
			return eng, nil
		case exitcode.Of(err) != exitcode.Tampered || !strings.HasPrefix(err.Error(), "index graph:"):
			return nil, err
		}
		o.judge = nil
		// a repeated IRI the scan could not see (an unsorted document):
		// read the graph whole, which names the element
	}
	var g *graph.Graph
	var err error
	if len(o.events) > 0 {
		g, err = replayRunGraph(o)
	} else {
		g, err = replayReadGraph(o.graphFile)
	}
	if err != nil {
		return nil, err
	}
	if o.whatIfPolicy != "" {
		if done, err := applyWhatIfPolicy(a, o, g); done || err != nil {
			return nil, err
		}
	}
	eng, err := replay.NewEngine(g)
	if err != nil {
		return nil, fmt.Errorf("replay %s: %w", o.graphFile, err)
	}
	return eng, nil
}

// replayEngineJSONLD reads the graph document f straight into replay's
// index (replay.EngineBuilder, as replay.NewEngineJSONLD). With --seal the
// same scan feeds verify's check of the document (verify.GraphScan): the
// judge (o.judge) then holds the observed run's judgement and the scan's
// projection, from which it judges the counterfactual too
// (GraphScan.CheckWithout), whose relation nodes the engine finds from
// the referrers its builder kept; it reads the file again only when the
// projection cannot say it. An error of the seal comes after the graph's,
// as on the in-memory path.
func replayEngineJSONLD(a *app, o *replayOptions, f *os.File) (*replay.Engine, error) {
	name := filepath.Base(o.graphFile)
	var j *verifyJudge
	var jerr error
	var gs *verify.GraphScan
	if o.sealFile != "" {
		j, jerr = newVerifyJudge(a, o)
		if jerr == nil && j.sealOnly == nil {
			// a judgement is verdict and findings: no digest; the
			// projection is kept for the counterfactual's judgement
			gs = verify.NewGraphScan(j.plan, verify.GraphScanOptions{NoDigest: true, Without: true})
		}
	}
	// with a seal, the builder keeps who refers to each relation node:
	// the counterfactual check then needs no read of the file to find
	// the relation nodes it drops
	b := replay.NewEngineBuilderWith(replay.EngineBuilderOptions{Referrers: o.sealFile != ""})
	err := graph.ScanJSONLDView(f, name, func(v *graph.NodeView) error {
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
		return nil, err
	}
	eng, err := b.Finish()
	if err != nil {
		if gs != nil {
			gs.Discard()
		}
		return nil, err
	}
	if jerr != nil {
		return nil, jerr
	}
	if gs != nil {
		r := j.report()
		err := gs.Check(r, j.plan, j.name, func() (io.Reader, func(), error) {
			g, err := j.open()
			if err != nil {
				return nil, nil, err
			}
			return g, func() { g.Close() }, nil
		})
		if err != nil {
			return nil, err
		}
		r.Finish()
		j.observed = judgementOf(r)
		j.scan = gs
	}
	if j != nil {
		o.judge = j
	}
	return eng, nil
}

// replayRunGraph joins the logs of a run (--events) and resolves the
// LOGNAME:eN forms of --remove to node IRIs.
func replayRunGraph(o *replayOptions) (*graph.Graph, error) {
	logs, err := readRunLogs(o.events)
	if err != nil {
		return nil, err
	}
	run, err := graph.BuildRun(logs, graph.Options{})
	if err != nil {
		return nil, err
	}
	if len(run.Logs) > 1 {
		for i, r := range o.remove {
			iri, err := why.Resolve(run.Graph, r, run.Logs)
			if err != nil {
				return nil, err
			}
			o.remove[i] = iri
		}
	}
	return run.Graph, nil
}

// replayReadGraph reads a witness JSON-LD graph.
func replayReadGraph(path string) (*graph.Graph, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, exitcode.Input("read graph", err, "check the path given to --graph; make the graph with 'witness graph --events FILE --out FILE'")
	}
	defer f.Close()
	return graph.ReadJSONLD(f, filepath.Base(path))
}

// verifyJudge judges graphs with package verify against one seal: the
// seal's own checks (signatures, quorum) once, then verify.CheckGraph on
// each graph, as 'witness verify --seal S --graph G' would.
type verifyJudge struct {
	name         string // graph name used in findings, the same for both runs
	plan         verify.Plan
	sealFindings []verify.Finding
	sealOnly     *verify.Report // set when the seal itself is invalid: nothing else can be judged
	// file is the graph file (--graph) the document readings judge; ""
	// for a run (--events)
	file string
	// observed is the judgement of the file itself when the engine's scan
	// made it (replayEngineJSONLD); nil: JudgeDocument reads the file
	observed *replay.Judgement
	// scan is the projection of the file the engine's scan made
	// (replayEngineJSONLD), from which JudgeDocument judges the first
	// counterfactual reading without reading the file
	// (verify.GraphScan.CheckWithout); nil once that is done, or when
	// there is none
	scan *verify.GraphScan
}

// report is a report holding the seal's findings, for one graph.
func (j *verifyJudge) report() *verify.Report {
	return &verify.Report{Findings: append([]verify.Finding(nil), j.sealFindings...)}
}

// newVerifyJudge loads the seal and checks its signatures with the keys
// 'witness verify' would use (keyring, ATW_WITNESS_KEY for 0.1.0 seals).
// It judges graphs (Judge) and, for --graph, the file itself
// (replay.DocumentJudge), which an engine read without its graph uses.
func newVerifyJudge(a *app, o *replayOptions) (*verifyJudge, error) {
	vo, err := o.keys.VerifyKeys(a, 0)
	if err != nil {
		return nil, err
	}
	rep, err := verify.Run(verify.Options{SealFile: o.sealFile, SealKeys: vo})
	if err != nil {
		return nil, err
	}
	name := filepath.Base(o.graphFile)
	if o.graphFile == "" {
		name = "run"
	}
	j := &verifyJudge{name: name, file: o.graphFile}
	for _, f := range rep.Findings {
		if f.Check == verify.CheckSeal {
			j.sealFindings = append(j.sealFindings, f)
		}
		if f.Code == "seal-invalid" {
			j.sealOnly = rep
		}
	}
	if j.sealOnly != nil {
		return j, nil
	}
	s, err := seal.Load(o.sealFile)
	if err != nil {
		return nil, err
	}
	j.plan = verify.PlanFromSeal(s)
	return j, nil
}

func (j *verifyJudge) Judge(g *graph.Graph) (*replay.Judgement, error) {
	r := j.sealOnly
	if r == nil {
		r = j.report()
		var buf bytes.Buffer
		if err := g.WriteJSONLD(&buf); err != nil {
			return nil, err
		}
		if err := verify.CheckGraph(r, j.plan, j.name, &buf); err != nil {
			return nil, err
		}
		r.Finish()
	}
	return judgementOf(r), nil
}

// JudgeDocument judges the graph file itself, as 'witness verify --seal S
// --graph G' does (scanned, not held), or, with drop, the file read
// without the nodes drop names (verify.CheckGraphWithout): the judgements
// Judge gives for the graph read from the file and for its counterfactual
// graph (replay.DocumentJudge). The first reading with drop is judged
// from the projection of the engine's scan when it can say it, and the
// projection then let go; otherwise the file is read.
func (j *verifyJudge) JudgeDocument(drop func(iri []byte) bool) (*replay.Judgement, error) {
	if drop == nil && j.observed != nil {
		return j.observed, nil
	}
	if gs := j.scan; drop != nil && gs != nil && j.sealOnly == nil {
		j.scan = nil // the GC may take the projection once judged
		r := j.report()
		if gs.CheckWithout(r, j.plan, j.name, drop) {
			r.Finish()
			return judgementOf(r), nil
		}
	}
	r := j.sealOnly
	if r == nil {
		f, err := j.open()
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = j.report()
		if err := verify.CheckGraphWithout(r, j.plan, j.name, f, drop); err != nil {
			return nil, err
		}
		r.Finish()
	}
	return judgementOf(r), nil
}

// ScanDocument calls visit with each node of the graph file
// (replay.DocumentJudge).
func (j *verifyJudge) ScanDocument(visit func(v *graph.NodeView) error) error {
	f, err := j.open()
	if err != nil {
		return err
	}
	defer f.Close()
	return graph.ScanJSONLDView(f, j.name, visit)
}

// open opens the graph file of the document readings.
func (j *verifyJudge) open() (*os.File, error) {
	if j.file == "" {
		return nil, fmt.Errorf("replay: no graph file to judge")
	}
	f, err := os.Open(j.file)
	if err != nil {
		return nil, exitcode.Input("read graph", err, "check the path given to --graph")
	}
	return f, nil
}

// judgementOf is replay's form of verify's report.
func judgementOf(r *verify.Report) *replay.Judgement {
	out := &replay.Judgement{Verdict: string(r.Verdict)}
	for _, f := range r.Findings {
		out.Findings = append(out.Findings, replay.Finding{
			Code: f.Code, Severity: string(f.Severity), Class: string(f.Class), EventID: f.EventID,
			Tool: f.Tool, Clause: f.SealClause, Message: f.Message,
		})
	}
	return out
}
