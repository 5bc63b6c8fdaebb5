package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/keyring"
	"github.com/agent-trace-witness/witness/keyring/osstore"
	"github.com/agent-trace-witness/witness/seal"
)

// keyringOptions is the keyring flag group: --keyring (with the key verbs'
// hidden 0.1.0 spelling -o/--out) and, where the command takes them,
// --trust and --key-id. How the command uses its keys (keyUse) is given
// once, to AddFlags: it writes the help of --keyring and drives discovery
// (findKeys), so that what the help says and what the command does cannot
// drift apart.
type keyringOptions struct {
	Keyring string // --keyring
	Trust   string // --trust: a trust file of public keys
	KeyID   string // --key-id: sign with this key instead of the active one
	use     keyUse
}

// keyUse says how a command uses keys.
type keyUse struct {
	// Role is the help of --keyring before its default; "" for
	// "keyring file".
	Role string
	// Required: the command cannot work without a keyring (the key verbs,
	// cosign, and seal when ATW_WITNESS_KEY is not set either). Without
	// it, a keyring not named by --keyring that does not exist is skipped.
	Required bool
	// Legacy: ATW_WITNESS_KEY (0.1.0's hex HMAC key) stands in when no
	// keyring file is found (seal) and verifies 0.1.0 signatures (verify,
	// replay).
	Legacy bool
	// Trust, KeyID and LegacyOut declare --trust, --key-id and the hidden
	// -o/--out.
	Trust, KeyID, LegacyOut bool
}

// AddFlags declares the group on c.
func (k *keyringOptions) AddFlags(c *cobra.Command, use keyUse) {
	k.use = use
	f := c.Flags()
	role := use.Role
	if role == "" {
		role = "keyring file"
	}
	def := "default $" + keyring.EnvKeyring + ", else keys.json in the user config folder's witness/"
	f.StringVar(&k.Keyring, "keyring", "", role+" ("+def+")")
	if use.LegacyOut {
		// agent-trace-witness 0.1.0's spelling (`witness key generate -o keys.json`)
		f.StringVarP(&k.Keyring, "out", "o", "", "same as --keyring (agent-trace-witness 0.1.0 spelling)")
		f.MarkHidden("out")
	}
	if use.Trust {
		f.StringVar(&k.Trust, "trust", "", "trust file of public keys (from 'witness key export-public')")
	}
	if use.KeyID {
		f.StringVar(&k.KeyID, "key-id", "", "sign with this keyring key instead of the active one")
	}
}

// keyNeed is what a command asks findKeys for.
type keyNeed int

const (
	needKeyring  keyNeed = iota // the keyring itself (the key verbs)
	needPath                    // only where it is (keygen creates it)
	needSigner                  // a key that signs
	needVerifier                // keys that verify
)

// keys is what findKeys found.
type keys struct {
	Path    string           // the keyring file looked at; "" when there is none
	Keyring *keyring.Keyring // the keyring read; nil when its file does not exist
	Opts    keyring.Options  // how to reach the OS keyring
	Signer  keyring.Signer   // needSigner: nil when there is none and none is required
	Trust   *keyring.TrustSet
	// LegacyHex is ATW_WITNESS_KEY (needVerifier with use.Legacy).
	LegacyHex string
}

// path resolves where the keyring is, by the one rule of every command:
// --keyring, else keyring.DefaultPath ($WITNESS_KEYRING, else keys.json
// in the user config folder). named says --keyring gave it.
func (k *keyringOptions) path(a *app) (path string, named bool, err error) {
	if k.Keyring != "" {
		return k.Keyring, true, nil
	}
	p, err := keyring.DefaultPath(a.getenv)
	return p, false, err
}

// findKeys is the one key discovery of the command line
// (docs/formats/keys.md, "Where the keyring is"):
//
//  1. the keyring is --keyring, else $WITNESS_KEYRING, else keys.json in
//     the user config folder, for every command;
//  2. a keyring named by --keyring must exist; one found another way is
//     used when its file exists and skipped when it does not, unless the
//     command requires one (use.Required, or needKeyring);
//  3. a signer is the --key-id key or the active key of that keyring, else
//     (use.Legacy) ATW_WITNESS_KEY, else none: the command writes unsigned
//     evidence, or fails when a signer is required;
//  4. verification keys are that keyring, the --trust file and (use.Legacy)
//     ATW_WITNESS_KEY.
//
// A keyring that exists is always read in full and refused when it is
// malformed or readable by others, however it was found.
func (a *app) findKeys(k *keyringOptions, need keyNeed, backend string) (*keys, error) {
	out := &keys{}
	path, named, perr := k.path(a)
	required := k.use.Required || need == needKeyring || need == needPath
	if perr != nil && required && !(k.use.Legacy && a.getenv(keyring.LegacyEnv) != "") {
		return nil, perr
	}
	if perr == nil {
		out.Path = path
	}
	if need == needPath {
		opts, err := keyringOpenOptions(a.getenv, backend)
		out.Opts = opts
		return out, err
	}
	if out.Path != "" {
		opts, err := keyringOpenOptions(a.getenv, backend)
		if err != nil {
			return nil, err
		}
		out.Opts = opts
		kr, err := keyring.Open(out.Path, opts)
		if err != nil {
			return nil, err
		}
		if kr.Exists() {
			out.Keyring = kr
		}
	}
	if out.Keyring == nil && out.Path != "" && (named || need == needKeyring || (required && !k.use.Legacy)) {
		_, err := keyring.OpenExisting(out.Path, out.Opts) // the one "keyring not found" error
		return nil, err
	}
	switch need {
	case needSigner:
		s, err := a.signerOf(k, out, perr)
		if err != nil {
			return nil, err
		}
		out.Signer = s
	case needVerifier:
		if k.use.Legacy {
			out.LegacyHex = a.getenv(keyring.LegacyEnv)
		}
		if k.Trust != "" {
			t, err := keyring.LoadTrust(k.Trust)
			if err != nil {
				return nil, err
			}
			out.Trust = t
		}
	}
	return out, nil
}

// signerOf picks the signing key once the keyring is found (step 3 of
// findKeys); perr is the error locating the default keyring, if any.
func (a *app) signerOf(k *keyringOptions, found *keys, perr error) (keyring.Signer, error) {
	if found.Keyring != nil {
		if k.KeyID != "" {
			return found.Keyring.Signer(k.KeyID)
		}
		return found.Keyring.ActiveSigner()
	}
	if v := a.getenv(keyring.LegacyEnv); k.use.Legacy && v != "" {
		if k.KeyID != "" {
			return nil, usageError(fmt.Errorf("--key-id needs a keyring; ATW_WITNESS_KEY is a single key without an id"), "create a keyring with 'witness key generate'")
		}
		return keyring.LegacySigner(v)
	}
	if !k.use.Required {
		return nil, nil // unsigned
	}
	if perr != nil {
		return nil, perr
	}
	return nil, exitcode.New(exitcode.Usage, fmt.Errorf("no signing key: no keyring at %s and ATW_WITNESS_KEY is not set", found.Path),
		"run 'witness key generate' (or pass --keyring PATH, or set ATW_WITNESS_KEY to 64 hex characters)")
}

// Input returns the keyring file this command reads, for the list of
// inputs no output may be ("" when there is none).
func (k *keyringOptions) Input(a *app) string {
	p, _, err := k.path(a)
	if err != nil {
		return ""
	}
	return p
}

// Path returns where the keyring is (keygen creates it there) and the
// options to reach the OS keyring with secrets in backend.
func (k *keyringOptions) Path(a *app, backend string) (string, keyring.Options, error) {
	found, err := a.findKeys(k, needPath, backend)
	if err != nil {
		return "", keyring.Options{}, err
	}
	return found.Path, found.Opts, nil
}

// Open reads the keyring, which must exist (the key verbs); backend is
// where new secrets go.
func (k *keyringOptions) Open(a *app, backend string) (*keys, error) {
	return a.findKeys(k, needKeyring, backend)
}

// Signer returns the key that signs (nil when the command may write
// unsigned evidence and there is none) and the keyring it came from (nil
// for ATW_WITNESS_KEY or none).
func (k *keyringOptions) Signer(a *app) (keyring.Signer, *keyring.Keyring, error) {
	found, err := a.findKeys(k, needSigner, "")
	if err != nil {
		return nil, nil, err
	}
	return found.Signer, found.Keyring, nil
}

// Signers is Signer as the list the recorders take (empty for none).
func (k *keyringOptions) Signers(a *app) ([]keyring.Signer, error) {
	s, _, err := k.Signer(a)
	if err != nil || s == nil {
		return nil, err
	}
	return []keyring.Signer{s}, nil
}

// VerifyKeys returns the keys that verify seals and signed evidence, with
// quorum (which must not be negative).
func (k *keyringOptions) VerifyKeys(a *app, quorum int) (seal.VerifyOptions, error) {
	vo := seal.VerifyOptions{Quorum: quorum}
	if quorum < 0 {
		return vo, usageError(fmt.Errorf("--quorum %d is negative", quorum), "use --quorum K with K >= 1")
	}
	found, err := a.findKeys(k, needVerifier, "")
	if err != nil {
		return vo, err
	}
	vo.Keyring, vo.Trust, vo.LegacyKeyHex = found.Keyring, found.Trust, found.LegacyHex
	return vo, nil
}

// Verifier returns the keyring that verifies signed evidence (nil when
// there is none).
func (k *keyringOptions) Verifier(a *app) (*keyring.Keyring, error) {
	found, err := a.findKeys(k, needVerifier, "")
	if err != nil {
		return nil, err
	}
	return found.Keyring, nil
}

// envOSTimeout overrides the timeout around each OS keyring call.
const envOSTimeout = "WITNESS_OS_KEYRING_TIMEOUT"

// keyringOpenOptions builds keyring options from the environment; backend
// is where new secrets go ("" for the keyring's default).
func keyringOpenOptions(getenv func(string) string, backend string) (keyring.Options, error) {
	o := keyring.Options{Backend: backend, OS: osstore.System{}}
	if v := getenv(envOSTimeout); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return o, exitcode.New(exitcode.Usage, fmt.Errorf("%s=%q is not a positive duration", envOSTimeout, v), "use a Go duration such as 3s")
		}
		o.Timeout = d
	}
	return o, nil
}
