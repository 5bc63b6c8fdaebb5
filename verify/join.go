package verify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/seal"
	"github.com/agent-trace-witness/witness/why"
)

// checkRun judges the joined graph of a run (graph.BuildRun of several
// logs, or such a graph read back): the causal-join check (MCP tool calls
// no model output asked for, model tool calls never executed, ambiguous
// joins) and, when the plan marks untrusted sources, injection-provenance
// (docs/design/causal-join.md). A graph without join statements (one log)
// is judged by injection-provenance only.
//
// logs are the run's logs (graph.Run.Logs); nil reads them from the
// graph's session nodes.
func checkRun(r *Report, plan Plan, g *graph.Graph, logs []graph.RunLog) {
	if r.ran == nil {
		r.ran = map[string]bool{}
	}
	if logs == nil {
		logs = why.LogsOf(g)
	}
	joined := false
	for _, n := range g.Nodes {
		st := n.Value(graph.WJoin)
		if st == "" {
			continue
		}
		joined = true
		st1 := step(g, n, logs)
		switch {
		case n.HasType(graph.WModelToolCall) && st == graph.JoinNotExecuted:
			r.Findings = append(r.Findings, Finding{
				Check: checkJoin, Code: "model-call-not-executed", Severity: sevNotice, Class: ClassNotice,
				EventID: st1.Event, Tool: n.Value(graph.OtelToolName), File: fileOf(st1.Log, logs),
				Message: fmt.Sprintf("the model asked for %s (%s) and no MCP tools/call with that name and canonically equal arguments followed: the agent did not run it, or ran it on a channel that was not witnessed", n.Value(graph.OtelToolName), st1.Ref()),
			})
		case n.HasType(graph.WToolCall) && st == graph.JoinUnrequested:
			r.Findings = append(r.Findings, Finding{
				Check: checkJoin, Code: "unrequested-tool-call", Severity: SevError, Class: classViolation,
				EventID: st1.Event, Tool: n.Value(graph.OtelToolName), File: fileOf(st1.Log, logs),
				Message: fmt.Sprintf("MCP tools/call %s (%s) was asked for by no model output: the agent acted on its own, or a model channel was not witnessed", n.Value(graph.OtelToolName), st1.Ref()),
			})
		case st == graph.JoinAmbiguous:
			var cands []string
			for _, c := range n.Refs(graph.WJoinCandidate) {
				if cn := g.Node(c); cn != nil {
					cands = append(cands, step(g, cn, logs).Ref())
				}
			}
			r.Findings = append(r.Findings, Finding{
				Check: checkJoin, Code: "ambiguous-join", Severity: sevNotice, Class: ClassNotice,
				EventID: st1.Event, Tool: n.Value(graph.OtelToolName), File: fileOf(st1.Log, logs),
				Message: fmt.Sprintf("%s %s (%s) matches several candidates by content: %s; none is guessed", st1.Kind, n.Value(graph.OtelToolName), st1.Ref(), strings.Join(cands, ", ")),
			})
		}
	}
	if joined {
		r.ran[checkJoin] = true
		failedJoins(r, g, logs)
	}
	if plan.Untrusted != nil {
		r.ran[CheckInjection] = true
		checkInjection(r, plan, g, logs)
	}
}

func step(g *graph.Graph, n *graph.Node, logs []graph.RunLog) why.Step {
	c, err := why.Explain(g, n.ID, why.Options{Logs: logs, MaxSteps: 1})
	if err != nil || len(c.Chain) == 0 {
		return why.Step{IRI: n.ID, Event: n.Value(graph.WEventID)}
	}
	return c.Chain[0]
}

// fileOf is the path of the log named label.
func fileOf(label string, logs []graph.RunLog) string {
	for _, l := range logs {
		if l.Label == label {
			return l.Name
		}
	}
	return ""
}

// untrustedSources returns the graph's nodes of untrusted content, each with
// the index of the seal entry that marks it.
func untrustedSources(plan Plan, g *graph.Graph) map[string]int {
	out := map[string]int{}
	var srcs []seal.UntrustedSource
	for _, u := range plan.Untrusted {
		s, err := seal.ParseUntrusted(u)
		if err != nil {
			s = seal.UntrustedSource{} // a verified seal holds none; match nothing
		}
		srcs = append(srcs, s)
	}
	for _, n := range g.Nodes {
		switch {
		case n.HasType(graph.WResult):
			for _, c := range n.Refs(graph.ProvWasGeneratedBy) {
				call := g.Node(c)
				if call == nil || !call.HasType(graph.WToolCall) {
					continue
				}
				for i, s := range srcs {
					if s.Tool != "" && s.Tool == call.Value(graph.OtelToolName) && (s.Scope == "" || argsInScope(g, call, s.Scope)) {
						if _, ok := out[n.ID]; !ok {
							out[n.ID] = i
						}
					}
				}
			}
		case n.HasType(graph.WMCPAnswer):
			for _, q := range n.Refs(graph.ProvWasGeneratedBy) {
				req := g.Node(q)
				if req == nil {
					continue
				}
				uri := req.Value(graph.OtelMCPResourceURI)
				if uri == "" {
					continue
				}
				for i, s := range srcs {
					if s.Resource == nil {
						continue
					}
					if ok, _ := s.Resource.Match(uri); ok {
						if _, seen := out[n.ID]; !seen {
							out[n.ID] = i
						}
					}
				}
			}
		}
	}
	return out
}

// argsInScope reports whether a path argument of the call is within the
// seal scope (the matcher of tool scopes: read:/glob grants reads under it).
func argsInScope(g *graph.Graph, call *graph.Node, scope string) bool {
	sc, err := parseScope(scope)
	if err != nil {
		return false
	}
	for _, a := range call.Refs(graph.ProvUsed) {
		an := g.Node(a)
		if an == nil || !an.HasType(graph.WArguments) {
			continue
		}
		var args map[string]any
		dec := json.NewDecoder(bytes.NewReader([]byte(an.Value(graph.ProvValue))))
		dec.UseNumber()
		if dec.Decode(&args) != nil {
			continue
		}
		for _, pa := range PathArgs(args) {
			if clean, ok, _ := cleanPath(pa.Value); ok && sc.Grants(opRead, clean) {
				return true
			}
		}
	}
	return false
}

// causalPreds are the dependency relations injection-provenance follows
// downstream. Ambiguous joins are followed apart (taint): as if joined
// when every candidate is downstream of untrusted content, to a warning
// when the candidates differ in trust.
var causalPreds = []string{graph.ProvUsed, graph.ProvWasInformedBy, graph.ProvWasDerivedFrom, graph.ProvWasGeneratedBy, graph.ProvWasInfluencedBy}

// checkInjection reports every destructive or unsealed MCP tool call
// causally downstream of untrusted content, with its chain
// (injection-provenance), and every such call that is downstream only
// through an ambiguous join whose candidates differ in trust
// (ambiguous-injection-provenance).
func checkInjection(r *Report, plan Plan, g *graph.Graph, logs []graph.RunLog) {
	sources := untrustedSources(plan, g)
	if len(sources) == 0 {
		return
	}
	dependents := map[string][]string{}
	for _, n := range g.Nodes {
		for _, p := range causalPreds {
			for _, t := range n.Refs(p) {
				dependents[t] = append(dependents[t], n.ID)
			}
		}
	}
	tn := newTaint(g, sources, dependents)
	// an ambiguous join whose every candidate is untrusted is followed as
	// if joined
	for gid, cands := range tn.groups {
		if tn.state[gid] == trustUntrusted {
			for _, c := range cands {
				dependents[c] = append(dependents[c], gid)
			}
		}
	}
	sealed := map[string]bool{}
	for _, t := range plan.Tools {
		sealed[t.Name] = true
	}
	ids := make([]string, 0, len(sources))
	for id := range sources {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	reported := map[string]bool{}
	for _, src := range ids {
		seen := map[string]bool{src: true}
		queue := []string{src}
		for len(queue) > 0 {
			cur := queue[0]
			queue = queue[1:]
			deps := dependents[cur]
			sort.Strings(deps)
			for _, d := range deps {
				if seen[d] {
					continue
				}
				seen[d] = true
				queue = append(queue, d)
				n := g.Node(d)
				if n == nil || !n.HasType(graph.WToolCall) || reported[d] {
					continue
				}
				why1 := injectionReason(g, n, sealed)
				if why1 == "" {
					continue
				}
				reported[d] = true
				r.Findings = append(r.Findings, injectionFinding(g, n, src, plan.Untrusted[sources[src]], sources[src], why1, logs, tn))
			}
		}
	}
	for _, n := range g.Nodes {
		if tn.state[n.ID] != trustMaybe || !n.HasType(graph.WToolCall) {
			continue
		}
		if why1 := injectionReason(g, n, sealed); why1 != "" {
			r.Findings = append(r.Findings, ambiguousInjectionFinding(g, n, why1, sources, ids, logs, tn))
		}
	}
}

// injectionReason says why an MCP tool call downstream of untrusted
// content is reported (destructive, or unsealed), or "" when it is not.
func injectionReason(g *graph.Graph, n *graph.Node, sealed map[string]bool) string {
	switch {
	case destructive(g, n):
		return "destructive (destructiveHint)"
	case !sealed[n.Value(graph.OtelToolName)]:
		return "unsealed"
	}
	return ""
}

// destructive reports whether the call used a tool definition whose
// annotations say destructiveHint true (and not readOnlyHint true), the
// reading replay uses.
func destructive(g *graph.Graph, call *graph.Node) bool {
	for _, u := range call.Refs(graph.ProvUsed) {
		d := g.Node(u)
		if d == nil || !d.HasType(graph.WToolDefinition) {
			continue
		}
		var h struct {
			ReadOnly    *bool `json:"readOnlyHint"`
			Destructive *bool `json:"destructiveHint"`
		}
		if json.Unmarshal([]byte(d.Value(graph.WAnnotations)), &h) != nil {
			continue
		}
		if (h.ReadOnly == nil || !*h.ReadOnly) && h.Destructive != nil && *h.Destructive {
			return true
		}
	}
	return false
}

func injectionFinding(g *graph.Graph, call *graph.Node, src, entry string, idx int, what string, logs []graph.RunLog, tn *taint) Finding {
	head := step(g, call, logs)
	f := Finding{
		Check: CheckInjection, Code: "injection-provenance", Severity: SevError, Class: classViolation,
		EventID: head.Event, Tool: call.Value(graph.OtelToolName), File: fileOf(head.Log, logs),
		SealClause: fmt.Sprintf("untrusted[%d]", idx),
	}
	srcRef := src
	var joins []string
	if c, err := why.Explain(g, call.ID, why.Options{Logs: logs}); err == nil {
		if path, err := c.Path(src); err == nil {
			for _, s := range path {
				f.Chain = append(f.Chain, s.Ref()+" "+s.Kind+": "+s.Excerpt)
				if s.Via == "witness:possiblyInfluencedBy" && tn.state[s.From] == trustUntrusted && tn.groups[s.From] != nil {
					joins = append(joins, groupText(g, s.From, logs, tn))
				}
			}
			srcRef = path[len(path)-1].Ref()
		}
	}
	f.Message = fmt.Sprintf("%s %s (%s) is %s and causally downstream of untrusted content %s (%s)", head.Kind, f.Tool, head.Ref(), what, srcRef, entry)
	if len(joins) > 0 {
		f.Message += ", through an ambiguous join whose every candidate is untrusted: " + strings.Join(joins, "; ")
	}
	return f
}

// groupText names an ambiguous join and its candidates, each with its
// trust: "model:e3 joins one of fs:e2 (untrusted), fs:e4 (untrusted)".
func groupText(g *graph.Graph, gid string, logs []graph.RunLog, tn *taint) string {
	var cands []string
	for _, c := range tn.groups[gid] {
		ref := c
		if cn := g.Node(c); cn != nil {
			ref = step(g, cn, logs).Ref()
		}
		cands = append(cands, ref+" ("+tn.trustWord(c)+")")
	}
	ref := gid
	if n := g.Node(gid); n != nil {
		ref = step(g, n, logs).Ref()
	}
	return ref + " joins one of " + strings.Join(cands, ", ")
}

// ambiguousInjectionFinding reports a destructive or unsealed call that
// is downstream of untrusted content only through an ambiguous join whose
// candidates differ in trust: verify does not guess which candidate it
// was, and does not say verified either (a warning of class violation;
// docs/design/causal-join.md). The chain leads to the first untrusted
// source (IRI order) the call's chain reaches through the join.
func ambiguousInjectionFinding(g *graph.Graph, call *graph.Node, what string, sources map[string]int, ids []string, logs []graph.RunLog, tn *taint) Finding {
	head := step(g, call, logs)
	f := Finding{
		Check: CheckInjection, Code: "ambiguous-injection-provenance", Severity: SevWarning, Class: classViolation,
		EventID: head.Event, Tool: call.Value(graph.OtelToolName), File: fileOf(head.Log, logs),
	}
	if c, err := why.Explain(g, call.ID, why.Options{Logs: logs}); err == nil {
		for _, src := range ids {
			path, err := c.Path(src)
			if err != nil {
				continue
			}
			for _, s := range path {
				f.Chain = append(f.Chain, s.Ref()+" "+s.Kind+": "+s.Excerpt)
			}
			f.SealClause = fmt.Sprintf("untrusted[%d]", sources[src])
			break
		}
	}
	join := groupText(g, tn.origin[call.ID], logs, tn)
	f.Message = fmt.Sprintf("%s %s (%s) is %s and may be causally downstream of untrusted content: it depends on an ambiguous join whose candidates differ in trust (%s); verify does not guess which candidate it was", head.Kind, f.Tool, head.Ref(), what, join)
	return f
}

// runEvents verifies the further logs of a run (Options.RunEvents) each on
// its own, then joins them with the first into one graph and judges it
// (CheckRun). A log that does not map to a graph leaves the join checks
// not checkable; its own findings say why.
func runEvents(r *Report, plan Plan, o Options) error {
	files := append([]string{o.EventsFile}, o.RunEvents...)
	for _, name := range o.RunEvents {
		sub := &Report{}
		so := o
		so.EventsFile = name
		rd, closeFn, err := openEvents(so)
		if err != nil {
			return err
		}
		err = checkEvents(sub, plan, name, rd, eventOptions{EndVerifier: o.EndVerifier, AllowUnsigned: o.AllowUnsigned})
		closeFn()
		if err != nil {
			return err
		}
		r.Findings = append(r.Findings, sub.Findings...)
		// a check is not checkable for the run only when it was for
		// every log (the system prompt is on the model channel only)
		r.notCheckable = intersect(r.notCheckable, sub.notCheckable)
		r.unrun = intersect(r.unrun, sub.unrun)
		r.Evidence.Lines += sub.Evidence.Lines
		r.Evidence.Events += sub.Evidence.Events
	}
	if len(files) > 1 {
		r.Evidence.Logs = files
	}
	var logs []graph.LogInput
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			return exitcode.Input("read events", err, "check the paths given to --events")
		}
		logs = append(logs, graph.LogInput{Name: name, Data: data})
	}
	run, err := graph.BuildRun(logs, graph.Options{Seal: &eventlog.SealRef{Digest: plan.Ref, WitnessID: plan.WitnessID}})
	if err != nil {
		if exitcode.Of(err) == exitcode.Usage {
			return err
		}
		if r.ran == nil {
			r.ran = map[string]bool{}
		}
		r.ran[checkJoin] = true
		mergeNotCheckable(r, map[string]string{checkJoin: "the logs do not map to one graph: " + err.Error()})
		return nil
	}
	checkRun(r, plan, run.Graph, run.Logs)
	if len(files) > 1 {
		r.Findings = runUnused(r.Findings, len(files))
	}
	return nil
}

// intersect keeps the entries of a whose key b has too.
func intersect(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		if _, ok := b[k]; ok {
			out[k] = v
		}
	}
	return out
}

// runUnused keeps a sealed-tool-unused finding only when every log of the
// run reported it (a tool one server used is used by the run), once.
func runUnused(fs []Finding, logs int) []Finding {
	count := map[string]int{}
	for _, f := range fs {
		if f.Code == "sealed-tool-unused" {
			count[f.SealClause]++
		}
	}
	out := fs[:0:0]
	kept := map[string]bool{}
	for _, f := range fs {
		if f.Code == "sealed-tool-unused" {
			if count[f.SealClause] < logs || kept[f.SealClause] {
				continue
			}
			kept[f.SealClause] = true
		}
		out = append(out, f)
	}
	return out
}

// failedJoins judges the MCP tools/calls of a joined run that follow from
// a failed model answer (issue 31 item 4): a call linked to a model tool
// call of an answer whose status is error, partial or ambiguous
// (witness:modelStatus), or ambiguous between candidates one of which is
// such a call. The host ran what the SDKs give no tool call from, so what
// it acted on cannot be told from the evidence: incomplete, as the
// single-log finding of the same code (a later tool result).
func failedJoins(r *Report, g *graph.Graph, logs []graph.RunLog) {
	for _, n := range g.Nodes {
		if !n.HasType(graph.WToolCall) {
			continue
		}
		linked := n.Value(graph.WJoin) == graph.JoinRequested
		refs := n.Refs(graph.ProvUsed)
		if !linked {
			refs = n.Refs(graph.WJoinCandidate)
		}
		for _, ref := range refs {
			mc := g.Node(ref)
			if mc == nil || !mc.HasType(graph.WModelToolCall) || mc.Value(graph.WModelStatus) == "" {
				continue
			}
			st, from := step(g, n, logs), step(g, mc, logs)
			how := "follows from"
			if !linked {
				how = "may follow from (an ambiguous join: one of its candidates is)"
			}
			r.Findings = append(r.Findings, Finding{
				Check: checkJoin, Code: "failed-answer-acted-on", Severity: SevError, Class: classIncomplete,
				EventID: st.Event, Tool: n.Value(graph.OtelToolName), File: fileOf(st.Log, logs),
				Message: fmt.Sprintf("MCP tools/call %s (%s) %s the tool call %s of a model answer whose status is %s: the SDKs reject such an answer as a whole, so whether what the host ran is what the model meant cannot be told from the evidence",
					n.Value(graph.OtelToolName), st.Ref(), how, from.Ref(), mc.Value(graph.WModelStatus)),
			})
		}
	}
}
