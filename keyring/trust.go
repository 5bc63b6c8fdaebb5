package keyring

import (
	"fmt"
	"os"
	"slices"
	"sort"

	"golang.org/x/mod/sumdb/note"

	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/jsontree"
)

// trustFormat is the format string of trust files.
const trustFormat = "witness-trust/v1"

// TrustedKey is one public key a verifier trusts.
type TrustedKey struct {
	KeyID     string
	Algorithm string // AlgEd25519
	PublicKey string // standard base64
	CreatedAt string
	RevokedAt string // "" when not revoked
}

// TrustSet is a set of trusted public keys (a trust file): what a verifier
// needs to check Ed25519 seals and cosignatures, with no secrets.
type TrustSet struct {
	Keys []TrustedKey
	// LogKeys are the signed-note verifier keys ("origin+hash+base64") of
	// the transparency logs the verifier trusts (docs/design/transparency.md):
	// they pin a log's checkpoint key for verify's anchoring check and
	// vouch for nothing else (no seal, no session end, no cosignature).
	LogKeys []string
}

// ExportTrust returns the keyring's Ed25519 public keys (revoked ones keep
// their revocation time, so verifiers refuse them too).
func (k *Keyring) ExportTrust() (*TrustSet, error) {
	t := &TrustSet{}
	for _, e := range k.entries {
		if e.Algorithm != AlgEd25519 {
			continue
		}
		t.Keys = append(t.Keys, TrustedKey{KeyID: e.KeyID, Algorithm: e.Algorithm, PublicKey: e.PublicKey, CreatedAt: e.CreatedAt, RevokedAt: e.RevokedAt})
	}
	if len(t.Keys) == 0 {
		return nil, exitcode.New(exitcode.Usage, fmt.Errorf("keyring %s has no ed25519 key to export (hmac keys have no public half)", k.path),
			"create one with 'witness key generate' or 'witness key rotate --alg ed25519'")
	}
	return t, nil
}

// Merge adds o's keys to t. The same key id with a different public key is
// refused; a revocation in either wins.
func (t *TrustSet) Merge(o *TrustSet) error {
	for _, k := range o.Keys {
		found := false
		for i := range t.Keys {
			if t.Keys[i].KeyID != k.KeyID {
				continue
			}
			found = true
			if t.Keys[i].PublicKey != k.PublicKey || t.Keys[i].Algorithm != k.Algorithm {
				return exitcode.New(exitcode.Usage, fmt.Errorf("trust files disagree on key %s: different public keys", k.KeyID), "")
			}
			if t.Keys[i].RevokedAt == "" {
				t.Keys[i].RevokedAt = k.RevokedAt
			}
		}
		if !found {
			t.Keys = append(t.Keys, k)
		}
	}
	sort.SliceStable(t.Keys, func(i, j int) bool { return t.Keys[i].KeyID < t.Keys[j].KeyID })
	for _, lk := range o.LogKeys {
		if !slices.Contains(t.LogKeys, lk) {
			t.LogKeys = append(t.LogKeys, lk)
		}
	}
	sort.Strings(t.LogKeys)
	return nil
}

// Marshal returns the trust file bytes: indented canonical JSON and a
// trailing newline.
func (t *TrustSet) Marshal() ([]byte, error) {
	keys := make([]map[string]any, 0, len(t.Keys))
	for _, k := range t.Keys {
		m := map[string]any{"key_id": k.KeyID, "algorithm": k.Algorithm, "public_key": k.PublicKey, "created_at": k.CreatedAt}
		if k.RevokedAt != "" {
			m["revoked_at"] = k.RevokedAt
		}
		keys = append(keys, m)
	}
	m := map[string]any{"format": trustFormat, "keys": keys}
	if len(t.LogKeys) > 0 {
		m["log_keys"] = t.LogKeys
	}
	c, err := canon.Marshal(m)
	if err != nil {
		return nil, err
	}
	ind, err := canon.Indent(c)
	if err != nil {
		return nil, err
	}
	return append(ind, '\n'), nil
}

// LoadTrust reads a trust file.
func LoadTrust(path string) (*TrustSet, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, exitcode.Input("read trust file", err, "check the path given to --trust; write one with 'witness key export-public --out FILE'")
	}
	return ParseTrust(data, path)
}

// ParseTrust parses trust file content (named name in errors).
func ParseTrust(data []byte, name string) (*TrustSet, error) {
	bad := func(err error) error {
		return exitcode.New(exitcode.Usage, fmt.Errorf("trust file %w", err), "write trust files with 'witness key export-public'")
	}
	root, err := jsontree.Parse(data, name)
	if err != nil {
		return nil, bad(err)
	}
	var perr error
	top := jsontree.NewObjectReader(name, "", root, &perr)
	if f := top.String("format", true); perr == nil && f != trustFormat {
		top.Fail("format", fmt.Sprintf("want %q, got %q", trustFormat, f))
	}
	t := &TrustSet{}
	seen := map[string]bool{}
	top.Objects("keys", true, func(i int, r *jsontree.ObjectReader) {
		k := TrustedKey{
			KeyID:     r.String("key_id", true),
			Algorithm: r.String("algorithm", true),
			PublicKey: r.String("public_key", true),
			CreatedAt: r.String("created_at", false),
		}
		k.RevokedAt, _ = r.OptString("revoked_at")
		r.Done()
		if perr != nil {
			return
		}
		switch {
		case k.KeyID == "":
			r.Fail("key_id", "must be non-empty")
		case seen[k.KeyID]:
			r.Fail("key_id", fmt.Sprintf("duplicate key_id %q", k.KeyID))
		case k.Algorithm != AlgEd25519:
			r.Fail("algorithm", fmt.Sprintf("want %q, got %q", AlgEd25519, k.Algorithm))
		default:
			if err := checkPublic(Entry{KeyID: k.KeyID, PublicKey: k.PublicKey}); err != nil {
				r.Fail("public_key", err.Error())
			}
		}
		seen[k.KeyID] = true
		t.Keys = append(t.Keys, k)
	})
	t.LogKeys = parseLogKeys(top, &perr)
	top.Done()
	if perr != nil {
		return nil, bad(perr)
	}
	return t, nil
}

// CheckLogKey checks that vkey is a log's signed-note verifier key
// ("origin+hash+base64" of an Ed25519 key, the "log key:" line of
// 'witness log init').
func CheckLogKey(vkey string) error {
	if _, err := note.NewVerifier(vkey); err != nil {
		return fmt.Errorf("%q is not a signed-note verifier key (origin+hash+base64): %w", vkey, err)
	}
	return nil
}

// parseLogKeys reads the optional "log_keys" member of a trust file: each
// a signed-note verifier key (note.NewVerifier knows only Ed25519), none twice.
func parseLogKeys(top *jsontree.ObjectReader, perr *error) []string {
	lks := top.Strings("log_keys", false)
	if *perr != nil {
		return nil
	}
	for i, lk := range lks {
		switch err := CheckLogKey(lk); {
		case err != nil:
			top.Fail("log_keys", fmt.Sprintf("key %d: %v", i, err))
		case slices.Contains(lks[:i], lk):
			top.Fail("log_keys", fmt.Sprintf("key %d (%s) is listed twice", i, lk))
		default:
			continue
		}
		return nil
	}
	return lks
}

// Verify checks an Ed25519 signature with the trusted key keyID ("" tries
// every trusted key). A revoked key never verifies, nor does the same public
// key listed under another id. See Verifier, which also says who signed.
func (t *TrustSet) Verify(keyID, alg string, msg []byte, sig string) error {
	if alg != SigEd25519 {
		return fmt.Errorf("trust files hold ed25519 public keys; cannot check a %q signature: %w", alg, ErrAlgorithm)
	}
	return NewVerifier(nil, t, nil).Verify(keyID, alg, msg, sig)
}

// has reports whether keyID is in the set and not revoked.
func (t *TrustSet) has(keyID string) bool {
	for _, k := range t.Keys {
		if k.KeyID == keyID {
			return k.RevokedAt == ""
		}
	}
	return false
}
