package bundle

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/agent-trace-witness/witness/keyring"
)

// Signature algorithm bytes of C2SP signed-note key hashes.
const (
	AlgEd25519       byte = 0x01 // a log's Ed25519 checkpoint signature
	AlgCosignatureV1 byte = 0x04 // a witness's tlog-cosignature v1
)

// KeyHash is the 4-byte key hash of a signed-note signature line:
// the first 4 bytes of sha256(name || "\n" || alg || public key).
func KeyHash(name string, alg byte, pub ed25519.PublicKey) uint32 {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte{'\n', alg})
	h.Write(pub)
	return binary.BigEndian.Uint32(h.Sum(nil))
}

// VerifierKey returns the signed-note verifier key ("name+hash+base64")
// of a log's Ed25519 public key.
func VerifierKey(name string, pub ed25519.PublicKey) (string, error) {
	return note.NewEd25519VerifierKey(name, pub)
}

// CosignatureMessage is what a witness signs (C2SP tlog-cosignature v1):
// "cosignature/v1", the time in seconds since the epoch, then the
// checkpoint body.
func CosignatureMessage(t uint64, body string) []byte {
	return []byte("cosignature/v1\ntime " + strconv.FormatUint(t, 10) + "\n" + body)
}

// Checkpoint is a verified tlog-checkpoint.
type Checkpoint struct {
	Origin string
	Size   uint64
	Root   []byte
	Body   string // the note text the signatures sign
	Raw    []byte // the whole signed note, cosignatures included
	note   *note.Note
}

// ErrCheckpoint marks a checkpoint that is malformed or whose log
// signature does not verify.
var ErrCheckpoint = errors.New("checkpoint does not verify")

// OpenCheckpoint verifies a signed checkpoint with the log's verifier key
// (signed-note "origin+hash+base64") and parses its body. Signatures by
// other keys (cosignatures) are kept for Cosignatures.
func OpenCheckpoint(raw []byte, logKey string) (*Checkpoint, error) {
	v, err := note.NewVerifier(logKey)
	if err != nil {
		return nil, fmt.Errorf("log key %q: %w", logKey, err)
	}
	n, err := note.Open(raw, note.VerifierList(v))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCheckpoint, err)
	}
	c, err := parseCheckpointBody(n.Text)
	if err != nil {
		return nil, err
	}
	if c.Origin != v.Name() {
		return nil, fmt.Errorf("%w: origin %q is not the log key's name %q", ErrCheckpoint, c.Origin, v.Name())
	}
	c.Raw, c.note = raw, n
	return c, nil
}

// parseCheckpointBody parses the text of a tlog-checkpoint: origin, tree
// size in decimal, base64 root hash, then optional extension lines.
func parseCheckpointBody(text string) (*Checkpoint, error) {
	if !strings.HasSuffix(text, "\n") {
		return nil, fmt.Errorf("%w: body does not end with a newline", ErrCheckpoint)
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) < 3 {
		return nil, fmt.Errorf("%w: body has %d lines, want at least 3", ErrCheckpoint, len(lines))
	}
	if lines[0] == "" {
		return nil, fmt.Errorf("%w: line 1: empty origin", ErrCheckpoint)
	}
	size, err := strconv.ParseUint(lines[1], 10, 64)
	if err != nil || strconv.FormatUint(size, 10) != lines[1] {
		return nil, fmt.Errorf("%w: line 2: tree size %q is not a decimal number", ErrCheckpoint, lines[1])
	}
	root, err := base64.StdEncoding.Strict().DecodeString(lines[2])
	if err != nil || len(root) != sha256.Size {
		return nil, fmt.Errorf("%w: line 3: root hash is not 32 bytes of base64", ErrCheckpoint)
	}
	for i, l := range lines[3:] {
		if l == "" {
			return nil, fmt.Errorf("%w: line %d: empty extension line", ErrCheckpoint, i+4)
		}
	}
	return &Checkpoint{Origin: lines[0], Size: size, Root: root, Body: text}, nil
}

// Witness is a witness a verifier trusts: the name it cosigns under and
// its Ed25519 public key.
type Witness struct {
	Name string
	Key  ed25519.PublicKey
}

// WitnessesFromTrust returns the witnesses of a trust file: each key's
// key_id is the name the witness cosigns under. Revoked keys are left out.
func WitnessesFromTrust(t *keyring.TrustSet) ([]Witness, error) {
	var ws []Witness
	for _, k := range t.Keys {
		if k.RevokedAt != "" {
			continue
		}
		pub, err := base64.StdEncoding.Strict().DecodeString(k.PublicKey)
		if err != nil || len(pub) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("trust key %s: public key is not %d bytes of base64", k.KeyID, ed25519.PublicKeySize)
		}
		ws = append(ws, Witness{Name: k.KeyID, Key: pub})
	}
	return ws, nil
}

// Cosignature is one cosignature that verified.
type Cosignature struct {
	Name string // the witness name on the signature line
	Time uint64 // the time it signed, seconds since the epoch
	Key  string // base64 public key: what tells witnesses apart
}

// errCosignature marks a cosignature by a trusted witness that does not verify.
var errCosignature = errors.New("cosignature does not verify")

// Cosignatures returns the checkpoint's cosignatures that verify under the
// given witnesses, in signature order. A signature line whose name and key
// hash are a trusted witness's and that does not verify is an error
// (ErrCosignature): someone changed the checkpoint or the signature.
func (c *Checkpoint) Cosignatures(ws []Witness) ([]Cosignature, error) {
	var out []Cosignature
	if c.note == nil {
		return nil, nil
	}
	for _, s := range c.note.UnverifiedSigs {
		for _, w := range ws {
			if s.Name != w.Name || s.Hash != KeyHash(w.Name, AlgCosignatureV1, w.Key) {
				continue
			}
			raw, err := base64.StdEncoding.DecodeString(s.Base64)
			if err != nil || len(raw) != 4+8+ed25519.SignatureSize {
				return nil, fmt.Errorf("%w: witness %s: not a cosignature/v1 signature", errCosignature, w.Name)
			}
			t := binary.BigEndian.Uint64(raw[4:12])
			if !ed25519.Verify(w.Key, CosignatureMessage(t, c.Body), raw[12:]) {
				return nil, fmt.Errorf("%w: witness %s", errCosignature, w.Name)
			}
			out = append(out, Cosignature{Name: w.Name, Time: t, Key: base64.StdEncoding.EncodeToString(w.Key)})
		}
	}
	return out, nil
}

// DistinctWitnesses counts cosignatures by distinct key material: one key
// under two names counts once.
func DistinctWitnesses(cs []Cosignature) int {
	seen := map[string]bool{}
	for _, c := range cs {
		seen[c.Key] = true
	}
	return len(seen)
}

// AddSignatures returns the signed note raw with the signature lines sigs
// ("— name base64\n" each) appended, skipping lines it already holds.
func AddSignatures(raw, sigs []byte) []byte {
	out := append([]byte(nil), raw...)
	for _, l := range bytes.SplitAfter(sigs, []byte("\n")) {
		if len(bytes.TrimSpace(l)) == 0 || bytes.Contains(out, l) {
			continue
		}
		out = append(out, l...)
	}
	return out
}
