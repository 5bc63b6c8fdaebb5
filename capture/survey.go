package capture

import (
	"encoding/json"
	"fmt"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/mcp"
	"io"
)

// Surface is what a live MCP server offers, as `witness seal init` reads
// it: the tool definitions (hashed as a capture's session header has them),
// the resources and resource templates, and the prompts.
type Surface struct {
	Server    eventlog.ServerInfo // name, version and protocol version of the handshake
	Tools     []eventlog.ToolDef  // every tools/list page, in server order (ToolDefs)
	Resources []string            // uri of every resources/list entry, every page
	Templates []string            // uriTemplate of every resources/templates/list entry
	Prompts   []string            // name of every prompts/list entry
	// Notes say what could not be listed (a capability the server does
	// not declare, a method it refused), one sentence each.
	Notes []string
}

// Survey reaches the server of o as OpenLive does (it starts o.Command
// over stdio, or talks to o.URL over Streamable HTTP with o.Header),
// performs the capture client's handshake (initialize, initialized, every
// page of tools/list), then lists resources, resource templates and
// prompts when the server declares those capabilities, and ends the
// session (stops the server, or closes the HTTP session). The survey is
// the same on both transports. Nothing is kept: o.Cassette, o.Events and
// o.HTTPCassette are discarded unless set.
func Survey(o LiveOptions) (*Surface, error) {
	if o.Cassette == nil {
		o.Cassette = io.Discard
	}
	if o.Events == nil {
		o.Events = io.Discard
	}
	l, err := openLive(o)
	if err != nil {
		return nil, err
	}
	sf := &Surface{}
	if err := sf.fill(l); err != nil {
		return nil, l.closeWith(err)
	}
	if err := l.Close(); err != nil {
		sf.Notes = append(sf.Notes, "ending the session: "+err.Error())
	}
	return sf, nil
}

func (sf *Surface) fill(l *Live) error {
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
		Capabilities    struct {
			Resources json.RawMessage `json:"resources"`
			Prompts   json.RawMessage `json:"prompts"`
		} `json:"capabilities"`
		ServerInfo struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"serverInfo"`
	}
	_ = json.Unmarshal(l.initializeResult(), &init) // Initialize checked that it is an object
	sf.Server = eventlog.ServerInfo{Name: init.ServerInfo.Name, Version: init.ServerInfo.Version, ProtocolVersion: init.ProtocolVersion}
	defs, _, err := derive.ToolDefs(l.Tools)
	if err != nil {
		return exitcode.New(exitcode.Failure, err, "")
	}
	sf.Tools = defs
	if init.Capabilities.Resources == nil {
		sf.Notes = append(sf.Notes, "the server declares no resources capability: no resources listed")
	} else {
		if sf.Resources, err = sf.list(l, mcp.MethodResourcesList, "resources", "uri"); err != nil {
			return err
		}
		if sf.Templates, err = sf.list(l, mcp.MethodResourcesTemplatesList, "resourceTemplates", "uriTemplate"); err != nil {
			return err
		}
	}
	if init.Capabilities.Prompts == nil {
		sf.Notes = append(sf.Notes, "the server declares no prompts capability: no prompts listed")
	} else if sf.Prompts, err = sf.list(l, mcp.MethodPromptsList, "prompts", "name"); err != nil {
		return err
	}
	return nil
}

// list follows nextCursor through every page of a list method and returns
// the string member field of each entry of the result's member key. A
// JSON-RPC error answer is a note, not a failure: the list is then nil.
func (sf *Surface) list(l *Live, method, key, field string) ([]string, error) {
	out := []string{}
	cursor := ""
	seen := map[string]bool{}
	for page := 0; ; page++ {
		if page >= maxToolPages {
			return out, exitcode.New(exitcode.Failure, fmt.Errorf("%s: more than %d pages", method, maxToolPages), "")
		}
		params := json.RawMessage(`{}`)
		if cursor != "" {
			params, _ = json.Marshal(map[string]string{"cursor": cursor})
		}
		m, err := l.Request(method, params)
		if err != nil {
			return out, err
		}
		if m.Error != nil {
			sf.Notes = append(sf.Notes, fmt.Sprintf("%s: %v", method, serverError(method, m.Error)))
			return nil, nil
		}
		list, _ := mcp.Member(m.Result, key)
		mcp.ForElements(list, func(el json.RawMessage) {
			v, _ := mcp.Member(el, field)
			if s, ok := mcp.StringValue(v); ok && s != "" {
				out = append(out, s)
			}
		})
		next, _ := mcp.Member(m.Result, "nextCursor")
		c, ok := mcp.StringValue(next)
		if !ok || c == "" {
			return out, nil
		}
		if seen[c] {
			return out, exitcode.New(exitcode.Failure, fmt.Errorf("%s: server repeated cursor %q", method, c), "")
		}
		seen[c] = true
		cursor = c
	}
}

// initializeResult is the result of the session's initialize, whichever
// transport carried it.
func (l *Live) initializeResult() json.RawMessage {
	return l.Transport.Initialized()
}
