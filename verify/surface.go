package verify

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/mcp"
	"github.com/agent-trace-witness/witness/seal"
)

// MCP methods the surface checks read (docs/design/mcp-surface.md).
const (
	methodResourcesRead      = mcp.MethodResourcesRead
	methodResourcesSubscribe = mcp.MethodResourcesSubscribe
	methodPromptsGet         = mcp.MethodPromptsGet
	methodSampling           = mcp.MethodSamplingCreateMessage
	methodElicitation        = mcp.MethodElicitationCreate
	methodToolsList          = mcp.MethodToolsList
	methodToolsListChanged   = mcp.NotificationToolsListChanged
)

// surface holds the state of the checks of the MCP surface beyond tools:
// resources, prompts, sampling, elicitation, and the re-run of the tool
// definition check after notifications/tools/list_changed. Memory: the
// sealed patterns, one entry per server request still unanswered, and the
// tool list being re-read.
type surface struct {
	patterns    []seal.ResourcePattern
	badPatterns []string // patterns that do not parse (a Plan not made by PlanFromSeal)
	prompts     map[string]bool

	// mcpSeen: the log records MCP requests other than tools/call, so
	// the absence of reads means none happened (a log written before
	// issue 11 records only tool calls).
	mcpSeen bool
	// counts of what the seal was silent about, for the not-checkable notice
	reads, gets, samplings, elicits int64
	// resources/read (or subscribe) and prompts/get whose uri or name is
	// not recorded or redacted: {no value, redacted}
	resUnchecked, promptUnchecked [2]int64

	// open server requests (sampling, elicitation) by event id, for the
	// notice on requests never answered
	openSampling, openElicit map[string]int64

	// the tool list re-read after notifications/tools/list_changed
	listChanged     *eventlog.Event // the latest change not yet followed by a whole list
	listChangedLine int64
	listReqs        map[string]bool   // tools/list requests sent since the change
	listDefs        map[string]string // name → definition sha256, pages so far
	listOrder       []string
	listProblem     string // why an answer since the change could not be used
}

func (c *checker) initSurface() {
	s := &c.sf
	s.openSampling, s.openElicit = map[string]int64{}, map[string]int64{}
	for i, p := range c.plan.Resources {
		rp, err := seal.ParseResourcePattern(p)
		if err != nil {
			s.badPatterns = append(s.badPatterns, fmt.Sprintf("resources[%d]: %v", i, err))
			continue
		}
		s.patterns = append(s.patterns, rp)
	}
	if c.plan.Prompts != nil {
		s.prompts = make(map[string]bool, len(c.plan.Prompts))
		for _, p := range c.plan.Prompts {
			s.prompts[p] = true
		}
	}
	if len(s.badPatterns) > 0 {
		c.add(Finding{
			Check: checkResources, Code: "not-checkable", Severity: sevNotice, Class: ClassNotice, SealClause: "resources",
			Message: "resource patterns that cannot be read are ignored (they allow nothing): " + strings.Join(s.badPatterns, "; "),
		})
	}
}

// surfaceEvent handles the events of the MCP surface (every event passes
// through; those it does not concern are ignored).
func (c *checker) surfaceEvent(e *eventlog.Event, line int64) {
	s := &c.sf
	switch e.Kind {
	case eventlog.KindMCPRequest:
		s.mcpSeen = true
		if e.Direction == eventlog.DirS2C {
			if e.Method == methodElicitation {
				s.elicits++
				s.openElicit[e.ID] = line
			}
			return
		}
		switch e.Method {
		case methodResourcesRead, methodResourcesSubscribe:
			s.reads++
			c.resourceRequest(e.ID, line, e.Method, e.RPCID, paramPtr(e.Payload, "uri"), "")
		case methodPromptsGet:
			s.gets++
			c.promptRequest(e.ID, line, e.RPCID, paramPtr(e.Payload, "name"), "")
		case methodToolsList:
			if s.listChanged != nil {
				if _, ok := paramString(e.Payload, "cursor"); !ok {
					// a first page: the list is read again from the start
					s.listDefs, s.listOrder = nil, nil
				}
				if s.listReqs == nil {
					s.listReqs = map[string]bool{}
				}
				s.listReqs[e.ID] = true
			}
		}
	case eventlog.KindMCPResponse:
		s.mcpSeen = true
		if e.Method == methodToolsList && s.listReqs[e.Call] {
			delete(s.listReqs, e.Call)
			c.toolsListPage(e, line)
		}
	case eventlog.KindUserInput:
		s.mcpSeen = true
		delete(s.openElicit, e.Call)
		if c.plan.Elicitation == nil || *c.plan.Elicitation || e.RPCError {
			return
		}
		action := "an answer"
		if a, ok := paramString(e.Payload, "action"); ok {
			action = fmt.Sprintf("action %q", a.value)
		}
		c.add(Finding{
			Check: checkElicitation, Code: "elicitation-not-allowed", Severity: SevError, Class: classViolation,
			EventID: e.ID, RPCID: e.RPCID, SealClause: "elicitation", Line: line,
			Message: fmt.Sprintf("the host answered the server's elicitation/create (event %s) with %s: the user was asked, and the seal does not allow elicitation", orNone(e.Call), action),
		})
	case eventlog.KindModelInput:
		if e.Method != methodSampling {
			return
		}
		s.mcpSeen = true
		s.samplings++
		s.openSampling[e.ID] = line
	case eventlog.KindModelOutput:
		if e.Method != methodSampling {
			return
		}
		s.mcpSeen = true
		delete(s.openSampling, e.Input)
		if c.plan.Sampling == nil || *c.plan.Sampling || e.RPCError {
			return
		}
		c.add(Finding{
			Check: checkSampling, Code: "sampling-not-allowed", Severity: SevError, Class: classViolation,
			EventID: e.ID, RPCID: e.RPCID, SealClause: "sampling", Line: line,
			Message: fmt.Sprintf("the host answered the server's sampling/createMessage (event %s) with a model output: the model was sampled for the server, and the seal does not allow sampling", orNone(e.Input)),
		})
	case eventlog.KindNotification:
		if e.Method == methodToolsListChanged && c.pinned > 0 {
			s.listChanged, s.listChangedLine = e, line
			s.listDefs, s.listOrder, s.listReqs, s.listProblem = nil, nil, nil, ""
		}
	}
}

func orNone(id string) string {
	if id == "" {
		return "(not paired)"
	}
	return id
}

// member is a string member found in a request's params.
type member struct {
	value string
	key   string // the name as written
}

// paramString returns the string member of payload named key, matched
// case-insensitively as a server decoding into a struct would (encoding/json
// reads "URI" as "uri"); an exact match wins. ok is false when there is no
// such string member.
func paramString(payload json.RawMessage, key string) (member, bool) {
	if len(payload) == 0 {
		return member{}, false
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(payload, &m); err != nil {
		return member{}, false
	}
	names := make([]string, 0, len(m))
	for k := range m {
		if strings.EqualFold(k, key) {
			names = append(names, k)
		}
	}
	sort.Slice(names, func(i, j int) bool { return names[i] == key || (names[j] != key && names[i] < names[j]) })
	for _, k := range names {
		var v string
		if json.Unmarshal(m[k], &v) == nil {
			return member{value: v, key: k}, true
		}
	}
	return member{}, false
}

// paramPtr is paramString's value, nil when absent.
func paramPtr(payload json.RawMessage, key string) *string {
	m, ok := paramString(payload, key)
	if !ok {
		return nil
	}
	return &m.value
}

// resourceRequest checks the URI of a resources/read or
// resources/subscribe (nil: none recorded) against the sealed patterns;
// note ends the message (the reading of an ambiguous line it concerns).
func (c *checker) resourceRequest(id string, line int64, method string, rpc json.RawMessage, uri *string, note string) {
	s := &c.sf
	if c.plan.Resources == nil {
		return
	}
	switch {
	case uri == nil:
		s.resUnchecked[0]++
		return
	case strings.Contains(*uri, eventlog.RedactTokenPrefix):
		s.resUnchecked[1]++
		return
	}
	n, err := seal.NormalizeURI(*uri)
	if err == nil {
		for _, p := range s.patterns {
			if p.MatchNormalized(n) {
				return
			}
		}
	}
	code, what := "resource-outside-seal", "read resource"
	if method == methodResourcesSubscribe {
		code, what = "subscribe-outside-seal", "subscribed to resource"
	}
	msg := ""
	if err != nil {
		msg = fmt.Sprintf("the agent %s %q, which cannot be placed inside the sealed resources %s: %v", what, *uri, c.patternList(), trimURIErr(err))
	} else {
		msg = fmt.Sprintf("the agent %s %q, outside the sealed resources %s", what, *uri, c.patternList())
		if n.String() != *uri {
			msg += fmt.Sprintf(" (it normalizes to %q)", n.String())
		}
	}
	c.add(Finding{
		Check: checkResources, Code: code, Severity: SevError, Class: classViolation,
		EventID: id, RPCID: rpc, SealClause: "resources", Line: line, Message: msg + note,
	})
}

func trimURIErr(err error) string {
	s := err.Error()
	if i := strings.Index(s, "cannot be placed: "); i >= 0 {
		return s[i+len("cannot be placed: "):]
	}
	return s
}

func (c *checker) patternList() string {
	if len(c.plan.Resources) == 0 {
		return "(none: the seal allows no resource)"
	}
	return "[" + strings.Join(c.plan.Resources, " ") + "]"
}

// promptRequest checks the name of a prompts/get (nil: none recorded)
// against the sealed prompts.
func (c *checker) promptRequest(id string, line int64, rpc json.RawMessage, name *string, note string) {
	s := &c.sf
	if c.plan.Prompts == nil {
		return
	}
	switch {
	case name == nil:
		s.promptUnchecked[0]++
		return
	case strings.Contains(*name, eventlog.RedactTokenPrefix):
		s.promptUnchecked[1]++
		return
	case s.prompts[*name]:
		return
	}
	sealed := "(none: the seal allows no prompt)"
	if len(c.plan.Prompts) > 0 {
		sealed = strings.Join(c.plan.Prompts, ", ")
	}
	c.add(Finding{
		Check: checkPrompts, Code: "prompt-outside-seal", Severity: SevError, Class: classViolation,
		EventID: id, RPCID: rpc, SealClause: "prompts", Line: line,
		Message: fmt.Sprintf("the agent got prompt %q, which the seal does not list (sealed: %s)%s", *name, sealed, note),
	})
}

// ambiguousSurface checks every reading of an ambiguous host line that is
// a resources/read, resources/subscribe or prompts/get against the seal,
// as if the server had acted on it.
func (c *checker) ambiguousSurface(e *eventlog.Event, line int64, readings []eventlog.AmbiguousReading) {
	seen := map[string]bool{}
	for _, r := range readings {
		if r.Kind != "request" && r.Kind != "notification" {
			continue
		}
		note := fmt.Sprintf(" (a reading of ambiguous line %s: %s)", e.ID, strings.Join(r.Decoders, ", "))
		switch r.Method {
		case methodResourcesRead, methodResourcesSubscribe:
			c.sf.reads++
			key := r.Method + "\x00" + derefOr(r.URI, "\x00none")
			if seen[key] {
				continue
			}
			seen[key] = true
			c.resourceRequest(e.ID, line, r.Method, r.IDToken(), r.URI, note)
		case methodPromptsGet:
			c.sf.gets++
			key := r.Method + "\x00" + derefOr(r.Prompt, "\x00none")
			if seen[key] {
				continue
			}
			seen[key] = true
			c.promptRequest(e.ID, line, r.IDToken(), r.Prompt, note)
		}
	}
}

func derefOr(p *string, def string) string {
	if p == nil {
		return def
	}
	return *p
}

// toolsListPage reads one answer to a tools/list sent after
// notifications/tools/list_changed; with the last page (no nextCursor), the
// pinned definitions are checked against the new list.
func (c *checker) toolsListPage(e *eventlog.Event, line int64) {
	s := &c.sf
	if e.RPCError || len(e.Payload) == 0 || e.Redacted {
		s.listProblem = fmt.Sprintf("the tools/list answer %s carries no usable list (an error, no payload or a redacted one)", e.ID)
		return
	}
	var res map[string]json.RawMessage
	var tools []json.RawMessage
	if json.Unmarshal(e.Payload, &res) != nil || json.Unmarshal(res["tools"], &tools) != nil {
		s.listProblem = fmt.Sprintf("the tools/list answer %s has no tools array", e.ID)
		return
	}
	if s.listDefs == nil {
		s.listDefs = map[string]string{}
	}
	for _, t := range tools {
		var def map[string]json.RawMessage
		var name string
		cj, err := canon.Transform(t)
		if err != nil || json.Unmarshal(t, &def) != nil || json.Unmarshal(def["name"], &name) != nil {
			s.listProblem = fmt.Sprintf("the tools/list answer %s holds a tool definition that cannot be read", e.ID)
			continue
		}
		sum := sha256.Sum256(cj)
		if _, dup := s.listDefs[name]; !dup {
			s.listDefs[name] = hex.EncodeToString(sum[:])
			s.listOrder = append(s.listOrder, name)
		}
	}
	var cursor string
	if json.Unmarshal(res["nextCursor"], &cursor) == nil && cursor != "" {
		return // more pages follow
	}
	changed := s.listChanged
	for i, t := range c.plan.Tools {
		if t.DefinitionSHA256 == "" {
			continue
		}
		got, ok := s.listDefs[t.Name]
		clause := fmt.Sprintf("tools[%d].definition_sha256", i)
		switch {
		case !ok:
			c.add(Finding{
				Check: checkDefinitions, Code: "pinned-tool-not-listed", Severity: SevWarning, Class: ClassNotice,
				EventID: e.ID, Tool: t.Name, SealClause: clause, Line: line,
				Message: fmt.Sprintf("the seal pins the definition of tool %q but the tool list the server gave after its change (event %s) does not hold it", t.Name, changed.ID),
			})
		case !strings.EqualFold(got, t.DefinitionSHA256):
			c.add(Finding{
				Check: checkDefinitions, Code: "tool-definition-drift", Severity: SevError, Class: classViolation,
				EventID: e.ID, Tool: t.Name, SealClause: clause, Line: line,
				Message: fmt.Sprintf("tool definition drift after the server's tool list change (event %s): the new definition of %q has sha256 %s, the seal pins %s",
					changed.ID, t.Name, short(got), short(t.DefinitionSHA256)),
			})
		}
	}
	// the check ran on a whole list
	if c.notCheckable[checkDefinitions] == "the capture recorded no server tool definitions" {
		delete(c.notCheckable, checkDefinitions)
	}
	s.listChanged, s.listDefs, s.listOrder, s.listReqs, s.listProblem = nil, nil, nil, nil, ""
}

// finishSurface adds what needs the whole log: a tool list change never
// followed by a whole list, server requests never answered, unchecked
// requests, and the checks the seal or the log does not allow.
func (c *checker) finishSurface() {
	s := &c.sf
	if ch := s.listChanged; ch != nil {
		msg := "the server announced that its tool list changed during the session, and no whole tools/list answer followed: the definitions after this point were not checked against the pins"
		if s.listProblem != "" {
			msg += " (" + s.listProblem + ")"
		} else if s.listDefs != nil {
			msg += " (the pages ended with a nextCursor)"
		}
		c.add(Finding{
			Check: checkDefinitions, Code: "tools-list-changed", Severity: SevWarning, Class: ClassNotice,
			EventID: ch.ID, Line: s.listChangedLine, Message: msg,
		})
	}
	unanswered := func(check, method string, open map[string]int64, allowed *bool) {
		if len(open) == 0 || allowed == nil || *allowed {
			return
		}
		ids := make([]string, 0, len(open))
		for id := range open {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return open[ids[i]] < open[ids[j]] })
		if len(ids) > 10 {
			ids = append(ids[:10], fmt.Sprintf("%d more", len(open)-10))
		}
		c.add(Finding{
			Check: check, Code: "not-checkable", Severity: sevNotice, Class: ClassNotice, File: c.file,
			Message: fmt.Sprintf("%d %s request(s) of the server have no answer in the log (%s): whether the host answered them is unknown", len(open), method, strings.Join(ids, ", ")),
		})
	}
	unanswered(checkSampling, methodSampling, s.openSampling, c.plan.Sampling)
	unanswered(checkElicitation, methodElicitation, s.openElicit, c.plan.Elicitation)
	unchecked := func(check, what string, u [2]int64) {
		var parts []string
		if u[0] > 0 {
			parts = append(parts, fmt.Sprintf("%d without a recorded %s", u[0], what))
		}
		if u[1] > 0 {
			parts = append(parts, fmt.Sprintf("%d with a redacted %s", u[1], what))
		}
		if len(parts) > 0 {
			c.add(Finding{
				Check: check, Code: "not-checkable", Severity: sevNotice, Class: ClassNotice, File: c.file,
				Message: fmt.Sprintf("requests that could not be checked against the seal: %s", strings.Join(parts, ", ")),
			})
		}
	}
	unchecked(checkResources, "uri", s.resUnchecked)
	unchecked(checkPrompts, "prompt name", s.promptUnchecked)

	silent := func(check, key, phrase string, said bool, n int64, what string) {
		switch {
		case !said:
			reason := fmt.Sprintf("the seal does not say %s (a 0.1.0 seal, or a spec without %q)", phrase, key)
			if n > 0 {
				reason += fmt.Sprintf("; %d %s not checked", n, what)
			}
			c.notCheckable[check] = reason
		case !s.mcpSeen:
			c.notCheckable[check] = "the evidence records no MCP request other than tools/call (a log written before the witness recorded every request, an imported or a reported log), so it cannot show " + what
		}
	}
	silent(checkResources, "resources", "which resources the agent may read", c.plan.Resources != nil, s.reads, "resources/read or resources/subscribe request(s)")
	silent(checkPrompts, "prompts", "which prompts the agent may get", c.plan.Prompts != nil, s.gets, "prompts/get request(s)")
	silent(checkSampling, "sampling", "whether the host may sample the model for the server", c.plan.Sampling != nil, s.samplings, "sampling/createMessage request(s)")
	silent(checkElicitation, "elicitation", "whether the host may ask the user for the server", c.plan.Elicitation != nil, s.elicits, "elicitation/create request(s)")
}
