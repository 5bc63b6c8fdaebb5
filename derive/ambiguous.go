package derive

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/mcp"
	"unicode/utf8"
)

// newAmbiguousLine describes line (read in direction dir) with its reasons
// and the readings rd.
func newAmbiguousLine(dir string, line []byte, partial bool, reasons []string, rd mcp.Readings) *eventlog.AmbiguousLine {
	sum := sha256.Sum256(line)
	a := &eventlog.AmbiguousLine{Direction: dir, Bytes: len(line), SHA256: hex.EncodeToString(sum[:]), Partial: partial,
		Reasons: append([]string{}, reasons...), ReadingsDropped: rd.Dropped}
	if utf8.Valid(line) && !hasControl(line) {
		a.Text = string(line)
	} else {
		a.Base64 = base64.StdEncoding.EncodeToString(line)
	}
	budget := eventlog.MaxEmbeddedArguments
	for _, r := range rd.List {
		ar := eventlog.AmbiguousReading{Decoders: r.Decoders, Kind: string(r.Kind), Method: r.Method}
		if r.ID != nil {
			if exactJSON(r.ID) {
				ar.RPCID = canonOrNil(r.ID)
			} else {
				ar.RPCIDText = string(r.ID)
			}
		}
		if r.HasTool {
			t := r.Tool
			ar.Tool = &t
		}
		if r.Arguments != nil && budget < len(r.Arguments) {
			sum := sha256.Sum256(r.Arguments)
			ar.ArgumentsSHA256 = hex.EncodeToString(sum[:])
		} else if r.Arguments != nil {
			budget -= len(r.Arguments)
			if exactJSON(r.Arguments) {
				ar.Arguments = canonOrNil(r.Arguments)
			} else {
				ar.ArgumentsText = string(r.Arguments)
			}
		}
		a.Readings = append(a.Readings, ar)
	}
	return a
}

func hasControl(b []byte) bool {
	for _, c := range b {
		if c < 0x20 && c != '\t' && c != '\r' {
			return true
		}
	}
	return false
}

// exactJSON reports whether canonical JSON carries the value of b exactly
// (one reading, exact numbers) and, for a number token, its exact text.
func exactJSON(b []byte) bool {
	wrapped := append(append([]byte(`{"jsonrpc":"2.0","method":"x","params":[`), b...), "]}"...)
	m, err := mcp.Parse(wrapped)
	if err != nil || len(m.Numbers) > 0 {
		return false
	}
	_, err = canon.Transform(b)
	return err == nil
}

func canonOrNil(b []byte) json.RawMessage {
	c, err := canon.Transform(b)
	if err != nil {
		return nil
	}
	return c
}
