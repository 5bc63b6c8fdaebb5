package httpproxy

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/testrepo"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// canaries are the secrets the clients send: the SDKs' own API key
// header (Authorization: Bearer, from both SDKs), every provider header, a header the user names
// (--redact-header), credential query parameters and one the user names
// (--redact-query). Each is unlike anything else in the files.
var canaries = struct {
	Auth         string            `json:"auth"`
	AnthropicKey string            `json:"anthropic_key"`
	Headers      map[string]string `json:"headers"`
	Query        map[string]string `json:"query"`
}{
	Auth:         "sk-CANARYauth0001",
	AnthropicKey: "sk-ant-CANARYxapikey0002",
	Headers: map[string]string{
		"api-key":              "CANARYapikeyhdr0003",
		"x-goog-api-key":       "CANARYgoog0004",
		"cookie":               "session=CANARYcookie0005",
		"x-amz-security-token": "CANARYamz0006",
		"x-user-secret":        "CANARYuserhdr0007",
		"x-api-key":            "CANARYxapikey0012",
	},
	Query: map[string]string{
		"key":          "CANARYq1key0008",
		"api-key":      "CANARYq2apikey0009",
		"access_token": "CANARYq3token0010",
		"mine":         "CANARYq4user0011",
	},
}

// canaryValues lists every secret the clients send.
func canaryValues() []string {
	out := []string{canaries.Auth, canaries.AnthropicKey}
	for _, v := range canaries.Headers {
		out = append(out, v)
	}
	for _, v := range canaries.Query {
		out = append(out, v)
	}
	return out
}

// leakForms are the texts of a secret that must never be found: as is,
// percent-encoded, base64 (standard, URL, of the bare value and of an
// Authorization header's "Bearer " value) and hex.
func leakForms(s string) []string {
	out := []string{s, hex.EncodeToString([]byte(s)), strings.ToUpper(hex.EncodeToString([]byte(s)))}
	for _, b := range []string{s, "Bearer " + s} {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
			e := enc.EncodeToString([]byte(b))
			out = append(out, strings.TrimRight(e, "="))
		}
	}
	return out
}

// TestCanariesNeverReachDisk runs the pinned openai and @anthropic-ai/sdk
// clients through the real `witness proxy --listen` binary with secrets in
// every credential header (the SDKs' own Authorization, x-api-key, api-key, x-goog-api-key, Cookie, x-amz-security-token, a --redact-header)
// and in the query string (key, api-key, access_token, a --redact-query).
// The upstream (testdata/modelserver) must receive every secret unchanged;
// then every verb that writes files runs on the recording (graph in its
// three formats, report, verify --json/--sarif/--junit, and serve, which
// must still match the live requests against the hashed ones), and no file
// under the output folders may hold a secret, as is, hex or base64.
func TestCanariesNeverReachDisk(t *testing.T) {
	node, peers := peersNode(t)
	root := testrepo.Root(t)
	bins := t.TempDir()
	ms := goBuild(t, "./testdata/modelserver", bins)
	witness := goBuild(t, "./cmd/witness", bins)
	work, out := t.TempDir(), t.TempDir() // the witness's files; the test's own (canaries, upstream record)
	keys := filepath.Join(work, "keys.json")
	env := []string{eventlog.EnvTS + "=2026-08-30T14:33:00+00:00", "WITNESS_KEYRING=" + keys, "HOME=" + work}
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(witness, args...)
		cmd.Env = append(os.Environ(), env...)
		b, err := cmd.CombinedOutput()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			t.Fatalf("witness %v: %v", args, err)
		}
		for _, c := range canaryValues() {
			if bytes.Contains(b, []byte(c)) {
				t.Errorf("witness %v printed the secret %q:\n%s", args, c, b)
			}
		}
	}
	run("keygen", "--keyring", keys)
	spec, _ := json.Marshal(canaries)
	specFile := filepath.Join(out, "canaries.json")
	if err := os.WriteFile(specFile, spec, 0o600); err != nil {
		t.Fatal(err)
	}

	upRec := filepath.Join(out, "upstream.jsonl")
	model := startDaemon(t, nil, ms, "-listen", "127.0.0.1:0", "-record", upRec, "-script", filepath.Join(root, "testdata", "modelserver", "scripts", "scenarios.json"))
	rec := filepath.Join(work, "rec")
	px := startDaemon(t, env, witness, "proxy", "--out", rec, "--listen", "127.0.0.1:0", "--upstream", model.URL,
		"--redact-header", "X-User-Secret", "--redact-query", "mine")
	proxied := runCanaryClient(t, node, peers, px.URL, specFile)
	if code := px.stop(t); code != 0 {
		t.Fatalf("proxy exit %d\n%s", code, px.stderr.String())
	}
	model.stop(t)
	checkUpstreamGotCanaries(t, upRec)

	// serve the recording: a live request carrying the secrets matches
	// the recorded one carrying their hashes
	sv := startDaemon(t, env, witness, "serve", "--cassette", filepath.Join(rec, derive.CassetteFile), "--listen", "127.0.0.1:0")
	served := runCanaryClient(t, node, peers, sv.URL, specFile)
	if code := sv.stop(t); code != 0 {
		t.Errorf("serve exit %d\n%s", code, sv.stderr.String())
	}
	if !bytes.Equal(proxied, served) {
		t.Errorf("the SDKs got\n%s\nthrough the proxy, and from serve\n%s", proxied, served)
	}
	for _, s := range []string{px.stderr.String(), sv.stderr.String()} {
		for _, c := range canaryValues() {
			if strings.Contains(s, c) {
				t.Errorf("a daemon printed the secret %q:\n%s", c, s)
			}
		}
	}

	events := filepath.Join(rec, derive.EventsFile)
	outs := filepath.Join(work, "out")
	if err := os.Mkdir(outs, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"jsonld", "nquads", "dot"} {
		run("graph", "--events", events, "--format", f, "--out", filepath.Join(outs, "graph."+f))
	}
	run("report", "--events", events, "--out", filepath.Join(outs, "report.html"))
	for _, f := range []string{"json", "sarif", "junit"} {
		run("verify", "--events", events, "--"+f, "--out", filepath.Join(outs, "verify."+f))
	}

	cas, err := os.ReadFile(filepath.Join(rec, derive.CassetteFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(cas, []byte(`"redacted_query":["access_token",`)) || !bytes.Contains(cas, []byte(`"mine"`)) || !bytes.Contains(cas, []byte(`"x-user-secret"`)) {
		t.Errorf("the cassette header does not list the redacted names:\n%s", bytes.SplitN(cas, []byte("\n"), 2)[0])
	}
	if n := bytes.Count(cas, []byte(`"rec":"request","method":"`)); n != 4 || bytes.Count(cas, []byte(`"redacted":true}`)) < 4 || !bytes.Contains(cas, []byte("key=redacted:hmac-sha256:")) {
		t.Errorf("%d request heads; each must say redacted and carry key=<keyed hash>:\n%s", n, cas)
	}
	grepTree(t, work, canaryValues(), 11) // keys, cassette, events, 3 graphs, report, 3 verify outputs, and the recording's own
}

// runCanaryClient runs canaryclient.mjs against base and returns its
// output; every call must have succeeded.
func runCanaryClient(t *testing.T, node, peers, base, spec string) []byte {
	t.Helper()
	cmd := exec.Command(node, "canaryclient.mjs", base, spec)
	cmd.Dir = peers
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	timer := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	out, err := cmd.Output()
	timer.Stop()
	if err != nil {
		t.Fatalf("canaryclient: %v\n%s", err, stderr.String())
	}
	if n := bytes.Count(out, []byte(`"ok":true`)); n != 4 || !bytes.Contains(out, []byte(`"status 404"`)) {
		t.Fatalf("canaryclient: %d of 4 calls succeeded:\n%s%s", n, out, stderr.String())
	}
	return out
}

// checkUpstreamGotCanaries reads the model server's record: each request
// reached it with every secret as the client sent it.
func checkUpstreamGotCanaries(t *testing.T, file string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 4 {
		t.Fatalf("the upstream saw %d requests, want 4", len(lines))
	}
	for i, l := range lines {
		var r struct {
			Target string
			Header map[string][]string
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		for name, v := range canaries.Query {
			if !strings.Contains(r.Target, name+"="+v) {
				t.Errorf("request %d reached the upstream as %q, without %s=%s", i+1, r.Target, name, v)
			}
		}
		h := map[string]string{}
		for n, vs := range r.Header {
			h[strings.ToLower(n)] = strings.Join(vs, ",")
		}
		for name, v := range canaries.Headers {
			if h[name] != v {
				t.Errorf("request %d: the upstream got %s: %q, want %q", i+1, name, h[name], v)
			}
		}
		auth := canaries.Auth // the SDKs' own API key header
		if i == 2 {
			auth = canaries.AnthropicKey
		}
		if h["authorization"] != "Bearer "+auth {
			t.Errorf("request %d: the upstream got Authorization %q", i+1, h["authorization"])
		}
	}
}

// grepTree fails for every file under dir holding a form of a secret.
// At least min files must be there.
func grepTree(t *testing.T, dir string, secrets []string, min int) {
	t.Helper()
	files := 0
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		for _, s := range secrets {
			for _, f := range leakForms(s) {
				if bytes.Contains(b, []byte(f)) {
					t.Errorf("%s holds the secret %q (as %q)", p, s, f)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d files searched for %d secrets", files, len(secrets))
	if files < min {
		t.Errorf("only %d files under %s: a verb wrote nothing", files, dir)
	}
}

// TestMCPCanariesNeverReachDisk runs the TypeScript SDK's
// StreamableHTTPClientTransport through the proxy to server-everything
// with canaries in the URL's query (token, key, a --redact-query) and in
// headers (Authorization, x-api-key, a --redact-header): the session
// succeeds as direct, and no file the proxy wrote (the HTTP cassette, the
// proxy's log, the MCP session's message cassette and event log) holds a
// canary.
func TestMCPCanariesNeverReachDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node servers")
	}
	up := startEverything(t, "streamableHttp")
	secrets := map[string]string{"token": "CANARYmcptoken0101", "key": "CANARYmcpkey0102", "tenant_pass": "CANARYmcpuser0103"}
	headers := map[string]string{"Authorization": "Bearer CANARYmcpauth0104", "x-api-key": "CANARYmcpxkey0105", "x-tenant": "CANARYmcpuserhdr0106"}
	query := "?token=" + secrets["token"] + "&key=" + secrets["key"] + "&tenant_pass=" + secrets["tenant_pass"] + "&v=1"
	hj, _ := json.Marshal(headers)
	t.Setenv("MCPHTTPCLIENT_HEADERS", string(hj))
	direct := sdkClient(t, up+"/mcp"+query, "streamable")
	s := startProxy(t, up, Options{RedactQuery: []string{"Tenant_Pass"}, RedactHeaders: []string{"x-tenant"}})
	keepOnFailure(t, s.Dir)
	via := sdkClient(t, s.URL+"/mcp"+query, "streamable")
	if via != direct || !strings.Contains(direct, `"step":"echo","result"`) {
		t.Errorf("through the proxy:\n%s\ndirect:\n%s", via, direct)
	}
	res, err := s.stop()
	if err != nil || res.MCPSessions != 1 {
		t.Fatalf("err %v, %+v", err, res)
	}
	all := []string{"CANARYmcpauth0104"}
	for _, v := range secrets {
		all = append(all, v)
	}
	for _, v := range headers {
		all = append(all, strings.TrimPrefix(v, "Bearer "))
	}
	grepTree(t, s.Dir, all, 4) // the cassette, the proxy's log, the session's cassette and log
	cas, err := os.ReadFile(filepath.Join(s.Dir, derive.CassetteFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(cas, []byte("?token=redacted:hmac-sha256:")) || !bytes.Contains(cas, []byte("&v=1")) {
		t.Errorf("the cassette's paths do not carry the hashed query:\n%.2000s", cas)
	}
	if s := s.errw.String(); strings.Contains(s, "CANARY") {
		t.Errorf("the proxy's log names a canary:\n%s", s)
	}
}
