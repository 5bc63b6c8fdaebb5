package eventlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agent-trace-witness/witness/internal/canon"
)

// AmbiguousLine is the payload of an "ambiguous" event: a wire line that
// is not exactly one message with a single reading (docs/design/wire-reading.md).
// It keeps the line's exact bytes, why it is ambiguous, and every reading a
// peer could act on.
type AmbiguousLine struct {
	Direction string `json:"direction"` // "c2s" (host to server) or "s2c"
	Bytes     int    `json:"bytes"`     // length of the line without its newline
	SHA256    string `json:"sha256"`    // sha256 hex of the line's bytes
	// Text is the exact line when it is valid UTF-8 without control
	// characters; Base64 (standard, with padding) holds its bytes
	// otherwise. Exactly one is set.
	Text    string   `json:"text,omitempty"`
	Base64  string   `json:"base64,omitempty"`
	Partial bool     `json:"partial,omitempty"` // the stream ended without a newline
	Reasons []string `json:"reasons"`
	// Readings are what a peer could act on, by decoder family
	// (mcp.Reading); ReadingsDropped counts values of a huge batch that
	// were not read.
	Readings        []AmbiguousReading `json:"readings,omitempty"`
	ReadingsDropped int                `json:"readings_dropped,omitempty"`
}

// AmbiguousReading is one reading of an ambiguous line. Ids and arguments
// appear as canonical JSON when it carries their exact text, else as the
// exact wire text in a string (RPCIDText, ArgumentsText).
type AmbiguousReading struct {
	Decoders      []string        `json:"decoders"`
	Kind          string          `json:"kind"` // request, notification, response, invalid
	Method        string          `json:"method,omitempty"`
	RPCID         json.RawMessage `json:"rpc_id,omitempty"`
	RPCIDText     string          `json:"rpc_id_text,omitempty"`
	Tool          *string         `json:"tool,omitempty"` // tools/call: params.name
	Arguments     json.RawMessage `json:"arguments,omitempty"`
	ArgumentsText string          `json:"arguments_text,omitempty"`
	// ArgumentsSHA256 replaces both when the readings' arguments together
	// exceed MaxEmbeddedArguments: the sha256 hex of the exact text (the
	// line itself is in Text or Base64).
	ArgumentsSHA256 string `json:"arguments_sha256,omitempty"`
	// URI is params.uri of a resources/read, resources/subscribe or
	// resources/unsubscribe reading, and Prompt params.name of a
	// prompts/get reading, as this decoder resolves them; nil when absent
	// or not a string (verify checks each against the seal, issue 11).
	URI    *string `json:"uri,omitempty"`
	Prompt *string `json:"prompt,omitempty"`
}

// MaxEmbeddedArguments bounds the argument bytes the readings of one
// ambiguous event embed, so that its line stays far below the event
// reader's line limit whatever the wire line holds.
const MaxEmbeddedArguments = 4 << 20

// ArgumentsJSON returns the reading's arguments as JSON text: the canonical
// form or the exact wire text (which may hold numbers or strings canonical
// JSON refuses); nil when the reading has none.
func (r *AmbiguousReading) ArgumentsJSON() json.RawMessage {
	if r.Arguments != nil {
		return r.Arguments
	}
	if r.ArgumentsText != "" {
		return json.RawMessage(r.ArgumentsText)
	}
	return nil
}

// IDToken returns the exact JSON-RPC id token of the reading, nil if none.
func (r *AmbiguousReading) IDToken() json.RawMessage {
	if r.RPCIDText != "" {
		return json.RawMessage(r.RPCIDText)
	}
	return r.RPCID
}

// ParseAmbiguousLine reads the payload of an ambiguous event. Member names
// match exactly: the payload must be the canonical form of what it decodes
// to, so a case variant, an unknown or a duplicated member is refused.
func ParseAmbiguousLine(payload json.RawMessage) (*AmbiguousLine, error) {
	var a AmbiguousLine
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return nil, fmt.Errorf("ambiguous line payload: %w", err)
	}
	back, err := canon.Marshal(&a)
	if err != nil {
		return nil, fmt.Errorf("ambiguous line payload: %w", err)
	}
	c, err := canon.Transform(payload)
	if err != nil || !bytes.Equal(back, c) {
		return nil, errors.New("ambiguous line payload: not in the form the witness writes (a renamed, repeated or unknown member)")
	}
	return &a, nil
}
