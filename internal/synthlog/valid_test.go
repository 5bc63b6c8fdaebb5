package synthlog

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/keyring"
)

type hmacCheck struct{ key []byte }

func (h hmacCheck) Verify(keyID, alg string, msg []byte, sig string) error {
	s, err := keyring.LegacySigner(hex.EncodeToString(h.key))
	if err != nil {
		return err
	}
	if !keyring.SignedBy(s, msg, alg, sig) {
		return errors.New("bad signature")
	}
	return nil
}

// GenerateWith makes a valid capture (issue 33): verify's chain rules find
// nothing, the session id derived, the end signed; Generate's shape (a
// given session, an unsigned end) is kept for its callers.
func TestGenerateWithIsValidCapture(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	sg, err := keyring.LegacySigner(hex.EncodeToString(key))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := GenerateWith(&b, 500, 3, Options{Signers: []eventlog.Signer{sg}}); err != nil {
		t.Fatal(err)
	}
	rep, err := eventlog.VerifyLog(bytes.NewReader(b.Bytes()), "gen.jsonl", eventlog.VerifyLogOptions{Verifier: hmacCheck{key}})
	if rep == nil || err != nil || rep.Err() != nil || rep.Lines != 500 {
		t.Fatalf("not a valid capture: %v %v %+v", err, rep.Err(), rep)
	}
	var old bytes.Buffer
	if err := Generate(&old, 500, 3, "bench-500"); err != nil {
		t.Fatal(err)
	}
	rep, _ = eventlog.VerifyLog(bytes.NewReader(old.Bytes()), "old.jsonl", eventlog.VerifyLogOptions{AllowUnsigned: true})
	if rep == nil || rep.Err() == nil {
		t.Fatalf("Generate's given session id should still be reported as not derived")
	}
}
