package eventlog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/internal/exitcode"
)

func TestVerifyLogIntact(t *testing.T) {
	data := sampleLog(t, goodSigner)
	rep, err := verify(data, VerifyLogOptions{Verifier: trusted})
	if err != nil {
		t.Fatalf("intact log: %v\n%s", err, data)
	}
	if rep.Status != StatusOK || !rep.Ended || rep.Lines != 8 || rep.Events != 6 {
		t.Fatalf("report %+v", rep)
	}
	if len(rep.Signatures) != 1 || rep.Signatures[0].Status != "valid" {
		t.Fatalf("signatures %+v", rep.Signatures)
	}
	// the links are as recorded
	ls := lines(data)
	for i, want := range map[int]string{2: `"input":"e1"`, 3: `"cause":"e2"`, 4: `"call":"e3"`, 5: `"call":"e3"`, 6: `"cause":"e4"`} {
		if !bytes.Contains(ls[i], []byte(want)) {
			t.Errorf("line %d lacks %s: %s", i+1, want, ls[i])
		}
	}
	if !bytes.Contains(ls[4], []byte(`"rpc_id":2`)) || !bytes.Contains(ls[4], []byte(`"is_error":false`)) {
		t.Errorf("response line: %s", ls[4])
	}
}

func wantStatus(t *testing.T, what string, data []byte, opts VerifyLogOptions, status string, code exitcode.Code) *LogReport {
	t.Helper()
	rep, err := verify(data, opts)
	if rep.Status != status {
		t.Fatalf("%s: status %s, want %s; findings %v", what, rep.Status, status, rep.Findings)
	}
	if exitcode.Of(err) != code {
		t.Fatalf("%s: exit code %v, want %v (err %v)", what, exitcode.Of(err), code, err)
	}
	return rep
}

func TestVerifyLogOneByteEditsEveryPosition(t *testing.T) {
	data := sampleLog(t, goodSigner)
	opts := VerifyLogOptions{Verifier: trusted}
	for i := range data {
		if data[i] == '\n' {
			continue
		}
		// one edit per byte, cycling through the kinds of edit
		for _, repl := range []byte{[]byte{data[i] ^ 0x01, '0', ' ', '\n'}[i%4]} {
			if repl == data[i] {
				repl = data[i] ^ 0x02
			}
			c := append([]byte(nil), data...)
			c[i] = repl
			rep, err := verify(c, opts)
			// an edited key id leaves a signature by an unknown key:
			// unsigned, which exits Tampered too
			if (rep.Status != StatusTampered && rep.Status != StatusUnsigned) || exitcode.Of(err) != exitcode.Tampered {
				line := bytes.Count(data[:i], []byte("\n")) + 1
				t.Fatalf("byte %d (line %d) %q->%q not detected: status %s, findings %v", i, line, data[i], repl, rep.Status, rep.Findings)
			}
		}
	}
}

func TestVerifyLogEditNamesLine(t *testing.T) {
	data := sampleLog(t, goodSigner)
	ls := lines(data)
	ls[3] = bytes.Replace(ls[3], []byte("/data/x"), []byte("/data/y"), 1)
	rep := wantStatus(t, "edit", join(ls), VerifyLogOptions{Verifier: trusted}, StatusTampered, exitcode.Tampered)
	// the payload hash of line 4 and the chain at line 5 show it
	var got []string
	for _, f := range rep.Findings {
		got = append(got, fmt.Sprintf("%d:%s:%s", f.Line, f.ID, f.Code))
	}
	s := strings.Join(got, " ")
	if !strings.Contains(s, "4:e3:payload_hash") || !strings.Contains(s, "5:e4:chain") {
		t.Fatalf("findings %s", s)
	}
}

func TestVerifyLogSwapInsertDelete(t *testing.T) {
	data := sampleLog(t, goodSigner)
	opts := VerifyLogOptions{Verifier: trusted}
	ls := lines(data)
	swap := append([][]byte(nil), ls...)
	swap[2], swap[3] = swap[3], swap[2]
	wantStatus(t, "swap", join(swap), opts, StatusTampered, exitcode.Tampered)

	ins := append([][]byte(nil), ls[:3]...)
	ins = append(ins, ls[2])
	ins = append(ins, ls[3:]...)
	wantStatus(t, "insert duplicate", join(ins), opts, StatusTampered, exitcode.Tampered)

	del := append([][]byte(nil), ls[:3]...)
	del = append(del, ls[4:]...)
	rep := wantStatus(t, "delete", join(del), opts, StatusTampered, exitcode.Tampered)
	codes := map[string]bool{}
	for _, f := range rep.Findings {
		codes[f.Code] = true
	}
	if !codes[FindSeq] || !codes[FindChain] {
		t.Fatalf("delete findings %v", rep.Findings)
	}

	delFirst := join(ls[1:])
	wantStatus(t, "delete header", delFirst, opts, StatusTampered, exitcode.Tampered)
}

func TestVerifyLogInsertForgedLine(t *testing.T) {
	// a forger appends a well-formed event after the chain, before the end
	data := sampleLog(t, goodSigner)
	ls := lines(data)
	body := join(ls[:len(ls)-1])
	var last Event
	must(t, json.Unmarshal(ls[len(ls)-2], &last))
	w := ResumeWriter(&bytes.Buffer{}, last.Session, last.Seq, LineHash(bytes.TrimSuffix(ls[len(ls)-2], []byte("\n"))))
	var extra bytes.Buffer
	w.w = &extra
	must(t, w.Append(&Event{Kind: KindModelOutput, TS: frozenTS, Source: SourceReported, Payload: json.RawMessage(`"forged"`)}))
	forged := append(append([]byte(nil), body...), extra.Bytes()...)
	forged = append(forged, ls[len(ls)-1]...)
	wantStatus(t, "insert forged", forged, VerifyLogOptions{Verifier: trusted}, StatusTampered, exitcode.Tampered)
}

func TestVerifyLogTruncateAndDropEnd(t *testing.T) {
	data := sampleLog(t, goodSigner)
	opts := VerifyLogOptions{Verifier: trusted}
	ls := lines(data)
	rep := wantStatus(t, "drop end", join(ls[:len(ls)-1]), opts, StatusIncomplete, exitcode.Incomplete)
	if rep.Ended || rep.Findings[0].Code != FindNoEnd {
		t.Fatalf("drop end: %+v", rep.Findings)
	}
	// cut in the middle of a line, at every offset of the fifth line
	start := len(join(ls[:4]))
	for cut := start + 1; cut < start+len(ls[4])-1; cut++ {
		rep := wantStatus(t, fmt.Sprintf("truncate at %d", cut), data[:cut], opts, StatusIncomplete, exitcode.Incomplete)
		if rep.Findings[0].Code != FindPartial {
			t.Fatalf("truncate: %+v", rep.Findings)
		}
	}
	// the end line without its newline
	wantStatus(t, "end without newline", data[:len(data)-1], opts, StatusIncomplete, exitcode.Incomplete)
	wantStatus(t, "empty", nil, opts, StatusIncomplete, exitcode.Incomplete)
}

func TestVerifyLogSignatures(t *testing.T) {
	// unsigned
	data := sampleLog(t)
	rep := wantStatus(t, "unsigned", data, VerifyLogOptions{Verifier: trusted}, StatusUnsigned, exitcode.Tampered)
	if rep.Findings[0].Code != FindUnsigned {
		t.Fatalf("%v", rep.Findings)
	}
	wantStatus(t, "unsigned allowed", data, VerifyLogOptions{Verifier: trusted, AllowUnsigned: true}, StatusOK, exitcode.OK)

	// re-signed with an unknown key (a forger rebuilt the chain and signed it)
	evil := sampleLog(t, evilSigner)
	rep = wantStatus(t, "unknown key", evil, VerifyLogOptions{Verifier: trusted}, StatusUnsigned, exitcode.Tampered)
	if rep.Findings[0].Code != FindUntrusted || rep.Signatures[0].Status != "unknown_key" {
		t.Fatalf("%v %v", rep.Findings, rep.Signatures)
	}
	// no verifier at all
	wantStatus(t, "no verifier", sampleLog(t, goodSigner), VerifyLogOptions{}, StatusUnsigned, exitcode.Tampered)

	// a signature by a known key over other bytes: copy the good signature
	// onto a log whose end differs
	good := sampleLog(t, goodSigner)
	ls := lines(good)
	var end Event
	must(t, json.Unmarshal(ls[len(ls)-1], &end))
	sig := end.End.Signatures[0]
	end.End.Reason = "forged"
	end.End.Signatures = []Signature{sig}
	line, err := EncodeEvent(&end)
	must(t, err)
	ls[len(ls)-1] = append(line, '\n')
	rep = wantStatus(t, "moved signature", join(ls), VerifyLogOptions{Verifier: trusted}, StatusTampered, exitcode.Tampered)
	if rep.Signatures[0].Status != "invalid" {
		t.Fatalf("%v", rep.Signatures)
	}
	// two signers, one unknown: still verified by the trusted one
	wantStatus(t, "two signers", sampleLog(t, evilSigner, goodSigner), VerifyLogOptions{Verifier: trusted}, StatusOK, exitcode.OK)
}

func TestVerifyLogSessionMismatch(t *testing.T) {
	data := sampleLog(t, goodSigner)
	ls := lines(data)
	var ev Event
	must(t, json.Unmarshal(ls[2], &ev))
	ev.Session = strings.Repeat("a", 32)
	b, err := EncodeEvent(&ev)
	must(t, err)
	ls[2] = append(b, '\n')
	rep := wantStatus(t, "session", join(ls), VerifyLogOptions{Verifier: trusted}, StatusTampered, exitcode.Tampered)
	found := false
	for _, f := range rep.Findings {
		if f.Code == FindSession && f.Line == 3 && f.ID == "e2" {
			found = true
		}
	}
	if !found {
		t.Fatalf("%v", rep.Findings)
	}
}

func TestVerifyLogBadLinks(t *testing.T) {
	var buf bytes.Buffer
	w, err := StartLog(&buf, &Header{}, frozenTS, "")
	must(t, err)
	must(t, w.Append(&Event{Kind: KindModelInput, TS: frozenTS, Source: SourceReported, Role: "user", Payload: json.RawMessage(`"x"`)}))
	must(t, w.Append(&Event{Kind: KindToolResponse, TS: frozenTS, Source: SourceObserved, Call: "e1"}))
	must(t, w.Append(&Event{Kind: KindModelOutput, TS: frozenTS, Source: SourceObserved, Input: "e9"}))
	must(t, Finish(w, []Signer{goodSigner}, frozenTS))
	rep := wantStatus(t, "links", buf.Bytes(), VerifyLogOptions{Verifier: trusted}, StatusTampered, exitcode.Tampered)
	if len(rep.Findings) != 2 || rep.Findings[0].Line != 3 || rep.Findings[1].Line != 4 {
		t.Fatalf("%v", rep.Findings)
	}
}

func TestVerifyLogMCPLinks(t *testing.T) {
	var buf bytes.Buffer
	w, err := StartLog(&buf, &Header{}, frozenTS, "")
	must(t, err)
	obs := SourceObserved
	for _, e := range []*Event{
		{Kind: KindMCPRequest, Direction: DirC2S, Method: "resources/read", RPCID: json.RawMessage(`1`)},                    // e1
		{Kind: KindToolCall, Method: "tools/call", Tool: "t", RPCID: json.RawMessage(`2`)},                                  // e2
		{Kind: KindMCPRequest, Direction: DirS2C, Method: "roots/list", RPCID: json.RawMessage(`0`), During: "e2"},          // e3 ok
		{Kind: KindMCPResponse, Direction: DirC2S, Method: "roots/list", RPCID: json.RawMessage(`0`), Call: "e3"},           // e4 ok
		{Kind: KindModelInput, Direction: DirS2C, Method: "sampling/createMessage", DuringCandidates: []string{"e1", "e2"}}, // e5 ok
		{Kind: KindNotification, Direction: DirS2C, Method: "notifications/progress", Concerns: "e5"},                       // e6 ok
		{Kind: KindMCPResponse, Direction: DirS2C, Method: "tools/call", Call: "e2"},                                        // e7 bad: call is a tool_call
		{Kind: KindUserInput, Direction: DirC2S, Method: "elicitation/create", Call: "e4"},                                  // e8 bad: call is an mcp_response
		{Kind: KindMCPRequest, Direction: DirS2C, Method: "ping", During: "e4"},                                             // e9 bad: during is a response
		{Kind: KindMCPRequest, Direction: DirS2C, Method: "ping", DuringCandidates: []string{"e1", "e99"}},                  // e10 bad: forward
		{Kind: KindNotification, Direction: DirS2C, Method: "notifications/progress", Concerns: "e4"},                       // e11 bad
	} {
		e.TS, e.Source = frozenTS, obs
		must(t, w.Append(e))
	}
	must(t, Finish(w, []Signer{goodSigner}, frozenTS))
	rep := wantStatus(t, "mcp links", buf.Bytes(), VerifyLogOptions{Verifier: trusted}, StatusTampered, exitcode.Tampered)
	var got []string
	for _, f := range rep.Findings {
		got = append(got, f.ID)
	}
	if want := []string{"e7", "e8", "e9", "e10", "e11"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("findings on %v, want %v: %v", got, want, rep.Findings)
	}
}

func TestWriterRefusesForeignID(t *testing.T) {
	w := NewWriter(&bytes.Buffer{}, "s")
	if err := w.Append(&Event{ID: "x1", Kind: KindModelInput}); err == nil {
		t.Fatal("foreign id accepted")
	}
	if err := w.Append(&Event{Kind: KindModelInput, Payload: json.RawMessage(`1`), PayloadSHA256: "00"}); err == nil {
		t.Fatal("mismatched payload hash accepted")
	}
}

func TestSessionIDDeterministic(t *testing.T) {
	var first []byte
	for i := 0; i < 10; i++ {
		b := sampleLog(t, goodSigner)
		if first == nil {
			first = b
		} else if !bytes.Equal(first, b) {
			t.Fatalf("run %d differs", i)
		}
	}
	var ev Event
	must(t, json.Unmarshal(lines(first)[0], &ev))
	if len(ev.Session) != 32 {
		t.Fatalf("session %q", ev.Session)
	}
}

func BenchmarkVerifyLog(b *testing.B) {
	var buf bytes.Buffer
	w, _ := StartLog(&buf, &Header{}, frozenTS, "")
	f := false
	for i := 0; i < 10000; i++ {
		id := json.RawMessage(fmt.Sprint(i))
		call := &Event{Kind: KindToolCall, Tool: "read_file", Method: "tools/call", RPCID: id, TS: frozenTS, Source: SourceObserved}
		SetPayload(call, map[string]any{"path": fmt.Sprint("/data/", i)})
		w.Append(call)
		resp := &Event{Kind: KindToolResponse, Tool: "read_file", Call: call.ID, RPCID: id, IsError: &f, TS: frozenTS, Source: SourceObserved}
		SetPayload(resp, map[string]any{"content": []any{map[string]any{"type": "text", "text": "ok"}}})
		w.Append(resp)
	}
	Finish(w, []Signer{goodSigner}, frozenTS)
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := verify(data, VerifyLogOptions{Verifier: trusted}); err != nil {
			b.Fatal(err)
		}
	}
}

// A forger edits an event, rebuilds the whole chain and re-signs the end
// with a key of their own: the chain is intact, but no trusted key vouches
// for it.
func TestVerifyLogRebuiltAndResigned(t *testing.T) {
	data := sampleLog(t, goodSigner)
	evs := decodeAll(t, data)
	var buf bytes.Buffer
	w := NewWriter(&buf, evs[0].Session)
	for _, e := range evs[:len(evs)-1] {
		if e.ID == "e3" {
			must(t, SetPayload(e, map[string]any{"path": "/data/innocent"}))
		}
		e.ID = ""
		must(t, w.Append(e))
	}
	must(t, Finish(w, []Signer{evilSigner}, frozenTS))
	rep := wantStatus(t, "rebuilt", buf.Bytes(), VerifyLogOptions{Verifier: trusted}, StatusUnsigned, exitcode.Tampered)
	if len(rep.Findings) != 1 || rep.Findings[0].Code != FindUntrusted || !strings.Contains(rep.Findings[0].Message, "k-evil") {
		t.Fatalf("%v", rep.Findings)
	}
	// and re-signed with the genuine key's id but a guessed signature: invalid
	var end Event
	ls := lines(buf.Bytes())
	must(t, json.Unmarshal(ls[len(ls)-1], &end))
	end.End.Signatures[0].KeyID = "k-good"
	line, err := EncodeEvent(&end)
	must(t, err)
	ls[len(ls)-1] = append(line, '\n')
	wantStatus(t, "guessed", join(ls), VerifyLogOptions{Verifier: trusted}, StatusTampered, exitcode.Tampered)
}

// A cause may name any earlier event except a session_start or a
// session_end (a checkpoint included): the graph has no node such a link
// could point to, so it would stay an unresolved link (docs/formats/graph.md).
func TestVerifyLogCauseNamesSession(t *testing.T) {
	var buf bytes.Buffer
	w, err := StartLog(&buf, &Header{}, frozenTS, "")
	must(t, err)
	obs := SourceObserved
	for _, e := range []*Event{
		{Kind: KindMessage, Cause: "e0", Message: &Message{Direction: "inbound", Text: "x"}}, // e1 bad: the session_start
		{Kind: KindNotification, Direction: DirS2C, Method: "notifications/progress"},        // e2
		{Kind: KindMessage, Cause: "e2", Message: &Message{Direction: "inbound", Text: "y"}}, // e3 ok
	} {
		e.TS, e.Source = frozenTS, obs
		must(t, w.Append(e))
	}
	must(t, Finish(w, []Signer{goodSigner}, frozenTS)) // e4: a checkpoint end
	w = ResumeWriter(&buf, w.Session(), w.Count()-1, w.Head())
	must(t, w.Append(&Event{Kind: KindMessage, Cause: "e4", TS: frozenTS, Source: obs, Message: &Message{Direction: "inbound", Text: "z"}})) // e5 bad
	must(t, Finish(w, []Signer{goodSigner}, frozenTS))
	rep := wantStatus(t, "cause names a session line", buf.Bytes(), VerifyLogOptions{Verifier: trusted}, StatusTampered, exitcode.Tampered)
	var got []string
	for _, f := range rep.Findings {
		if f.Code == FindLink {
			got = append(got, f.ID)
		}
	}
	if want := []string{"e1", "e5"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("link findings on %v, want %v: %v", got, want, rep.Findings)
	}
}

// TestVerifyLogFastDecoderSameReport: VerifyLog decodes with the fast
// decoder; the report (status, findings, error) is the one the general
// decoder gives, on an intact log and on every one-byte edit of it.
func TestVerifyLogFastDecoderSameReport(t *testing.T) {
	data := sampleLog(t, goodSigner)
	opts := VerifyLogOptions{Verifier: trusted}
	check := func(c []byte) {
		fr, ferr := verifyLog(bytes.NewReader(c), "events.jsonl", opts, true)
		sr, serr := verifyLog(bytes.NewReader(c), "events.jsonl", opts, false)
		if fmt.Sprint(ferr) != fmt.Sprint(serr) || fr.Status != sr.Status || fmt.Sprint(fr.Findings) != fmt.Sprint(sr.Findings) || fr.Head != sr.Head {
			t.Fatalf("fast %s %v %v, general %s %v %v", fr.Status, fr.Findings, ferr, sr.Status, sr.Findings, serr)
		}
	}
	check(data)
	for i := range data {
		for _, repl := range []byte{data[i] ^ 0x01, '0', ' ', '\n', '\\'} {
			c := append([]byte(nil), data...)
			c[i] = repl
			check(c)
		}
	}
}
