package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/agent-trace-witness/witness/capture"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/httpproxy"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/flagmode"
	"github.com/agent-trace-witness/witness/internal/httpbound"
	"github.com/agent-trace-witness/witness/proxy"
	"github.com/spf13/cobra"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"syscall"
	"time"
)

type proxyOptions struct {
	Output     outputOptions // --out DIR, --force
	Seal       string
	Keys       keyringOptions
	Effects    string
	Redact     redactOptions
	StdinGrace time.Duration
	TermGrace  time.Duration
	Command    []string
	// HTTP mode (--listen)
	Listen        string
	Upstream      string
	RedactHeaders []string
	RedactQuery   []string
	AllowOrigin   []string
	MemoryMiB     int           // --memory-budget-mib
	MaxSessions   int           // --max-mcp-sessions
	MaxConns      int           // --max-conns
	Anchor        anchorOptions // --log
	modes         modeFlags     // which flags are for which mode
}

// proxyLong is the help of `witness proxy`.
const proxyLong = `proxy is what a real MCP host runs as its server command. It starts CMD
(without a shell, in its own process group) and forwards bytes unchanged in
both directions, passes the server's stderr through, closes the server's
stdin when the host closes the proxy's (and SIGTERMs the server if it has
not exited --stdin-grace later, SIGKILL --term-grace after that), forwards
SIGINT, SIGTERM and SIGHUP to the server's process group and exits with the
server's status (128+N when signal N ended it). Whatever the server started
is ended with it, even processes that left its process group.

On the side it records DIR/cassette.jsonl (every wire line, exact bytes) and
DIR/events.jsonl (tool calls and responses paired by exact JSON-RPC id,
notifications, external effects from the --effects mapping or from tools
annotated destructiveHint=true). The session end is signed with the active
key of --keyring, else of the default keyring (docs/formats/keys.md); without
one, and when ATW_WITNESS_TS freezes the time, the proxy warns at start on
stderr and in the session header's notes. --redact
rules replace values by keyed hashes in both files before they are written;
the bytes forwarded are never changed. Every line is written to the
cassette before it is forwarded: a slow disk slows the wire down, and a
recording failure (disk full, write error) stops forwarding, closes the
host's stdout, ends the server, records the reason in the event log's end
(session_end.end.failure) and exits with status 5. A server that cannot
start is exit status 5; bad flags, a bad effects mapping or an existing
recording in DIR, 2.

With --listen ADDR --upstream URL (and no command) it is an HTTP reverse
proxy instead, for model APIs: point an SDK's base URL at it. It listens on
ADDR (loopback when ADDR has no host; 127.0.0.1:0 picks a free port) and
prints "listening on http://HOST:PORT" on stderr once it accepts. Each
request goes to URL with its path joined to URL's path; bytes pass
unchanged both ways (hop-by-hop headers aside), server-sent events chunk by
chunk as they arrive, redirects are not followed. DIR/cassette.jsonl
records every exchange (docs/formats/http-cassette.md), each byte before
it is forwarded; Authorization, x-api-key, api-key, x-goog-api-key, Cookie,
Set-Cookie and every --redact-header are replaced by keyed hashes (with
--redact-key or $WITNESS_REDACT_KEY, else a key made for this session
alone), so are the values of credential query parameters (key, api-key,
access_token, ... and every --redact-query; docs/design/redaction.md)
wherever a request's path is written, and --redact
rules apply to JSON bodies and SSE data lines. DIR/events.jsonl is the
signed event log: each OpenAI Chat Completions, OpenAI Responses or
Anthropic Messages call becomes a model_input and a model_output (streams
assembled; cut streams and errors kept as partial or error outputs;
docs/formats/model-events.md), any other exchange a witness/http-exchange
notification. SIGINT or SIGTERM ends the session: exchanges in flight
get 5s, then the log is ended and signed; exit status 0, or 5 when the
recording failed.

MCP over HTTP is recognised by what it carries (JSON-RPC bodies and
server-sent events, Mcp-Session-Id, the endpoint event of the 2024-11-05
HTTP+SSE transport): point an MCP client at http://HOST:PORT/PATH for an
upstream server at URL/PATH. Besides the HTTP cassette, each MCP session
gets DIR/mcp/N/cassette.jsonl (its JSON-RPC messages, in the stdio
cassette format) and DIR/mcp/N/events.jsonl (the events the stdio proxy
would write, signed), which verify, graph, replay and serve read as they
read a stdio session's. A session the client ends with DELETE has its log
ended and signed once its last exchange is over, while the proxy runs
(verify it then); the others when the proxy stops. A GET stream the
client closes is the normal end of that stream, not a failure. An endpoint event naming the upstream is rewritten
to name the proxy, and the rewrite is noted in both event logs. A request
whose Origin header is neither a loopback origin nor given with
--allow-origin is refused 403 and not forwarded.`

const proxyExample = `  witness proxy --out rec -- node server.js
  witness proxy --out rec --seal seal.json --keyring keys.json --effects effects.json -- ./server --flag
  witness proxy --out rec --listen 127.0.0.1:0 --upstream https://api.openai.com
  witness proxy --out rec --listen 127.0.0.1:0 --upstream https://mcp.example.com   # then: client URL http://127.0.0.1:PORT/mcp
  # then: OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 node agent.js`

// The modes of `witness proxy`: a stdio server behind -- CMD, or the HTTP
// proxy of --listen ADDR --upstream URL.
var (
	proxyStdio  = flagmode.Mode{Name: "stdio", Title: "a stdio server (-- CMD)", Enter: "give -- CMD in place of --listen and --upstream"}
	proxyListen = flagmode.Mode{Name: "listen", Title: "--listen (the HTTP proxy)", Enter: "add --listen and --upstream"}
)

func newProxyCmd(a *app) *cobra.Command {
	var o proxyOptions
	c := &cobra.Command{
		Use:     "proxy --out DIR [--seal FILE] [--keyring PATH] [--effects FILE] (-- CMD [ARGS...] | --listen ADDR --upstream URL)",
		Short:   "Run an MCP stdio server, or an HTTP API, behind a transparent, recording proxy",
		Long:    proxyLong,
		Example: proxyExample,
		Args: func(cmd *cobra.Command, args []string) error {
			if o.httpMode() {
				return cobra.NoArgs(cmd, args)
			}
			return cobra.MinimumNArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Command = args
			return runProxyMode(a, o)
		},
	}
	c.Flags().SetInterspersed(false)
	o.AddFlags(c)
	c.MarkFlagRequired("out")
	return c
}

// AddFlags declares the flags of `witness proxy` on c, each with its mode.
func (o *proxyOptions) AddFlags(c *cobra.Command) {
	o.modes = newModeFlags(c, proxyStdio, proxyListen)
	o.Output.AddFlags(c, "directory to write cassette.jsonl and events.jsonl into (must not hold a recording unless --force)", false)
	c.Flags().StringVar(&o.Seal, "seal", "", "seal whose digest goes into the session header")
	o.Keys.AddFlags(c, recordingKeys)
	c.Flags().StringVar(&o.Effects, "effects", "", "effects mapping: tool name -> effect op and target path (docs/formats/effects.md)")
	o.Redact.AddFlags(c, "; values become keyed hashes in the cassette and the events, never in what is forwarded")
	o.Anchor.AddFlags(c)
	c.Flags().DurationVar(&o.StdinGrace, "stdin-grace", capture.DefaultStdinGrace, "after the host closes stdin, wait this long for the server to exit before SIGTERM")
	c.Flags().DurationVar(&o.TermGrace, "term-grace", capture.DefaultTermGrace, "after SIGTERM, wait this long before SIGKILL")
	c.Flags().StringVar(&o.Listen, "listen", "", "HTTP mode: listen on ADDR (host:port; loopback when the host is left out; 127.0.0.1:0 picks a free port)")
	c.Flags().StringVar(&o.Upstream, "upstream", "", "HTTP mode: the base URL requests are forwarded to (https://api.openai.com)")
	c.Flags().StringArrayVar(&o.RedactHeaders, "redact-header", nil, "HTTP mode: also replace this header's values by keyed hashes (repeatable)")
	c.Flags().StringArrayVar(&o.RedactQuery, "redact-query", nil, "HTTP mode: also replace this query parameter's values by keyed hashes wherever a path is written (repeatable; key, api-key, access_token and the others of docs/design/redaction.md always are)")
	c.Flags().StringArrayVar(&o.AllowOrigin, "allow-origin", nil, "HTTP mode: also forward requests with this Origin (scheme://host[:port]; repeatable; loopback origins always pass)")
	c.Flags().IntVar(&o.MemoryMiB, "memory-budget-mib", httpproxy.DefaultMemoryBudget>>20, "HTTP mode: MiB that all exchanges and MCP sessions may hold at once beyond fixed buffers (bodies, queued answers); past it they stop holding, nothing forwarded is lost (docs/design/http-proxy.md)")
	c.Flags().IntVar(&o.MaxConns, "max-conns", httpbound.DefaultMaxConns, "HTTP mode: client connections open at once; past it, new ones wait to be accepted (docs/design/http-proxy.md)")
	c.Flags().IntVar(&o.MaxSessions, "max-mcp-sessions", httpproxy.DefaultMaxMCPSessions, "HTTP mode: MCP sessions read into DIR/mcp; the exchanges of later sessions are in the HTTP cassette only, and the proxy log says so")
	o.modes.only([]string{proxyStdio.Name}, "effects", "stdin-grace", "term-grace")
	o.modes.only([]string{proxyListen.Name}, "listen", "upstream", "redact-header", "redact-query", "allow-origin", "memory-budget-mib", "max-conns", "max-mcp-sessions")
}

// httpMode says the proxy runs as the HTTP proxy (--listen, --upstream).
func (o *proxyOptions) httpMode() bool { return o.Listen != "" || o.Upstream != "" }

// runProxyMode refuses the flags of the other mode and runs the proxy.
func runProxyMode(a *app, o proxyOptions) error {
	mode, run := proxyStdio, runProxy
	if o.httpMode() {
		mode, run = proxyListen, runHTTPProxy
	}
	if err := o.modes.check(mode.Name); err != nil {
		return err
	}
	return run(a, o)
}

// checkHTTPProxyFlags checks the flags of HTTP mode.
func checkHTTPProxyFlags(o proxyOptions) error {
	if o.Listen == "" || o.Upstream == "" {
		return usageError(errors.New("HTTP mode needs both --listen and --upstream"), "for example --listen 127.0.0.1:0 --upstream https://api.openai.com")
	}
	if o.MemoryMiB <= 0 || o.MemoryMiB > 1<<20 {
		return usageError(fmt.Errorf("--memory-budget-mib %d: give a number of MiB from 1 to 1048576", o.MemoryMiB), fmt.Sprintf("the default is %d", httpproxy.DefaultMemoryBudget>>20))
	}
	if o.MaxSessions <= 0 {
		return usageError(fmt.Errorf("--max-mcp-sessions %d: give a positive number", o.MaxSessions), fmt.Sprintf("the default is %d", httpproxy.DefaultMaxMCPSessions))
	}
	if o.MaxConns <= 0 {
		return usageError(fmt.Errorf("--max-conns %d: give a positive number", o.MaxConns), fmt.Sprintf("the default is %d", httpbound.DefaultMaxConns))
	}
	return nil
}

// runHTTPProxy runs `witness proxy --listen ADDR --upstream URL`.
func runHTTPProxy(a *app, o proxyOptions) error {
	if err := checkHTTPProxyFlags(o); err != nil {
		return err
	}
	signers, err := captureSigners(a, &o.Keys)
	if err != nil {
		return err
	}
	redactor, err := o.Redact.Load(a)
	if err != nil {
		return err
	}
	key, err := o.Redact.Key(a)
	if err != nil {
		return err
	}
	o.Output.Reads(o.Seal, o.Keys.Input(a), o.Redact.RulesFile, o.Redact.KeyFile)
	notes := startWarnings(a, len(signers) > 0)
	// a hidden switch for measuring the proxy (scripts/bench.d/28-mcp-http.sh):
	// $WITNESS_CPUPROFILE names a file for a CPU profile of the session
	if path := a.getenv("WITNESS_CPUPROFILE"); path != "" {
		// a profile never replaces a file, and a failure is said, not hidden
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			err = pprof.StartCPUProfile(f)
			if err != nil {
				f.Close()
			}
		}
		if err != nil {
			fmt.Fprintf(a.stderr, "witness: warning: no CPU profile: %v\n", err)
		} else {
			defer func() { pprof.StopCPUProfile(); f.Close() }()
		}
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	res, err := httpproxy.Run(context.Background(), httpproxy.Options{
		Listen: o.Listen, Upstream: o.Upstream, OutDir: o.Output.Out, Files: o.Output.Rules(a),
		SealPath: o.Seal, Signers: signers, Redactor: redactor, HeaderKey: key, RedactHeaders: o.RedactHeaders, RedactQuery: o.RedactQuery,
		Deriver: derive.ModelDeriver{}, Getenv: a.getenv, Stderr: a.stderr, Signals: sigs, AllowOrigins: o.AllowOrigin, Notes: notes,
		MemoryBudget: int64(o.MemoryMiB) << 20, MaxMCPSessions: o.MaxSessions, MaxConns: o.MaxConns,
	})
	if err != nil {
		return err
	}
	if err := o.Anchor.Anchor(a, res.Events, a.notes()); err != nil {
		return err
	}
	if res.Failure != "" {
		fmt.Fprintf(a.stderr, "witness: warning: the recording is incomplete: %s\n", res.Failure)
	}
	return nil
}

func runProxy(a *app, o proxyOptions) error {
	signers, err := captureSigners(a, &o.Keys)
	if err != nil {
		return err
	}
	redactor, err := o.Redact.Load(a)
	if err != nil {
		return err
	}
	if o.StdinGrace <= 0 || o.TermGrace <= 0 {
		return usageError(fmt.Errorf("--stdin-grace and --term-grace must be positive"), "for example --stdin-grace 5s")
	}
	// a soft memory limit for the proxy process: with the recording's own
	// bounds it keeps the peak RSS under 256 MiB whatever the wire carries;
	// under it the collector may run less often (GC costs latency)
	o.Output.Reads(o.Seal, o.Keys.Input(a), o.Effects, o.Redact.RulesFile, o.Redact.KeyFile)
	notes := startWarnings(a, len(signers) > 0)
	debug.SetMemoryLimit(proxy.MemoryLimit)
	debug.SetGCPercent(proxy.GCPercent)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	defer signal.Stop(sigs)
	res, err := proxy.Run(context.Background(), proxy.Options{
		OutDir: o.Output.Out, Files: o.Output.Rules(a),
		Command: o.Command, SealPath: o.Seal, EffectsPath: o.Effects, Signers: signers, Redactor: redactor,
		Getenv: a.getenv, Stdin: a.stdin, Stdout: a.stdout, Stderr: a.stderr, Signals: sigs,
		StdinGrace: o.StdinGrace, KillGrace: o.TermGrace, Notes: notes,
		SoleChild: a.ownProcess,
	})
	if res == nil || err != nil {
		return err // a recording failure is exit 5 whatever the server did: it was ended by the proxy
	}
	if err := o.Anchor.Anchor(a, res.Events, a.notes()); err != nil {
		return err
	}
	status := res.Outcome.ExitStatus
	if res.Outcome.Failure != "" {
		fmt.Fprintf(a.stderr, "witness: warning: the recording is incomplete: %s\n", res.Outcome.Failure)
	}
	if status != 0 {
		return exitWith(exitcode.Code(status))
	}
	return nil
}
