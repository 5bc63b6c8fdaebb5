package bundle

import (
	"bytes"
	"testing"
)

const fuzzEntry = `{"count":9,"end_signature_digest":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","format":"witness-tlog-entry/v1","head":"0000000000000000000000000000000000000000000000000000000000000009","session":"s1"}`

// FuzzParseEntry: ParseEntry never panics, and what it accepts marshals
// back to the same bytes (one entry, one spelling, one leaf hash).
func FuzzParseEntry(f *testing.F) {
	f.Add([]byte(fuzzEntry))
	f.Add([]byte(`{"format":"witness-tlog-entry/v1"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := ParseEntry(data, "fuzz")
		if err != nil {
			return
		}
		b, err := e.Marshal()
		if err != nil || !bytes.Equal(b, data) {
			t.Fatalf("accepted %q but marshals to %q (%v)", data, b, err)
		}
	})
}

// FuzzParseBundle: Parse never panics; an accepted bundle marshals and
// parses again to the same bundle; Verify never panics.
func FuzzParseBundle(f *testing.F) {
	f.Add([]byte(`{"checkpoint":"o\n1\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n— o AAAA\n","entry":` + fuzzEntry + `,"format":"witness-tlog-bundle/v1","index":0,"log_key":"o+00000000+AQ","proof":[]}`))
	f.Add([]byte(`{"format":"witness-tlog-bundle/v1","proof":["x"]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := Parse(data, "fuzz")
		if err != nil {
			return
		}
		out, err := b.Marshal()
		if err != nil {
			return // an entry Parse reads leniently (not canonical) may not marshal
		}
		b2, err := Parse(out, "again")
		if err != nil {
			t.Fatalf("marshalled bundle does not parse: %v\n%s", err, out)
		}
		if out2, _ := b2.Marshal(); !bytes.Equal(out, out2) {
			t.Fatalf("not stable:\n%s\n%s", out, out2)
		}
		b.Verify("")
	})
}

// FuzzParseCheckpointBody: the checkpoint body parser never panics, and
// what it accepts has an origin and a 32-byte root.
func FuzzParseCheckpointBody(f *testing.F) {
	f.Add("example.test/log\n3\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n")
	f.Add("o\n01\nAAAA\next\n")
	f.Fuzz(func(t *testing.T, text string) {
		c, err := parseCheckpointBody(text)
		if err != nil {
			return
		}
		if c.Origin == "" || len(c.Root) != 32 {
			t.Fatalf("accepted %q: %+v", text, c)
		}
	})
}
