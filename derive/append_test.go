package derive

import (
	"bytes"
	"errors"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/jsonlimit"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeTemp(t *testing.T, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "events.jsonl")
	must(t, os.WriteFile(p, data, 0o644))
	return p
}

func appendOpts() AppendOptions {
	return AppendOptions{Verifier: trusted, Signers: []eventlog.Signer{goodSigner}, Clock: func() string { return frozenTS }}
}

const appendInput = `{"kind":"model_input","role":"system","content":"Only read files under /data","ref":"sys"}
{"kind":"model_input","role":"user","content":[{"type":"text","text":"tidy /data"}],"ref":"u1"}
{"kind":"model_output","content":"I will delete /data/secret.txt","input":"u1","ref":"o1"}
{"kind":"tool_call","tool":"delete_file","arguments":{"target":"/data/secret.txt"},"cause":"o1","ref":"c1"}
{"kind":"tool_response","tool":"delete_file","result":{"content":[{"type":"text","text":"deleted"}],"isError":false}}
{"kind":"external_effect","tool":"delete_file","effect":{"op":"delete","target":"/data/secret.txt","reason":"reported by the framework"}}
`

func TestAppendToEndedLogReopens(t *testing.T) {
	path := writeTemp(t, sampleLog(t, goodSigner))
	rep, err := AppendLog(path, strings.NewReader(appendInput), appendOpts())
	must(t, err)
	if !rep.Reopened || !rep.Ended || len(rep.Appended) != 6 || rep.Appended[0].ID != "e8" {
		t.Fatalf("report %+v", rep)
	}
	data, _ := os.ReadFile(path)
	vr, err := eventlog.VerifyLog(bytes.NewReader(data), path, eventlog.VerifyLogOptions{Verifier: trusted})
	if err != nil {
		t.Fatalf("appended log does not verify: %v", err)
	}
	if vr.Lines != 15 {
		t.Fatalf("%d lines", vr.Lines)
	}
	evs := decodeAll(t, data)
	for _, e := range evs[8:14] {
		if e.Source != eventlog.SourceReported {
			t.Fatalf("%s source %s", e.ID, e.Source)
		}
	}
	// links resolved from refs; response paired with the open call; effect with its call
	if evs[10].Input != "e9" || evs[11].Cause != "e10" || evs[12].Call != "e11" || evs[13].Call != "e11" {
		t.Fatalf("links %q %q %q %q", evs[10].Input, evs[11].Cause, evs[12].Call, evs[13].Call)
	}
	if evs[12].IsError == nil || *evs[12].IsError {
		t.Fatal("is_error not derived from the result")
	}
	// the old end stays as a checkpoint
	if evs[7].Kind != eventlog.KindSessionEnd || evs[14].Kind != eventlog.KindSessionEnd || evs[14].End.Count != 14 {
		t.Fatal("ends")
	}
}

func TestAppendOpenLogAndLinksToExisting(t *testing.T) {
	ls := lines(sampleLog(t, goodSigner))
	path := writeTemp(t, join(ls[:len(ls)-1])) // no end: still open
	in := `{"kind":"model_output","content":"again"}
{"kind":"tool_response","tool":"read_file","result":{},"call":"e3"}
`
	o := appendOpts()
	o.AllowUnsigned = true // the open tail is sealed by nobody yet
	rep, err := AppendLog(path, strings.NewReader(in), o)
	must(t, err)
	if rep.Reopened || len(rep.Appended) != 2 {
		t.Fatalf("%+v", rep)
	}
	data, _ := os.ReadFile(path)
	evs := decodeAll(t, data)
	if evs[7].Input != "e1" || evs[8].Call != "e3" {
		t.Fatalf("%q %q", evs[7].Input, evs[8].Call)
	}
	if _, err := eventlog.VerifyLog(bytes.NewReader(data), path, eventlog.VerifyLogOptions{Verifier: trusted}); err != nil {
		t.Fatal(err)
	}
}

func TestAppendErrorKeepsEarlierLines(t *testing.T) {
	path := writeTemp(t, sampleLog(t, goodSigner))
	in := appendInput + `{"kind":"tool_call","tool":"x","bogus":1}` + "\n" + `{"kind":"model_input","content":"never"}` + "\n"
	rep, err := AppendLog(path, strings.NewReader(in), appendOpts())
	if err == nil || exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), `stdin:7: $.bogus: not allowed on a tool_call`) {
		t.Fatalf("err %v", err)
	}
	if len(rep.Appended) != 6 || !rep.Ended {
		t.Fatalf("%+v", rep)
	}
	data, _ := os.ReadFile(path)
	if bytes.Contains(data, []byte("never")) {
		t.Fatal("line after the error appended")
	}
	if _, err := eventlog.VerifyLog(bytes.NewReader(data), path, eventlog.VerifyLogOptions{Verifier: trusted}); err != nil {
		t.Fatalf("log after a failed append: %v", err)
	}
}

func TestAppendRefusesTamperedAndCutOff(t *testing.T) {
	data := sampleLog(t, goodSigner)
	edited := bytes.Replace(data, []byte("/data/x"), []byte("/data/y"), 1)
	_, err := AppendLog(writeTemp(t, edited), strings.NewReader(appendInput), appendOpts())
	if exitcode.Of(err) != exitcode.Tampered {
		t.Fatalf("tampered: %v", err)
	}
	_, err = AppendLog(writeTemp(t, data[:len(data)-10]), strings.NewReader(appendInput), appendOpts())
	if exitcode.Of(err) != exitcode.Incomplete {
		t.Fatalf("cut off: %v", err)
	}
	_, err = AppendLog(filepath.Join(t.TempDir(), "missing.jsonl"), strings.NewReader(appendInput), appendOpts())
	if exitcode.Of(err) != exitcode.Usage {
		t.Fatalf("missing: %v", err)
	}
}

func TestParseAppendInputErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`[]`, "not a JSON object"},
		{`{}`, `$.kind: missing`},
		{`{"kind":"session_end"}`, `cannot be appended`},
		{`{"kind":"tool_call"}`, `$.tool: missing`},
		{`{"kind":"tool_call","tool":1}`, `$.tool: expected string`},
		{`{"kind":"model_input"}`, `$.content: missing`},
		{`{"kind":"model_input","content":"x","tool":"t"}`, `$.tool: not allowed on a model_input`},
		{`{"kind":"external_effect","effect":{}}`, `$.effect: missing, or without "op"`},
		{`{"kind":"message"}`, `$.message: missing`},
		{`{"kind":"model_input","content":1e999}`, `$.content`},
	} {
		_, err := ParseAppendInput([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.in, err, c.want)
		}
	}
	// link errors name the field
	path := writeTemp(t, sampleLog(t, goodSigner))
	_, err := AppendLog(path, strings.NewReader(`{"kind":"model_output","content":"x","input":"e3"}`), appendOpts())
	if err == nil || !strings.Contains(err.Error(), `stdin:1: $.input: "e3" is not a model_input`) {
		t.Fatalf("%v", err)
	}
}

func FuzzParseAppendInput(f *testing.F) {
	for _, l := range strings.Split(appendInput, "\n") {
		f.Add([]byte(l))
	}
	f.Add([]byte(`{"kind":"message","message":{"direction":"outgoing","conversation":"c","sender":"a","text":"t","operation":"direct"}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		in, err := ParseAppendInput(line)
		if err != nil {
			var le *jsonlimit.Error
			if !strings.HasPrefix(err.Error(), "$") && err.Error() != "not a JSON object" && !strings.Contains(err.Error(), "json") && !errors.As(err, &le) {
				t.Fatalf("error names no field: %v", err)
			}
			return
		}
		if _, ok := appendFields[in.Kind]; !ok {
			t.Fatalf("kind %q accepted", in.Kind)
		}
	})
}

// An unsigned checkpoint followed by a validly signed end verifies: the
// last end covers every line before it. The reverse is unsigned.
func TestCheckpointSignatures(t *testing.T) {
	path := writeTemp(t, sampleLog(t)) // unsigned end
	// signing over it would vouch for unsealed lines: refused by default
	_, err := AppendLog(path, strings.NewReader(`{"kind":"model_input","content":"x"}`), appendOpts())
	if exitcode.Of(err) != exitcode.Tampered || !strings.Contains(err.Error(), "refusing to sign over") {
		t.Fatalf("unsigned log signed over: %v", err)
	}
	o := appendOpts()
	o.AllowUnsigned = true
	_, err = AppendLog(path, strings.NewReader(`{"kind":"model_input","content":"x"}`), o)
	must(t, err)
	data, _ := os.ReadFile(path)
	if _, err := eventlog.VerifyLog(bytes.NewReader(data), path, eventlog.VerifyLogOptions{Verifier: trusted}); err != nil {
		t.Fatalf("signed last end over an unsigned checkpoint: %v", err)
	}
	path = writeTemp(t, sampleLog(t, goodSigner))
	o = appendOpts()
	o.Signers = nil
	_, err = AppendLog(path, strings.NewReader(`{"kind":"model_input","content":"x"}`), o)
	must(t, err)
	data, _ = os.ReadFile(path)
	rep, _ := eventlog.VerifyLog(bytes.NewReader(data), path, eventlog.VerifyLogOptions{Verifier: trusted})
	if rep.Status != eventlog.StatusUnsigned || len(rep.Findings) != 1 || rep.Findings[0].Line != 10 {
		t.Fatalf("unsigned last end: %+v", rep.Findings)
	}
}

// Appenders to the same log take turns: the chain stays intact.
func TestAppendConcurrent(t *testing.T) {
	path := writeTemp(t, sampleLog(t, goodSigner))
	done := make(chan error)
	for i := 0; i < 4; i++ {
		go func(i int) {
			in := strings.Repeat(`{"kind":"model_input","content":"x"}`+"\n", 5)
			_, err := AppendLog(path, strings.NewReader(in), appendOpts())
			done <- err
		}(i)
	}
	for i := 0; i < 4; i++ {
		must(t, <-done)
	}
	data, _ := os.ReadFile(path)
	rep, err := eventlog.VerifyLog(bytes.NewReader(data), path, eventlog.VerifyLogOptions{Verifier: trusted})
	if err != nil || rep.Lines != 8+4*6 {
		t.Fatalf("%v, %d lines", err, rep.Lines)
	}
}

// A forger's log, rebuilt and signed with their own key, cannot be
// laundered by appending to it with the genuine keyring.
func TestAppendDoesNotLaunderForgedLog(t *testing.T) {
	path := writeTemp(t, sampleLog(t, evilSigner))
	_, err := AppendLog(path, strings.NewReader(`{"kind":"model_input","content":"x"}`), appendOpts())
	if exitcode.Of(err) != exitcode.Tampered || !strings.Contains(err.Error(), "no signature by a key the keyring holds") {
		t.Fatalf("forged log signed over: %v", err)
	}
	data, _ := os.ReadFile(path)
	if !bytes.Equal(data, sampleLog(t, evilSigner)) {
		t.Fatal("refused append changed the log")
	}
	// without a keyring the append is allowed: the new end is unsigned
	o := appendOpts()
	o.Signers = nil
	_, err = AppendLog(path, strings.NewReader(`{"kind":"model_input","content":"x"}`), o)
	must(t, err)
}

// A failure on a checkpoint end still counts after an append: a later end
// cannot launder it, and the append itself is allowed.
func TestAppendKeepsFailureVisible(t *testing.T) {
	path := writeTemp(t, failedLog(t, "completed", "recording abandoned", goodSigner))
	rep, err := AppendLog(path, strings.NewReader(appendInput), appendOpts())
	must(t, err)
	if !rep.Reopened || !rep.Ended {
		t.Fatalf("report %+v", rep)
	}
	data, _ := os.ReadFile(path)
	vr := wantStatus(t, "appended after failure", data, eventlog.VerifyLogOptions{Verifier: trusted}, eventlog.StatusIncomplete, exitcode.Incomplete)
	if len(vr.Findings) != 1 || vr.Findings[0].Code != eventlog.FindFailure || vr.Findings[0].Line != 3 {
		t.Fatalf("findings %v", vr.Findings)
	}
	// a cut-off failed log is still refused
	cut := failedLog(t, "completed", "recording abandoned", goodSigner)
	p2 := writeTemp(t, cut[:len(cut)-5])
	if _, err := AppendLog(p2, strings.NewReader(appendInput), appendOpts()); exitcode.Of(err) != exitcode.Incomplete {
		t.Fatalf("cut-off log: %v", err)
	}
}

// Invalid UTF-8 (and lone surrogate escapes) in any string field, at any
// depth, member names included, is refused with the field's path, never
// written as U+FFFD; AppendLog names input, line, column and field.
func TestAppendRefusesInvalidUTF8(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"{\"kind\":\"tool_call\",\"tool\":\"rm\xff\",\"arguments\":{}}", `$.tool: a string holds bytes that are not valid UTF-8`},
		{"{\"kind\":\"model_input\",\"role\":\"sys\xc3\",\"content\":\"x\"}", `$.role: a string holds bytes that are not valid UTF-8`},
		{"{\"kind\":\"model_input\",\"content\":\"x\",\"ref\":\"\xfe\"}", `$.ref: a string`},
		{"{\"kind\":\"model_input\",\"content\":\"x\",\"ts\":\"2026\xff\"}", `$.ts: a string`},
		{"{\"kind\":\"external_effect\",\"tool\":\"w\",\"effect\":{\"op\":\"write\",\"target\":\"/data/\xff\"}}", `$.effect.target: a string holds bytes that are not valid UTF-8`},
		{"{\"kind\":\"tool_call\",\"tool\":\"w\",\"arguments\":{\"paths\":[\"/a\",\"/b\xff\"]}}", `$.arguments.paths[1]: a string`},
		{"{\"kind\":\"tool_call\",\"tool\":\"w\",\"arguments\":{\"p\xffth\":\"/a\"}}", `$.arguments: a member name holds bytes that are not valid UTF-8`},
		{`{"kind":"tool_call","tool":"rm\ud800","arguments":{}}`, `$.tool: a string holds a lone UTF-16 surrogate escape`},
		{`{"kind":"tool_call","tool":"rm\udc00x","arguments":{}}`, `$.tool: a string holds a lone UTF-16 surrogate escape`},
		{"{\"kind\":\"message\",\"message\":{\"direction\":\"outgoing\",\"conversation\":\"c\",\"sender\":\"a\xff\",\"text\":\"t\",\"operation\":\"direct\"}}", `$.message.sender: a string`},
	} {
		_, err := ParseAppendInput([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.in, err, c.want)
		}
	}
	// sound strings pass: a surrogate pair, escapes, non-ASCII
	for _, ok := range []string{
		`{"kind":"tool_call","tool":"rm\ud83d\ude00","arguments":{"p":"\\u\"é"}}`,
		`{"kind":"model_input","content":"日本","role":"\u00e9"}`,
	} {
		if _, err := ParseAppendInput([]byte(ok)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	path := writeTemp(t, sampleLog(t, goodSigner))
	in := appendInput + "{\"kind\":\"tool_call\",\"tool\":\"delete\xff\",\"arguments\":{}}\n"
	rep, err := AppendLog(path, strings.NewReader(in), appendOpts())
	if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), `stdin:7:28: $.tool: a string holds bytes that are not valid UTF-8`) {
		t.Fatalf("err %v", err)
	}
	data, _ := os.ReadFile(path)
	if len(rep.Appended) != 6 || bytes.Contains(data, []byte("\uFFFD")) || bytes.Contains(data, []byte(`\ufffd`)) {
		t.Fatalf("U+FFFD written or lines lost: %+v", rep)
	}
}
