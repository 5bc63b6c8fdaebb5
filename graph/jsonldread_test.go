package graph

import (
	"bufio"
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/jsonlimit"
)

// readBoth reads doc with the streaming reader and with the
// whole-document reader.
func readBoth(doc []byte) (streamed, whole *Graph, serr, werr error) {
	streamed, serr = readStream(bufio.NewReaderSize(bytes.NewReader(doc), len(canonHead)+7))
	if werr = jsonlimit.Check(doc); werr == nil {
		whole, werr = parseJSONLD(doc)
	}
	return
}

// TestReadStreamEqualsWhole: the streaming reader and the whole-document
// reader give the same graph for the documents witness writes, and both
// refuse the broken ones (every case of TestReadJSONLDErrors and more,
// bytes changed at every position of a small document).
func TestReadStreamEqualsWhole(t *testing.T) {
	for name, log := range map[string][]byte{"sample": sampleLog(t), "hansard": hansardLog(t), "surface": surfaceLog(t), "synthetic": synthetic(t, 500, 9)} {
		g := buildBytes(t, log, Options{})
		doc, err := g.JSONLD()
		if err != nil {
			t.Fatal(err)
		}
		s, w, serr, werr := readBoth(doc)
		if serr != nil || werr != nil {
			t.Fatalf("%s: stream %v, whole %v", name, serr, werr)
		}
		sd, _ := s.JSONLD()
		wd, _ := w.JSONLD()
		if !bytes.Equal(sd, doc) || !bytes.Equal(wd, doc) {
			t.Fatalf("%s: read back differs", name)
		}
	}
	small := []byte(`{"@context":` + ContextJSON + `,"@graph":[{"@id":"urn:x:a","@type":["prov:Activity","prov:Entity"],"prov:used":[{"@id":"urn:x:b"},{"@id":"urn:x:c"}],"prov:value":"a\"\\\n\u0001é"},{"@id":"urn:x:b","witness:seq":{"@type":"xsd:integer","@value":"7"}}]}` + "\n")
	for i := len(canonHead); i < len(small); i++ {
		for _, c := range []byte{' ', '"', '\\', ',', '}', ']', '{', '0', 'x', 0xff} {
			doc := bytes.Clone(small)
			doc[i] = c
			checkSame(t, doc)
			checkSame(t, append(bytes.Clone(small[:i]), small[i+1:]...))
		}
	}
}

func checkSame(t *testing.T, doc []byte) {
	t.Helper()
	s, w, serr, werr := readBoth(doc)
	if (serr == nil) != (werr == nil) {
		t.Fatalf("%q: stream error %v, whole error %v", doc[len(canonHead):], serr, werr)
	}
	if serr != nil {
		return
	}
	sd, _ := s.JSONLD()
	wd, _ := w.JSONLD()
	if !bytes.Equal(sd, wd) {
		t.Fatalf("%q: stream and whole read differ:\n%s\n%s", doc[len(canonHead):], sd, wd)
	}
}

// TestReadStreamErrors: a streamed document's errors name the file, carry
// exit code Tampered, and say where.
func TestReadStreamErrors(t *testing.T) {
	head := string(canonHead)
	cases := map[string]string{
		head + `{"@id":"urn:x:a"}`:                     "unexpected EOF",
		head + `{"@id":"urn:x:a"}]}x`:                  "after top-level value",
		head + `{"@id":"urn:x:a"};`:                    "after a @graph element",
		head + `{"@id":"urn:x:a"}],"x":1}`:             `expected "}"`,
		head + `{"@id":"urn:x:a"},1]}`:                 `$["@graph"][1]: not an object`,
		head + `{"@id":"urn:x:a","prov:used":1}]}`:     `$["@graph"][0]["prov:used"]: bare number`,
		head + `{"@id":"urn:x:a","a":1,"a":1}]}`:       `not valid JSON: $["@graph"][0]`,
		head + strings.Repeat("[", 300) + "]}":         "nesting",
		head + `{"@id":"urn:x:b"},{"@id":"urn:x:b"}]}`: "duplicate node",
	}
	for in, want := range cases {
		_, err := ReadJSONLD(strings.NewReader(in), "g.jsonld")
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "graph g.jsonld") {
			t.Errorf("%s: error %v, want it to name the file and contain %q", in[len(head):], err, want)
			continue
		}
		var ce *exitcode.Error
		if !errors.As(err, &ce) || ce.Code != exitcode.Tampered {
			t.Errorf("%s: error does not carry exit code Tampered", in[len(head):])
		}
	}
}

// FuzzReadStream: the streaming reader never panics, accepts exactly what
// the whole-document reader accepts, and reads the same graph.
func FuzzReadStream(f *testing.F) {
	g := buildBytes(f, sampleLog(f), Options{})
	doc, _ := g.JSONLD()
	f.Add(doc[len(canonHead):])
	f.Add([]byte(`]}`))
	f.Add([]byte(`{"@id":"urn:x:a","@type":"prov:Entity","prov:value":["a",{"@id":"urn:x:b"},{"@type":"xsd:integer","@value":"1"}]}]}`))
	f.Add([]byte(`{"@id":"urn:x:a","prov:value":"\u001f\t","http://www.w3.org/ns/prov#value":"b"}]}`))
	f.Fuzz(func(t *testing.T, tail []byte) {
		checkSame(t, append(bytes.Clone(canonHead), tail...))
	})
}
