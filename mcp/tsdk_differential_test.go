package mcp

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/internal/testrepo"
)

// tsReading is what testdata/peers/tsread.mjs prints for one line: how a
// server built on the official TypeScript MCP SDK reads it.
type tsReading struct {
	OK        bool    `json:"ok"`
	Error     string  `json:"error"`
	Kind      string  `json:"kind"`
	Method    string  `json:"method"`
	ID        *string `json:"id"`        // JSON.stringify of the id as JavaScript holds it
	Name      *string `json:"name"`      // params.name of a tools/call
	Arguments *string `json:"arguments"` // JSON.stringify of params.arguments
}

// readAsTypeScript runs every line through the TypeScript SDK's reader in
// one node process and returns its readings in order.
func readAsTypeScript(t *testing.T, lines [][]byte) []tsReading {
	t.Helper()
	script := filepath.Join(testrepo.Root(t), "testdata", "peers", "tsread.mjs")
	if _, err := os.Stat(filepath.Join(filepath.Dir(script), "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("npm peers missing (make peers): %v", err)
		}
		t.Skipf("npm peers missing (make peers): %v", err)
	}
	var in bytes.Buffer
	for _, l := range lines {
		b, _ := json.Marshal(base64.StdEncoding.EncodeToString(l))
		in.Write(b)
		in.WriteByte('\n')
	}
	cmd := exec.Command("node", script)
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node tsread.mjs: %v\n%s", err, stderr.Bytes())
	}
	var rs []tsReading
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var r tsReading
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("tsread output %q: %v", sc.Bytes(), err)
		}
		rs = append(rs, r)
	}
	if len(rs) != len(lines) {
		t.Fatalf("tsread read %d lines, printed %d readings", len(lines), len(rs))
	}
	return rs
}

// sameJSON compares two JSON texts by value, numbers as float64 (what
// JavaScript holds): used only for lines the witness called unambiguous, whose
// numbers canonical JSON carries exactly (-0 is 0 to JavaScript).
func sameJSON(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	// DeepEqual compares float64 with ==, so -0 equals 0 as in JavaScript
	return reflect.DeepEqual(va, vb)
}

// TestTypeScriptSDKDifferential is the differential of item 12 against the
// TypeScript SDK: thousands of generated JSON-RPC lines (the attack lines,
// and random compositions of duplicated, case-variant, escaped and oddly
// numbered members) are read by the witness and by a TypeScript-SDK server
// reader. Whenever the witness calls a line unambiguous and the SDK accepts
// it, both read the same kind, method, id, tool name and arguments. Whenever
// the SDK acts on a tools/call the witness did not read as one, the witness
// flagged the line and one of its readings names the SDK's tool.
func TestTypeScriptSDKDifferential(t *testing.T) {
	lines := tsCorpus(4000)
	rs := readAsTypeScript(t, lines)
	var agreed, flagged, refused int
	for i, line := range lines {
		ts := rs[i]
		m, err := Parse(line)
		if err != nil {
			flagged++
			if !ts.OK || ts.Method != "tools/call" || ts.Name == nil {
				continue
			}
			rd := ReadAll(line)
			found := false
			for _, r := range rd.List {
				if r.Method == "tools/call" && r.Tool == *ts.Name {
					found = true
				}
			}
			if !found {
				t.Errorf("line %q: the TypeScript SDK runs tool %q; the witness flagged the line (%v) but no reading names that tool", line, *ts.Name, err)
			}
			continue
		}
		if !ts.OK {
			refused++ // the server refuses what the witness reads: nothing runs
			continue
		}
		agreed++
		if string(m.Kind) != ts.Kind || m.Method != ts.Method {
			t.Errorf("line %q: witness %s %q, TypeScript SDK %s %q", line, m.Kind, m.Method, ts.Kind, ts.Method)
			continue
		}
		if (m.ID == nil) != (ts.ID == nil) || (m.ID != nil && !sameJSON(m.ID, []byte(*ts.ID))) {
			t.Errorf("line %q: witness id %s, TypeScript SDK id %v", line, m.ID, deref(ts.ID))
		}
		if m.Method != "tools/call" {
			continue
		}
		nameRaw, _ := Member(m.Params, "name")
		tool, _ := StringValue(nameRaw)
		if ts.Name == nil || tool != *ts.Name {
			t.Errorf("line %q: witness tool %q, TypeScript SDK tool %v", line, tool, deref(ts.Name))
		}
		args, ok := Member(m.Params, "arguments")
		if !ok {
			args = []byte("null")
		}
		if ts.Arguments == nil || !sameJSON(args, []byte(*ts.Arguments)) {
			t.Errorf("line %q: witness arguments %s, TypeScript SDK %v", line, args, deref(ts.Arguments))
		}
	}
	t.Logf("%d lines: %d read alike, %d flagged by the witness, %d refused by the SDK only", len(lines), agreed, flagged, refused)
	if agreed == 0 || flagged == 0 {
		t.Fatalf("the corpus exercised nothing: %d read alike, %d flagged", agreed, flagged)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<absent>"
	}
	return *s
}

// tsCorpus returns the attack lines and n lines composed at random (fixed
// seed) from members a lying host would use.
func tsCorpus(n int) [][]byte {
	var lines [][]byte
	for _, s := range attackLines {
		lines = append(lines, []byte(s))
	}
	r := rand.New(rand.NewPCG(9, 2026))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	ids := []string{`1`, `2`, `3`, `4`, `"a"`, `"b"`, `"\u0061"`, `0`, `-1`, `9007199254740991`, `9007199254740993`, `1.0`, `-0`, `1e2`, `null`, `true`, `{}`, `"x\ud800"`}
	names := []string{`"name"`, `"name"`, `"name"`, `"name"`, `"name"`, `"name"`, `"name"`, `"name"`, `"Name"`, `"NAME"`, `"n\u0061me"`, `"nam\u0065"`, `"name "`, `"\u006eame"`}
	tools := []string{`"greet"`, `"delete_file"`, `"greet"`, `"delete_file"`, `"greet"`, `"delete_file"`, `"gr\u0065et"`, `"greet\u0000"`, `"Greet"`, `""`, `1`, `null`}
	argNames := []string{`"arguments"`, `"arguments"`, `"arguments"`, `"arguments"`, `"arguments"`, `"arguments"`, `"Arguments"`, `"argument\u0073"`, `"ARGUMENTS"`}
	argVals := []string{`{}`, `{"path":"/data/a"}`, `{"path":"/etc/passwd"}`, `{}`, `{"path":"/data/a"}`, `{"path":"/etc/passwd"}`, `{"a":[1,2.5,"x"],"b":{"c":true}}`, `{"who":"\u00e9t\u00e9"}`, `{"n":1.0}`, `{"n":-0}`, `{"n":12345678901234567891}`, `{"n":1e400}`, `{"n":1E2}`,
		`{"path":"/data/a","Path":"/etc/passwd"}`, `{"path":"/data/a","path":"/etc/passwd"}`, `{"p\u0061th":"/etc/passwd","path":"/data/a"}`,
		`{"s":"\ud800"}`, `{"s":"a\u0000b"}`, `{"__proto__":{"x":1}}`, `[1,2]`, `null`, `"str"`, `{"k":1,"\u212a":2}`}
	env := []string{`"jsonrpc":"2.0"`, `"jsonrpc":"2.0"`, `"jsonrpc":"2.0"`, `"jsonrpc":"1.0"`, `"jsonrpc":"2.0","jsonrpc":"2.0"`, `"JSONRPC":"2.0","jsonrpc":"2.0"`, ``}
	methods := []string{`"tools/call"`, `"tools/call"`, `"tools/call"`, `"tools/call"`, `"tools/call"`, `"tools/call"`, `"Tools/Call"`, `"tools/call\u0000"`, `"tools\/call"`, `"ping"`, `"notifications/initialized"`}
	for i := 0; i < n; i++ {
		var members []string
		if e := pick(env...); e != "" {
			members = append(members, e)
		}
		if r.IntN(5) > 0 {
			members = append(members, `"id":`+pick(ids...))
		}
		if r.IntN(12) == 0 {
			members = append(members, pick(`"id":`, `"Id":`, `"i\u0064":`)+pick(ids...))
		}
		members = append(members, `"method":`+pick(methods...))
		if r.IntN(15) == 0 {
			members = append(members, pick(`"method":`, `"Method":`, `"m\u0065thod":`)+pick(methods...))
		}
		var params []string
		params = append(params, pick(names...)+`:`+pick(tools...))
		if r.IntN(8) == 0 {
			params = append(params, pick(names...)+`:`+pick(tools...))
		}
		if r.IntN(6) > 0 {
			params = append(params, pick(argNames...)+`:`+pick(argVals...))
		}
		if r.IntN(10) == 0 {
			params = append(params, pick(argNames...)+`:`+pick(argVals...))
		}
		r.Shuffle(len(params), func(a, b int) { params[a], params[b] = params[b], params[a] })
		p := `{` + strings.Join(params, pick(",", ", ", ",\t")) + `}`
		if r.IntN(20) == 0 {
			p = pick(`[]`, `null`, `"x"`, `[`+p+`]`)
		}
		members = append(members, `"params":`+p)
		if r.IntN(20) == 0 {
			members = append(members, `"params":{"name":"delete_file"}`)
		}
		r.Shuffle(len(members), func(a, b int) { members[a], members[b] = members[b], members[a] })
		line := `{` + strings.Join(members, ",") + `}`
		switch r.IntN(40) {
		case 0:
			line = `[` + line + `]`
		case 1:
			line += " " + line
		case 2:
			line += "\r"
		case 3:
			line = " \t" + line + " "
		case 4:
			line = "\ufeff" + line
		case 5:
			line += "\xff"
		}
		lines = append(lines, []byte(line))
	}
	return lines
}
