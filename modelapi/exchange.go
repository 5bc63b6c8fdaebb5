package modelapi

import (
	"errors"
)

// Exchange is one recorded HTTP exchange with a model API.
type Exchange struct {
	Method, Path string
	RequestBody  []byte
	// Status and ContentType of the response; Status 0 when no response
	// came.
	Status       int
	ContentType  string
	ResponseBody []byte
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
	in, err := ParseRequest(api, x.RequestBody)
	if err != nil {
		in = &Input{API: api, Status: InputInvalid, Body: refOf(x.RequestBody)}
		var ae *AmbiguousError
		if errors.As(err, &ae) {
			in.Status = InputAmbiguous
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
	lim := DefaultLimits()
	if IsEventStream(x.ContentType) {
		a := NewAssemblerLimits(api, lim)
		a.SetHTTPStatus(x.Status)
		a.Feed(x.ResponseBody)
		return api, in, a.Finish(x.Cut)
	}
	out = parseResponse(api, x.Status, x.ContentType, x.ResponseBody, lim)
	if x.Cut {
		out.degrade(StatusPartial)
		out.problem("the response was cut before its end")
	}
	return api, in, out
}
