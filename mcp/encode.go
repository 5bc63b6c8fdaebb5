package mcp

import (
	"encoding/json"
	"strconv"
)

// Request returns the bytes of a request (without newline) with an integer
// id. params must be a JSON object or nil. Key order is fixed:
// jsonrpc, id, method, params.
func Request(id int64, method string, params json.RawMessage) []byte {
	return build(json.RawMessage(strconv.FormatInt(id, 10)), method, params, nil, nil)
}

// Notification returns the bytes of a notification (without newline).
func Notification(method string, params json.RawMessage) []byte {
	return build(nil, method, params, nil, nil)
}

// Result returns a response carrying result for the exact id token.
func Result(id json.RawMessage, result json.RawMessage) []byte {
	return build(id, "", nil, result, nil)
}

// ErrorResponse returns an error response for the exact id token.
func ErrorResponse(id json.RawMessage, code int, message string) []byte {
	msg, _ := json.Marshal(message)
	e := []byte(`{"code":` + strconv.Itoa(code) + `,"message":` + string(msg) + `}`)
	return build(id, "", nil, nil, e)
}

// JSON-RPC error codes used by the witness.
const (
	CodeMethodNotFound = -32601
	codeInvalidParams  = -32602
)

func build(id json.RawMessage, method string, params, result, errObj json.RawMessage) []byte {
	b := make([]byte, 0, 64+len(params)+len(result)+len(errObj))
	b = append(b, `{"jsonrpc":"2.0"`...)
	if id != nil {
		b = append(b, `,"id":`...)
		b = append(b, id...)
	}
	if method != "" {
		m, _ := json.Marshal(method)
		b = append(b, `,"method":`...)
		b = append(b, m...)
	}
	if params != nil {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	if result != nil {
		b = append(b, `,"result":`...)
		b = append(b, result...)
	}
	if errObj != nil {
		b = append(b, `,"error":`...)
		b = append(b, errObj...)
	}
	return append(b, '}')
}
