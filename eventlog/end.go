package eventlog

import (
	"errors"
	"fmt"
)

// Signer signs the end of an event log. Package keyring provides
// implementations; the interface lives here, with its consumer.
type Signer interface {
	KeyID() string
	Algorithm() string // "hmac-sha256" | "ed25519"
	Sign(msg []byte) (string, error)
}

// SignatureVerifier checks a signature made by a Signer. It returns nil for a
// good signature, an error wrapping ErrUnknownKey when it does not hold the
// key, and any other error for a bad signature.
type SignatureVerifier interface {
	Verify(keyID, alg string, msg []byte, sig string) error
}

// ErrUnknownKey is wrapped by SignatureVerifier errors for keys the verifier
// does not hold.
var ErrUnknownKey = errors.New("unknown key")

// EndOptions control the session_end line.
type EndOptions struct {
	Signers []Signer
	TS      string
	Reason  string // why the session ended: "completed", "server exited", "appended", ...
	Failure string // why recording failed, if it did (End.Failure)
	Source  Source // observed when empty
}

// Finish writes the session_end line: the count of lines before it, the
// chain head, and one signature per signer over EndMessage.
func Finish(w *Writer, signers []Signer, ts string) error {
	return FinishWith(w, EndOptions{Signers: signers, TS: ts})
}

// FinishWith is Finish with a reason and a source.
func FinishWith(w *Writer, o EndOptions) error {
	src := o.Source
	if src == "" {
		src = SourceObserved
	}
	e := &Event{
		V:       FormatVersion,
		Seq:     w.seq,
		ID:      EventID(w.seq),
		Session: w.session,
		Kind:    KindSessionEnd,
		TS:      o.TS,
		Source:  src,
		Prev:    w.head,
		End:     &End{Count: w.seq, Head: w.head, Reason: o.Reason, Failure: o.Failure},
	}
	msg, err := endMessage(e)
	if err != nil {
		return fmt.Errorf("finish log: %w", err)
	}
	for _, s := range o.Signers {
		sig, err := s.Sign(msg)
		if err != nil {
			return fmt.Errorf("finish log: sign with key %s: %w", s.KeyID(), err)
		}
		e.End.Signatures = append(e.End.Signatures, Signature{KeyID: s.KeyID(), Alg: s.Algorithm(), Sig: sig})
	}
	if err := w.Append(e); err != nil {
		return fmt.Errorf("finish log: %w", err)
	}
	return nil
}

// endMessage returns the bytes a session_end's signatures sign: the
// canonical JSON of the whole line without End.Signatures. It holds the
// count, the chain head and the session id, and covers every other byte of
// the line too.
func endMessage(e *Event) ([]byte, error) {
	if e.Kind != KindSessionEnd || e.End == nil {
		return nil, errors.New("end message: not a session_end event")
	}
	c := *e
	end := *e.End
	end.Signatures = nil
	c.End = &end
	return EncodeEvent(&c)
}

// UnknownKeyAs wraps v so that its errors matching any of the sentinels (for
// package keyring: keyring.ErrUnknownKey, keyring.ErrRevoked) also match
// ErrUnknownKey: VerifyLog then reports those signatures as untrusted
// rather than invalid.
func UnknownKeyAs(v SignatureVerifier, sentinels ...error) SignatureVerifier {
	return unknownKeyAs{v: v, sentinels: sentinels}
}

type unknownKeyAs struct {
	v         SignatureVerifier
	sentinels []error
}

func (u unknownKeyAs) Verify(keyID, alg string, msg []byte, sig string) error {
	err := u.v.Verify(keyID, alg, msg, sig)
	if err == nil {
		return nil
	}
	for _, s := range u.sentinels {
		if errors.Is(err, s) {
			return fmt.Errorf("%w (%w)", err, ErrUnknownKey)
		}
	}
	return err
}
