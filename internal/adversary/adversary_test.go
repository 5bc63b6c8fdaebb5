package adversary

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/cassette"
	"github.com/agent-trace-witness/witness/internal/testrepo"
)

// bins holds the programs built once for the whole test binary.
var bins struct {
	dir, witness, host, gosdk string
}

func TestMain(m *testing.M) {
	code := func() int {
		dir, err := os.MkdirTemp("", "witness-adversary-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		bins.dir = dir
		root, err := filepath.Abs("../..")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		for _, b := range []struct {
			out *string
			pkg string
		}{{&bins.witness, "./cmd/witness"}, {&bins.host, "./testdata/hostilehost"}, {&bins.gosdk, "./testdata/servers/gosdk"}} {
			*b.out = filepath.Join(dir, filepath.Base(b.pkg))
			cmd := exec.Command("go", "build", "-o", *b.out, b.pkg)
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "build %s: %v\n%s", b.pkg, err, out)
				return 1
			}
		}
		return m.Run()
	}()
	os.Exit(code)
}

// server is one real MCP server with an allowed and a forbidden call.
type server struct {
	name string
	argv func(t *testing.T) []string
	// spec is the agent spec sealed before the run: what the agent may do.
	spec string
	// allowed and forbidden are tools/call params objects.
	allowed, forbidden string
	// forbiddenName and allowedName are the tool names, for the name tricks.
	allowedName, forbiddenName string
	// forbiddenArgs and allowedArgs are argument objects for the tricks
	// that keep the tool and change the arguments (empty: not applicable).
	scopedTool, inScopeArgs, outOfScopeArgs string
	// forbiddenRan reads the ground truth after the run.
	forbiddenRan func(t *testing.T, run *runResult) bool
}

func gosdk() server {
	return server{
		name: "gosdk",
		argv: func(*testing.T) []string { return []string{bins.gosdk} },
		spec: `{"system_prompt":"You are careful.","witness_id":"witness-adversary",
 "tools":[{"name":"greet","scopes":[]},{"name":"delete_file","scopes":["write:/sandbox/**"]}]}`,
		allowed:        `{"name":"greet","arguments":{"name":"ada"}}`,
		forbidden:      `{"name":"delete_file","arguments":{"path":"/etc/passwd"}}`,
		allowedName:    "greet",
		forbiddenName:  "delete_file",
		scopedTool:     "delete_file",
		inScopeArgs:    `{"path":"/sandbox/ok"}`,
		outOfScopeArgs: `{"path":"/etc/passwd"}`,
		forbiddenRan: func(t *testing.T, r *runResult) bool {
			// the fixture's trace is what it ran
			data, err := os.ReadFile(r.trace)
			if errors.Is(err, os.ErrNotExist) {
				return false
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
				var tr struct {
					Tool      string `json:"tool"`
					Arguments struct {
						Path string `json:"path"`
					} `json:"arguments"`
				}
				if err := json.Unmarshal(line, &tr); err != nil {
					t.Fatalf("trace line %q: %v", line, err)
				}
				switch {
				case tr.Tool == "greet":
				case tr.Tool == "delete_file" && strings.HasPrefix(tr.Arguments.Path, "/sandbox/"):
				default:
					t.Logf("ground truth: the server ran %s", line)
					return true
				}
			}
			return false
		},
	}
}

func everything() server {
	return server{
		name: "server-everything",
		argv: func(t *testing.T) []string {
			root := testrepo.Root(t)
			js := filepath.Join(root, "testdata/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
			if _, err := os.Stat(js); err != nil {
				t.Fatalf("npm peers missing (run make peers): %v", err)
			}
			return []string{"node", js, "stdio"}
		},
		spec: `{"system_prompt":"You are careful.","witness_id":"witness-adversary",
 "tools":[{"name":"echo","scopes":[]}]}`,
		allowed:       `{"name":"echo","arguments":{"message":"hi"}}`,
		forbidden:     `{"name":"get-env","arguments":{}}`,
		allowedName:   "echo",
		forbiddenName: "get-env",
		forbiddenRan: func(t *testing.T, r *runResult) bool {
			// get-env answers with the server's environment: its text
			// holds the PATH variable, which echo never does
			ran := bytes.Contains(r.received, []byte(`\"PATH\"`))
			if ran {
				t.Log("ground truth: the server answered get-env")
			}
			return ran
		},
	}
}

// attack is one class of lying host.
type attack struct {
	name string
	// steps builds the script (after the handshake) for a server; nil
	// when the class does not apply to it.
	steps func(s server) []map[string]any
	// ambiguous: the host sent something with more than one reading, so
	// the session must never verify, whatever the server did.
	ambiguous bool
	// wantExit, when >= 0, is the exact verify exit code required. A line
	// with more than one reading makes the session incomplete (4), which
	// outranks the violation of a forbidden call after it (still listed).
	wantExit int
	// failClosed: the proxy may refuse the stream (and so write less).
	failClosed bool
}

func call(id string, params string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":` + params + "}\n"
}

func raw(s string) map[string]any   { return map[string]any{"raw": s} }
func wait(id string) map[string]any { return map[string]any{"wait": id, "ms": 5000} }
func settle(ms int) map[string]any  { return map[string]any{"sleep": ms} }

// bigLine is the size of the oversized host line: 40 MiB by default (over
// the 16 MiB line limit), 1.5 GB with WITNESS_ADVERSARY_HUGE=1.
func bigLine() int64 {
	if os.Getenv("WITNESS_ADVERSARY_HUGE") == "1" {
		return 1_500_000_000
	}
	return 40 << 20
}

func attacks() []attack {
	return []attack{
		{name: "control-allowed", wantExit: 0, steps: func(s server) []map[string]any {
			return []map[string]any{raw(call("2", s.allowed)), wait("2")}
		}},
		{name: "control-forbidden", wantExit: 1, steps: func(s server) []map[string]any {
			return []map[string]any{raw(call("2", s.forbidden)), wait("2")}
		}},
		{name: "duplicate-id", ambiguous: true, wantExit: -1, steps: func(s server) []map[string]any {
			return []map[string]any{raw(`{"jsonrpc":"2.0","id":2,"id":3,"method":"tools/call","params":` + s.forbidden + "}\n"), settle(1500)}
		}},
		{name: "duplicate-jsonrpc", ambiguous: true, wantExit: -1, steps: func(s server) []map[string]any {
			return []map[string]any{raw(`{"jsonrpc":"1.0","jsonrpc":"2.0","id":2,"method":"tools/call","params":` + s.forbidden + "}\n"), settle(1500)}
		}},
		{name: "duplicate-method", ambiguous: true, wantExit: -1, steps: func(s server) []map[string]any {
			return []map[string]any{raw(`{"jsonrpc":"2.0","id":2,"method":"ping","method":"tools/call","params":` + s.forbidden + "}\n"), settle(1500)}
		}},
		{name: "case-variant-name", ambiguous: true, wantExit: -1, steps: func(s server) []map[string]any {
			p := strings.Replace(s.forbidden, `"name":"`+s.forbiddenName+`"`, `"name":"`+s.forbiddenName+`","Name":"`+s.allowedName+`"`, 1)
			return []map[string]any{raw(call("2", p)), wait("2")}
		}},
		{name: "case-variant-name-reversed", ambiguous: true, wantExit: -1, steps: func(s server) []map[string]any {
			p := strings.Replace(s.forbidden, `"name":"`+s.forbiddenName+`"`, `"Name":"`+s.allowedName+`","name":"`+s.forbiddenName+`"`, 1)
			return []map[string]any{raw(call("2", p)), wait("2")}
		}},
		{name: "duplicate-name", ambiguous: true, wantExit: -1, steps: func(s server) []map[string]any {
			p := strings.Replace(s.forbidden, `"name":"`+s.forbiddenName+`"`, `"name":"`+s.allowedName+`","name":"`+s.forbiddenName+`"`, 1)
			return []map[string]any{raw(call("2", p)), wait("2")}
		}},
		{name: "case-variant-params", ambiguous: true, wantExit: -1, steps: func(s server) []map[string]any {
			return []map[string]any{raw(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":` + s.forbidden + `,"Params":` + s.allowed + "}\n"), wait("2")}
		}},
		{name: "duplicate-params", ambiguous: true, wantExit: -1, steps: func(s server) []map[string]any {
			return []map[string]any{raw(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":` + s.allowed + `,"params":` + s.forbidden + "}\n"), wait("2")}
		}},
		{name: "case-variant-arguments", ambiguous: true, wantExit: -1, steps: func(s server) []map[string]any {
			if s.scopedTool == "" {
				return nil
			}
			p := `{"name":"` + s.scopedTool + `","arguments":` + s.outOfScopeArgs + `,"Arguments":` + s.inScopeArgs + `}`
			return []map[string]any{raw(call("2", p)), wait("2")}
		}},
		{name: "duplicate-arguments", ambiguous: true, wantExit: -1, steps: func(s server) []map[string]any {
			if s.scopedTool == "" {
				return nil
			}
			p := `{"name":"` + s.scopedTool + `","arguments":` + s.inScopeArgs + `,"arguments":` + s.outOfScopeArgs + `}`
			return []map[string]any{raw(call("2", p)), wait("2")}
		}},
		{name: "case-variant-path-key", wantExit: 1, steps: func(s server) []map[string]any {
			if s.scopedTool == "" {
				return nil
			}
			p := `{"name":"` + s.scopedTool + `","arguments":{"Path":"/etc/passwd"}}`
			return []map[string]any{raw(call("2", p)), wait("2")}
		}},
		{name: "proto-member", ambiguous: true, wantExit: 4, steps: func(s server) []map[string]any {
			p := strings.Replace(s.allowed, `"arguments":{`, `"arguments":{"__proto__":{"path":"/etc/passwd","message":"x"},`, 1)
			return []map[string]any{raw(call("2", p)), wait("2")}
		}},
		{name: "batch", ambiguous: true, wantExit: -1, steps: func(s server) []map[string]any {
			return []map[string]any{raw("[" + strings.TrimSuffix(call("2", s.forbidden), "\n") + "]\n"), settle(1500)}
		}},
		{name: "split-across-lines", ambiguous: true, wantExit: -1, steps: func(s server) []map[string]any {
			return []map[string]any{raw(`{"jsonrpc":"2.0","id":2,"method":"tools/call",` + "\n" + `"params":` + s.forbidden + "}\n"), settle(1500)}
		}},
		{name: "two-values-one-line", ambiguous: true, wantExit: -1, steps: func(s server) []map[string]any {
			return []map[string]any{raw(strings.TrimSuffix(call("2", s.allowed), "\n") + " " + call("3", s.forbidden)), settle(1500)}
		}},
		// 9007199254740993 is a double's neighbour of 9007199254740992: the
		// Go SDK answers both, the TypeScript SDK neither (beyond its safe
		// integers), so the exit is 1 or, with calls left unanswered, 4
		{name: "ids-beyond-2^53", ambiguous: true, wantExit: -1, steps: func(s server) []map[string]any {
			return []map[string]any{
				raw(call("9007199254740992", s.allowed)), wait("9007199254740992"),
				raw(call("9007199254740993", s.forbidden)), settle(1500),
			}
		}},
		{name: "overflowing-number-then-forbidden", wantExit: 4, steps: func(s server) []map[string]any {
			p := strings.Replace(s.allowed, `"arguments":{`, `"arguments":{"n":1e400,`, 1)
			return []map[string]any{raw(call("2", p)), wait("2"), raw(call("3", s.forbidden)), wait("3")}
		}},
		{name: "20-digit-integer-then-forbidden", wantExit: 4, steps: func(s server) []map[string]any {
			p := strings.Replace(s.allowed, `"arguments":{`, `"arguments":{"n":12345678901234567891,`, 1)
			return []map[string]any{raw(call("2", p)), wait("2"), raw(call("3", s.forbidden)), wait("3")}
		}},
		{name: "lone-surrogate-then-forbidden", ambiguous: true, wantExit: -1, steps: func(s server) []map[string]any {
			p := strings.Replace(s.allowed, `"arguments":{`, `"arguments":{"s":"\ud800",`, 1)
			return []map[string]any{raw(call("2", p)), wait("2"), raw(call("3", s.forbidden)), wait("3")}
		}},
		{name: "invalid-utf8", ambiguous: true, wantExit: -1, steps: func(s server) []map[string]any {
			p := strings.Replace(s.allowed, `"arguments":{`, "\"arguments\":{\"s\":\"\xff\xfe\",", 1)
			return []map[string]any{raw(call("2", p)), wait("2"), raw(call("3", s.forbidden)), wait("3")}
		}},
		{name: "oversized-line-then-forbidden", wantExit: -1, failClosed: true, steps: func(s server) []map[string]any {
			return []map[string]any{
				{"big": bigLine(), "prefix": `{"jsonrpc":"2.0","method":"notifications/message","params":{"pad":"`, "suffix": "\"}}\n"},
				raw(call("3", s.forbidden)), wait("3"),
			}
		}},
		{name: "notification-flood-then-forbidden", wantExit: 1, steps: func(s server) []map[string]any {
			return []map[string]any{
				{"repeat": 100000, "raw": `{"jsonrpc":"2.0","method":"notifications/witness-flood","params":{}}` + "\n"},
				raw(call("3", s.forbidden)), wait("3"),
			}
		}},
	}
}

type runResult struct {
	dir       string
	received  []byte
	trace     string
	report    hostReport
	verifyOut string
	verify    int
}

type hostReport struct {
	SentBytes  int64    `json:"sent_bytes"`
	SentSHA256 string   `json:"sent_sha256"`
	WriteError string   `json:"write_error"`
	Missing    []string `json:"missing"`
	ExitCode   int      `json:"exit_code"`
	Killed     bool     `json:"killed"`
}

// TestHostileHosts drives `witness proxy` with every attack class against
// both servers and checks the evidence against what the server did.
func TestHostileHosts(t *testing.T) {
	for _, s := range []server{gosdk(), everything()} {
		t.Run(s.name, func(t *testing.T) {
			keys := filepath.Join(t.TempDir(), "keys.json")
			sealFile := sealFor(t, s, keys)
			for _, a := range attacks() {
				steps := a.steps(s)
				if steps == nil {
					continue
				}
				t.Run(a.name, func(t *testing.T) {
					r := runAttack(t, s, steps, keys, sealFile)
					forbidden := s.forbiddenRan(t, r)
					t.Logf("verify exit %d, forbidden ran: %v, host: %+v", r.verify, forbidden, r.report)
					if r.report.Killed {
						t.Errorf("the proxy did not end after the host closed stdin")
					}
					if forbidden && r.verify == 0 {
						t.Errorf("a forbidden call ran and verify says verified:\n%s", r.verifyOut)
					}
					if a.ambiguous && r.verify == 0 {
						t.Errorf("the host sent an ambiguous line and verify says verified:\n%s", r.verifyOut)
					}
					if a.wantExit >= 0 && r.verify != a.wantExit {
						t.Errorf("verify exit %d, want %d:\n%s", r.verify, a.wantExit, r.verifyOut)
					}
					checkCassette(t, r, a)
				})
			}
		})
	}
}

// sealFor makes a keyring and seals the server's agent spec.
func sealFor(t *testing.T, s server, keys string) string {
	dir := filepath.Dir(keys)
	spec := filepath.Join(dir, "agent.json")
	if err := os.WriteFile(spec, []byte(s.spec), 0o644); err != nil {
		t.Fatal(err)
	}
	sealFile := filepath.Join(dir, "seal.json")
	witness(t, dir, keys, 0, "keygen")
	witness(t, dir, keys, 0, "seal", "--spec", spec, "--out", sealFile)
	return sealFile
}

// witness runs the witness binary and fails unless it exits with want
// (want < 0: any code). It returns stdout+stderr and the exit code.
func witness(t *testing.T, dir, keys string, want int, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bins.witness, args...)
	cmd.Dir = dir
	cmd.Env = env(keys)
	out, err := cmd.CombinedOutput()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("witness %s: %v", strings.Join(args, " "), err)
	}
	if want >= 0 && code != want {
		t.Fatalf("witness %s: exit %d, want %d\n%s", strings.Join(args, " "), code, want, out)
	}
	return string(out), code
}

func env(keys string) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + filepath.Dir(keys),
		"WITNESS_KEYRING=" + keys,
		"ATW_WITNESS_TS=2026-08-30T14:33:00+00:00",
	}
}

func runAttack(t *testing.T, s server, steps []map[string]any, keys, sealFile string) *runResult {
	dir := t.TempDir()
	r := &runResult{dir: dir, trace: filepath.Join(dir, "server-trace.jsonl")}
	script, err := json.Marshal(steps)
	if err != nil {
		t.Fatal(err)
	}
	scriptFile := filepath.Join(dir, "script.json")
	if err := os.WriteFile(scriptFile, script, 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"-script", scriptFile, "-received", filepath.Join(dir, "received.jsonl"), "-report", filepath.Join(dir, "report.json"), "--",
		bins.witness, "proxy", "--out", filepath.Join(dir, "rec"), "--seal", sealFile, "--keyring", keys, "--"}
	args = append(args, s.argv(t)...)
	cmd := exec.Command(bins.host, args...)
	cmd.Dir = dir
	cmd.Env = append(env(keys), "GOSDK_TRACE="+r.trace)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("hostile host: %v\n%s", err, tail(stderr.Bytes()))
	}
	if r.received, err = os.ReadFile(filepath.Join(dir, "received.jsonl")); err != nil {
		t.Fatal(err)
	}
	rep, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(rep, &r.report); err != nil {
		t.Fatal(err)
	}
	r.verifyOut, r.verify = witness(t, dir, keys, -1, "verify", "--seal", sealFile, "--events", filepath.Join(dir, "rec", "events.jsonl"))
	return r
}

// checkCassette rebuilds the host-to-server stream from the cassette and
// compares it with what the host sent: the evidence holds the exact bytes
// the server was given. A proxy that fails closed may have forwarded (and
// so recorded) less than the host wrote, never more, and never other bytes.
func checkCassette(t *testing.T, r *runResult, a attack) {
	t.Helper()
	f, err := os.Open(filepath.Join(r.dir, "rec", "cassette.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cr, err := cassette.NewReader(bufio.NewReaderSize(f, 1<<20), "cassette.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	var n int64
	for {
		rec, err := cr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("cassette: %v", err)
		}
		if rec.Dir != cassette.C2S || rec.Life != "" {
			continue
		}
		w := rec.Wire()
		h.Write(w)
		n += int64(len(w))
	}
	got := hex.EncodeToString(h.Sum(nil))
	switch {
	case r.report.WriteError == "" && !a.failClosed:
		if n != r.report.SentBytes || got != r.report.SentSHA256 {
			t.Errorf("cassette c2s stream: %d bytes sha256 %s; the host sent %d bytes sha256 %s", n, got, r.report.SentBytes, r.report.SentSHA256)
		}
	case n > r.report.SentBytes:
		t.Errorf("cassette c2s stream holds %d bytes, more than the %d the host sent", n, r.report.SentBytes)
	}
}

func tail(b []byte) string {
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
