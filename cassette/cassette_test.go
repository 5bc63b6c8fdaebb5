package cassette

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
)

func readAllRecords(t testing.TB, data []byte) (Header, []*Record, error) {
	r, err := NewReader(bytes.NewReader(data), "c.jsonl")
	if err != nil {
		return Header{}, nil, err
	}
	var out []*Record
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return r.Header(), out, nil
		}
		if err != nil {
			return r.Header(), out, err
		}
		out = append(out, rec)
	}
}

func TestRoundTripExactBytes(t *testing.T) {
	lines := [][]byte{
		[]byte(`{"jsonrpc":"2.0","id":1.0,"result":{"x":1}}`),
		[]byte(`{"jsonrpc":"2.0","id":1,"result":{"x":1.0}}` + "\r"),
		[]byte("\xff\xfe not utf-8 \x00"),
		[]byte(`{"s":"tab\t \"quote\" \\ \u2028 <html> & 🎉 \u00e9"}`),
		[]byte("raw\u2028sep and <b>&"),
		{},
	}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{Command: "node", Args: []string{"x.js", "stdio"}, Env: []string{"PATH", "HOME"}, Started: "2026-08-30T14:33:00Z", Frozen: true, Protocol: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		if _, err := w.Record(S2C, l, false); err != nil {
			t.Fatal(err)
		}
	}
	w.Record(Stderr, []byte("Starting...\nmore"), false)
	w.RecordPiece(C2S, []byte("abc"))
	w.Record(C2S, []byte("def"), false)
	w.Record(S2C, []byte("tail"), true)
	code := 0
	w.Lifecycle(Record{Life: LifeExit, Status: "exit status 0", Code: &code})
	w.Lifecycle(Record{Life: LifeEOF, Stream: S2C})

	h, recs, err := readAllRecords(t, buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if h.Command != "node" || len(h.Env) != 2 || !h.Frozen {
		t.Fatalf("header %+v", h)
	}
	var s2c, c2s []byte
	for _, r := range recs {
		switch r.Dir {
		case S2C:
			if int64(len(s2c)) != r.Off {
				t.Fatalf("offset")
			}
			s2c = append(s2c, r.Wire()...)
		case C2S:
			c2s = append(c2s, r.Wire()...)
		}
	}
	want := append(bytes.Join(lines, []byte("\n")), []byte("\ntail")...)
	if !bytes.Equal(s2c, want) || string(c2s) != "abcdef\n" {
		t.Fatalf("not exact:\n%q\n%q", s2c, want)
	}
	if recs[len(recs)-1].Stream != S2C || *recs[len(recs)-2].Code != 0 {
		t.Fatal("lifecycle")
	}
	if !bytes.Contains(buf.Bytes(), []byte(`"b64":`)) || bytes.Contains(buf.Bytes(), []byte(`"t":`)) {
		t.Fatalf("expected b64 record and no times in frozen cassette:\n%s", buf.Bytes())
	}
}

func TestEnvNamesOnly(t *testing.T) {
	if _, err := NewWriter(io.Discard, Header{Env: []string{"SECRET=x"}}); err == nil {
		t.Fatal("env values must be refused")
	}
}

func TestConcurrentWriters(t *testing.T) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, Header{Command: "x"})
	var wg sync.WaitGroup
	for _, d := range []Dir{C2S, S2C, Stderr} {
		wg.Add(1)
		go func(d Dir) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				w.Record(d, []byte(fmt.Sprintf("%s %d", d, i)), false)
			}
		}(d)
	}
	wg.Wait()
	_, recs, err := readAllRecords(t, buf.Bytes())
	if err != nil || len(recs) != 600 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
}

func TestReaderErrorsNameLineAndField(t *testing.T) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, Header{Command: "x", Frozen: true})
	w.Record(C2S, []byte("a"), false)
	w.Record(C2S, []byte("b"), false)
	good := buf.String()
	ls := strings.SplitAfter(good, "\n")
	cases := map[string]string{
		"reordered":  ls[0] + ls[2] + ls[1],
		"seq":        strings.Replace(good, `"seq":1`, `"seq":5`, 1),
		"off":        strings.Replace(good, `"off":2`, `"off":3`, 1),
		"unknown":    strings.Replace(good, `"seq":1,`, `"seq":1,"x":1,`, 1),
		"cut":        strings.TrimSuffix(good, "\n"),
		"format":     strings.Replace(good, "witness-cassette", "other", 1),
		"b64":        strings.Replace(good, `"text":"b"`, `"b64":"!!"`, 1),
		"nobytes":    strings.Replace(good, `,"text":"b"`, ``, 1),
		"empty":      "",
		"badversion": strings.Replace(good, `"v":1`, `"v":2`, 1),
	}
	for name, in := range cases {
		_, _, err := readAllRecords(t, []byte(in))
		var pe *ParseError
		if !errors.As(err, &pe) || pe.File != "c.jsonl" || pe.Line == 0 {
			t.Errorf("%s: %v", name, err)
			continue
		}
		t.Logf("%s: %v", name, err)
	}
}

func FuzzReader(f *testing.F) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, Header{Command: "x"})
	w.Record(C2S, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize"}`), false)
	w.Record(S2C, []byte("\xff"), true)
	code := 1
	w.Lifecycle(Record{Life: LifeExit, Code: &code})
	f.Add(buf.Bytes())
	f.Add([]byte(`{"format":"witness-cassette","v":1,"command":"","args":[],"env":[],"started":""}` + "\n" + `{"seq":0,"dir":"s2c","off":0,"text":"x","cont":true}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, recs, err := readAllRecords(t, data)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error without file and line: %v", err)
			}
			return
		}
		// whatever reads cleanly re-writes to records that read back the same
		// (redacted records are kept as they are; their length is "n")
		for _, r := range recs {
			if r.Redacted {
				return
			}
		}
		var out bytes.Buffer
		w, _ := NewWriter(&out, Header{Frozen: true})
		for _, r := range recs {
			if r.Life != "" {
				w.Lifecycle(*r)
			} else if r.Cont {
				w.RecordPiece(r.Dir, r.Data)
			} else {
				w.Record(r.Dir, r.Data, r.Partial)
			}
		}
		_, back, err := readAllRecords(t, out.Bytes())
		if err != nil || len(back) != len(recs) {
			t.Fatalf("rewrite: %v", err)
		}
		for i := range back {
			if !bytes.Equal(back[i].Data, recs[i].Data) || back[i].Off != recs[i].Off {
				t.Fatalf("record %d differs", i)
			}
		}
	})
}

func TestRedactedRecords(t *testing.T) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, Header{Command: "x", Frozen: true, Redaction: []byte(`{"rules":["$..token"]}`)})
	w.SetRedact(func(d Dir, b []byte) ([]byte, bool) {
		if bytes.Contains(b, []byte("s3cret")) {
			return bytes.ReplaceAll(b, []byte("s3cret"), []byte("redacted:x")), true
		}
		return b, false
	})
	w.Record(C2S, []byte(`{"token":"s3cret"}`), false)
	w.Record(C2S, []byte(`{"ok":1}`), false)
	if bytes.Contains(buf.Bytes(), []byte("s3cret")) {
		t.Fatal("secret reached the cassette")
	}
	h, recs, err := readAllRecords(t, buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if !recs[0].Redacted || recs[0].N != 18 || recs[1].Off != 19 || recs[1].Redacted || string(h.Redaction) != `{"rules":["$..token"]}` {
		t.Fatalf("%+v %+v", recs[0], recs[1])
	}
	bad := strings.Replace(buf.String(), `"redacted":true,"n":18`, `"redacted":true`, 1)
	if _, _, err := readAllRecords(t, []byte(bad)); err == nil || !strings.Contains(err.Error(), `c.jsonl:2: $.n: present exactly`) {
		t.Fatalf("missing n: %v", err)
	}
}
