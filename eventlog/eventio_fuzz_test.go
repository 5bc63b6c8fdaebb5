package eventlog

import (
	"bytes"
	"testing"
)

// FuzzDecodeEvent: the event line decoder never panics, and a line it
// accepts re-encodes to a line it accepts again with the same envelope.
func FuzzDecodeEvent(f *testing.F) {
	for _, l := range lines(sampleLog(f, goodSigner)) {
		f.Add(bytes.TrimSuffix(l, []byte("\n")))
	}
	f.Add([]byte(`{"v":1,"seq":0,"id":"e0","session":"s","kind":"tool_call","ts":"t","source":"observed","prev":"` + genesisPrev + `","rpc_id":"x"}`))
	f.Add([]byte(`{"v":2}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, perr := DecodeEvent(line)
		if perr != nil {
			if perr.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		enc, err := EncodeEvent(e)
		slow, serr := encodeEventSlow(e)
		if (err == nil) != (serr == nil) || !bytes.Equal(enc, slow) {
			t.Fatalf("fast and slow encodings differ:\n%s (%v)\n%s (%v)", enc, err, slow, serr)
		}
		if err != nil {
			return // e.g. a payload that is not canonicalisable; VerifyLog reports it
		}
		e2, perr := DecodeEvent(enc)
		if perr != nil {
			t.Fatalf("re-encoded line refused: %v\n%s", perr, enc)
		}
		if e2.ID != e.ID || e2.Seq != e.Seq || e2.Kind != e.Kind || e2.Prev != e.Prev {
			t.Fatalf("envelope changed: %s", enc)
		}
	})
}

// FuzzVerifyLog: any bytes give a report and never a panic; a log that
// verifies has a session_end as its last line.
func FuzzVerifyLog(f *testing.F) {
	f.Add(sampleLog(f, goodSigner))
	f.Add(sampleLog(f))
	f.Add([]byte("{}\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := VerifyLog(bytes.NewReader(data), "fuzz", VerifyLogOptions{Verifier: trusted, MaxLine: 1 << 16})
		if rep == nil {
			t.Fatal("no report")
		}
		if err == nil && (!rep.Ended || rep.Status != StatusOK) {
			t.Fatalf("verified without an end: %+v", rep)
		}
	})
}
