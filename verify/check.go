package verify

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/mcp"
)

// checker runs the checks that look at events. It is fed the session header
// and then every event in log order, and keeps memory bounded by the number
// of sealed tools plus one small entry per tool call (its JSON-RPC id).
type checker struct {
	plan      Plan
	file      string // evidence file named in findings
	toolIndex map[string]int
	scopes    [][]scope // checkable path scopes per sealed tool
	used      []bool
	callRPC   map[string]json.RawMessage

	findings     []Finding
	perCode      map[string]int    // findings per code, listed or not
	notCheckable map[string]string // check id → reason

	pinned          int // sealed tools whose definition is pinned
	headerSeen      bool
	promptSeen      bool
	promptUnchecked int64             // system model inputs without content
	scopeUnchecked  map[int]*[3]int64 // tool index → {calls without payload, calls without path args, redacted path args}
	scopeChecked    int64             // path arguments and effects placed and judged against a scope

	// unrun: checks that judged nothing although there was something to
	// judge (every call unchecked); their notices already say why, so
	// the check's status is not-checkable without another notice.
	unrun map[string]string

	sf surface // resources, prompts, sampling, elicitation, tool list changes

	// answered: the event that answered each JSON-RPC id, by direction
	// and exact id token (the first maxAnswersKept), to name the answer
	// an unpaired one competes with
	answered map[string]string

	// failed: the tool calls of model answers that failed (status error,
	// partial or ambiguous), by call id (the first maxAnswersKept), to name
	// the answer a later tool result acts on (failedAnswers)
	failed map[string]failedCall
	// failedFull: failed outgrew maxAnswersKept (failedOverflow said so)
	failedFull bool
}

func newChecker(plan Plan, file string) *checker {
	c := &checker{
		plan:           plan,
		file:           file,
		toolIndex:      make(map[string]int, len(plan.Tools)),
		scopes:         make([][]scope, len(plan.Tools)),
		used:           make([]bool, len(plan.Tools)),
		callRPC:        map[string]json.RawMessage{},
		notCheckable:   map[string]string{},
		scopeUnchecked: map[int]*[3]int64{},
	}
	anyPathScope := false
	for i, t := range plan.Tools {
		if t.DefinitionSHA256 != "" {
			c.pinned++
		}
		if _, dup := c.toolIndex[t.Name]; !dup {
			c.toolIndex[t.Name] = i
		}
		for j, s := range t.Scopes {
			sc, err := parseScope(s)
			if err != nil {
				c.add(Finding{
					Check: checkScope, Code: "scope-not-checkable", Severity: sevNotice, Class: ClassNotice,
					Tool: t.Name, SealClause: fmt.Sprintf("tools[%d].scopes[%d]", i, j),
					Message: fmt.Sprintf("scope %q of tool %q cannot be checked: %v", s, t.Name, trimScopeErr(err, s)),
				})
				continue
			}
			c.scopes[i] = append(c.scopes[i], sc)
			anyPathScope = true
		}
	}
	if !anyPathScope {
		c.notCheckable[checkScope] = "the seal declares no path scopes (read:/path/** or write:/path/**)"
	}
	c.initSurface()
	return c
}

func trimScopeErr(err error, s string) string {
	return strings.TrimPrefix(err.Error(), fmt.Sprintf("scope %q: ", s))
}

// maxPerCode bounds the findings of one code kept in memory and listed; the
// rest are counted and reported in one notice, so a million-call log of
// violations stays bounded. The verdict is unaffected: the class of the
// dropped findings is that of the ones kept.
const maxPerCode = 1000

func (c *checker) add(f Finding) {
	if f.File == "" && f.Line > 0 {
		f.File = c.file
	}
	if c.perCode == nil {
		c.perCode = map[string]int{}
	}
	c.perCode[f.Code]++
	if c.perCode[f.Code] > maxPerCode {
		return
	}
	c.findings = append(c.findings, f)
}

// header handles the session_start line.
func (c *checker) header(e *eventlog.Event, line int64) {
	c.headerSeen = true
	h := e.Header
	if h == nil {
		return
	}
	// Binding to the seal.
	switch {
	case h.Seal == nil || h.Seal.Digest == "":
		c.notCheckable[checkBinding] = "the session header names no seal (captured without --seal)"
	case h.Seal.Digest != c.plan.Ref:
		code, what := "seal-mismatch", "the events were captured under another seal"
		if h.ImportedFrom != "" {
			code, what = "seal-ref-mismatch", fmt.Sprintf("the imported %s events carry the seal_ref of another seal", h.ImportedFrom)
		}
		c.add(Finding{
			Check: checkBinding, Code: code, Severity: SevError, Class: classViolation,
			EventID: e.ID, SealClause: "seal_ref", Line: line,
			Message: fmt.Sprintf("%s: the events name seal %s%s, this seal is %s (witness %q)",
				what, h.Seal.Digest, witnessOf(h.Seal.WitnessID), c.plan.Ref, c.plan.WitnessID),
		})
	}
	// Tool definitions pinned by the seal.
	switch {
	case c.pinned == 0:
		c.notCheckable[checkDefinitions] = "the seal pins no tool definitions"
	case h.Server == nil || len(h.Server.Tools) == 0:
		c.notCheckable[checkDefinitions] = "the capture recorded no server tool definitions"
	default:
		listed := make(map[string]string, len(h.Server.Tools))
		for _, d := range h.Server.Tools {
			if _, dup := listed[d.Name]; !dup {
				listed[d.Name] = d.SHA256
			}
		}
		for i, t := range c.plan.Tools {
			if t.DefinitionSHA256 == "" {
				continue
			}
			got, ok := listed[t.Name]
			clause := fmt.Sprintf("tools[%d].definition_sha256", i)
			switch {
			case !ok:
				c.add(Finding{
					Check: checkDefinitions, Code: "pinned-tool-not-listed", Severity: SevWarning, Class: ClassNotice,
					EventID: e.ID, Tool: t.Name, SealClause: clause, Line: line,
					Message: fmt.Sprintf("the seal pins the definition of tool %q but the server did not list it", t.Name),
				})
			case !strings.EqualFold(got, t.DefinitionSHA256):
				c.add(Finding{
					Check: checkDefinitions, Code: "tool-definition-drift", Severity: SevError, Class: classViolation,
					EventID: e.ID, Tool: t.Name, SealClause: clause, Line: line,
					Message: fmt.Sprintf("tool definition drift: the server's definition of %q has sha256 %s, the seal pins %s",
						t.Name, short(got), short(t.DefinitionSHA256)),
				})
			}
		}
	}
}

// event handles every line after the header.
func (c *checker) event(e *eventlog.Event, line int64) {
	if e.Legacy != nil && e.Legacy.SealRef != "" && e.Legacy.SealRef != c.plan.Ref {
		c.add(Finding{
			Check: checkBinding, Code: "seal-ref-mismatch", Severity: SevError, Class: classViolation,
			EventID: e.ID, SealClause: "seal_ref", Line: line,
			Message: fmt.Sprintf("the imported line carries seal_ref %s, this seal is %s", e.Legacy.SealRef, c.plan.Ref),
		})
	}
	switch e.Kind {
	case eventlog.KindToolCall:
		if i, ok := c.toolIndex[e.Tool]; ok && len(e.RPCID) > 0 && len(c.scopes[i]) > 0 {
			// kept only where an effect's finding may need it
			c.callRPC[e.ID] = e.RPCID
		}
		c.toolUse(e, line, e.RPCID)
		c.argScopes(e, line)
	case eventlog.KindToolResponse:
		if e.Call == "" && e.Tool != "" {
			// an orphan response (no call seen): the tool was used all the same
			c.toolUse(e, line, e.RPCID)
		}
	case eventlog.KindExternalEffect:
		rpc := c.callRPC[e.Call]
		if e.Call == "" && e.Tool != "" {
			// an effect with no call we saw: the tool was used all the same
			c.toolUse(e, line, rpc)
		}
		c.effectScope(e, line, rpc)
	case eventlog.KindAmbiguous:
		c.ambiguous(e, line)
	case eventlog.KindModelOutput:
		c.modelCalls(e, line)
	case eventlog.KindModelInput:
		// a sampling request's messages are the server's, not the
		// agent's system prompt
		if e.Role == "system" && e.Method != methodSampling {
			c.systemPrompt(e, line)
		}
	}
	c.surfaceEvent(e, line)
}

func (c *checker) toolUse(e *eventlog.Event, line int64, rpc json.RawMessage) {
	c.toolUseNote(e, line, rpc, "")
}

func (c *checker) toolUseNote(e *eventlog.Event, line int64, rpc json.RawMessage, note string) {
	i, ok := c.toolIndex[e.Tool]
	if ok {
		c.used[i] = true
		return
	}
	c.add(Finding{
		Check: checkUnsealed, Code: "unsealed-tool", Severity: SevError, Class: classViolation,
		EventID: e.ID, RPCID: rpc, Tool: e.Tool, SealClause: "tools", Line: line,
		Message: fmt.Sprintf("tool %q was used but is not listed in the seal (sealed: %s)%s", e.Tool, c.sealedNames(), note),
	})
}

// ambiguous checks every reading of a host's tools/call line that has
// more than one reading against the seal, as if the server had acted on
// it: each candidate tool name must be sealed, each candidate argument
// object within the tool's scopes. The line itself is reported by wire,
// with a seal or without one.
func (c *checker) ambiguous(e *eventlog.Event, line int64) {
	a, err := eventlog.ParseAmbiguousLine(e.Payload)
	if err != nil || a.Direction != "c2s" {
		return
	}
	c.ambiguousSurface(e, line, a.Readings)
	type cand struct {
		rpc  json.RawMessage
		decs []string
	}
	tools := map[string]cand{}
	var toolOrder []string
	var argSets []json.RawMessage
	seenArgs := map[string]bool{}
	for _, r := range a.Readings {
		if (r.Kind != "request" && r.Kind != "notification") || r.Method != mcp.MethodToolsCall {
			continue
		}
		tool := "(unnamed)"
		if r.Tool != nil && *r.Tool != "" {
			tool = *r.Tool
		}
		if _, ok := tools[tool]; !ok {
			toolOrder = append(toolOrder, tool)
			tools[tool] = cand{rpc: r.IDToken(), decs: r.Decoders}
		}
		if args := r.ArgumentsJSON(); args != nil && !seenArgs[string(args)] {
			seenArgs[string(args)] = true
			argSets = append(argSets, args)
		}
	}
	for _, tool := range toolOrder {
		cd := tools[tool]
		note := fmt.Sprintf(" (a reading of ambiguous line %s: %s)", e.ID, strings.Join(cd.decs, ", "))
		ev := &eventlog.Event{ID: e.ID, Tool: tool, RPCID: cd.rpc}
		c.toolUseNote(ev, line, cd.rpc, note)
		// every argument object any reading carries, with every tool
		// name any reading carries: a decoder may mix them
		for _, args := range argSets {
			ev.Payload = args
			c.argScopesNote(ev, line, fmt.Sprintf(" (a reading of ambiguous line %s)", e.ID))
		}
	}
}

func (c *checker) sealedNames() string {
	if len(c.plan.Tools) == 0 {
		return "none"
	}
	names := make([]string, len(c.plan.Tools))
	for i, t := range c.plan.Tools {
		names[i] = t.Name
	}
	return strings.Join(names, ", ")
}

func (c *checker) unchecked(i int) *[3]int64 {
	u := c.scopeUnchecked[i]
	if u == nil {
		u = &[3]int64{}
		c.scopeUnchecked[i] = u
	}
	return u
}

func (c *checker) argScopes(e *eventlog.Event, line int64) {
	c.argScopesNote(e, line, "")
}

// argScopesNote checks the path arguments of e.Payload against the scopes
// of e.Tool; note ends every finding's message (the reading it concerns).
func (c *checker) argScopesNote(e *eventlog.Event, line int64, note string) {
	i, ok := c.toolIndex[e.Tool]
	if !ok || len(c.scopes[i]) == 0 {
		return
	}
	if len(e.Payload) == 0 {
		c.unchecked(i)[0]++
		return
	}
	var args map[string]any
	dec := json.NewDecoder(bytes.NewReader(e.Payload))
	dec.UseNumber() // a number canonical JSON refuses is no path, and no reason to stop
	if err := dec.Decode(&args); err != nil || args == nil {
		c.unchecked(i)[1]++
		return
	}
	paths := PathArgs(args)
	if len(paths) == 0 {
		c.unchecked(i)[1]++
		return
	}
	for _, pa := range paths {
		if strings.Contains(pa.Value, eventlog.RedactTokenPrefix) {
			// a keyed hash replaced (part of) the path: its real value is
			// unknown, so it is neither in nor out of scope
			c.unchecked(i)[2]++
			continue
		}
		clean, ok, reason := cleanPath(pa.Value)
		c.scopeChecked++
		if ok && c.granted(i, opRead, clean) {
			continue
		}
		msg := ""
		if !ok {
			msg = fmt.Sprintf("argument %s=%q of tool %q cannot be placed inside the sealed scopes %s: %s",
				pa.Key, pa.Value, e.Tool, c.scopeList(i), reason)
		} else {
			msg = fmt.Sprintf("argument %s=%q of tool %q is outside the sealed scopes %s", pa.Key, pa.Value, e.Tool, c.scopeList(i))
			if clean != pa.Value {
				msg += fmt.Sprintf(" (it resolves to %q)", clean)
			}
		}
		msg += note
		c.add(Finding{
			Check: checkScope, Code: "argument-out-of-scope", Severity: SevError, Class: classViolation,
			EventID: e.ID, RPCID: e.RPCID, Tool: e.Tool, SealClause: fmt.Sprintf("tools[%d].scopes", i), Line: line,
			Message: msg,
		})
	}
}

// effectOp maps an external effect's operation to the scope operation it needs.
func effectOp(op string) (scopeOp, bool) {
	switch op {
	case "read":
		return opRead, true
	case "write", "overwrite", "delete", "create", "move", "append":
		return opWrite, true
	}
	return "", false
}

func (c *checker) effectScope(e *eventlog.Event, line int64, rpc json.RawMessage) {
	if e.Effect == nil || e.Effect.Target == "" {
		return
	}
	i, ok := c.toolIndex[e.Tool]
	if !ok || len(c.scopes[i]) == 0 {
		return
	}
	op, ok := effectOp(e.Effect.Op)
	if !ok {
		return
	}
	clean, placed, reason := cleanPath(e.Effect.Target)
	if !placed && strings.Contains(reason, "URI scheme") {
		return // a URL or recipient, not a path
	}
	c.scopeChecked++
	if placed && c.granted(i, op, clean) {
		return
	}
	msg := fmt.Sprintf("external effect %s %q of tool %q is outside the sealed scopes %s", e.Effect.Op, e.Effect.Target, e.Tool, c.scopeList(i))
	if !placed {
		msg += ": " + reason
	} else if op == opWrite && c.granted(i, opRead, clean) {
		msg += " (the seal grants read only)"
	}
	c.add(Finding{
		Check: checkScope, Code: "effect-out-of-scope", Severity: SevError, Class: classViolation,
		EventID: e.ID, RPCID: rpc, Tool: e.Tool, SealClause: fmt.Sprintf("tools[%d].scopes", i), Line: line,
		Message: msg,
	})
}

func (c *checker) granted(i int, op scopeOp, p string) bool {
	for _, s := range c.scopes[i] {
		if s.Grants(op, p) {
			return true
		}
	}
	return false
}

func (c *checker) scopeList(i int) string {
	raw := make([]string, len(c.scopes[i]))
	for j, s := range c.scopes[i] {
		raw[j] = s.Raw
	}
	return "[" + strings.Join(raw, " ") + "]"
}

func (c *checker) systemPrompt(e *eventlog.Event, line int64) {
	text, ok := promptText(e.Payload)
	if !ok {
		c.promptUnchecked++
		return
	}
	c.promptSeen = true
	sum := sha256.Sum256([]byte(text))
	got := hex.EncodeToString(sum[:])
	if strings.EqualFold(got, c.plan.SystemPromptSHA256) {
		return
	}
	c.add(Finding{
		Check: checkPrompt, Code: "system-prompt-drift", Severity: SevError, Class: classViolation,
		EventID: e.ID, SealClause: "system_prompt_sha256", Line: line,
		Message: fmt.Sprintf("the system prompt given to the model has sha256 %s, the seal has %s", short(got), short(c.plan.SystemPromptSHA256)),
	})
}

// promptText extracts the text of a model input's content: a JSON string;
// an object with a string "text" or "content"; or an array of content parts
// whose "text" strings are concatenated in order (parts of other types make
// the content not checkable).
func promptText(p json.RawMessage) (string, bool) {
	if len(p) == 0 {
		return "", false
	}
	var v any
	if err := json.Unmarshal(p, &v); err != nil {
		return "", false
	}
	return textOf(v, 0)
}

func textOf(v any, depth int) (string, bool) {
	if depth > 4 {
		return "", false
	}
	switch t := v.(type) {
	case string:
		return t, true
	case map[string]any:
		if s, ok := t["text"].(string); ok {
			return s, true
		}
		if c, ok := t["content"]; ok {
			return textOf(c, depth+1)
		}
	case []any:
		var b strings.Builder
		for _, part := range t {
			s, ok := textOf(part, depth+1)
			if !ok {
				return "", false
			}
			b.WriteString(s)
		}
		return b.String(), true
	}
	return "", false
}

// finish adds the findings that need the whole log: unused tools and the
// checks that could not run.
func (c *checker) finish() {
	for i, t := range c.plan.Tools {
		if c.used[i] {
			continue
		}
		if j := c.toolIndex[t.Name]; j != i {
			continue // a duplicate entry; reported through the first
		}
		c.add(Finding{
			Check: checkUnused, Code: "sealed-tool-unused", Severity: sevNotice, Class: ClassNotice,
			Tool: t.Name, SealClause: fmt.Sprintf("tools[%d]", i),
			Message: fmt.Sprintf("sealed tool %q was never used", t.Name),
		})
	}
	idx := make([]int, 0, len(c.scopeUnchecked))
	for i := range c.scopeUnchecked {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		u := c.scopeUnchecked[i]
		var parts []string
		if u[0] > 0 {
			parts = append(parts, fmt.Sprintf("%d without recorded arguments", u[0]))
		}
		if u[1] > 0 {
			parts = append(parts, fmt.Sprintf("%d without a path argument", u[1]))
		}
		if u[2] > 0 {
			parts = append(parts, fmt.Sprintf("%d redacted path argument(s)", u[2]))
		}
		c.add(Finding{
			Check: checkScope, Code: "scope-not-checkable", Severity: sevNotice, Class: ClassNotice, File: c.file,
			Tool: c.plan.Tools[i].Name, SealClause: fmt.Sprintf("tools[%d].scopes", i),
			Message: fmt.Sprintf("calls of tool %q could not be checked against its scopes: %s", c.plan.Tools[i].Name, strings.Join(parts, ", ")),
		})
	}
	if c.scopeChecked == 0 && len(idx) > 0 {
		if c.unrun == nil {
			c.unrun = map[string]string{}
		}
		c.unrun[checkScope] = "no call of a scoped tool carried a path argument that could be checked"
	}
	c.finishSurface()
	dropped := make([]string, 0)
	for code, n := range c.perCode {
		if n > maxPerCode {
			dropped = append(dropped, code)
		}
	}
	sort.Strings(dropped)
	for _, code := range dropped {
		c.findings = append(c.findings, Finding{
			Check: checkOfCode(code), Code: "findings-dropped", Severity: sevNotice, Class: ClassNotice, File: c.file,
			Message: fmt.Sprintf("%d more %s findings were not listed (the first %d are)", c.perCode[code]-maxPerCode, code, maxPerCode),
		})
	}
	if !c.promptSeen {
		if c.promptUnchecked > 0 {
			c.notCheckable[checkPrompt] = fmt.Sprintf("%d system model input(s) were captured without their text", c.promptUnchecked)
		} else {
			c.notCheckable[checkPrompt] = "no model input with role system was captured"
		}
	}
	if !c.headerSeen {
		if _, ok := c.notCheckable[checkBinding]; !ok {
			c.notCheckable[checkBinding] = "the evidence has no session header"
		}
		if _, ok := c.notCheckable[checkDefinitions]; !ok {
			c.notCheckable[checkDefinitions] = "the evidence has no session header"
		}
	}
}

func witnessOf(id string) string {
	if id == "" {
		return ""
	}
	return fmt.Sprintf(" (witness %q)", id)
}

// checkOfCode returns the check a finding code belongs to.
func checkOfCode(code string) string {
	switch code {
	case "unsealed-tool":
		return checkUnsealed
	case "argument-out-of-scope", "effect-out-of-scope", "scope-not-checkable":
		return checkScope
	case "system-prompt-drift":
		return checkPrompt
	case "seal-mismatch", "seal-ref-mismatch":
		return checkBinding
	case "sealed-tool-unused":
		return checkUnused
	case "ambiguous-wire-line":
		return checkWire
	case "resource-outside-seal", "subscribe-outside-seal":
		return checkResources
	case "prompt-outside-seal":
		return checkPrompts
	case "sampling-not-allowed":
		return checkSampling
	case "elicitation-not-allowed":
		return checkElicitation
	}
	return checkDefinitions
}

// short abbreviates a hex digest for messages.
func short(h string) string {
	if len(h) > 12 {
		return h[:12] + "…"
	}
	if h == "" {
		return "(none)"
	}
	return h
}
