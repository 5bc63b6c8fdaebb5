package keyring

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/agent-trace-witness/witness/internal/atomicfile"
	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/jsontree"
)

// EnvKeyring names the environment variable that locates the keyring.
const EnvKeyring = "WITNESS_KEYRING"

// Options configure how a keyring is opened and changed.
type Options struct {
	// Backend is where new secrets go: "file" (default) or "os".
	Backend string
	// Service is the OS keyring service name (default "witness").
	Service string
	// Timeout bounds every OS keyring call (default 5s).
	Timeout time.Duration
	// Now is the clock for key timestamps (default time.Now). Key
	// timestamps use the real clock, not ATW_WITNESS_TS: two keys must
	// never share an id.
	Now func() time.Time
	// Rand is the randomness source for new keys (default crypto/rand).
	Rand io.Reader
	// OS is the OS secret store of the "os" backend; nil refuses that
	// backend. The command passes keyring/osstore.System.
	OS SecretStore
}

func (o Options) withDefaults() Options {
	if o.Backend == "" {
		o.Backend = BackendFile
	}
	if o.Service == "" {
		o.Service = "witness"
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Rand == nil {
		o.Rand = rand.Reader
	}
	return o
}

// Keyring is a loaded keys.json.
type Keyring struct {
	path    string
	file    string // the real path written by save ("" = path)
	opts    Options
	entries []Entry
	exists  bool
}

// DefaultPath is the one default-keyring rule of every command
// (docs/design/keyring-discovery.md): $WITNESS_KEYRING, else keys.json in
// the witness folder of the user config dir: $XDG_CONFIG_HOME when it is
// set and absolute, else $HOME/.config on Linux and the other Unixes (so a
// host that strips the environment down to HOME finds the same file),
// ~/Library/Application Support on macOS, %AppData% on Windows. A
// --keyring flag, handled by the caller, wins over both.
func DefaultPath(getenv func(string) string) (string, error) {
	if p := getenv(EnvKeyring); p != "" {
		return p, nil
	}
	var dir string
	switch runtime.GOOS {
	case "windows":
		dir = getenv("AppData")
	case "darwin", "ios":
		if h := getenv("HOME"); h != "" {
			dir = filepath.Join(h, "Library", "Application Support")
		}
	default:
		dir = getenv("XDG_CONFIG_HOME")
		if dir == "" || !filepath.IsAbs(dir) {
			dir = ""
			if h := getenv("HOME"); h != "" {
				dir = filepath.Join(h, ".config")
			}
		}
	}
	if dir == "" {
		return "", exitcode.New(exitcode.Usage, errors.New("cannot locate the keyring: no user config folder (HOME is not set)"),
			"pass --keyring PATH or set WITNESS_KEYRING")
	}
	return filepath.Join(dir, "witness", "keys.json"), nil
}

// Open loads the keyring at path. A missing file is an empty keyring that
// remembers its path. A keyring readable or writable by group or others is
// refused.
func Open(path string, opts Options) (*Keyring, error) {
	k := &Keyring{path: path, opts: opts.withDefaults()}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return k, nil
	}
	if err != nil {
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("read keyring %s: %w", path, err), "")
	}
	if err := checkMode(path); err != nil {
		return nil, err
	}
	entries, err := Parse(data, path)
	if err != nil {
		return nil, err
	}
	k.entries = entries
	k.exists = true
	return k, nil
}

func checkMode(path string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	st, err := os.Stat(path)
	if err != nil {
		return exitcode.New(exitcode.Failure, fmt.Errorf("stat keyring %s: %w", path, err), "")
	}
	if m := st.Mode().Perm(); m&0o077 != 0 {
		return exitcode.New(exitcode.Usage,
			fmt.Errorf("keyring %s is accessible by group or others (mode %04o); refusing to use it", path, m),
			"chmod 600 "+path)
	}
	return nil
}

// Parse reads keys.json content (named name in errors).
func Parse(data []byte, name string) ([]Entry, error) {
	bad := func(err error) error {
		return exitcode.New(exitcode.Usage, fmt.Errorf("keyring %w", err), "fix or restore the keyring file; 'witness key list' shows what it holds")
	}
	root, err := jsontree.Parse(data, name)
	if err != nil {
		return nil, bad(err)
	}
	var perr error
	top := jsontree.NewObjectReader(name, "", root, &perr)
	var entries []Entry
	seen := map[string]bool{}
	top.Objects("keys", false, func(i int, r *jsontree.ObjectReader) {
		e := Entry{
			KeyID:     r.String("key_id", true),
			Algorithm: r.String("algorithm", true),
			CreatedAt: r.String("created_at", true),
			Active:    r.Bool("active", false),
			Backend:   BackendFile,
		}
		e.RevokedAt, _ = r.OptString("revoked_at")
		if b, ok := r.OptString("backend"); ok {
			e.Backend = b
		}
		secret, hasSecret := r.OptString("secret")
		e.PublicKey, _ = r.OptString("public_key")
		r.Done()
		if perr != nil {
			return
		}
		switch {
		case e.KeyID == "":
			r.Fail("key_id", "must be non-empty")
		case seen[e.KeyID]:
			r.Fail("key_id", fmt.Sprintf("duplicate key_id %q", e.KeyID))
		case e.Algorithm != AlgHMAC && e.Algorithm != AlgEd25519:
			r.Fail("algorithm", fmt.Sprintf("unknown algorithm %q (known: hmac, ed25519)", e.Algorithm))
		case e.Backend != BackendFile && e.Backend != BackendOS:
			r.Fail("backend", fmt.Sprintf("unknown backend %q (known: file, os)", e.Backend))
		case e.Backend == BackendFile && !hasSecret:
			r.Fail("secret", "missing (file-backend keys hold their secret here)")
		case e.Backend == BackendOS && hasSecret:
			r.Fail("secret", "present in an os-backend entry (its secret belongs in the OS keyring)")
		case e.Algorithm == AlgEd25519 && e.PublicKey == "":
			r.Fail("public_key", "missing for an ed25519 key")
		case e.Algorithm == AlgHMAC && e.PublicKey != "":
			r.Fail("public_key", "an hmac key has no public key")
		}
		if perr != nil {
			return
		}
		seen[e.KeyID] = true
		if hasSecret {
			s, err := decodeSecret(secret)
			if err != nil {
				r.Fail("secret", err.Error())
				return
			}
			e.secret = s
		}
		if e.Algorithm == AlgEd25519 {
			if err := checkPublic(e); err != nil {
				r.Fail("public_key", err.Error())
				return
			}
		}
		entries = append(entries, e)
	})
	top.Done()
	if perr != nil {
		return nil, bad(perr)
	}
	return entries, nil
}

func decodeSecret(s string) ([]byte, error) {
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, errors.New("not hex")
	}
	if len(b) != SecretSize {
		return nil, fmt.Errorf("must decode to exactly %d bytes (%d hex characters), got %d bytes", SecretSize, 2*SecretSize, len(b))
	}
	return b, nil
}

func checkPublic(e Entry) error {
	pub, err := base64.StdEncoding.Strict().DecodeString(e.PublicKey)
	if err != nil || len(pub) != 32 {
		return errors.New("must be 32 bytes of standard base64")
	}
	if e.secret != nil {
		s, _ := signerFor(e, e.secret)
		if s.(PublicKeyer).PublicKey() != e.PublicKey {
			return errors.New("does not match the secret")
		}
	}
	return nil
}

// marshal returns the keys.json bytes for entries: 0.1.0's layout (indent
// 2, sorted keys, non-ASCII escaped, trailing newline). HMAC file-backend
// entries have exactly 0.1.0's six fields.
func marshal(entries []Entry) ([]byte, error) {
	list := make([]map[string]any, 0, len(entries))
	for _, e := range entries {
		m := map[string]any{
			"active":     e.Active,
			"algorithm":  e.Algorithm,
			"created_at": e.CreatedAt,
			"key_id":     e.KeyID,
			"revoked_at": nil,
		}
		if e.RevokedAt != "" {
			m["revoked_at"] = e.RevokedAt
		}
		if e.Backend == BackendOS {
			m["backend"] = BackendOS
		} else {
			m["secret"] = hex.EncodeToString(e.secret)
		}
		if e.PublicKey != "" {
			m["public_key"] = e.PublicKey
		}
		list = append(list, m)
	}
	c, err := canon.Marshal(map[string]any{"keys": list})
	if err != nil {
		return nil, err
	}
	ind, err := canon.Indent(c)
	if err != nil {
		return nil, err
	}
	return append(canon.ASCII(ind), '\n'), nil
}

// Path is where the keyring lives.
func (k *Keyring) Path() string { return k.path }

// Exists reports whether the keyring file existed when it was opened.
func (k *Keyring) Exists() bool { return k.exists }

// Entries returns a copy of every entry, in file order, without secrets.
func (k *Keyring) Entries() []Entry {
	out := make([]Entry, len(k.entries))
	for i, e := range k.entries {
		e.secret = nil
		out[i] = e
	}
	return out
}

// verificationKeys returns every non-revoked entry (active or not), in file
// order, without secrets.
func (k *Keyring) verificationKeys() []Entry {
	var out []Entry
	for _, e := range k.Entries() {
		if !e.Revoked() {
			out = append(out, e)
		}
	}
	return out
}

func (k *Keyring) find(id string) (int, bool) {
	for i, e := range k.entries {
		if e.KeyID == id {
			return i, true
		}
	}
	return -1, false
}

// Active returns the single active, non-revoked entry.
func (k *Keyring) Active() (Entry, error) {
	var act []Entry
	for _, e := range k.entries {
		if e.Active && !e.Revoked() {
			act = append(act, e)
		}
	}
	switch len(act) {
	case 1:
		a := act[0]
		a.secret = nil
		return a, nil
	case 0:
		return Entry{}, exitcode.New(exitcode.Usage, fmt.Errorf("keyring %s has no active key", k.path),
			"run 'witness key generate' first")
	}
	return Entry{}, exitcode.New(exitcode.Usage, fmt.Errorf("keyring %s has %d active keys, want exactly 1", k.path, len(act)),
		"revoke the extra ones with 'witness key revoke KEY_ID' (see 'witness key list')")
}

// ActiveSigner returns a signer for the active key.
func (k *Keyring) ActiveSigner() (Signer, error) {
	a, err := k.Active()
	if err != nil {
		return nil, err
	}
	return k.Signer(a.KeyID)
}

// Signer returns a signer for the non-revoked key keyID.
func (k *Keyring) Signer(keyID string) (Signer, error) {
	i, ok := k.find(keyID)
	if !ok {
		return nil, exitcode.New(exitcode.Usage, fmt.Errorf("key %s: %w in keyring %s", keyID, ErrUnknownKey, k.path), "'witness key list' shows the keys it holds")
	}
	e := k.entries[i]
	if e.Revoked() {
		return nil, exitcode.New(exitcode.Usage, fmt.Errorf("key %s was revoked at %s: %w", keyID, e.RevokedAt, ErrRevoked), "sign with the active key, or 'witness key rotate'")
	}
	secret, err := k.secret(i)
	if err != nil {
		return nil, err
	}
	return signerFor(e, secret)
}

func (k *Keyring) secret(i int) ([]byte, error) {
	e := &k.entries[i]
	if e.secret != nil {
		return e.secret, nil
	}
	if e.Backend != BackendOS {
		return nil, fmt.Errorf("key %s has no secret", e.KeyID)
	}
	hexs, err := osGet(k.opts, e.KeyID)
	if err != nil {
		return nil, err
	}
	s, err := decodeSecret(hexs)
	if err != nil {
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("OS keyring secret of key %s: %w", e.KeyID, err), "")
	}
	e.secret = s
	return s, nil
}

// Verify checks signature sig (algorithm alg, "hmac-sha256" or "ed25519")
// over msg. With keyID it uses exactly that key; without, it tries every
// key of that algorithm. A revoked key never verifies, nor does the same key
// material filed under another id: the error then says the key was revoked
// and when. See Verifier, which also says who signed.
func (k *Keyring) Verify(keyID, alg string, msg []byte, sig string) error {
	return NewVerifier(k, nil, nil).Verify(keyID, alg, msg, sig)
}

func (k *Keyring) save() error {
	data, err := marshal(k.entries)
	if err != nil {
		return err
	}
	file := k.file
	if file == "" {
		file = k.path
	}
	// the keyring replaces itself (Force) under its lock, at its real path
	// (no symlink there), mode 0600 from the first byte, synced
	if err := atomicfile.Write(file, data, atomicfile.Options{Force: true, Perm: 0o600, Flag: "keyring"}); err != nil {
		return exitcode.New(exitcode.Failure, fmt.Errorf("write keyring: %w", err), "")
	}
	k.exists = true
	return nil
}
