package modelapi

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agent-trace-witness/witness/internal/httpcoding"
)

// Exchange is one recorded HTTP exchange with a model API.
type Exchange struct {
	Method, Path string
	RequestBody  []byte
	// Status and ContentType of the response; Status 0 when no response
	// came.
	Status      int
	ContentType string
	// ContentEncoding is the response's Content-Encoding: Read undoes it
	// as the clients' fetch does (internal/httpcoding).
	ContentEncoding string
	ResponseBody    []byte
	// Cut says the response was cut off (by either side) before it ended.
	Cut bool
}

// Read turns one recorded exchange into its model_input and model_output
// payloads. api is APINone (and in, out nil) when the request is not a
// model call (Detect). It never fails: a body that cannot be read gives an
// Input or Output whose status and problems say why, with a reference to
// the bytes. out is nil when no response came (Status 0).
func Read(x Exchange) (api API, in *Input, out *Output) {
	api = Detect(x.Method, x.Path)
	if api == APINone {
		return APINone, nil, nil
	}
	in, err := parseRequest(api, x.RequestBody)
	if err != nil {
		in = &Input{API: api, Status: InputInvalid, Body: refOf(x.RequestBody)}
		var ae *ambiguousError
		if errors.As(err, &ae) {
			in.Status = inputAmbiguous
			for _, r := range ae.Reasons {
				in.Problems = append(in.Problems, ae.Name+": "+r)
			}
		} else {
			in.Problems = []string{err.Error()}
		}
	}
	if x.Status == 0 {
		return api, in, nil
	}
	lim := defaultLimits()
	body, doubt, err := decodeBody(x.ResponseBody, x.ContentEncoding, lim)
	if err != nil || (body == nil && doubt != "") {
		out = &Output{API: api, Status: statusAmbiguous, HTTPStatus: x.Status, Streamed: isEventStream(x.ContentType), Body: refOf(x.ResponseBody)}
		if err != nil {
			out.Status = StatusPartial
			out.problem("%v: not read", err)
		} else {
			out.problem("%s", doubt)
		}
		return api, in, out
	}
	ct, ctDoubt := contentTypeOf(x.ContentType, in.Stream)
	if in.Status != InputOK {
		// the request was not read: whether it asked to stream is not
		// known, the Content-Type says (the request's own finding says
		// why it is in doubt)
		ct, ctDoubt = bodyJSON, ""
		if isEventStream(x.ContentType) {
			ct = bodyStream
		}
	}
	if x.Status >= 400 && !isEventStream(x.ContentType) {
		// the SDKs read an error status's body as the error, never as a
		// stream
		ct, ctDoubt = bodyJSON, ""
	}
	if ctDoubt != "" {
		doubt = strings.TrimPrefix(doubt+"; "+ctDoubt, "; ")
	}
	if ct == bodyStream {
		a := newAssemblerLimits(api, lim)
		a.SetHTTPStatus(x.Status)
		a.Feed(body)
		out = a.Finish(x.Cut)
	} else {
		out = parseResponse(api, x.Status, "application/json", body, lim)
		if x.Cut {
			out.degrade(StatusPartial)
			out.problem("the response was cut before its end")
		}
	}
	if doubt != "" {
		out.degrade(statusAmbiguous)
		out.problem("%s", doubt)
	}
	if x.ContentEncoding != "" {
		out.Body = refOf(x.ResponseBody) // the bytes as sent, which the cassette holds
	}
	return api, in, out
}

// decodeBody undoes a response's Content-Encoding (internal/httpcoding);
// doubt says where a client's reading may differ from the body returned.
func decodeBody(b []byte, enc string, lim limits) (body []byte, doubt string, err error) {
	if enc == "" {
		return b, "", nil
	}
	r, err := httpcoding.Decode(b, enc, int64(max(lim.MaxBodyBytes, lim.MaxEventBytes)))
	if err != nil {
		return nil, "", err
	}
	if r.Doubt != "" {
		doubt = fmt.Sprintf("Content-Encoding %q: %s", enc, r.Doubt)
	}
	return r.Body, doubt, nil
}

// How the SDKs read a response body.
const (
	bodyJSON   = "json"
	bodyStream = "stream"
)

// contentTypeOf says how the SDKs (openai, @anthropic-ai/sdk) read a
// response: as server-sent events whenever the request asked to stream,
// whatever the Content-Type; otherwise as JSON when the media type (before
// any ';', trimmed) contains application/json or ends in +json (the
// Anthropic SDK compares it as sent, the openai SDK lower-cased), and as
// text when not. doubt says where they differ from each other or read no
// JSON at all.
func contentTypeOf(ct string, stream bool) (how, doubt string) {
	if stream {
		return bodyStream, ""
	}
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.TrimSpace(mt)
	isJSON := func(m string) bool { return strings.Contains(m, "application/json") || strings.HasSuffix(m, "+json") }
	switch {
	case isJSON(mt):
		return bodyJSON, ""
	case isJSON(strings.ToLower(mt)):
		return bodyJSON, fmt.Sprintf("Content-Type %q: the openai SDK reads the body as JSON, the Anthropic SDK as text", ct)
	case isEventStream(ct):
		return bodyStream, fmt.Sprintf("Content-Type %q on an answer to a request that did not ask to stream: the SDKs read the body as text", ct)
	}
	return bodyJSON, fmt.Sprintf("Content-Type %q is not JSON: the SDKs read the body as text, not as the answer read here", ct)
}
