package capture

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http/httptest"
	"testing"
)

// TestHTTPCaptureRedactsURLQuery: capture --url with credentials in the
// URL's query (token, a --redact-query) and a --redact-header: the server
// gets them as given; neither cassette nor the event log holds them, the
// HTTP cassette's paths and upstream carry keyed hashes, and the request
// records say redacted. A request that fails names the URL hashed too
// (Go's url.Error holds the whole URL, and capture records its text).
func TestHTTPCaptureRedactsURLQuery(t *testing.T) {
	f := &fakeMCP{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	secrets := []string{"CANARYcaptok0201", "CANARYcapmine0202", "CANARYcaphdr0203"}
	q := "/mcp?token=" + secrets[0] + "&mine=" + secrets[1] + "&v=2"
	c := runHTTPCapture(t, srv.URL+q, []ScenarioCall{{Tool: "echo", Arguments: json.RawMessage(`{"m":"hi"}`)}}, func(lo *LiveOptions) {
		lo.RedactQuery = []string{"MINE"}
		lo.RedactHeaders = []string{"X-Tenant"}
		lo.Header.Set("X-Tenant", secrets[2])
	})
	if c.err != nil {
		t.Fatalf("capture: %v", c.err)
	}
	for name, b := range map[string][]byte{"messages": c.cassette, "http": c.http, "events": c.events} {
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("the %s file holds %q", name, s)
			}
		}
	}
	if !bytes.Contains(c.http, []byte(`"path":"/mcp?token=redacted:hmac-sha256:`)) || !bytes.Contains(c.http, []byte(`"redacted":true}`)) || !bytes.Contains(c.http, []byte(`&v=2"`)) {
		t.Errorf("the HTTP cassette's request paths are not hashed and marked:\n%s", c.http)
	}
	if !bytes.Contains(bytes.SplitN(c.http, []byte("\n"), 2)[0], []byte(`"redacted_query":["access_token",`)) {
		t.Errorf("the HTTP cassette's header lists no redacted_query")
	}
	checkHTTPRederive(t, c)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + q
	ln.Close()
	d := runHTTPCapture(t, dead, nil, func(lo *LiveOptions) { lo.RedactQuery = []string{"mine"} })
	if d.err == nil {
		t.Fatal("capture against a closed port succeeded")
	}
	for name, b := range map[string][]byte{"messages": d.cassette, "http": d.http, "events": d.events, "error": []byte(d.err.Error())} {
		for _, s := range secrets[:2] {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("after a failed request, the %s holds %q:\n%s", name, s, b)
			}
		}
	}
	if !bytes.Contains(d.http, []byte(`"rec":"error"`)) {
		t.Errorf("no error record:\n%s", d.http)
	}
}
