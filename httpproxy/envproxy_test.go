package httpproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agent-trace-witness/witness/eventlog"
)

// TestProxyHonoursEnvironmentProxy: `witness proxy --listen` reaches its
// upstream through HTTP_PROXY (as HTTPS_PROXY for https upstreams: Go's
// ProxyFromEnvironment), and not when NO_PROXY names the upstream's host.
// The forward proxy here is the test's: it answers itself and notes the
// absolute request URI it was asked for.
func TestProxyHonoursEnvironmentProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the witness binary")
	}
	var mu sync.Mutex
	var asked []string
	fwd := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.Method+" "+r.RequestURI)
		mu.Unlock()
		io.WriteString(w, "via the forward proxy")
	}))
	defer fwd.Close()
	witness := goBuild(t, "./cmd/witness", t.TempDir())
	get := func(noProxy string) (int, string) {
		work := t.TempDir()
		env := []string{eventlog.EnvTS + "=2026-08-30T14:33:00+00:00", "HOME=" + work, "WITNESS_KEYRING=" + filepath.Join(work, "keys.json"),
			"HTTP_PROXY=" + fwd.URL, "HTTPS_PROXY=" + fwd.URL, "NO_PROXY=" + noProxy, "http_proxy=", "https_proxy=", "no_proxy="}
		px := startDaemon(t, env, witness, "proxy", "--out", filepath.Join(work, "rec"), "--listen", "127.0.0.1:0", "--upstream", "http://model.upstream.invalid")
		resp, err := http.Get(px.URL + "/v1/models")
		if err != nil {
			t.Fatalf("through witness proxy: %v\n%s", err, px.stderr.String())
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		px.stop(t)
		return resp.StatusCode, string(body)
	}
	code, body := get("")
	if code != http.StatusOK || body != "via the forward proxy" {
		t.Errorf("with HTTP_PROXY: %d %q, want the forward proxy's answer", code, body)
	}
	mu.Lock()
	if len(asked) != 1 || asked[0] != "GET http://model.upstream.invalid/v1/models" {
		t.Errorf("the forward proxy was asked %q, want one GET of the upstream's absolute URL", asked)
	}
	asked = nil
	mu.Unlock()
	code, _ = get("model.upstream.invalid")
	mu.Lock()
	defer mu.Unlock()
	if code == http.StatusOK || len(asked) != 0 {
		t.Errorf("with NO_PROXY naming the upstream: %d, forward proxy asked %q; want a direct dial (which fails: .invalid)", code, asked)
	}
}
