package eventlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"testing"
)

// verifyLogSequential is VerifyLog's loop as it was before the read-ahead:
// Reader.Next line by line, the line's hash and payload digest computed in
// place. TestVerifyLogAheadSameReport holds the pipeline to it.
func verifyLogSequential(r io.Reader, name string, opts VerifyLogOptions) (*LogReport, error) {
	v := newLogVerifier(name, opts)
	rd := NewReader(r, name)
	rd.fast = true
	if opts.MaxLine > 0 {
		rd.SetMaxLine(opts.MaxLine)
	}
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			break
		}
		var perr *ParseError
		if err != nil && !errors.As(err, &perr) {
			v.rep.Status = StatusTampered
			return v.rep, fmt.Errorf("verify event log: %w", err)
		}
		v.line(rd.Line(), rd.Raw(), rd.Partial())
		v.hash = LineHash(rd.Raw())
		v.payload = payloadCheck{}
		if ev != nil && len(ev.Payload) > 0 {
			if _, h, err := PayloadDigest(ev.Payload); err == nil {
				v.payload = payloadCheck{sha256: h, ok: true}
			}
		}
		if perr != nil {
			v.checkUnparsed(perr)
			if opts.OnParseError != nil {
				opts.OnParseError(rd.Line(), perr)
			}
			continue
		}
		v.checkEvent(ev)
	}
	v.checkEnded()
	v.rep.Status = v.status()
	return v.rep, v.rep.Err()
}

// failingReader returns the bytes of data and then an I/O error.
type failingReader struct{ data []byte }

func (f *failingReader) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, errors.New("disk on fire")
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

// aheadSame runs VerifyLog and the sequential loop over data and fails
// when the reports, errors or the calls of OnEvent and OnParseError differ.
func aheadSame(t testing.TB, data []byte, maxLine int, failAfter bool) {
	t.Helper()
	run := func(f func(io.Reader, string, VerifyLogOptions) (*LogReport, error)) (string, []string) {
		var calls []string
		opts := VerifyLogOptions{Verifier: trusted, MaxLine: maxLine, MaxFindings: 30,
			OnEvent:      func(line int64, e *Event) { calls = append(calls, fmt.Sprintf("%d %s %s", line, e.ID, e.Kind)) },
			OnParseError: func(line int64, err *ParseError) { calls = append(calls, fmt.Sprintf("%d %v", line, err)) },
		}
		var r io.Reader = bytes.NewReader(data)
		if failAfter {
			r = &failingReader{data: data}
		}
		rep, err := f(r, "events.jsonl", opts)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		b, _ := json.Marshal(rep)
		return fmt.Sprintf("%s counts=%v err=%s", b, rep.counts, msg), calls
	}
	got, gotCalls := run(VerifyLog)
	want, wantCalls := run(verifyLogSequential)
	if got != want {
		t.Fatalf("read-ahead:\n%s\nsequential:\n%s", got, want)
	}
	if !reflect.DeepEqual(gotCalls, wantCalls) {
		t.Fatalf("calls differ:\n%v\n%v", gotCalls, wantCalls)
	}
}

// longLog is a signed log of n events, long enough to span many read-ahead
// batches.
func longLog(t testing.TB, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := StartLog(&buf, &Header{Server: &ServerInfo{Name: "stub"}}, frozenTS, SourceObserved)
	must(t, err)
	for i := 1; i < n; i++ {
		e := &Event{Kind: KindModelInput, Role: "user", Source: SourceReported, TS: frozenTS}
		must(t, SetPayload(e, fmt.Sprintf("message %d %s", i, bytes.Repeat([]byte("x"), i%700))))
		must(t, w.Append(e))
	}
	must(t, Finish(w, []Signer{goodSigner}, frozenTS))
	return buf.Bytes()
}

// TestVerifyLogAheadSameReport: VerifyLog's read-ahead (lines decoded and
// hashed by parallel workers, in batches) gives the report, error and
// callbacks of the sequential loop on intact logs, every one-byte edit of a
// small log, over-long and blank lines, cut-off tails, read errors and
// logs spanning many batches.
func TestVerifyLogAheadSameReport(t *testing.T) {
	small := sampleLog(t, goodSigner)
	long := longLog(t, 3*aheadBatchLines+17)
	aheadSame(t, small, 0, false)
	aheadSame(t, long, 0, false)
	aheadSame(t, nil, 0, false)
	aheadSame(t, []byte("\n\n\n"), 0, false)
	for i := range small {
		for _, repl := range []byte{small[i] ^ 0x01, '\n', ' '} {
			c := append([]byte(nil), small...)
			c[i] = repl
			aheadSame(t, c, 0, false)
		}
	}
	for _, cut := range []int{1, 2, 40, len(long) / 3, len(long) / 2} {
		aheadSame(t, long[:len(long)-cut], 0, false)
		aheadSame(t, long[:len(long)-cut], 600, false)
		aheadSame(t, long[:len(long)-cut], 0, true)
	}
	aheadSame(t, long, 300, false) // many over-long lines
	aheadSame(t, long, 0, true)
	ls := lines(long)
	edited := join(append(append(append([][]byte{}, ls[:300]...), []byte("\n"), []byte("{}\n")), ls[301:]...))
	aheadSame(t, edited, 0, false)
}

// FuzzVerifyLogAhead: on any bytes, VerifyLog's read-ahead gives the
// sequential loop's report, error and callbacks.
func FuzzVerifyLogAhead(f *testing.F) {
	f.Add(sampleLog(f, goodSigner), uint16(0))
	f.Add(sampleLog(f), uint16(100))
	f.Add([]byte("{}\n\n"), uint16(1))
	f.Fuzz(func(t *testing.T, data []byte, maxLine uint16) {
		aheadSame(t, data, int(maxLine), false)
	})
}
