package modelapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/internal/jsontree"
)

var apis = []API{apiOpenAIChat, apiOpenAIResponses, apiAnthropicMessages}

// seedExchanges adds the recorded exchanges to a fuzz corpus through add.
func seedExchanges(f *testing.F, add func(api uint8, r recorded)) {
	b, err := os.ReadFile(filepath.Join("testdata", "exchanges.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var r recorded
		if err := json.Unmarshal(line, &r); err != nil {
			f.Fatal(err)
		}
		for i, a := range apis {
			if Detect(r.Method, r.Path) == a {
				add(uint8(i), r)
			}
		}
	}
}

func checkCanonical(t *testing.T, what string, p []byte) {
	c, err := canon.Transform(p)
	if err != nil || !bytes.Equal(c, p) {
		t.Fatalf("%s payload is not canonical JSON (%v): %s", what, err, p)
	}
}

// FuzzParseRequest: a request body never panics the reader; an error is
// positioned or an ambiguity; a read body gives a canonical payload, the
// same twice.
func FuzzParseRequest(f *testing.F) {
	seedExchanges(f, func(api uint8, r recorded) { f.Add(api, r.RequestBody) })
	f.Add(uint8(0), []byte(`{"model":"a","Model":"b","messages":[]}`))
	f.Add(uint8(2), []byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","data":"AA=="}}]}]}`))
	f.Fuzz(func(t *testing.T, api uint8, body []byte) {
		a := apis[int(api)%len(apis)]
		in, err := parseRequest(a, body)
		if err != nil {
			var ae *ambiguousError
			var je *jsontree.Error
			if !errors.As(err, &ae) && !errors.As(err, &je) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		p := in.Payload()
		checkCanonical(t, "input", p)
		in2, _ := parseRequest(a, body)
		if !bytes.Equal(in2.Payload(), p) {
			t.Fatalf("two reads differ")
		}
	})
}

// FuzzSSE: feeding the same bytes in any chunking gives the same Output,
// and its payload is canonical JSON.
func FuzzSSE(f *testing.F) {
	seedExchanges(f, func(api uint8, r recorded) {
		if isEventStream(r.ContentType) {
			// the first events: the engine slows down on large inputs
			f.Add(api, r.ResponseBody[:min(len(r.ResponseBody), 1200)], []byte{1, 7, 3, 200, 2})
		}
	})
	f.Add(uint8(0), []byte("\xEF\xBB\xBFdata: [DONE]\r\n\r\n"), []byte{1, 1, 1})
	f.Add(uint8(2), []byte("event: x\rdata: {\"type\":\"message_stop\"}\r\r"), []byte{5})
	f.Fuzz(func(t *testing.T, api uint8, stream, cuts []byte) {
		a := apis[int(api)%len(apis)]
		lim := defaultLimits()
		lim.MaxEventBytes, lim.MaxTextBytes, lim.MaxParts = 512, 2048, 8 // reach the limits too
		whole := assemble(a, lim, [][]byte{stream}, false)
		checkCanonical(t, "output", []byte(whole))
		var chunks [][]byte
		rest := stream
		for i := 0; len(rest) > 0; i++ {
			n := len(rest)
			if len(cuts) > 0 {
				n = min(n, 1+int(cuts[i%len(cuts)]))
			}
			chunks = append(chunks, rest[:n])
			rest = rest[n:]
		}
		if got := assemble(a, lim, chunks, false); got != whole {
			t.Fatalf("chunked differs:\n%s\n%s", got, whole)
		}
	})
}

// FuzzParseResponse: a whole response never panics the reader and gives a
// canonical payload.
func FuzzParseResponse(f *testing.F) {
	seedExchanges(f, func(api uint8, r recorded) { f.Add(api, uint16(r.Status), r.ContentType, r.ResponseBody) })
	f.Fuzz(func(t *testing.T, api uint8, status uint16, ct string, body []byte) {
		a := apis[int(api)%len(apis)]
		o := ParseResponse(a, int(status), ct, body)
		checkCanonical(t, "output", o.Payload())
		switch o.Status {
		case StatusComplete, StatusPartial, StatusError, statusAmbiguous:
		default:
			t.Fatalf("status %q", o.Status)
		}
	})
}
