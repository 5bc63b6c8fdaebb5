package secretservicetest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-trace-witness/witness/keyring"
	"github.com/agent-trace-witness/witness/keyring/osstore"
)

// TestOSBackendSecretService runs the OS backend against the real OS
// keyring (see .ci/with-services, which starts gnome-keyring under
// dbus-run-session). Without one it skips, but with CI=true it fails: CI
// must exercise the real daemon.
func TestOSBackendSecretService(t *testing.T) {
	dir := t.TempDir()
	opts := keyring.Options{Backend: keyring.BackendOS, OS: osstore.System{}, Service: fmt.Sprintf("witness-test-%d", time.Now().UnixNano()), Timeout: 5 * time.Second}
	p := filepath.Join(dir, "keys.json")
	e, err := keyring.Generate(p, opts, keyring.AlgEd25519)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but the OS keyring does not work: %v (run the tests under .ci/with-services)", err)
		}
		t.Skipf("no OS keyring (Secret Service) answers: %v; run under .ci/with-services to include this test", err)
	}
	_, created, err := keyring.Rotate(p, opts, keyring.AlgHMAC)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(p)
	if strings.Contains(string(data), `"secret"`) || strings.Count(string(data), `"backend": "os"`) != 2 {
		t.Errorf("keys.json holds a secret or lacks the os backend:\n%s", data)
	}
	// A fresh Open (another process would do the same) fetches secrets
	// from the daemon.
	k, err := keyring.Open(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{e.KeyID, created.KeyID} {
		s, err := k.Signer(id)
		if err != nil {
			t.Fatalf("signer %s from the OS keyring: %v", id, err)
		}
		sig, _ := s.Sign([]byte("m"))
		if err := k.Verify(id, s.Algorithm(), []byte("m"), sig); err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
	// Another service name (another keyring) does not see these secrets.
	other := opts
	other.Service += "-other"
	k2, _ := keyring.Open(p, other)
	if _, err := k2.Signer(created.KeyID); err == nil {
		t.Error("secret found under another service name")
	}
}
