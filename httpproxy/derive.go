package httpproxy

import (
	"github.com/agent-trace-witness/witness/cassette"
	"github.com/agent-trace-witness/witness/eventlog"
)

// ExchangeDeriver turns the recorded exchanges of an HTTP session into
// events (model_input, model_output, ...). It is the one hook between the
// recording and what the bytes mean: the proxy records, the deriver reads
// the recorded (redacted) bytes.
//
// The proxy calls DeriveRequest once the request body is recorded (for a
// body the upstream reads to the end, that is when it has been forwarded),
// then DeriveResponse once the exchange is over: answered, failed, or cut
// off. Calls for one exchange come in that order, from its own goroutine;
// calls for different exchanges may run at the same time. The events
// returned are appended to the event log in order; the proxy fills their
// envelope (seq, id, session, prev), their ts when empty and their source
// (observed) when empty. requestEvents are the ids the events of
// DeriveRequest got, so that a model_output can name its model_input
// (field input). An error is recorded as the failure of the session
// (session_end.end.failure) and the exchange's events are dropped; the
// proxy goes on.
//
// Bodies are held for the deriver up to MaxDeriveBody bytes each
// (HTTPMessage.Truncated says when a body was longer).
type ExchangeDeriver interface {
	DeriveRequest(x *cassette.HTTPExchange) ([]eventlog.Event, error)
	DeriveResponse(x *cassette.HTTPExchange, requestEvents []string) ([]eventlog.Event, error)
}

// MaxDeriveBody is the most of one body held for the ExchangeDeriver.
const MaxDeriveBody = 16 << 20

// NopDeriver derives no events: the event log holds the session's start
// and its signed end. It is the default until a model API deriver is
// wired in.
type NopDeriver struct{}

// DeriveRequest implements ExchangeDeriver.
func (NopDeriver) DeriveRequest(*cassette.HTTPExchange) ([]eventlog.Event, error) { return nil, nil }

// DeriveResponse implements ExchangeDeriver.
func (NopDeriver) DeriveResponse(*cassette.HTTPExchange, []string) ([]eventlog.Event, error) {
	return nil, nil
}
