package osstore

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	gokeyring "github.com/zalando/go-keyring"

	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/keyring"
)

// The go-keyring mock (MockInit) as the OS store: the package-level API
// path used in production, without a daemon, and a missing secret as
// keyring.ErrSecretNotFound.
func TestOSBackendWithGoKeyringMock(t *testing.T) {
	gokeyring.MockInit()
	p := filepath.Join(t.TempDir(), "keys.json")
	opts := keyring.Options{OS: System{}, Backend: keyring.BackendOS}
	if _, err := keyring.Generate(p, opts, keyring.AlgHMAC); err != nil {
		t.Fatal(err)
	}
	old, created, err := keyring.Rotate(p, keyring.Options{OS: System{}}, "")
	if err != nil {
		t.Fatal(err)
	}
	if created.Backend != keyring.BackendOS {
		t.Errorf("rotation left the OS backend: %+v", created)
	}
	k, _ := keyring.Open(p, keyring.Options{OS: System{}})
	if _, err := k.Signer(old.KeyID); err != nil {
		t.Errorf("old key's secret gone: %v", err)
	}
	gokeyring.MockInitWithError(errors.New("The name org.freedesktop.secrets was not provided by any .service files"))
	k, _ = keyring.Open(p, keyring.Options{OS: System{}})
	_, err = k.ActiveSigner()
	if exitcode.Of(err) != exitcode.Failure || !strings.Contains(exitcode.HintOf(err), "gnome-keyring-daemon") {
		t.Errorf("unreachable Secret Service: %v (hint %q)", err, exitcode.HintOf(err))
	}
	gokeyring.MockInit()
}

func TestNotFoundIsErrSecretNotFound(t *testing.T) {
	gokeyring.MockInit()
	_, err := System{}.Get("witness-osstore-test", "nobody")
	if !errors.Is(err, keyring.ErrSecretNotFound) {
		t.Fatalf("Get of a missing secret = %v, want keyring.ErrSecretNotFound", err)
	}
}
