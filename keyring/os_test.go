package keyring

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	gokeyring "github.com/zalando/go-keyring"

	"github.com/agent-trace-witness/witness/internal/exitcode"
)

// memStore is an in-memory SecretStore for unit tests.
type memStore struct {
	mu      sync.Mutex
	m       map[string]string
	failSet error
	block   chan struct{}
}

func (s *memStore) Set(service, user, secret string) error {
	if s.block != nil {
		<-s.block
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failSet != nil {
		return s.failSet
	}
	if s.m == nil {
		s.m = map[string]string{}
	}
	s.m[service+"/"+user] = secret
	return nil
}

func (s *memStore) Get(service, user string) (string, error) {
	if s.block != nil {
		<-s.block
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[service+"/"+user]
	if !ok {
		return "", gokeyring.ErrNotFound
	}
	return v, nil
}

func (s *memStore) Delete(service, user string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, service+"/"+user)
	return nil
}

func TestOSBackendKeepsSecretOutOfFile(t *testing.T) {
	store := &memStore{}
	opts := Options{Backend: BackendOS, OS: store}
	for _, alg := range []string{AlgHMAC, AlgEd25519} {
		p := filepath.Join(t.TempDir(), "keys.json")
		e, err := Generate(p, opts, alg)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(p)
		if strings.Contains(string(data), `"secret"`) || !strings.Contains(string(data), `"backend": "os"`) {
			t.Errorf("keys.json holds a secret or lacks the backend:\n%s", data)
		}
		if store.m["witness/"+e.KeyID] == "" {
			t.Fatal("secret not in the OS store")
		}
		k, _ := Open(p, opts)
		s, err := k.ActiveSigner()
		if err != nil {
			t.Fatal(err)
		}
		sig, _ := s.Sign([]byte("m"))
		if err := k.Verify(e.KeyID, s.Algorithm(), []byte("m"), sig); err != nil {
			t.Errorf("%s: %v", alg, err)
		}
	}
}

func TestOSCallsTimeOut(t *testing.T) {
	store := &memStore{block: make(chan struct{})}
	defer close(store.block)
	p := filepath.Join(t.TempDir(), "keys.json")
	start := time.Now()
	_, err := Generate(p, Options{Backend: BackendOS, OS: store, Timeout: 200 * time.Millisecond}, AlgHMAC)
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("took %v", took)
	}
	if err == nil || !strings.Contains(err.Error(), "no answer within 200ms") || !strings.Contains(exitcode.HintOf(err), "dbus-run-session") {
		t.Errorf("err %v hint %q", err, exitcode.HintOf(err))
	}
	if _, statErr := os.Stat(p); statErr == nil {
		data, _ := os.ReadFile(p)
		if strings.Contains(string(data), "key_id") {
			t.Errorf("a timed-out keygen wrote a key:\n%s", data)
		}
	}
}
