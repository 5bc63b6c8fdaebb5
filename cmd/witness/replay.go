package main

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/replay"
	"github.com/agent-trace-witness/witness/seal"
)

// replayOptions are the flags of `witness replay`. Verdict sources other
// verbs' packages provide (the firewall's --what-if-policy) append to
// sources from their own flags.
// replayFormats are the values of replay --format, the first the default.
var replayFormats = []string{"json", "text", "dot"}

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
	f.StringVar(&o.format, "format", replayFormats[0], "output format: json, text or dot")
	completeChoices(c, "format", replayFormats...)
	f.BoolVar(&o.rank, "rank", false, "rank every action by the blast radius of removing it alone")
	f.IntVar(&o.top, "top", 0, "with --rank, list only the first N actions (0: all)")
	f.StringVar(&o.whatIfPolicy, "what-if-policy", "", "message-policy file: remove what it would have withheld or refused (enforcement) and add its verdicts")
	return c
}

// runReplay reads the graph, computes the counterfactual or the ranking and
// writes it. Nothing is written when anything fails.
func runReplay(a *app, o *replayOptions) error {
	if err := checkReplayFlags(o); err != nil {
		return err
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

// checkReplayFlags refuses the flag combinations replay cannot answer.
func checkReplayFlags(o *replayOptions) error {
	if !slices.Contains(replayFormats, o.format) {
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
	return nil
}

// replayEngine reads the graph or the run into a replay engine
// (replay.Load) and sets o.judge to the judge of its runs. A nil engine
// and a nil error: the what-if policy has answered.
func replayEngine(a *app, o *replayOptions) (*replay.Engine, error) {
	lo := replay.LoadOptions{GraphFile: o.graphFile, Remove: o.remove, SealFile: o.sealFile,
		Keys:  func() (seal.VerifyOptions, error) { return o.keys.VerifyKeys(a, 0) },
		Judge: o.judge, Whole: len(o.sources) > 0 || o.format == "dot", MemoryLimit: true, Progress: a.progress.Wrap(false)}
	if len(o.events) > 0 {
		lo.Logs = func() ([]graph.LogInput, error) { return readRunLogs(a, o.events) }
	}
	if o.whatIfPolicy != "" {
		lo.Prepare = func(g *graph.Graph) (bool, error) { return applyWhatIfPolicy(a, o, g) }
	}
	eng, j, err := replay.Load(lo)
	if err != nil || eng == nil {
		return nil, err
	}
	o.judge = j
	return eng, nil
}

// newVerifyJudge is the judge of o's seal (replay.SealJudge), with the
// keys 'witness verify' would use (keyring, ATW_WITNESS_KEY for 0.1.0
// seals).
func newVerifyJudge(a *app, o *replayOptions) (*replay.SealJudge, error) {
	vo, err := o.keys.VerifyKeys(a, 0)
	if err != nil {
		return nil, err
	}
	return replay.NewSealJudge(o.sealFile, vo, o.graphFile)
}
