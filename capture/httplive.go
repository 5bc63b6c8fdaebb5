package capture

import (
	"encoding/json"

	"github.com/agent-trace-witness/witness/cassette"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/exitcode"
)

// openHTTPLive is OpenLive for a server reached over Streamable HTTP
// (o.URL): the cassette is an HTTP cassette (mode "client"), whose records
// feed an HTTPDeriver as they are written, so the event log holds the same
// events a stdio session with the same messages gives
// (docs/design/mcp-http-client.md).
func openHTTPLive(o LiveOptions) (*Live, error) {
	u, err := ParseServerURL(o.URL)
	if err != nil {
		return nil, err
	}
	hashKey, keyID, err := HeaderKey(o.Redactor, o.HeaderKey)
	if err != nil {
		return nil, err
	}
	frozen := o.Getenv != nil && o.Getenv(eventlog.EnvTS) != ""
	h := cassette.HTTPFileHeader{Mode: "client", Upstream: u.String(), Started: eventlog.Timestamp(o.Getenv), Frozen: frozen}
	if o.Redactor != nil {
		if h.Redaction, err = json.Marshal(o.Redactor.Info()); err != nil {
			return nil, exitcode.New(exitcode.Failure, err, "")
		}
	}
	rec, err := NewHTTPRecorder(o.Cassette, h, hashKey, keyID, o.Redactor, o.RedactHeaders)
	if err != nil {
		return nil, err
	}
	hd := NewHTTPDeriver(o.Events, rec.Writer().Header(), DeriveOptions{Seal: o.Seal, Redactor: o.Redactor, Cassette: CassetteFile, Effects: o.Effects, Notes: o.Notes}, o.MaxLine)
	l := &Live{o: o, hw: rec.Writer(), d: hd.Deriver()}
	rec.Writer().OnRecord(func(r *cassette.HTTPRecord) { _ = hd.Feed(r) })
	c, err := StartHTTP(HTTPOptions{URL: o.URL, Header: o.Header, Protocol: o.Protocol, Timeout: o.Timeout, MaxMessage: o.MaxLine,
		Recorder: rec, Warn: o.Warn})
	if err != nil {
		rec.Writer().OnRecord(nil)
		_ = l.d.Finish(FinishOptions{Signers: o.Signers, Reason: "session did not start", Failure: "session did not start: " + err.Error()})
		return nil, err
	}
	l.HTTP = c
	if _, err := c.Initialize(); err != nil {
		return nil, l.closeWith(err)
	}
	tools, err := c.ListTools()
	l.Tools = tools
	if err != nil {
		return nil, l.closeWith(err)
	}
	return l, nil
}
