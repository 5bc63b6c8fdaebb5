package derive

import (
	"bytes"
	"encoding/json"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const compatDir = "../testdata/compat/atw-0.1.0"

func importFile(t *testing.T, name string, signers ...eventlog.Signer) ([]byte, *ImportReport) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(compatDir, name))
	must(t, err)
	var out bytes.Buffer
	rep, err := ImportATW(bytes.NewReader(data), &out, ImportOptions{Name: name, TS: frozenTS, Signers: signers})
	if err != nil {
		t.Fatalf("import %s: %v", name, err)
	}
	return out.Bytes(), rep
}

func decodeAll(t *testing.T, data []byte) []*eventlog.Event {
	t.Helper()
	rd := eventlog.NewReader(bytes.NewReader(data), "out")
	var evs []*eventlog.Event
	for {
		e, err := rd.Next()
		if err != nil {
			if err.Error() == "EOF" {
				return evs
			}
			t.Fatal(err)
		}
		evs = append(evs, e)
	}
}

func TestImportHansardPairsByTool(t *testing.T) {
	out, rep := importFile(t, "hansard_scenario_1.jsonl", goodSigner)
	if rep.Format != legacyATWEvents || rep.Events != 6 || rep.Paired != 3 || len(rep.Orphans) != 0 {
		t.Fatalf("report %+v", rep)
	}
	evs := decodeAll(t, out)
	if len(evs) != 8 {
		t.Fatalf("%d lines", len(evs))
	}
	h := evs[0].Header
	if h.ImportedFrom != "atw-0.1.0" || h.Pairing != "earliest-open-same-tool" || h.Seal.Digest != "c6d0e4f55b187bb6aa01c345c1f36fef6167b7c75b33a9480e99d0e77b955707" {
		t.Fatalf("header %+v", h)
	}
	byID := map[string]*eventlog.Event{}
	for _, e := range evs {
		byID[e.ID] = e
		if e.Source != eventlog.SourceImported {
			t.Errorf("%s source %s", e.ID, e.Source)
		}
	}
	// 0.1.0 (LIFO) paired delete_file's response with read_file's call;
	// here every response pairs with the call of its own tool.
	for _, e := range evs {
		if e.Kind != eventlog.KindToolResponse {
			continue
		}
		call := byID[e.Call]
		if call == nil || call.Kind != eventlog.KindToolCall || call.Tool != e.Tool {
			t.Fatalf("%s (%s) paired with %q", e.ID, e.Tool, e.Call)
		}
	}
	del := evs[6]
	if del.Tool != "delete_file" || del.Call != "e4" || byID["e4"].Tool != "delete_file" {
		t.Fatalf("delete_file response: %+v", del)
	}
	if del.Legacy == nil || del.Legacy.Unsealed == nil || !*del.Legacy.Unsealed || del.Legacy.Line != 6 {
		t.Fatalf("legacy %+v", del.Legacy)
	}
	if *evs[1].Legacy.Unsealed {
		t.Fatal("read_file marked unsealed")
	}
	// 0.1.0 hashes are kept, payloads absent
	if evs[1].PayloadSHA256 != "90455b361dcf92d7c1ec9d2e1a2c2785649bfad21cfde910eedee97edf90d164" || evs[1].Payload != nil {
		t.Fatalf("hash %+v", evs[1])
	}
	if _, err := eventlog.VerifyLog(bytes.NewReader(out), "out", eventlog.VerifyLogOptions{Verifier: trusted}); err != nil {
		t.Fatalf("imported log does not verify: %v", err)
	}
}

func TestImportCassettes(t *testing.T) {
	out, rep := importFile(t, "mcp_stdio_live_001.jsonl")
	if rep.Format != LegacyATWCassette || rep.Events != 5 || rep.Paired != 3 {
		t.Fatalf("report %+v", rep)
	}
	evs := decodeAll(t, out)
	call, resp, eff, in, outp := evs[1], evs[2], evs[3], evs[4], evs[5]
	if string(call.Payload) != `{"path":"/tmp/recorded"}` || call.Tool != "delete_file" {
		t.Fatalf("call %s", call.Payload)
	}
	if resp.Call != call.ID || resp.IsError == nil || *resp.IsError || !strings.Contains(string(resp.Payload), "deleted '/tmp/recorded'") {
		t.Fatalf("resp %+v", resp)
	}
	if eff.Call != call.ID || eff.Effect.Op != "other" {
		t.Fatalf("effect %+v", eff.Effect)
	}
	if outp.Input != in.ID || in.Role != "user" || outp.Role != "assistant" || string(outp.Payload) != `"done"` {
		t.Fatalf("model %+v %+v", in, outp)
	}
	_, err := eventlog.VerifyLog(bytes.NewReader(out), "out", eventlog.VerifyLogOptions{AllowUnsigned: true})
	must(t, err)

	out, _ = importFile(t, "mcp_stdio_001.jsonl")
	evs = decodeAll(t, out)
	if evs[3].Effect.Op != "read" || evs[3].Effect.Target != "/tmp/cassette.txt" || evs[1].TS != "2026-08-31T00:00:00+00:00" {
		t.Fatalf("effect %+v ts %s", evs[3].Effect, evs[1].TS)
	}
}

func TestImportDeterministic(t *testing.T) {
	for _, f := range []string{"hansard_scenario_1.jsonl", "mcp_stdio_001.jsonl", "mcp_stdio_live_001.jsonl"} {
		first, _ := importFile(t, f, goodSigner)
		for i := 0; i < 9; i++ {
			again, _ := importFile(t, f, goodSigner)
			if !bytes.Equal(first, again) {
				t.Fatalf("%s: run %d differs", f, i+2)
			}
		}
	}
}

func TestImportEarliestOpenAndOrphans(t *testing.T) {
	in := `{"payload":{"args":{"n":1},"tool":"t"},"timestamp":"a","type":"tool_call"}
{"payload":{"args":{"n":2},"tool":"t"},"timestamp":"b","type":"tool_call"}

{"payload":{"result":"r1","tool":"t"},"timestamp":"c","type":"tool_response"}
{"payload":{"result":"r2","tool":"t"},"timestamp":"d","type":"tool_response"}
{"payload":{"result":"r3","tool":"t"},"timestamp":"e","type":"tool_response"}
{"payload":{"effect":{"op":"write"},"tool":"u"},"timestamp":"f","type":"external_effect"}
{"payload":{"content":"x","role":"assistant"},"timestamp":"g","type":"model_output"}
`
	var out bytes.Buffer
	rep, err := ImportATW(strings.NewReader(in), &out, ImportOptions{Name: "x.jsonl", TS: frozenTS})
	must(t, err)
	evs := decodeAll(t, out.Bytes())
	if evs[3].Call != "e1" || evs[4].Call != "e2" || evs[5].Call != "" || !evs[5].Legacy.Orphan {
		t.Fatalf("pairing %s %s %s", evs[3].Call, evs[4].Call, evs[5].Call)
	}
	if evs[3].Legacy.Line != 4 {
		t.Fatalf("line numbers count blank lines: %d", evs[3].Legacy.Line)
	}
	if len(rep.Orphans) != 3 {
		t.Fatalf("orphans %v", rep.Orphans)
	}
}

func TestImportErrorsNameLineAndField(t *testing.T) {
	good := `{"payload_sha256":"90455b361dcf92d7c1ec9d2e1a2c2785649bfad21cfde910eedee97edf90d164","role":null,"seal_ref":"s","tool":"read_file","ts":"t","type":"tool_call","unsealed":false}`
	cases := []struct{ in, want string }{
		{"", "empty file"},
		{"not json", "x.jsonl:1"},
		{good + "\n" + strings.Replace(good, `"tool_call"`, `"tool_cal"`, 1), `x.jsonl:2: $.type`},
		{good + "\n" + strings.Replace(good, `"unsealed":false`, `"unsealed":"no"`, 1), `x.jsonl:2: $.unsealed`},
		{good + "\n" + strings.Replace(good, `"ts":"t",`, ``, 1), `x.jsonl:2: $.ts: missing`},
		{good + "\n" + strings.Replace(good, `"role":null`, `"extra":1,"role":null`, 1), `x.jsonl:2: $.extra: unknown field`},
		{good + "\n" + `{"payload":{"args":{},"tool":"t"},"timestamp":"a","type":"tool_call"}`, "x.jsonl:2: a atw-0.1.0-cassette line"},
		{`{"payload":{"args":{}},"timestamp":"a","type":"tool_call"}`, `$.payload.tool`},
	}
	for _, c := range cases {
		var out bytes.Buffer
		_, err := ImportATW(strings.NewReader(c.in), &out, ImportOptions{Name: "x.jsonl", TS: frozenTS})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.in, err, c.want)
		}
		if exitcode.Of(err) != exitcode.Tampered {
			t.Errorf("%q: code %v", c.in, exitcode.Of(err))
		}
	}
}

func TestImportRedacts(t *testing.T) {
	in := `{"payload":{"args":{"path":"/x","token":"s3cr3t-value"},"tool":"t"},"timestamp":"a","type":"tool_call"}` + "\n"
	r := testRedactor(t, "$.arguments.token")
	var out bytes.Buffer
	_, err := ImportATW(strings.NewReader(in), &out, ImportOptions{Name: "x", TS: frozenTS, Redactor: r})
	must(t, err)
	if bytes.Contains(out.Bytes(), []byte("s3cr3t")) || !bytes.Contains(out.Bytes(), []byte(`"redacted":true`)) {
		t.Fatalf("%s", out.Bytes())
	}
	var e eventlog.Event
	must(t, json.Unmarshal(lines(out.Bytes())[0], &e))
	if e.Header.Redaction == nil || e.Header.Redaction.Rules[0] != "$.arguments.token" {
		t.Fatalf("header %+v", e.Header)
	}
}

func FuzzImportATW(f *testing.F) {
	for _, name := range []string{"hansard_scenario_1.jsonl", "mcp_stdio_001.jsonl", "mcp_stdio_live_001.jsonl"} {
		data, err := os.ReadFile(filepath.Join(compatDir, name))
		if err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"payload":"7b7d","timestamp":"a","type":"tool_call"}`))
	f.Add([]byte(`{"payload":null,"type":"model_input"}` + "\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer
		_, err := ImportATW(bytes.NewReader(data), &out, ImportOptions{Name: "fuzz", TS: frozenTS})
		if err != nil {
			if c := exitcode.Of(err); c != exitcode.Tampered {
				t.Fatalf("error with code %v: %v", c, err)
			}
			return
		}
		// whatever imports, verifies
		if _, err := eventlog.VerifyLog(bytes.NewReader(out.Bytes()), "fuzz", eventlog.VerifyLogOptions{AllowUnsigned: true}); err != nil {
			t.Fatalf("imported log does not verify: %v\n%s", err, out.Bytes())
		}
	})
}
