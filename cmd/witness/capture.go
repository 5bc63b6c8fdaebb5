package main

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agent-trace-witness/witness/capture"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/keyring"
	"github.com/agent-trace-witness/witness/mcp"
	"github.com/agent-trace-witness/witness/proxy"
	"github.com/agent-trace-witness/witness/seal"
)

type captureOptions struct {
	Output     outputOptions // --out DIR, --force
	Scenario   string
	Seal       string
	Keys       keyringOptions
	Effects    string
	Timeout    time.Duration
	Protocol   string
	MaxLine    int
	StdinGrace time.Duration
	TermGrace  time.Duration
	Env        []string
	Redact     redactOptions
	Command    []string
	// URL reaches the server over Streamable HTTP instead of running a
	// command; Headers are "Name: value" lines sent with every request.
	URL           string
	Headers       []string
	RedactHeaders []string
	RedactQuery   []string
	Anchor        anchorOptions // --log
	JSON          bool
}

// serverEnvDefault are the variables passed to the server unless --env
// adds more: enough to run node or a binary, nothing secret.
var serverEnvDefault = []string{"PATH", "HOME", "USER", "LANG", "LC_ALL", "TMPDIR", "TERM", "NODE_PATH", "SYSTEMROOT"}

// captureLong is the help text of `witness capture`.
const captureLong = `capture starts CMD as an MCP stdio server (no shell, its own process
group, an explicit environment), sends initialize with a pinned protocol
version, lists every page of tools/list, makes the scenario's tool calls and
shuts the server down (close stdin, SIGTERM, SIGKILL).

It writes DIR/cassette.jsonl, every byte on the wire as it was
(docs/formats/cassette.md), and DIR/events.jsonl, the tamper-evident event
log derived from it (docs/formats/events.md): tool_call and tool_response
events paired by the exact JSON-RPC id with the real arguments and results,
notifications, and external effects of tools annotated destructiveHint=true
or named in --effects. The session end is signed with the active key of
--keyring, else of the default keyring (docs/formats/keys.md: the same
for every command); without one, and
when ATW_WITNESS_TS freezes the time, capture warns at start on stderr and
in the session header's notes.

A scenario is a JSON list of {"tool": NAME, "arguments": {...}} (or
agent-trace-witness 0.1.0's {"kind": "tool_call", "tool": NAME, "payload":
{...}}), {"method": M, "params": {...}} for any other request
(resources/read, prompts/get, completion/complete, ping, ...), and
{"answer": M, "result": {...}} or {"answer": M, "error": {...}} for how the
host answers the server's requests of method M (sampling/createMessage,
elicitation/create, roots/list), which also declares the matching client
capability in initialize (docs/formats/scenario.md). Every exchange becomes
events. Without a scenario, capture performs the handshake and the tool
listing.

The server gets only PATH, HOME, USER, LANG, LC_ALL, TMPDIR, TERM, NODE_PATH
from the witness's environment, plus what --env names; the cassette records
the names, never the values.

With --url, capture runs the same session against a remote server over the
Streamable HTTP transport instead of starting one: each message is a POST
(answered with JSON, an SSE stream, or 202), Mcp-Session-Id and
MCP-Protocol-Version follow initialize, a GET stream carries the server's
own requests when it offers one, a stream that ends early is resumed with
Last-Event-ID, and DELETE ends the session. DIR/cassette.jsonl is then an
HTTP cassette (docs/formats/http-cassette.md, mode "client") and the events
are those of a stdio session. --header values of Authorization, Cookie,
API keys and every --redact-header reach the disk only as keyed hashes
(--redact-key or $WITNESS_REDACT_KEY; else a key made for the session), so
do the values of credential query parameters in --url (key, api-key,
access_token, ... and every --redact-query; docs/design/redaction.md).
Redirects are not followed; a 401 names the server's WWW-Authenticate.

What was recorded (server, counts, files) is printed on stdout; --json
prints it as one JSON object (docs/formats/cli-json.md).`

func newCaptureCmd(a *app) *cobra.Command {
	var o captureOptions
	c := &cobra.Command{
		Use:   "capture --out DIR [--scenario FILE] [--seal FILE] [--keyring PATH] [--timeout D] [--protocol V] (--url URL [--header 'K: V'] | -- CMD [ARGS...])",
		Short: "Run a scripted session against an MCP server (stdio or Streamable HTTP) and record it",
		Long:  captureLong,
		Example: `  witness capture --out rec -- node server.js stdio
  witness capture --out rec --scenario calls.json --seal seal.json --keyring keys.json -- ./server
  witness capture --out rec --protocol 2025-03-26 --timeout 5s --env API_BASE -- ./server
  witness capture --out rec --scenario calls.json --url http://127.0.0.1:3001/mcp --header "Authorization: Bearer $TOKEN"`,
		Args: func(cmd *cobra.Command, args []string) error {
			return o.checkServer(args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Command = args
			return runCapture(a, o)
		},
	}
	c.Flags().SetInterspersed(false)
	o.addFlags(c)
	c.MarkFlagRequired("out")
	c.AddCommand(newCaptureAppendCmd(a))
	return c
}

// checkServer checks that the server is given one way: --url, or a
// command after -- (args).
func (o *captureOptions) checkServer(args []string) error {
	if o.URL == "" && len(args) == 0 {
		return usageError(errors.New("give the server: --url URL, or a command after --"), "for example: witness capture --out rec -- node server.js")
	}
	if o.URL != "" && len(args) > 0 {
		return usageError(fmt.Errorf("--url and a server command (%s) both given", args[0]), "record a remote server with --url, or start one with -- CMD")
	}
	return nil
}

// addFlags registers the flags of `witness capture` on c.
func (o *captureOptions) addFlags(c *cobra.Command) {
	f := c.Flags()
	o.Output.AddFlags(c, "folder to write cassette.jsonl and events.jsonl into (must not hold a recording unless --force)", false)
	f.StringVar(&o.Scenario, "scenario", "", "JSON list of tool calls and requests to make, and answers to the server's requests")
	f.StringVar(&o.Seal, "seal", "", "seal whose digest goes into the session header")
	o.Keys.AddFlags(c, recordingKeys)
	f.StringVar(&o.Effects, "effects", "", "effects mapping: tool name -> effect op and target (docs/formats/effects.md)")
	f.DurationVar(&o.Timeout, "timeout", capture.DefaultTimeout, "per-request timeout; a request that times out is cancelled")
	f.StringVar(&o.Protocol, "protocol", mcp.DefaultProtocol, "MCP protocol version to pin in initialize: "+strings.Join(mcp.SupportedProtocols, ", "))
	f.IntVar(&o.MaxLine, "max-line", mcp.DefaultMaxLine, "largest server message in bytes")
	f.DurationVar(&o.StdinGrace, "stdin-grace", capture.DefaultStdinGrace, "shutdown: wait after closing the server's stdin before SIGTERM")
	f.DurationVar(&o.TermGrace, "term-grace", capture.DefaultTermGrace, "shutdown: wait after SIGTERM before SIGKILL")
	f.StringArrayVar(&o.Env, "env", nil, "pass NAME from the environment, or set NAME=VALUE, for the server (repeatable)")
	o.Redact.AddFlags(c, "; values become keyed hashes in the cassette and the events")
	f.StringVar(&o.URL, "url", "", "record a remote MCP server over Streamable HTTP at this URL instead of starting a command")
	f.StringArrayVar(&o.Headers, "header", nil, "with --url: send this 'Name: value' header with every request (repeatable); credentials are recorded as keyed hashes")
	f.StringArrayVar(&o.RedactHeaders, "redact-header", nil, "with --url: also replace this header's values by keyed hashes (repeatable)")
	f.StringArrayVar(&o.RedactQuery, "redact-query", nil, "with --url: also replace this query parameter's values by keyed hashes wherever the URL is written (repeatable; key, api-key, access_token and the others of docs/design/redaction.md always are)")
	o.Anchor.AddFlags(c)
	f.BoolVar(&o.JSON, "json", false, "print what was recorded (server, counts, files) as JSON")
	completeChoices(c, "protocol", mcp.SupportedProtocols...)
}

// serverEnv builds the server's environment from the defaults and --env.
func serverEnv(a *app, extra []string) ([]string, error) {
	vals := map[string]string{}
	for _, n := range serverEnvDefault {
		if v := a.getenv(n); v != "" {
			vals[n] = v
		}
	}
	for _, e := range extra {
		name, val, hasVal := strings.Cut(e, "=")
		if name == "" || strings.ContainsAny(name, " \t") {
			return nil, usageError(fmt.Errorf("--env %q: not NAME or NAME=VALUE", e), "for example --env API_BASE or --env MODE=test")
		}
		if !hasVal {
			val = a.getenv(name)
		}
		vals[name] = val
	}
	names := make([]string, 0, len(vals))
	for n := range vals {
		names = append(names, n)
	}
	sort.Strings(names)
	env := make([]string, 0, len(names))
	for _, n := range names {
		env = append(env, n+"="+vals[n])
	}
	return env, nil
}

// recordingKeys is how the recording verbs (capture, proxy, import) use
// the keyring: its active key signs the session end. The keyring is found
// as by every command (--keyring, else the default); without one the end
// is written unsigned.
var recordingKeys = keyUse{Role: "keyring whose active key signs the session end"}

// startWarnings are the loud defaults of a recording (capture, proxy):
// what a user who launched it from a host that strips the environment, or
// with a test variable left exported, would otherwise find out only at
// verify time. Each is printed on stderr as a warning and written into the
// session header's notes, where verify and the graph show it.
func startWarnings(a *app, signed bool) []string {
	var w []string
	if !signed {
		w = append(w, "unsigned: no keyring (--keyring, else $"+keyring.EnvKeyring+", else keys.json in the user config folder's witness/), so the session end will not be signed and verify will call this log incomplete; 'witness key generate' creates the default keyring")
	}
	if ts := a.getenv(eventlog.EnvTS); ts != "" {
		w = append(w, "frozen time: "+eventlog.EnvTS+"="+ts+" stamps this live recording with that time instead of the clock (a test setting; unset it for real sessions)")
	}
	for _, s := range w {
		fmt.Fprintf(a.stderr, "witness: warning: %s\n", s)
	}
	return w
}

// captureSigners returns the signers of a recording's session end.
func captureSigners(a *app, k *keyringOptions) ([]eventlog.Signer, error) {
	ss, err := k.Signers(a)
	var out []eventlog.Signer
	for _, s := range ss {
		out = append(out, s)
	}
	return out, err
}

func runCapture(a *app, o captureOptions) error {
	if err := o.check(); err != nil {
		return err
	}
	var calls []capture.ScenarioCall
	var notes []string
	if o.Scenario != "" {
		var err error
		if calls, notes, err = capture.LoadScenario(o.Scenario); err != nil {
			return err
		}
	}
	for _, n := range notes {
		fmt.Fprintf(a.stderr, "witness: warning: %s\n", n)
	}
	lo, err := o.liveOptions(a, notes)
	if err != nil {
		return err
	}
	o.Output.Reads(o.Scenario, o.Seal, o.Keys.Input(a), o.Effects, o.Redact.RulesFile, o.Redact.KeyFile)
	res, err := capture.RunCapture(capture.CaptureOptions{LiveOptions: lo, OutDir: o.Output.Out, Files: o.Output.Rules(a), Calls: calls})
	if res != nil && err == nil {
		return reportCapture(a, o, res)
	}
	if res != nil && res.Server.Name != "" && !o.JSON {
		fmt.Fprintf(a.stdout, "witness: server %s %s, protocol %s, %d tools\n", res.Server.Name, res.Server.Version, res.Server.ProtocolVersion, res.Tools)
	}
	if err != nil && res != nil {
		hint := fmt.Sprintf("everything received is kept in %s and %s", res.Cassette, res.Events)
		if h := exitcode.HintOf(err); h != "" {
			hint = h + "; " + hint
		}
		return exitcode.WithHint(err, hint)
	}
	return err
}

// check checks the values of the protocol, timing and size flags.
func (o *captureOptions) check() error {
	if !mcp.Supported(o.Protocol) {
		return usageError(fmt.Errorf("--protocol %q is not supported", o.Protocol), "use one of "+strings.Join(mcp.SupportedProtocols, ", "))
	}
	if o.Timeout <= 0 || o.StdinGrace <= 0 || o.TermGrace <= 0 {
		return usageError(fmt.Errorf("--timeout, --stdin-grace and --term-grace must be positive"), "for example --timeout 30s")
	}
	if o.MaxLine <= 0 {
		return usageError(fmt.Errorf("--max-line must be positive"), "the default is 16777216 (16 MiB)")
	}
	return nil
}

// liveOptions are the options of the session: the server (--url or the
// command), the seal, the effects, the redaction and the signers; notes
// are the scenario's, kept in the session header with the start warnings.
func (o *captureOptions) liveOptions(a *app, notes []string) (capture.LiveOptions, error) {
	lo := capture.LiveOptions{Protocol: o.Protocol, Timeout: o.Timeout,
		MaxLine: o.MaxLine, StdinGrace: o.StdinGrace, TermGrace: o.TermGrace, Getenv: a.getenv, Notes: notes,
		Warn: func(s string) { fmt.Fprintf(a.stderr, "witness: warning: %s\n", s) }}
	var err error
	if o.URL != "" {
		if err = captureHTTPOptions(a, o, &lo); err != nil {
			return lo, err
		}
	} else {
		if len(o.Headers) > 0 || len(o.RedactHeaders) > 0 || len(o.RedactQuery) > 0 {
			return lo, usageError(errors.New("--header, --redact-header and --redact-query are for --url sessions"), "drop them, or record a remote server with --url")
		}
		lo.Command, lo.Args = o.Command[0], o.Command[1:]
		if lo.Env, err = serverEnv(a, o.Env); err != nil {
			return lo, err
		}
	}
	if o.Seal != "" {
		s, err := seal.Load(o.Seal)
		if err != nil {
			return lo, err
		}
		lo.Seal = &eventlog.SealRef{Digest: s.Ref(), WitnessID: s.WitnessID}
	}
	if lo.Effects, err = loadEffects(o.Effects); err != nil {
		return lo, err
	}
	if lo.Redactor, err = o.Redact.Load(a); err != nil {
		return lo, err
	}
	if lo.Signers, err = captureSigners(a, &o.Keys); err != nil {
		return lo, err
	}
	lo.Notes = append(lo.Notes, startWarnings(a, len(lo.Signers) > 0)...)
	return lo, nil
}

// reportCapture prints what a finished capture recorded (--json: one JSON
// object) and anchors its end when --anchor asks; with --json the anchor's
// line goes to stderr, so stdout holds the object alone.
func reportCapture(a *app, o captureOptions, res *capture.CaptureResult) error {
	if o.JSON {
		if err := printJSON(a, newCaptureResult(res)); err != nil {
			return err
		}
		return o.Anchor.Anchor(a, res.Events, a.stderr)
	}
	if res.Server.Name != "" {
		fmt.Fprintf(a.stdout, "witness: server %s %s, protocol %s, %d tools\n", res.Server.Name, res.Server.Version, res.Server.ProtocolVersion, res.Tools)
	}
	fmt.Fprintf(a.stdout, "witness: %d tool calls (%d answered with an error)\n", res.Calls, res.ToolError)
	if res.Requests > 0 {
		fmt.Fprintf(a.stdout, "witness: %d other requests (%d answered with an error)\n", res.Requests, res.ReqError)
	}
	fmt.Fprintf(a.stdout, "witness: captured %d events to %s (cassette %s, %d records)\n", res.EventN, res.Events, res.Cassette, res.Records)
	return o.Anchor.Anchor(a, res.Events, a.stdout)
}

// captureHTTPOptions sets the --url session's options: the URL, the
// --header lines and the key of their hashes.
func captureHTTPOptions(a *app, o *captureOptions, lo *capture.LiveOptions) error {
	if len(o.Env) > 0 {
		return usageError(errors.New("--env is for a server command; a --url server runs elsewhere"), "drop --env")
	}
	if _, err := capture.ParseServerURL(o.URL); err != nil {
		return err
	}
	h, err := capture.ParseHeaderLines(o.Headers)
	if err != nil {
		return err
	}
	key, err := o.Redact.Key(a)
	if err != nil {
		return err
	}
	lo.URL, lo.Header, lo.HeaderKey, lo.RedactHeaders, lo.RedactQuery = o.URL, h, key, o.RedactHeaders, o.RedactQuery
	return nil
}

// loadEffects reads the --effects mapping (none when path is "").
func loadEffects(path string) (derive.EffectFunc, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, exitcode.Input("read effects mapping", err, "check the path given to --effects")
	}
	m, err := proxy.ParseEffects(data, path)
	if err != nil {
		return nil, exitcode.New(exitcode.Usage, err, "see docs/formats/effects.md")
	}
	return m.Func(), nil
}
