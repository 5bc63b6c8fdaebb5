package capture

import (
	"encoding/json"
	"github.com/agent-trace-witness/witness/cassette"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
	"io"
)

// openHTTPLive is OpenLive for a server reached over Streamable HTTP
// (o.URL). Every JSON-RPC message goes to the message cassette (o.Cassette,
// the stdio cassette format, mode "client", the URL as the command) before
// it is sent or acted on, and feeds the Deriver from there, exactly as on
// stdio; every HTTP exchange goes to the HTTP cassette (o.HTTPCassette;
// discarded when nil), credential headers as keyed hashes
// (docs/design/mcp-http-client.md).
func openHTTPLive(o LiveOptions) (*Live, error) {
	u, err := ParseServerURL(o.URL)
	if err != nil {
		return nil, err
	}
	hashKey, keyID, err := headerKey(o.Redactor, o.HeaderKey)
	if err != nil {
		return nil, err
	}
	frozen := o.Getenv != nil && o.Getenv(eventlog.EnvTS) != ""
	started := eventlog.Timestamp(o.Getenv)
	var redaction json.RawMessage
	if o.Redactor != nil {
		redaction, _ = json.Marshal(o.Redactor.Info())
	}
	hout := o.HTTPCassette
	if hout == nil {
		hout = io.Discard
	}
	rec, err := newHTTPRecorder(hout, cassette.HTTPFileHeader{Mode: "client", Upstream: u.String(), Started: started, Frozen: frozen, Redaction: redaction},
		hashKey, keyID, o.Redactor, o.RedactHeaders, o.RedactQuery)
	if err != nil {
		return nil, err
	}
	command, _ := rec.URI(u.String()) // the message cassette names the server by its URL, credentials hashed
	cw, err := cassette.NewWriter(o.Cassette, cassette.Header{Command: command, Args: []string{}, Env: []string{}, Protocol: o.Protocol,
		Started: started, Frozen: frozen, Mode: "client", Redaction: redaction})
	if err != nil {
		return nil, err
	}
	if o.Redactor != nil {
		red := o.Redactor
		cw.SetRedact(func(_ cassette.Dir, b []byte) ([]byte, bool) { return red.Line(b) })
	}
	l := &Live{o: o, cw: cw, hw: rec.Writer()}
	l.d = derive.NewDeriver(o.Events, cw.Header(), derive.Options{Seal: o.Seal, Redactor: o.Redactor, Cassette: derive.CassetteFile, Effects: o.Effects, Notes: o.Notes})
	cw.OnRecord(func(r *cassette.Record) { _ = l.d.Feed(r) })
	c, err := startHTTP(httpOptions{URL: o.URL, Header: o.Header, Protocol: o.Protocol, Timeout: o.Timeout, MaxMessage: o.MaxLine,
		Recorder: rec, Messages: cw, Warn: o.Warn, Answer: o.Answer, Capabilities: o.Capabilities})
	if err != nil {
		_ = l.d.Finish(eventlog.EndOptions{Signers: o.Signers, Reason: "session did not start", Failure: "session did not start: " + err.Error()})
		return nil, err
	}
	return l.start(c)
}
