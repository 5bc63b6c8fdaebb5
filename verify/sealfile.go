package verify

import (
	"os"

	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/seal"
)

// SealFile is a seal read from --seal: a seal file, or the DSSE envelope
// 'witness seal --envelope dsse' writes around one.
type SealFile struct {
	// Sealed is the seal; nil when the file is not a valid seal or
	// envelope (Err then carries exitcode.Tampered).
	Sealed *seal.Sealed
	// Envelope is the outcome of the envelope's signatures; nil for a
	// plain seal file.
	Envelope *seal.EnvelopeResult
	// Err is why the seal or envelope cannot be relied on: tampered (a
	// malformed file, a bad envelope signature) or unauthenticated (an
	// envelope no held key signed; Sealed is then set).
	Err error
}

// LoadSeal reads the seal file path. A file of another kind (an event
// log, a cassette, a graph...) is a usage error whose hint names the flag
// or command that reads it; an unreadable file is exitcode.Input. Every
// other outcome is in the SealFile: a DSSE envelope (recognised by its
// payloadType) is verified with the keyring's and trust file's Ed25519
// keys (seal.VerifyEnvelopeWith), and the seal it carries is returned.
func LoadSeal(path string, keys seal.VerifyOptions) (*SealFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, exitcode.Input("read seal", err, "check the path of the seal file")
	}
	kind := sniffKind(data)
	if err := wrongKind("--seal", path, kind, kindSeal, kindEnvelope); err != nil {
		return nil, err
	}
	if kind == kindEnvelope {
		s, res, err := seal.VerifyEnvelopeWith(data, path, seal.EnvelopeOptions{Keyring: keys.Keyring, Trust: keys.Trust})
		return &SealFile{Sealed: s, Envelope: res, Err: err}, nil
	}
	s, err := seal.Parse(data, path)
	return &SealFile{Sealed: s, Err: err}, nil
}
