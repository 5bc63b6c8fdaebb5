package main

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// inputCase is one command given one missing input. In args, F/name is a
// fixture file (evidenceFixtures), MISSING the input that does not exist.
type inputCase struct {
	name string // "command --flag" or "command ARG"
	args []string
	hint string // what the hint must say
}

func inputCases(stub string) []inputCase {
	return []inputCase{
		{"seal --spec", []string{"seal", "--spec", "MISSING", "--out", "F/new.json", "--keyring", "F/keys.json"}, "check the path given to --spec"},
		{"seal init --events", []string{"seal", "init", "--events", "MISSING", "--system-prompt", "F/agent.json", "--out", "F/new.json"}, "check the path given to --events"},
		{"seal init --system-prompt", []string{"seal", "init", "--events", "F/events.jsonl", "--system-prompt", "MISSING", "--out", "F/new.json"}, "check the path given to --system-prompt"},
		{"seal --keyring", []string{"seal", "--spec", "F/agent.json", "--out", "F/new.json", "--keyring", "MISSING"}, "--keyring"},
		{"cosign SEAL", []string{"cosign", "MISSING", "--keyring", "F/bob.json", "--out", "F/c.json"}, "check the path of the seal file"},
		{"cosign --keyring", []string{"cosign", "F/seal.json", "--keyring", "MISSING", "--out", "F/c.json"}, "--keyring"},
		{"verify --seal", []string{"verify", "--seal", "MISSING", "--events", "F/events.jsonl", "--keyring", "F/keys.json"}, "check the path of the seal file"},
		{"verify --events", []string{"verify", "--seal", "F/seal.json", "--events", "MISSING", "--keyring", "F/keys.json"}, "check the path given to --events"},
		{"verify --graph", []string{"verify", "--seal", "F/seal.json", "--graph", "MISSING", "--keyring", "F/keys.json"}, "check the path given to --graph"},
		{"verify --trust", []string{"verify", "--seal", "F/seal.json", "--events", "F/events.jsonl", "--trust", "MISSING"}, "check the path given to --trust"},
		{"verify --keyring", []string{"verify", "--seal", "F/seal.json", "--events", "F/events.jsonl", "--keyring", "MISSING"}, "--keyring"},
		{"graph --events", []string{"graph", "--events", "MISSING", "--out", "F/g.jsonld"}, "check the path given to --events"},
		{"graph --seal", []string{"graph", "--events", "F/events.jsonl", "--seal", "MISSING", "--out", "F/g.jsonld"}, "check the path of the seal file"},
		{"replay --graph", []string{"replay", "--graph", "MISSING", "--rank"}, "check the path given to --graph"},
		{"replay --events", []string{"replay", "--events", "MISSING", "--rank"}, "check the path given to --events"},
		{"why --events", []string{"why", "e1", "--events", "F/events.jsonl", "--events", "MISSING"}, "check the path given to --events"},
		{"why --graph", []string{"why", "e1", "--graph", "MISSING"}, "check the path given to --graph"},
		{"why --seal", []string{"why", "e1", "--events", "F/events.jsonl", "--seal", "MISSING"}, "check the path of the seal file"},
		{"report --events", []string{"report", "--events", "MISSING", "--out", "F/r.html"}, "check the path given to --events"},
		{"report --seal", []string{"report", "--events", "F/events.jsonl", "--seal", "MISSING", "--keyring", "F/keys.json", "--out", "F/r.html"}, "check the path of the seal file"},
		{"report --trust", []string{"report", "--events", "F/events.jsonl", "--trust", "MISSING", "--out", "F/r.html"}, "check the path given to --trust"},
		{"report --keyring", []string{"report", "--events", "F/events.jsonl", "--keyring", "MISSING", "--out", "F/r.html"}, "--keyring"},
		{"graph --trust", []string{"graph", "--events", "F/events.jsonl", "--seal", "F/seal.json", "--format", "dot", "--trust", "MISSING"}, "check the path given to --trust"},
		{"report --firewall-audit", []string{"report", "--events", "F/events.jsonl", "--firewall-audit", "MISSING", "--out", "F/r.html"}, "check the path given to --firewall-audit"},
		{"replay --what-if-policy", []string{"replay", "--graph", "F/graph.jsonld", "--what-if-policy", "MISSING"}, "check the path of the message-policy file"},
		{"graph --firewall-audit", []string{"graph", "--events", "F/messages.events.jsonl", "--firewall-audit", "MISSING", "--out", "F/g.jsonld"}, "check the path given to --firewall-audit"},
		{"import FILE", []string{"import", "--from", "atw-0.1.0", "MISSING", "--out", "F/i.jsonl", "-q"}, "check the path of the file to import"},
		{"import --redact-key", []string{"import", "--from", "atw-0.1.0", "F/legacy.jsonl", "--out", "F/i.jsonl", "--redact", "$.x", "--redact-key", "MISSING"}, "check the path given to --redact-key"},
		{"serve --cassette", []string{"serve", "--cassette", "MISSING"}, "check the path given to --cassette"},
		{"drift REPORT", []string{"drift", "MISSING"}, "name a file written by 'witness serve --report'"},
		{"capture --scenario", []string{"capture", "--out", "F/rec", "--scenario", "MISSING", "--", stub}, "check the path given to --scenario"},
		{"capture --redact-rules", []string{"capture", "--out", "F/rec", "--redact-rules", "MISSING", "--redact-key", "F/key.hex", "--", stub}, "check the path given to --redact-rules"},
		{"capture --redact-key", []string{"capture", "--out", "F/rec", "--redact", "$.x", "--redact-key", "MISSING", "--", stub}, "check the path given to --redact-key"},
		{"capture --seal", []string{"capture", "--out", "F/rec", "--seal", "MISSING", "--", stub}, "check the path of the seal file"},
		{"capture --effects", []string{"capture", "--out", "F/rec", "--effects", "MISSING", "--", stub}, "check the path given to --effects"},
		{"proxy --effects", []string{"proxy", "--out", "F/rec", "--effects", "MISSING", "--", stub}, "check the path given to --effects"},
		{"proxy --redact-rules", []string{"proxy", "--out", "F/rec", "--redact-rules", "MISSING", "--redact-key", "F/key.hex", "--", stub}, "check the path given to --redact-rules"},
		{"proxy --seal", []string{"proxy", "--out", "F/rec", "--seal", "MISSING", "--", stub}, "check the path of the seal file"},
		{"capture append --events", []string{"capture", "append", "--events", "MISSING", "--keyring", "F/keys.json"}, "check the path given to --events"},
		{"capture append --keyring", []string{"capture", "append", "--events", "F/events.jsonl", "--keyring", "MISSING"}, "--keyring"},
		{"capture append --redact-rules", []string{"capture", "append", "--events", "F/events.jsonl", "--keyring", "F/keys.json", "--redact-rules", "MISSING", "--redact-key", "F/key.hex"}, "check the path given to --redact-rules"},
		{"firewall policy check FILE", []string{"firewall", "policy", "check", "MISSING"}, "check the path of the message-policy file"},
		{"firewall evaluate --policy", []string{"firewall", "evaluate", "--policy", "MISSING", "--events", "F/messages.events.jsonl", "--out", "F/a.ndjson"}, "check the path of the message-policy file"},
		{"firewall evaluate --events", []string{"firewall", "evaluate", "--policy", "F/policy-code.json", "--events", "MISSING", "--out", "F/a.ndjson"}, "check the path given to --events"},
		{"firewall evaluate --recorded", []string{"firewall", "evaluate", "--policy", "F/policy-code.json", "--events", "F/messages.events.jsonl", "--recorded", "MISSING", "--out", "F/a.ndjson"}, "check the path of the recorded audit snapshot"},
		{"firewall evaluate --mapping", []string{"firewall", "evaluate", "--policy", "F/policy-code.json", "--events", "F/toolcalls.events.jsonl", "--mapping", "MISSING", "--out", "F/a.ndjson"}, "check the path of the mapping file"},
		{"firewall derive --mapping", []string{"firewall", "derive", "--events", "F/toolcalls.events.jsonl", "--mapping", "MISSING", "--out", "F/d.jsonl"}, "check the path of the mapping file"},
		{"firewall derive --events", []string{"firewall", "derive", "--events", "MISSING", "--mapping", "F/mapping.json", "--out", "F/d.jsonl"}, "check the path given to --events"},
		{"firewall audit verify FILE", []string{"firewall", "audit", "verify", "MISSING"}, "check the path of the audit snapshot"},
		{"firewall evaluate --activations", []string{"firewall", "evaluate", "--policy", "F/policy-code.json", "--events", "F/messages.events.jsonl", "--activations", "MISSING"}, "check the path given to --activations"},
		{"firewall audit activations FILE", []string{"firewall", "audit", "activations", "MISSING"}, "check the path of the audit snapshot"},
		{"firewall evaluate --policy-read", []string{"firewall", "evaluate", "--policy", "F/policy-code.json", "--events", "F/messages.events.jsonl", "--activations", "F/a.ndjson", "--policy-read", "MISSING"}, "check the path given to --policy-read"},
		{"firewall audit activations --policy-read", []string{"firewall", "audit", "activations", "F/a.ndjson", "--policy-read", "MISSING"}, "check the path given to --policy-read"},
		{"firewall audit activations --activations", []string{"firewall", "audit", "activations", "F/a.ndjson", "--activations", "MISSING"}, "check the path given to --activations"},
		{"firewall audit activations --policy", []string{"firewall", "audit", "activations", "F/a.ndjson", "--policy", "MISSING"}, "check the path of the message-policy file"},
		{"firewall audit correlate FILE", []string{"firewall", "audit", "correlate", "MISSING", "--host-log", "F/a.ndjson"}, "check the path of the audit snapshot"},
		{"firewall audit correlate --host-log", []string{"firewall", "audit", "correlate", "F/messages.events.jsonl", "--host-log", "MISSING"}, "check the path given to --host-log"},
		{"firewall audit verify --policy", []string{"firewall", "audit", "verify", "--group", "--policy", "MISSING", "F/a.ndjson=F/messages.events.jsonl", "F/b.ndjson=F/messages.events.jsonl"}, "check the path of the message-policy file"},
		{"firewall audit verify --trust", []string{"firewall", "audit", "verify", "F/a.ndjson", "--trust", "MISSING"}, "check the path given to --trust"},
		{"key export-public --keyring", []string{"key", "export-public", "--keyring", "MISSING", "--out", "F/t.json"}, "--keyring"},
		{"key list --keyring", []string{"key", "list", "--keyring", "MISSING"}, "--keyring"},
		{"key rotate --keyring", []string{"key", "rotate", "--keyring", "MISSING"}, "--keyring"},
		{"key revoke --keyring", []string{"key", "revoke", "x", "--keyring", "MISSING"}, "--keyring"},
		// the hidden old names are the same commands
		{"list-keys --keyring", []string{"list-keys", "--keyring", "MISSING"}, "--keyring"},
		{"rotate-key --keyring", []string{"rotate-key", "--keyring", "MISSING"}, "--keyring"},
		{"revoke-key --keyring", []string{"revoke-key", "x", "--keyring", "MISSING"}, "--keyring"},
	}
}

// Every command that has one of inputFlags (app.go) must have a case above
// (TestMissingInputCoversEveryCommand).

// notInputs are input-looking flags that need no missing-file case, with
// the reason.
var notInputs = map[string]string{
	"key generate --keyring":          "creates the keyring",
	"keygen --keyring":                "creates the keyring (the hidden old name of key generate)",
	"log init --keyring":              "creates the keyring (or a key in it) when it has no active key",
	"log serve --keyring":             "mysql storage only; creates the key when missing, as log init does",
	"log witness --keyring":           "creates the keyring (or a key in it) when it has no active key",
	"replay --seal":                   "read after the graph and the --remove ids, by the seal.Load that the verify --seal case checks",
	"graph --keyring":                 "keys only authenticate a --seal; the seal case covers the read",
	"replay --keyring":                "keys only authenticate a --seal; the seal case covers the read",
	"capture --keyring":               "the keyring signs the session end; a missing one is the keyring rule of seal",
	"proxy --keyring":                 "the keyring signs the session end; a missing one is the keyring rule of seal",
	"import --keyring":                "the keyring signs the session end; a missing one is the keyring rule of seal",
	"import --redact-rules":           "the same redaction loader as import --redact-key",
	"capture --redact-key":            "",
	"firewall evaluate --keyring":     "the keyring signs the snapshot; a missing one is the keyring rule of seal",
	"firewall audit verify --keyring": "the keyring rule of seal",
	"cosign --trust":                  "",
	"proxy --redact-key":              "the same redaction loader as capture --redact-key",
	"capture append --redact-key":     "the same redaction loader as capture --redact-key",
}

// A missing input named on the command line is a usage error (exit 2) for
// every command, and the hint says which path to check
// (docs/exit-codes.md).
func TestMissingInput(t *testing.T) { testInputCases(t, false) }

// TestFolderInput gives every input flag a folder instead of a file: the
// same usage error (2) as a missing file, whatever the flag
// (docs/exit-codes.md: "does not exist, may not be read by this user, or
// is a folder").
func TestFolderInput(t *testing.T) { testInputCases(t, true) }

func testInputCases(t *testing.T, folder bool) {
	stub, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(envStub, "1")
	base := evidenceFixtures(t, stub)
	for _, c := range inputCases(stub) {
		t.Run(c.name, func(t *testing.T) {
			dir := copyFixtures(t, base)
			missing := filepath.Join(dir, "no-such-file.json")
			if folder {
				if err := os.Mkdir(missing, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			args := make([]string, len(c.args))
			for i, a := range c.args {
				switch {
				case a == "MISSING":
					args[i] = missing
				case strings.HasPrefix(a, "F/"):
					args[i] = filepath.Join(dir, a[2:])
				default:
					args[i] = a
				}
			}
			env := evidenceEnv(dir)
			var stdout, stderr bytes.Buffer
			code := run(args, newApp(strings.NewReader(""), &stdout, &stderr, func(k string) string { return env[k] }))
			if code != 2 {
				t.Fatalf("exit %d, want 2 (usage)\n%s", code, stderr.String())
			}
			if !strings.Contains(stderr.String(), "no-such-file.json") {
				t.Errorf("the error does not name the missing file:\n%s", stderr.String())
			}
			if !strings.Contains(stderr.String(), "witness: hint: ") || (!folder && !strings.Contains(stderr.String(), c.hint)) {
				t.Errorf("hint lacks %q:\n%s", c.hint, stderr.String())
			}
		})
	}
}

// TestMissingInputCoversEveryCommand fails when a command has an input flag
// that neither inputCases nor notInputs lists.
func TestMissingInputCoversEveryCommand(t *testing.T) {
	covered := map[string]bool{}
	for _, c := range inputCases("stub") {
		covered[c.name] = true
	}
	for k := range notInputs {
		covered[k] = true
	}
	var missing []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.TrimPrefix(c.CommandPath(), "witness ")
		for _, n := range inputFlags {
			if c.LocalFlags().Lookup(n) != nil && !covered[path+" --"+n] {
				missing = append(missing, path+" --"+n)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd(newApp(nil, &bytes.Buffer{}, &bytes.Buffer{}, func(string) string { return "" })))
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("input flags without a missing-input case: %s", strings.Join(missing, ", "))
	}
}
