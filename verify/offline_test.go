package verify

import (
	"os/exec"
	"strings"
	"testing"
)

// TestOffline: verify, why, graph and replay make no network call. Its dependency graph holds no
// HTTP or TLS client, and the only package that imports "net" is godbus,
// which the OS keyring backend uses to reach the local D-Bus socket (and
// only with --backend os); every check reads local files.
func TestOffline(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}: {{join .Imports \" \"}}", ".", "../why", "../graph", "../replay").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, ": ")
		for _, imp := range strings.Fields(imports) {
			switch {
			case imp == "net/http", imp == "crypto/tls", strings.HasPrefix(imp, "net/http/"):
				t.Errorf("%s imports %s: verify, why, graph and replay must stay offline", pkg, imp)
			case imp == "net" && pkg != "github.com/godbus/dbus/v5":
				t.Errorf("%s imports net: verify must stay offline", pkg)
			}
		}
	}
}
