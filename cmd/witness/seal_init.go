package main

import (
	"errors"
	"fmt"
	"github.com/agent-trace-witness/witness/capture"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/mcp"
	"github.com/agent-trace-witness/witness/seal"
	"github.com/spf13/cobra"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"
)

type sealInitOptions struct {
	Output       outputOptions // --out FILE, --force
	SystemPrompt string
	From         string
	Events       string
	WitnessID    string
	Surface      bool
	Protocol     string
	Timeout      time.Duration
	Env          []string
	URL          string
	Headers      []string // "Name: value", with --url
	Command      []string
}

func newSealInitCmd(a *app) *cobra.Command {
	var o sealInitOptions
	c := &cobra.Command{
		Use:   "init --out FILE --system-prompt FILE (--from DIR | --events FILE | --url URL [--header 'K: V'] | -- CMD [ARGS...])",
		Short: "Write an agent spec from a live MCP server or a capture, for the user to fill in scopes",
		Long: `init writes an agent spec (docs/formats/seal.md) to --out: the system
prompt read from --system-prompt (its exact bytes), and every tool the server
lists, with its definition pin (definition_sha256: the sha256 of the
canonical JSON of the definition as the server lists it, the value verify
compares), its annotations (readOnlyHint, destructiveHint, ...: a hint for
the scopes, never signed) and empty scopes. Edit the scopes, then sign the
spec with 'witness seal --spec FILE'.

The tools come from a live server, -- CMD [ARGS...] over stdio (the
server gets the environment capture gives it, plus --env) or --url URL
over Streamable HTTP (with --header lines, as 'witness capture --url'),
surveyed the same way on both: the capture client's handshake
(initialize, every page of tools/list), then resources/list,
resources/templates/list and prompts/list when the server declares them.
Or they come from an existing capture: --from DIR (its events.jsonl) or
--events FILE (the session header's tool definitions). Nothing of the
survey is kept on disk but the spec.

With --surface (live servers only) the spec also lists the resource URIs
and prompt names the server offers: verify then refuses any other. Without
it they are printed on stderr and left out of the spec (not checked).
Resource templates are never copied: write a pattern for each
(docs/formats/seal.md, Resource URI patterns).

An existing --out is replaced only with --force.`,
		Example: `  witness seal init --out agent.json --system-prompt prompt.txt -- node server.js
  witness seal init --out agent.json --system-prompt prompt.txt --url http://127.0.0.1:3001/mcp --header "Authorization: Bearer $TOKEN"
  witness seal init --out agent.json --system-prompt prompt.txt --from rec
  witness seal init --out agent.json --system-prompt prompt.txt --surface -- ./server --flag`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Command = args
			return runSealInit(a, o)
		},
	}
	c.Flags().SetInterspersed(false)
	f := c.Flags()
	o.Output.AddFlags(c, "where to write the agent spec", false)
	f.StringVar(&o.SystemPrompt, "system-prompt", "", "file holding the agent's exact system prompt (UTF-8; every byte counts)")
	f.StringVar(&o.From, "from", "", "capture folder: read the tool definitions of its events.jsonl")
	f.StringVar(&o.Events, "events", "", "event log: read the tool definitions of its session header")
	f.StringVar(&o.WitnessID, "witness-id", "", "witness_id to write into the spec (default: none, so seal decides)")
	f.BoolVar(&o.Surface, "surface", false, "also write the server's resource URIs and prompt names as the allowed lists (live servers)")
	f.StringVar(&o.Protocol, "protocol", mcp.DefaultProtocol, "MCP protocol version to pin in initialize: "+strings.Join(mcp.SupportedProtocols, ", "))
	f.DurationVar(&o.Timeout, "timeout", capture.DefaultTimeout, "per-request timeout for the live server")
	f.StringArrayVar(&o.Env, "env", nil, "pass NAME from the environment, or set NAME=VALUE, for the live server (repeatable)")
	f.StringVar(&o.URL, "url", "", "survey a live MCP server over Streamable HTTP at this URL instead of starting a command")
	f.StringArrayVar(&o.Headers, "header", nil, "with --url: send this 'Name: value' header with every request (repeatable)")
	completeChoices(c, "protocol", mcp.SupportedProtocols...)
	c.MarkFlagRequired("out")
	c.MarkFlagRequired("system-prompt")
	return c
}

// runSealInit writes the spec draft of `witness seal init`.
func runSealInit(a *app, o sealInitOptions) error {
	header, err := o.check()
	if err != nil {
		return err
	}
	prompt, err := readSystemPrompt(o.SystemPrompt)
	if err != nil {
		return err
	}
	events := o.Events
	if o.From != "" {
		events = filepath.Join(o.From, derive.EventsFile)
	}
	o.Output.Reads(o.SystemPrompt, events)
	if err := o.Output.Check(a); err != nil {
		return err
	}
	var tools []eventlog.ToolDef
	var sf *capture.Surface
	if events != "" {
		tools, err = headerTools(events, o.From != "")
	} else if sf, err = o.survey(a, header); err == nil {
		tools = sf.Tools
	}
	if err != nil {
		return err
	}
	d := o.draft(a, prompt, tools, sf)
	data, err := d.Marshal()
	if err != nil {
		return err
	}
	if err := o.Output.Write(a, data); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "witness: wrote %s: %d tools pinned, scopes empty\n", o.Output.Out, len(d.Tools))
	fmt.Fprintf(a.stdout, "witness: next: fill in each tool's scopes, then 'witness seal --spec %s --out seal.json'\n", o.Output.Out)
	return nil
}

// check checks the flag combinations of `witness seal init` (usage errors)
// and returns the --header lines of a --url server.
func (o sealInitOptions) check() (http.Header, error) {
	if o.URL != "" && len(o.Command) > 0 {
		return nil, usageError(fmt.Errorf("--url and a server command (%s) both given", o.Command[0]), "survey a remote server with --url, or start one with -- CMD")
	}
	sources := 0
	for _, given := range []bool{o.From != "", o.Events != "", o.URL != "", len(o.Command) > 0} {
		if given {
			sources++
		}
	}
	if sources != 1 {
		return nil, usageError(errors.New("give exactly one of --from DIR, --events FILE, --url URL and -- CMD [ARGS...]"),
			"for example: witness seal init --out agent.json --system-prompt prompt.txt -- node server.js")
	}
	live := o.URL != "" || len(o.Command) > 0
	if o.Surface && !live {
		return nil, usageError(errors.New("--surface needs a live server (--url URL or -- CMD [ARGS...]): a capture's header holds no resource or prompt lists"), "drop --surface, or name the server")
	}
	if len(o.Headers) > 0 && o.URL == "" {
		return nil, usageError(errors.New("--header is for a --url server"), "drop --header, or survey a remote server with --url")
	}
	if len(o.Env) > 0 && len(o.Command) == 0 {
		return nil, usageError(errors.New("--env is for a server command (-- CMD [ARGS...])"), "drop --env")
	}
	var header http.Header
	if o.URL != "" {
		if _, err := capture.ParseServerURL(o.URL); err != nil {
			return nil, err
		}
		var err error
		if header, err = capture.ParseHeaderLines(o.Headers); err != nil {
			return nil, err
		}
	}
	if o.Timeout <= 0 {
		return nil, usageError(errors.New("--timeout must be positive"), "for example --timeout 30s")
	}
	if !mcp.Supported(o.Protocol) {
		return nil, usageError(fmt.Errorf("--protocol %q is not supported", o.Protocol), "use one of "+strings.Join(mcp.SupportedProtocols, ", "))
	}
	return header, nil
}

// survey lists the tools and the surface of the live server (--url, or
// the command after --).
func (o sealInitOptions) survey(a *app, header http.Header) (*capture.Surface, error) {
	lo := capture.LiveOptions{Protocol: o.Protocol, Timeout: o.Timeout, Getenv: a.getenv,
		Warn: func(s string) { fmt.Fprintf(a.stderr, "witness: warning: %s\n", s) }}
	if o.URL != "" {
		lo.URL, lo.Header = o.URL, header
	} else {
		env, err := serverEnv(a, o.Env)
		if err != nil {
			return nil, err
		}
		lo.Command, lo.Args, lo.Env = o.Command[0], o.Command[1:], env
	}
	return capture.Survey(lo)
}

// draft is the spec draft of prompt and tools, with the surface sf of a
// live server (nil for a capture); its notes go to stderr.
func (o sealInitOptions) draft(a *app, prompt string, tools []eventlog.ToolDef, sf *capture.Surface) *seal.Draft {
	dts := make([]seal.DraftTool, 0, len(tools))
	for _, t := range tools {
		dts = append(dts, seal.DraftTool{Name: t.Name, DefinitionSHA256: t.SHA256, Annotations: t.Annotations})
	}
	d, notes := seal.NewDraft(prompt, dts)
	d.WitnessID = o.WitnessID
	if sf != nil {
		notes = append(notes, sf.Notes...)
		notes = append(notes, d.AddSurface(sf.Resources, sf.Templates, sf.Prompts, o.Surface)...)
	}
	for _, n := range notes {
		fmt.Fprintf(a.notes(), "witness: note: %s\n", n)
	}
	return d
}

// readSystemPrompt reads the prompt file: its exact bytes, non-empty UTF-8.
func readSystemPrompt(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", exitcode.Input("read system prompt", err, "check the path given to --system-prompt")
	}
	if len(b) == 0 {
		return "", usageError(fmt.Errorf("system prompt %s is empty", path), "the seal hashes the prompt's exact bytes: give the file the agent uses")
	}
	if !utf8.Valid(b) {
		return "", usageError(fmt.Errorf("system prompt %s is not valid UTF-8", path), "")
	}
	return string(b), nil
}

// headerTools reads the tool definitions of an event log's session
// header. fromDir says the path came from --from.
func headerTools(path string, fromDir bool) ([]eventlog.ToolDef, error) {
	flag := "--events"
	if fromDir {
		flag = "--from"
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, exitcode.Input("read event log", err, "check the path given to "+flag)
	}
	defer f.Close()
	ev, err := eventlog.NewReader(f, path).Next()
	if errors.Is(err, io.EOF) {
		return nil, usageError(fmt.Errorf("%s is empty", path), flag+" takes an event log written by 'witness capture' or 'witness proxy'")
	}
	if err != nil || ev.Kind != eventlog.KindSessionStart || ev.Header == nil {
		if err == nil {
			err = fmt.Errorf("%s:1: the first line is a %s event, not session_start", path, ev.Kind)
		}
		return nil, usageError(fmt.Errorf("not an event log: %w", err), flag+" takes an event log (events.jsonl) written by 'witness capture' or 'witness proxy'; a cassette is not one")
	}
	if ev.Header.Server == nil || len(ev.Header.Server.Tools) == 0 {
		return nil, usageError(fmt.Errorf("%s: the session header holds no tool definitions", path),
			"the capture saw no tools/list answer: capture the server with 'witness capture', or use -- CMD [ARGS...]")
	}
	return ev.Header.Server.Tools, nil
}
