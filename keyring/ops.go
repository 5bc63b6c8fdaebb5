package keyring

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/agent-trace-witness/witness/internal/exitcode"
)

// update runs fn on the freshly loaded keyring under the cross-process lock
// and saves the result atomically when fn succeeds. Nothing is written when
// fn fails.
//
// A keyring reached through a symlink (or a symlinked folder) is locked and
// written at its real path: the atomic replacement then renames over the
// real file and leaves the symlink in place, and every path to the same
// file takes the same lock.
func update(path string, opts Options, fn func(k *Keyring) error) (*Keyring, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("create keyring folder: %w", err), "")
	}
	real, err := realPath(path)
	if err != nil {
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("keyring %s: %w", path, err), "")
	}
	unlock, err := lockFile(real)
	if err != nil {
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("keyring %s: %w", path, err), "")
	}
	defer unlock()
	k, err := Open(real, opts)
	if err != nil {
		return nil, err
	}
	// messages name the path the user gave; the bytes go to the real file
	k.path, k.file = path, real
	if err := fn(k); err != nil {
		return nil, err
	}
	if err := k.save(); err != nil {
		return nil, err
	}
	return k, nil
}

// maxLinks bounds the symlinks followed to a keyring's real path.
const maxLinks = 40

// realPath resolves every symlink of path. A path that does not exist yet
// resolves its folder (and a dangling symlink its target), keeping the
// file name, so the keyring is created where the links point.
func realPath(path string) (string, error) {
	for i := 0; i < maxLinks; i++ {
		r, err := filepath.EvalSymlinks(path)
		if err == nil {
			return filepath.Abs(r)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("resolve symlinks: %w", err)
		}
		fi, lerr := os.Lstat(path)
		if lerr != nil {
			// nothing at path: resolve its folder
			dir, derr := filepath.EvalSymlinks(filepath.Dir(path))
			if derr != nil {
				return "", fmt.Errorf("resolve symlinks: %w", derr)
			}
			return filepath.Abs(filepath.Join(dir, filepath.Base(path)))
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return "", fmt.Errorf("resolve symlinks: %w", err)
		}
		// a dangling symlink: follow it to where the file will be
		target, rerr := os.Readlink(path)
		if rerr != nil {
			return "", fmt.Errorf("resolve symlinks: %w", rerr)
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(path), target)
		}
		path = target
	}
	return "", fmt.Errorf("resolve symlinks: more than %d links", maxLinks)
}

// generate makes a key with an id not yet in the keyring (3 attempts, as
// 0.1.0) and, for the OS backend, stores its secret there first.
func (k *Keyring) generate(alg, backend string) (Entry, error) {
	if _, err := sigAlgFor(alg); err != nil {
		return Entry{}, exitcode.New(exitcode.Usage, err, "use --alg hmac or --alg ed25519")
	}
	if backend != BackendFile && backend != BackendOS {
		return Entry{}, exitcode.New(exitcode.Usage, fmt.Errorf("unknown backend %q (known: file, os)", backend), "use --backend file or --backend os")
	}
	var e Entry
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		e, err = newEntry(alg, k.opts.Now(), k.opts.Rand)
		if err != nil {
			return Entry{}, exitcode.New(exitcode.Failure, err, "")
		}
		if _, dup := k.find(e.KeyID); !dup {
			break
		}
		err = fmt.Errorf("could not generate a unique key_id after 3 attempts")
		time.Sleep(time.Microsecond)
	}
	if err != nil {
		return Entry{}, exitcode.New(exitcode.Failure, err, "try again")
	}
	e.Backend = backend
	if backend == BackendOS {
		if err := osSet(k.opts, e.KeyID, hex.EncodeToString(e.secret)); err != nil {
			return Entry{}, err
		}
	}
	return e, nil
}

// Generate adds a new active key (keygen). It refuses when the keyring
// already has an active key: replacing it is what rotation is for.
func Generate(path string, opts Options, alg string) (Entry, error) {
	opts = opts.withDefaults()
	var out Entry
	_, err := update(path, opts, func(k *Keyring) error {
		if a, err := k.Active(); err == nil {
			return exitcode.New(exitcode.Usage, fmt.Errorf("keyring %s already has an active key %s", path, a.KeyID),
				"use 'witness key rotate' to replace it, or --keyring for another keyring")
		}
		e, err := k.generate(alg, opts.Backend)
		if err != nil {
			return err
		}
		k.entries = append(k.entries, e)
		out = e
		return nil
	})
	if err != nil {
		if out.Backend == BackendOS {
			osDelete(opts, out.KeyID)
		}
		return Entry{}, err
	}
	out.secret = nil
	return out, nil
}

// Rotate replaces the active key by a new one of algorithm alg ("" = the
// same as the old key) in backend opts.Backend ("" = the old key's). The new
// key is generated (and stored in the OS keyring) first; the old key is
// deactivated and the new one appended in one step only after that
// succeeded, and the file is replaced atomically, so a failure leaves the
// keyring unchanged with its active key. The old key stays for verifying.
func Rotate(path string, opts Options, alg string) (old, created Entry, err error) {
	explicitBackend := opts.Backend != ""
	opts = opts.withDefaults()
	_, err = update(path, opts, func(k *Keyring) error {
		a, err := k.Active()
		if err != nil {
			return err
		}
		if alg == "" {
			alg = a.Algorithm
		}
		backend := a.Backend
		if explicitBackend {
			backend = opts.Backend
		}
		e, err := k.generate(alg, backend)
		if err != nil {
			return err
		}
		created = e
		i, _ := k.find(a.KeyID)
		k.entries[i].Active = false
		k.entries = append(k.entries, e)
		old = k.entries[i]
		return nil
	})
	if err != nil {
		if created.Backend == BackendOS {
			osDelete(opts, created.KeyID)
		}
		return Entry{}, Entry{}, err
	}
	old.secret, created.secret = nil, nil
	return old, created, nil
}

// Revoke marks key keyID revoked now and inactive. The entry stays in the
// file (so seals it signed fail with a reason, not "unknown key"). Revoking
// twice is refused and keeps the first revocation time.
func Revoke(path string, opts Options, keyID string) (Entry, error) {
	opts = opts.withDefaults()
	var out Entry
	_, err := update(path, opts, func(k *Keyring) error {
		i, ok := k.find(keyID)
		if !ok {
			return exitcode.New(exitcode.Usage, fmt.Errorf("key %s: %w in keyring %s", keyID, ErrUnknownKey, path), "'witness key list' shows the key ids")
		}
		if k.entries[i].Revoked() {
			return exitcode.New(exitcode.Usage, fmt.Errorf("key %s was already revoked at %s", keyID, k.entries[i].RevokedAt), "")
		}
		k.entries[i].RevokedAt = opts.Now().UTC().Format(keyTimeFormat)
		k.entries[i].Active = false
		out = k.entries[i]
		return nil
	})
	if err != nil {
		return Entry{}, err
	}
	out.secret = nil
	return out, nil
}

// errNoKeyring is returned by OpenExisting for a missing keyring file.
var errNoKeyring = errors.New("keyring not found")

// OpenExisting is Open, but a missing file is an error (with a hint).
func OpenExisting(path string, opts Options) (*Keyring, error) {
	k, err := Open(path, opts)
	if err != nil {
		return nil, err
	}
	if !k.exists {
		return nil, exitcode.New(exitcode.Usage, fmt.Errorf("keyring %s: %w", path, errNoKeyring),
			"create one with 'witness key generate', or pass --keyring / set WITNESS_KEYRING")
	}
	return k, nil
}
