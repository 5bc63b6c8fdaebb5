package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/agent-trace-witness/witness/cassette"
	"github.com/agent-trace-witness/witness/drift"
	"github.com/agent-trace-witness/witness/internal/atomicfile"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/flagmode"
	"github.com/agent-trace-witness/witness/internal/httpbound"
	"github.com/agent-trace-witness/witness/serve"
	"github.com/agent-trace-witness/witness/serve/httpserve"
)

type serveOptions struct {
	Cassette      string
	AllowRedacted bool
	RequireAll    bool
	AnswerTimeout time.Duration
	// HTTP cassettes
	Listen      string
	IgnoreField []string
	ExitAfter   int
	Pace        bool
	Report      string
	Force       bool
	AllowOrigin []string
	MaxConns    int
	modes       modeFlags // which flags are for which mode
}

// serveLong is the help of `witness serve`.
const serveLong = `serve is an MCP stdio server that answers from a cassette recorded by
'witness proxy' or 'witness capture', so that CI can re-run an agent against
recorded servers, offline.

A request matches a recorded one on method and params, with volatile keys
ignored: params._meta (progressToken, trace context; a _meta deeper down is
data) and the clientInfo of initialize. The answer is the recorded response
with the incoming id in place of the recorded one, every other byte as
recorded. Identical requests replay their recorded answers in order. What
the server sent unprompted (notifications, its own requests) is replayed in
the turn it belongs to: a progress notification with the request whose
progressToken it carries (rewritten to the host's token), anything else
after the host message the server was working on. An unrecorded ping is
answered with {}.

A request of the server to the host (sampling/createMessage,
elicitation/create, roots/list, ping) is sent as recorded, and what the
recording shows after the host's answer waits for the host's answer, which
must match the recorded one (result or error; "_meta" at the top of a result
is ignored). A different answer, or none within --answer-timeout, is a miss:
the diff goes to stderr and the host request waiting on it gets JSON-RPC
error -32050 instead of the recorded result.

A miss is answered with JSON-RPC error -32050, explained on stderr with the
nearest recorded request and a diff, and makes serve exit with status 4
(incomplete evidence: the recording does not cover the run) once the host
closes stdin. With --require-all, recorded requests never asked for, and
server requests the host left unanswered, also make it exit 4.

With --report FILE, serve writes a drift report for CI as it goes (JSON
lines: each recorded request matched, missed with the nearest recording and
the diff, never asked for, and each host answer to a server request), and
finishes it when it stops for any reason: the host closing stdin, SIGTERM,
SIGINT or SIGHUP, the host no longer reading. A serve killed by SIGKILL
leaves the lines written so far, without the end record. 'witness drift'
turns reports into one verdict whatever the host did with serve's exit
status (docs/formats/drift-report.md). With --listen (an MCP cassette over
Streamable HTTP, or an HTTP cassette of a model API) the report covers every
request and session, and is finished at SIGTERM, SIGINT or --exit-after.

A redacted cassette is refused unless --allow-redacted is given: it is
evidence, not a fixture.

An HTTP cassette (recorded by 'witness proxy --listen'; serve tells the
kinds apart by the cassette's header) is served over HTTP with --listen
ADDR (loopback when ADDR has no host; 127.0.0.1:0 picks a free port;
"listening on http://HOST:PORT" is printed on stderr). A request matches a
recorded one on method, path and body, a JSON body in canonical form
without the --ignore-field members; headers are not matched. The answer is
the recorded status, headers (hop-by-hop ones aside) and body, written
chunk by chunk as recorded and flushed (with --pace, at the recorded
times). Identical requests replay their answers in order. A miss is
answered 400 with an OpenAI-style error body (Anthropic-style for
/v1/messages) and explained on stderr with the nearest recorded request
and a diff. serve stops at SIGINT or SIGTERM, or after --exit-after N
requests, and then exits 4 when a request missed (or, with --require-all,
when a recorded exchange was never asked for).

An MCP cassette (the stdio format: recorded over stdio, or the
mcp/N/cassette.jsonl of an MCP session recorded by 'witness proxy
--listen') is served over MCP's Streamable HTTP transport with --listen
ADDR, on any path: each initialize POST begins a session (Mcp-Session-Id
witness-serve-N) answered by the stdio serve's matching, misses, pings and
server requests above; a POST with requests is answered with a
server-sent event stream, one with only notifications or responses with
202, a GET opens the stream for server messages no POST waits for, and
DELETE ends the session. --exit-after N then stops after N sessions ended
by DELETE. Both kinds of --listen refuse a request whose Origin header is
neither a loopback origin nor given with --allow-origin (403).`

const serveExample = `  witness serve --cassette rec/cassette.jsonl
  # as the server command of an MCP host in CI:
  #   {"command": "witness", "args": ["serve", "--cassette", "rec/cassette.jsonl", "--report", "out/drift-echo.jsonl"]}
  # then, after the host's tests:
  #   witness drift out/drift-echo.jsonl --junit out/drift.xml
  witness serve --cassette rec/cassette.jsonl --listen 127.0.0.1:0 --ignore-field user --exit-after 3
  witness serve --cassette rec/mcp/1/cassette.jsonl --listen 127.0.0.1:0   # MCP over Streamable HTTP`

// The modes of `witness serve`, by the cassette's kind and --listen.
var (
	serveStdio        = flagmode.Mode{Name: "stdio", Title: "an MCP cassette on stdio"}
	serveMCPListen    = flagmode.Mode{Name: "mcp-listen", Title: "an MCP cassette over --listen", Enter: "add --listen 127.0.0.1:0"}
	serveHTTPCassette = flagmode.Mode{Name: "http", Title: "an HTTP cassette"}
)

func newServeCmd(a *app) *cobra.Command {
	var o serveOptions
	c := &cobra.Command{
		Use:     "serve --cassette FILE [--listen ADDR]",
		Short:   "Answer as an MCP stdio server, or an HTTP API, from a recorded cassette",
		Long:    serveLong,
		Example: serveExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runServe(a, o)
		},
	}
	o.AddFlags(c)
	c.MarkFlagRequired("cassette")
	return c
}

// AddFlags declares the flags of `witness serve` on c, each with its mode.
func (o *serveOptions) AddFlags(c *cobra.Command) {
	o.modes = newModeFlags(c, serveStdio, serveMCPListen, serveHTTPCassette)
	c.Flags().StringVar(&o.Cassette, "cassette", "", "cassette to answer from")
	c.Flags().BoolVar(&o.RequireAll, "require-all", false, "also exit 4 when recorded requests were never asked for, or server requests left unanswered")
	c.Flags().DurationVar(&o.AnswerTimeout, "answer-timeout", time.Minute, "how long to wait for the host's answer to a server request before it is a miss (0: until stdin closes)")
	c.Flags().BoolVar(&o.AllowRedacted, "allow-redacted", false, "serve a redacted cassette (its redacted values are replayed as recorded, and requests carrying them no longer match)")
	c.Flags().StringVar(&o.Listen, "listen", "", "listen on ADDR (host:port; loopback when the host is left out): HTTP cassettes, or an MCP cassette over Streamable HTTP")
	c.Flags().StringArrayVar(&o.IgnoreField, "ignore-field", nil, "HTTP cassettes: a JSON body member (stream_options) or JSON path ($.metadata.request_id) not matched (repeatable)")
	c.Flags().IntVar(&o.ExitAfter, "exit-after", 0, "with --listen: stop after N requests (HTTP cassettes) or N sessions ended by DELETE (MCP cassettes); 0: at SIGINT or SIGTERM")
	c.Flags().StringArrayVar(&o.AllowOrigin, "allow-origin", nil, "with --listen: also serve requests with this Origin (scheme://host[:port]; repeatable; loopback origins always pass)")
	c.Flags().IntVar(&o.MaxConns, "max-conns", httpbound.DefaultMaxConns, "with --listen: connections open at once; past it, new ones wait to be accepted")
	c.Flags().BoolVar(&o.Pace, "pace", false, "HTTP cassettes: send the chunks of an answer at their recorded times")
	c.Flags().StringVar(&o.Report, "report", "", "write a drift report (JSON lines) to this file as serve goes, finished when it stops; read it with 'witness drift'")
	addForceFlag(c, &o.Force)
	o.modes.only([]string{serveStdio.Name, serveMCPListen.Name}, "answer-timeout")
	o.modes.only([]string{serveMCPListen.Name, serveHTTPCassette.Name}, "listen", "exit-after", "allow-origin", "max-conns")
	o.modes.only([]string{serveHTTPCassette.Name}, "ignore-field", "pace")
}

func runServe(a *app, o serveOptions) error {
	kind, kerr := httpserve.CassetteKind(o.Cassette)
	if kerr == nil && kind == cassette.HTTPFormat {
		if o.Listen == "" {
			return usageError(fmt.Errorf("cassette %s records HTTP exchanges: serve it with --listen ADDR", o.Cassette), "for example --listen 127.0.0.1:0")
		}
		if err := o.modes.check(serveHTTPCassette.Name); err != nil {
			return err
		}
		return runServeHTTP(a, o)
	}
	if kerr != nil && o.Report == "" {
		return kerr
	}
	// with --report, a cassette that cannot be read still leaves a report
	// that says serve failed to start (loadServed reports the error)
	mode := serveStdio
	if o.Listen != "" {
		mode = serveMCPListen
	}
	if err := o.modes.check(mode.Name); err != nil {
		return err
	}
	if o.AnswerTimeout < 0 {
		return usageError(fmt.Errorf("--answer-timeout %s is negative", o.AnswerTimeout), "give a duration such as 30s, or 0 to wait until the host closes stdin")
	}
	if o.Listen != "" {
		return runServeMCPHTTP(a, o)
	}
	return runServeStdio(a, o)
}

// runServeStdio serves an MCP cassette on stdio, the server command of an
// MCP host.
func runServeStdio(a *app, o serveOptions) error {
	// Stop on the signals a host stops its server with, finishing the
	// report; a broken stdout is then a write error, not a death by SIGPIPE.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	defer signal.Stop(pipe)
	var report *drift.Writer
	if o.Report != "" {
		f, fail, err := createReport(a, o, "stdio", o.AnswerTimeout.String())
		if err != nil {
			return err
		}
		defer f.Close()
		defer atomicfile.SyncLive(f)
		s, err := loadServed(o)
		if err != nil {
			return fail(err)
		}
		sopts := serveOpts(a, o, sigs)
		report, err = drift.NewWriter(f, s.Header(sopts, o.AllowRedacted))
		if err != nil {
			return exitcode.New(exitcode.Failure, fmt.Errorf("--report %s: %w", o.Report, err), "check the disk and the path given to --report")
		}
		sopts.Report = report
		_, err = s.Serve(sopts)
		return err
	}
	s, err := loadServed(o)
	if err != nil {
		return err
	}
	_, err = s.Serve(serveOpts(a, o, sigs))
	return err
}

// runServeHTTP serves an HTTP cassette (`witness serve --listen`).
func runServeHTTP(a *app, o serveOptions) error {
	if o.ExitAfter < 0 {
		return usageError(fmt.Errorf("--exit-after %d is negative", o.ExitAfter), "use --exit-after N with N >= 1, or leave it out")
	}
	if o.MaxConns <= 0 {
		return usageError(fmt.Errorf("--max-conns %d: give a positive number", o.MaxConns), fmt.Sprintf("the default is %d", httpbound.DefaultMaxConns))
	}
	m, err := httpserve.ParseIgnore(o.IgnoreField)
	if err != nil {
		return err
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	so := httpserve.ServeOptions{Listen: o.Listen, Stderr: a.stderr, Signals: sigs, ExitAfter: o.ExitAfter, Pace: o.Pace, RequireAll: o.RequireAll,
		AllowOrigins: o.AllowOrigin, AllowRedacted: o.AllowRedacted, MaxConns: o.MaxConns}
	fail := func(err error) error { return err }
	if o.Report != "" {
		f, fl, err := createReport(a, o, "http", "0s")
		if err != nil {
			return err
		}
		defer f.Close()
		defer atomicfile.SyncLive(f)
		so.Report, fail = f, fl
	}
	s, err := httpserve.LoadReplay(o.Cassette, m)
	if err != nil {
		return fail(err)
	}
	if s.Redacted() && !o.AllowRedacted {
		return fail(usageError(fmt.Errorf("cassette %s is redacted: its bodies are not what the upstream said", o.Cassette),
			"a redacted cassette is evidence, not a fixture: record the fixture without --redact, or pass --allow-redacted"))
	}
	_, err = s.Serve(so)
	return err
}

// runServeMCPHTTP serves an MCP cassette over Streamable HTTP
// (`witness serve --cassette mcp.jsonl --listen ADDR`).
func runServeMCPHTTP(a *app, o serveOptions) error {
	if o.ExitAfter < 0 {
		return usageError(fmt.Errorf("--exit-after %d is negative", o.ExitAfter), "use --exit-after N with N >= 1, or leave it out")
	}
	if o.MaxConns <= 0 {
		return usageError(fmt.Errorf("--max-conns %d: give a positive number", o.MaxConns), fmt.Sprintf("the default is %d", httpbound.DefaultMaxConns))
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	so := httpserve.MCPServeOptions{Listen: o.Listen, Stderr: a.stderr, Signals: sigs, ExitAfter: o.ExitAfter,
		RequireAll: o.RequireAll, AnswerTimeout: o.AnswerTimeout, AllowOrigins: o.AllowOrigin, AllowRedacted: o.AllowRedacted, MaxConns: o.MaxConns}
	fail := func(err error) error { return err }
	if o.Report != "" {
		f, fl, err := createReport(a, o, "http", o.AnswerTimeout.String())
		if err != nil {
			return err
		}
		defer f.Close()
		defer atomicfile.SyncLive(f)
		so.Report, fail = f, fl
	}
	// refuses a redacted cassette unless allowed, as on stdio; a cassette
	// that cannot be read leaves a report that says serve failed to start
	if _, err := loadServed(o); err != nil {
		return fail(err)
	}
	_, err := httpserve.ServeMCP(o.Cassette, so)
	return err
}

// createReport creates the --report file live at its final name (so that
// a serve killed by SIGKILL leaves what it saw) and returns it with a
// function that finishes it as the report of a serve that could not start.
func createReport(a *app, o serveOptions, transport, answerTimeout string) (*os.File, func(error) error, error) {
	f, err := atomicfile.CreateLive(o.Report, a.writeRules("--report", o.Force, o.Cassette))
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) error {
		w, _ := drift.NewWriter(f, drift.Header{Cassette: drift.Cassette{Name: o.Cassette},
			Serve: drift.ServeOptions{Transport: transport, RequireAll: o.RequireAll, AllowRedacted: o.AllowRedacted, AnswerTimeout: answerTimeout}})
		w.Close(drift.End{Stop: drift.StopFailed, Error: err.Error()})
		return err
	}
	return f, fail, nil
}

// loadServed loads the cassette and refuses a redacted one unless allowed.
func loadServed(o serveOptions) (*serve.Script, error) {
	s, err := serve.LoadFile(o.Cassette)
	if err != nil {
		return nil, err
	}
	if s.Redacted() && !o.AllowRedacted {
		return nil, usageError(fmt.Errorf("cassette %s is redacted: its bytes are not what the server said", o.Cassette),
			"a redacted cassette is evidence, not a fixture: record the fixture without --redact, or pass --allow-redacted")
	}
	return s, nil
}

func serveOpts(a *app, o serveOptions, sigs <-chan os.Signal) serve.Options {
	return serve.Options{Stdin: a.stdin, Stdout: a.stdout, Stderr: a.stderr, RequireAll: o.RequireAll, AnswerTimeout: o.AnswerTimeout, Signals: sigs}
}
