package seal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/internal/exitcode"
)

// DraftTool is one tool of a spec draft, as the server listed it.
type DraftTool struct {
	Name string
	// DefinitionSHA256 is the pin: the sha256 (lowercase hex) of the
	// canonical JSON of the definition exactly as the server listed it,
	// the value a capture's session header carries and verify compares.
	DefinitionSHA256 string
	// Annotations are the definition's MCP annotations (readOnlyHint,
	// destructiveHint, ...) as a JSON object, nil when it has none. They
	// help whoever writes the scopes; a seal never signs them.
	Annotations json.RawMessage
}

// Draft is an agent spec made from a server's surface by `witness seal
// init`: the tools with their definition pins and empty scopes, which the
// user then fills, the system prompt, and, when asked for, the resources
// and prompts the server offers.
type Draft struct {
	SystemPrompt string
	WitnessID    string // "" leaves witness_id out
	Tools        []DraftTool
	// Resources and Prompts are written when non-nil (an empty list is
	// written as [], which allows none); nil leaves the member out, so
	// verify does not check that part of the surface.
	Resources []string
	Prompts   []string
}

// NewDraft builds a draft from the tools a server listed, in server
// order. A tool without a name, or listed a second time, is left out;
// each is described in the returned notes.
func NewDraft(prompt string, tools []DraftTool) (*Draft, []string) {
	d := &Draft{SystemPrompt: prompt}
	var notes []string
	seen := map[string]bool{}
	for i, t := range tools {
		switch {
		case t.Name == "":
			notes = append(notes, fmt.Sprintf("tool %d has no name: left out", i+1))
		case seen[t.Name]:
			notes = append(notes, fmt.Sprintf("tool %q is listed twice: the first definition is pinned", t.Name))
		default:
			seen[t.Name] = true
			d.Tools = append(d.Tools, t)
		}
	}
	return d, notes
}

// specDraft is the spec file's layout, members in the order a reader
// edits them.
type specDraft struct {
	SystemPrompt string       `json:"system_prompt"`
	WitnessID    string       `json:"witness_id,omitempty"`
	Tools        []draftEntry `json:"tools"`
	Resources    *[]string    `json:"resources,omitempty"`
	Prompts      *[]string    `json:"prompts,omitempty"`
}

type draftEntry struct {
	Name             string          `json:"name"`
	Scopes           []string        `json:"scopes"`
	DefinitionSHA256 string          `json:"definition_sha256,omitempty"`
	Annotations      json.RawMessage `json:"annotations,omitempty"`
}

// Marshal writes the draft as an agent spec (docs/formats/seal.md):
// indented JSON with a final newline, the same bytes for the same draft.
// Every tool gets "scopes": [] for the user to fill. What ParseSpec would
// refuse (no tools, an empty prompt, a bad pin or resource pattern) is an
// error with exit code Usage: the result always loads with LoadSpec.
func (d *Draft) Marshal() ([]byte, error) {
	bad := func(err error, hint string) error { return exitcode.New(exitcode.Usage, err, hint) }
	if d.SystemPrompt == "" {
		return nil, bad(fmt.Errorf("spec draft: the system prompt is empty"), "pass --system-prompt FILE, a file holding the agent's exact system prompt")
	}
	if !utf8.ValidString(d.SystemPrompt) {
		return nil, bad(fmt.Errorf("spec draft: the system prompt is not valid UTF-8"), "")
	}
	if len(d.Tools) == 0 {
		return nil, bad(fmt.Errorf("spec draft: the server lists no tools, and a seal names at least one"), "check the server command, or write the spec by hand (docs/formats/seal.md)")
	}
	sd := specDraft{SystemPrompt: d.SystemPrompt, WitnessID: d.WitnessID}
	for _, t := range d.Tools {
		e := draftEntry{Name: t.Name, Scopes: []string{}, DefinitionSHA256: t.DefinitionSHA256}
		if len(t.Annotations) > 0 {
			c, err := canon.Transform(t.Annotations)
			if err != nil || c[0] != '{' {
				return nil, bad(fmt.Errorf("spec draft: tool %q: annotations are not a JSON object", t.Name), "")
			}
			e.Annotations = c
		}
		sd.Tools = append(sd.Tools, e)
	}
	if d.Resources != nil {
		r := append([]string{}, d.Resources...)
		sd.Resources = &r
	}
	if d.Prompts != nil {
		p := append([]string{}, d.Prompts...)
		sd.Prompts = &p
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(sd); err != nil {
		return nil, fmt.Errorf("spec draft: %w", err)
	}
	if _, err := ParseSpec(buf.Bytes(), "spec draft", nil); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// AddSurface takes what a server offers: resource URIs, resource
// templates and prompt names (nil when the server lists none of that
// kind). With fill, the resource URIs that are valid patterns and the
// prompt names become the draft's Resources and Prompts (then verify
// refuses any other); without, they are only described. The notes say
// what was left out and why: a URI that is not a valid pattern, every
// template (a pattern for it is the user's call).
func (d *Draft) AddSurface(resources, templates, prompts []string, fill bool) []string {
	var notes []string
	uris := []string{}
	for _, u := range resources {
		if _, err := ParseResourcePattern(u); err != nil {
			notes = append(notes, fmt.Sprintf("resource %q is not a valid pattern (%v): left out", u, err))
			continue
		}
		uris = appendNew(uris, u)
	}
	for _, t := range templates {
		notes = append(notes, fmt.Sprintf("resource template %q: write a pattern for it by hand if the agent may read it", t))
	}
	names := []string{}
	for _, p := range prompts {
		if p != "" {
			names = appendNew(names, p)
		}
	}
	if fill {
		if resources != nil {
			d.Resources = uris
		}
		if prompts != nil {
			d.Prompts = names
		}
		return notes
	}
	if len(uris) > 0 {
		notes = append(notes, fmt.Sprintf("the server lists %d resource(s) (%s): not in the spec, so resource reads are not checked (--surface writes them)", len(uris), strings.Join(uris, ", ")))
	}
	if len(names) > 0 {
		notes = append(notes, fmt.Sprintf("the server lists %d prompt(s) (%s): not in the spec, so prompts are not checked (--surface writes them)", len(names), strings.Join(names, ", ")))
	}
	return notes
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
