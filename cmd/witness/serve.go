package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/agent-trace-witness/witness/serve"
)

type serveOptions struct {
	Cassette      string
	AllowRedacted bool
	RequireAll    bool
	AnswerTimeout time.Duration
}

func newServeCmd(a *app) *cobra.Command {
	var o serveOptions
	c := &cobra.Command{
		Use:   "serve --cassette FILE",
		Short: "Answer as an MCP stdio server from a recorded cassette",
		Long: `serve is an MCP stdio server that answers from a cassette recorded by
'witness proxy' or 'witness capture', so that CI can re-run an agent against
recorded servers, offline.

A request matches a recorded one on method and params, with volatile keys
ignored: "_meta" at any depth (progressToken, trace context) and the
clientInfo of initialize. The answer is the recorded response with the
incoming id in place of the recorded one, every other byte as recorded.
Identical requests replay their recorded answers in order. What the server
sent unprompted (notifications, its own requests) is replayed where it came
in the recording: after the host message it followed. An unrecorded ping is
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

A redacted cassette is refused unless --allow-redacted is given: it is
evidence, not a fixture.`,
		Example: `  witness serve --cassette rec/cassette.jsonl
  # as the server command of an MCP host in CI:
  #   {"command": "witness", "args": ["serve", "--cassette", "rec/cassette.jsonl"]}`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runServe(a, o)
		},
	}
	c.Flags().StringVar(&o.Cassette, "cassette", "", "cassette to answer from")
	c.Flags().BoolVar(&o.RequireAll, "require-all", false, "also exit 4 when recorded requests were never asked for, or server requests left unanswered")
	c.Flags().DurationVar(&o.AnswerTimeout, "answer-timeout", time.Minute, "how long to wait for the host's answer to a server request before it is a miss (0: until stdin closes)")
	c.Flags().BoolVar(&o.AllowRedacted, "allow-redacted", false, "serve a redacted cassette (its redacted values are replayed as recorded, and requests carrying them no longer match)")
	c.MarkFlagRequired("cassette")
	return c
}

func runServe(a *app, o serveOptions) error {
	s, err := serve.LoadFile(o.Cassette)
	if err != nil {
		return err
	}
	if s.Redacted() && !o.AllowRedacted {
		return usageError(fmt.Errorf("cassette %s is redacted: its bytes are not what the server said", o.Cassette),
			"a redacted cassette is evidence, not a fixture: record the fixture without --redact, or pass --allow-redacted")
	}
	if o.AnswerTimeout < 0 {
		return usageError(fmt.Errorf("--answer-timeout %s is negative", o.AnswerTimeout), "give a duration such as 30s, or 0 to wait until the host closes stdin")
	}
	_, err = s.Serve(serve.Options{Stdin: a.stdin, Stdout: a.stdout, Stderr: a.stderr, RequireAll: o.RequireAll, AnswerTimeout: o.AnswerTimeout})
	return err
}
