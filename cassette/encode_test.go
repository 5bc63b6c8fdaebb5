package cassette

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
)

// TestAppendRecordMatchesEncodingJSON: the hand-written encoder writes the
// bytes encoding/json writes for the same record.
func TestAppendRecordMatchesEncodingJSON(t *testing.T) {
	code := 3
	for _, r := range []Record{
		{Seq: 0, Dir: C2S, Off: 0, Data: []byte(`{"jsonrpc":"2.0","id":1,"method":"x","params":{"s":"tab\t \"q\" \\ \u2028 \u2029 <b>&amp; 🎉 é"}}`)},
		{Seq: 1, Dir: S2C, Off: 17, Data: []byte("\xff\xfe not utf-8"), Partial: true, T: 12},
		{Seq: 2, Dir: S2C, Off: 30, Data: []byte("piece"), Cont: true},
		{Seq: 3, Dir: S2C, Off: 35, Data: []byte("end"), LineBytes: 8, LineSHA256: "ab"},
		{Seq: 4, Dir: Stderr, Off: 0, Data: []byte("a\x01\x1f\x7f\b\f\r\n"), Redacted: true, N: 99},
		{Seq: 5, Dir: Stderr, Off: 0, Data: []byte{}},
		{Seq: 6, Life: LifeExit, Status: "exit status 3", Code: &code, T: 5},
		{Seq: 7, Life: LifeEOF, Stream: S2C},
		{Seq: 8, Life: LifeSignal, Signal: "SIGTERM", Detail: "forwarded \"from\" the host \x00 \xff"},
	} {
		want, err := marshal(wireOf(&r))
		if err != nil {
			t.Fatal(err)
		}
		if got := appendRecord(nil, &r); !bytes.Equal(got, want) {
			t.Errorf("record %d:\n got %s\nwant %s", r.Seq, got, want)
		}
	}
}

// wireOf is the wireRecord encoding/json would write for r.
func wireOf(r *Record) wireRecord {
	wr := wireRecord{Seq: r.Seq, T: r.T, Life: r.Life, Signal: r.Signal, Status: r.Status, Code: r.Code, Detail: r.Detail}
	if r.Life != "" {
		wr.Dir = r.Stream
		return wr
	}
	off := r.Off
	wr.Dir, wr.Off, wr.Partial, wr.Cont = r.Dir, &off, r.Partial, r.Cont
	if r.Redacted {
		n := r.N
		wr.Redacted, wr.N = true, &n
	}
	if r.LineSHA256 != "" {
		n := r.LineBytes
		wr.LineN, wr.LineSum = &n, r.LineSHA256
	}
	if useText(r.Data) {
		s := string(r.Data)
		wr.Text = &s
	} else {
		s := base64.StdEncoding.EncodeToString(r.Data)
		wr.B64 = &s
	}
	return wr
}

// FuzzAppendString compares appendString with encoding/json on any string,
// and checks that the text/b64 choice keeps a record small.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "\"\\\b\f\n\r\t\x00\x1f\x7f", "\u2028\u2029é🎉", "\xff\xe2\x80", "<>&"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("string %q:\n got %s\nwant %s", s, got, want)
		}
		if got := appendString(nil, []byte(s)); !bytes.Equal(got, want) {
			t.Fatalf("bytes %q:\n got %s\nwant %s", s, got, want)
		}
		if useText([]byte(s)) && len(want) > 2*len(s)+64+2 {
			t.Fatalf("text of %d bytes encodes to %d", len(s), len(want))
		}
	})
}

// TestLongLineSum: a line written in pieces ends with its length and
// sha256, which the reader checks.
func TestLongLineSum(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{Command: "x", Frozen: true, Started: "2026-08-30T14:33:00Z"})
	if err != nil {
		t.Fatal(err)
	}
	w.RecordPiece(C2S, []byte("abc"))
	w.Record(S2C, []byte("other"), false)
	w.RecordPiece(C2S, []byte("def"))
	w.Record(C2S, []byte("gh"), false)
	w.Record(C2S, []byte("next"), false)
	sum := sha256.Sum256([]byte("abcdefgh"))
	want := `"line_bytes":8,"line_sha256":"` + hex.EncodeToString(sum[:]) + `"`
	if !strings.Contains(buf.String(), want) || strings.Count(buf.String(), "line_bytes") != 1 {
		t.Fatalf("cassette lacks %s once:\n%s", want, buf.String())
	}
	_, recs, err := readAllRecords(t, buf.Bytes())
	if err != nil || len(recs) != 5 || recs[3].LineBytes != 8 {
		t.Fatalf("read back: %v %+v", err, recs)
	}
	for name, bad := range map[string]string{
		"wrong length": strings.Replace(buf.String(), `"line_bytes":8`, `"line_bytes":9`, 1),
		"wrong sum":    strings.Replace(buf.String(), hex.EncodeToString(sum[:]), strings.Repeat("0", 64), 1),
		"misplaced":    strings.Replace(buf.String(), `"text":"next"`, `"text":"next","line_bytes":4,"line_sha256":"00"`, 1),
	} {
		if _, _, err := readAllRecords(t, []byte(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestControlBytesGoToBase64: a line of control characters is written as
// base64, so that its record stays small.
func TestControlBytesGoToBase64(t *testing.T) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, Header{Command: "x", Frozen: true})
	line := bytes.Repeat([]byte{1}, 1000)
	w.Record(S2C, line, false)
	if !strings.Contains(buf.String(), `"b64":`) || buf.Len() > 2000 {
		t.Fatalf("record of %d bytes: %.200s", buf.Len(), buf.String())
	}
	_, recs, err := readAllRecords(t, buf.Bytes())
	if err != nil || !bytes.Equal(recs[0].Data, line) {
		t.Fatalf("read back: %v", err)
	}
}
