package replay

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/seal"
	"github.com/agent-trace-witness/witness/verify"
)

// SealJudge judges graphs with package verify against one seal: the seal's
// own checks (signatures, quorum) once, then verify.CheckGraph on each
// graph, as 'witness verify --seal S --graph G' would. For a graph file it
// is a DocumentJudge too.
type SealJudge struct {
	name         string // graph name used in findings, the same for both runs
	plan         verify.Plan
	sealFindings []verify.Finding
	sealOnly     *verify.Report // set when the seal itself is invalid: nothing else can be judged
	// file is the graph file the document readings judge; "" for a run
	file string
	// observed is the judgement of the file itself when the engine's scan
	// made it (Load); nil: JudgeDocument reads the file
	observed *Judgement
	// scan is the projection of the file the engine's scan made (Load),
	// from which JudgeDocument judges the first counterfactual reading
	// without reading the file (verify.GraphScan.CheckWithout); nil once
	// that is done, or when there is none
	scan *verify.GraphScan
}

// report is a report holding the seal's findings, for one graph.
func (j *SealJudge) report() *verify.Report {
	return &verify.Report{Findings: append([]verify.Finding(nil), j.sealFindings...)}
}

// NewSealJudge loads the seal sealFile and checks its signatures with keys.
// It judges graphs (Judge) and, when graphFile is set, the file itself
// (DocumentJudge), which an engine read without its graph uses; "" is a
// run (the logs of --events), named "run" in findings.
func NewSealJudge(sealFile string, keys seal.VerifyOptions, graphFile string) (*SealJudge, error) {
	rep, err := verify.Run(verify.Options{SealFile: sealFile, SealKeys: keys})
	if err != nil {
		return nil, err
	}
	name := filepath.Base(graphFile)
	if graphFile == "" {
		name = "run"
	}
	j := &SealJudge{name: name, file: graphFile}
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
	s, err := seal.Load(sealFile)
	if err != nil {
		return nil, err
	}
	j.plan = verify.PlanFromSeal(s)
	return j, nil
}

// Judge judges g (Judge).
func (j *SealJudge) Judge(g *graph.Graph) (*Judgement, error) {
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
// graph (DocumentJudge). The first reading with drop is judged from the
// projection of the engine's scan when it can say it, and the projection
// then let go; otherwise the file is read.
func (j *SealJudge) JudgeDocument(drop func(iri []byte) bool) (*Judgement, error) {
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
// (DocumentJudge).
func (j *SealJudge) ScanDocument(visit func(v *graph.NodeView) error) error {
	f, err := j.open()
	if err != nil {
		return err
	}
	defer f.Close()
	return graph.ScanJSONLDView(f, j.name, visit)
}

// open opens the graph file of the document readings.
func (j *SealJudge) open() (*os.File, error) {
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
func judgementOf(r *verify.Report) *Judgement {
	out := &Judgement{Verdict: string(r.Verdict)}
	for _, f := range r.Findings {
		out.Findings = append(out.Findings, Finding{
			Code: f.Code, Severity: string(f.Severity), Class: string(f.Class), EventID: f.EventID,
			Tool: f.Tool, Clause: f.SealClause, Message: f.Message,
		})
	}
	return out
}

// Held says what the judge holds from the engine's scan (Load): the
// judgement of the observed run, and the projection the first
// counterfactual is judged from. Tests use it to see which path ran.
func (j *SealJudge) Held() (observed, projection bool) {
	return j.observed != nil, j.scan != nil
}

// DropProjection lets go of the scan's projection: the counterfactual is
// then judged by reading the file again.
func (j *SealJudge) DropProjection() { j.scan = nil }
