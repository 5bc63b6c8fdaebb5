package eventlog

import (
	"encoding/json"
	"errors"
	"strconv"

	"github.com/agent-trace-witness/witness/internal/canon"
)

// errSlowPath makes appendEvent give up so that EncodeEvent takes the
// general path (json.Marshal, then canon.Transform), which defines the
// bytes; the fast path only ever produces the same bytes faster.
var errSlowPath = errors.New("slow path")

// encodeEventFast writes the canonical JSON of e directly, members in
// canonical (sorted) order. payloadCanonical says that e.Payload and
// e.RPCID are already canonical (the Writer made them so).
//
// Its cyclomatic complexity (about 44) is that of a table-driven encoder:
// one "if the member is set, write it" per member of the event, in the
// order canonical JSON fixes; the bytes are defined by the general path,
// which the tests compare it with.
func encodeEventFast(e *Event, payloadCanonical bool) ([]byte, error) {
	b := make([]byte, 0, 256+len(e.Payload))
	first := true
	var err error
	key := func(k string) {
		if first {
			b = append(b, '{', '"')
			first = false
		} else {
			b = append(b, ',', '"')
		}
		b = append(b, k...) // keys are ASCII names that need no escaping
		b = append(b, '"', ':')
	}
	str := func(k, v string, omitEmpty bool) {
		if err != nil || (omitEmpty && v == "") {
			return
		}
		key(k)
		b, err = canon.AppendString(b, v)
	}
	raw := func(k string, v json.RawMessage, known bool) {
		if err != nil || len(v) == 0 {
			return
		}
		key(k)
		if known {
			b = append(b, v...)
			return
		}
		var c []byte
		if c, err = canon.Transform(v); err == nil {
			b = append(b, c...)
		}
	}
	sub := func(k string, v any) {
		if err != nil {
			return
		}
		key(k)
		var c []byte
		if c, err = canon.Marshal(v); err == nil {
			b = append(b, c...)
		}
	}
	str("call", e.Call, true)
	str("cause", e.Cause, true)
	str("concerns", e.Concerns, true)
	str("direction", e.Direction, true)
	str("during", e.During, true)
	if len(e.DuringCandidates) > 0 {
		sub("during_candidates", e.DuringCandidates)
	}
	if e.Effect != nil && err == nil {
		key("effect")
		b = append(b, `{"op":`...)
		b, err = canon.AppendString(b, e.Effect.Op)
		if err == nil && e.Effect.Reason != "" {
			b = append(b, `,"reason":`...)
			b, err = canon.AppendString(b, e.Effect.Reason)
		}
		if err == nil && e.Effect.Target != "" {
			b = append(b, `,"target":`...)
			b, err = canon.AppendString(b, e.Effect.Target)
		}
		b = append(b, '}')
	}
	if e.End != nil {
		sub("end", e.End)
	}
	if e.Header != nil {
		sub("header", e.Header)
	}
	str("id", e.ID, false)
	str("input", e.Input, true)
	if e.IsError != nil && err == nil {
		key("is_error")
		b = strconv.AppendBool(b, *e.IsError)
	}
	str("kind", string(e.Kind), false)
	if e.Legacy != nil && err == nil {
		l := e.Legacy
		key("legacy")
		b = append(b, `{"format":`...)
		b, err = canon.AppendString(b, l.Format)
		b = append(b, `,"line":`...)
		b = appendInt(b, l.Line)
		if l.Orphan {
			b = append(b, `,"orphan":true`...)
		}
		if err == nil && l.SealRef != "" {
			b = append(b, `,"seal_ref":`...)
			b, err = canon.AppendString(b, l.SealRef)
		}
		if l.Unsealed != nil {
			b = append(b, `,"unsealed":`...)
			b = strconv.AppendBool(b, *l.Unsealed)
		}
		b = append(b, '}')
	}
	if e.Message != nil {
		sub("message", e.Message)
	}
	str("method", e.Method, true)
	if len(e.Numbers) > 0 {
		sub("numbers", e.Numbers)
	}
	raw("payload", e.Payload, payloadCanonical)
	str("payload_sha256", e.PayloadSHA256, true)
	str("prev", e.Prev, false)
	if e.Redacted && err == nil {
		key("redacted")
		b = append(b, "true"...)
	}
	str("role", e.Role, true)
	if e.RPCError && err == nil {
		key("rpc_error")
		b = append(b, "true"...)
	}
	raw("rpc_id", e.RPCID, false)
	if err == nil {
		key("seq")
		b = appendInt(b, e.Seq)
	}
	str("session", e.Session, false)
	str("source", string(e.Source), false)
	str("tool", e.Tool, true)
	str("ts", e.TS, false)
	if err == nil {
		key("v")
		b = appendInt(b, int64(e.V))
	}
	if e.Wire != nil && err == nil {
		key("wire")
		b = append(b, '{')
		if e.Wire.Cassette != "" {
			b = append(b, `"cassette":`...)
			b, err = canon.AppendString(b, e.Wire.Cassette)
			b = append(b, ',')
		}
		b = append(b, `"offsets":`...)
		if e.Wire.Offsets == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, '[')
			for i, o := range e.Wire.Offsets {
				if i > 0 {
					b = append(b, ',')
				}
				b = appendInt(b, o)
			}
			b = append(b, ']')
		}
		if e.Wire.X != 0 {
			b = append(b, `,"x":`...)
			b = appendInt(b, e.Wire.X)
		}
		b = append(b, '}')
	}
	if err != nil {
		return nil, errSlowPath
	}
	b = append(b, '}')
	return b, nil
}

// appendInt writes n as canonical JSON writes an integer: exact below 2^53.
func appendInt(b []byte, n int64) []byte {
	if n > -(1<<53) && n < 1<<53 {
		return strconv.AppendInt(b, n, 10)
	}
	s, err := canon.FormatNumber(strconv.FormatInt(n, 10))
	if err != nil {
		return append(b, "null"...)
	}
	return append(b, s...)
}
