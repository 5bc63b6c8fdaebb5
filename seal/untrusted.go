package seal

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agent-trace-witness/witness/internal/jsontree"
)

// UntrustedSource is one entry of a seal's "untrusted" list: a source
// whose output is external content (a fetch, a file under some path, a web
// search), which verify follows downstream (injection-provenance,
// docs/formats/seal.md).
type UntrustedSource struct {
	Raw string
	// Tool is the tool whose results are untrusted ("tool:NAME" and
	// "tool:NAME:SCOPE").
	Tool string
	// Scope, when set, limits them to calls whose arguments the seal scope
	// matches (the matcher of tool scopes, e.g. "read:/work/inbox/**").
	Scope string
	// Resource is the URI pattern of untrusted resources ("resource:...").
	Resource *ResourcePattern
}

// ParseUntrusted parses an "untrusted" entry: tool:NAME, tool:NAME:SCOPE or
// resource:URI-PATTERN.
func ParseUntrusted(s string) (UntrustedSource, error) {
	kind, rest, ok := strings.Cut(s, ":")
	if !ok || rest == "" {
		return UntrustedSource{}, errors.New("want tool:NAME, tool:NAME:SCOPE or resource:URI-PATTERN")
	}
	switch kind {
	case "tool":
		name, scope, hasScope := strings.Cut(rest, ":")
		if name == "" {
			return UntrustedSource{}, errors.New("tool: the tool name is empty")
		}
		if hasScope && scope == "" {
			return UntrustedSource{}, errors.New("tool:NAME:SCOPE: the scope is empty")
		}
		return UntrustedSource{Raw: s, Tool: name, Scope: scope}, nil
	case "resource":
		p, err := ParseResourcePattern(rest)
		if err != nil {
			return UntrustedSource{}, fmt.Errorf("resource: %w", err)
		}
		return UntrustedSource{Raw: s, Resource: &p}, nil
	}
	return UntrustedSource{}, fmt.Errorf("unknown source kind %q: want tool:NAME, tool:NAME:SCOPE or resource:URI-PATTERN", kind)
}

// readUntrusted reads the optional "untrusted" list of a spec or seal.
func readUntrusted(r *jsontree.ObjectReader, perr *error, name string) []string {
	return readList(r, perr, name, "untrusted", func(s string) string {
		if _, err := ParseUntrusted(s); err != nil {
			return err.Error()
		}
		return ""
	})
}
