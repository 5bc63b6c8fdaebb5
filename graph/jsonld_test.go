package graph

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/internal/exitcode"
)

// TestJSONLDCanonicalAndRoundTrip: the document is canonical JSON (RFC 8785
// bytes plus a newline), reads back into the same graph, and rewrites to
// the same bytes.
func TestJSONLDCanonicalAndRoundTrip(t *testing.T) {
	for name, log := range map[string][]byte{"sample": sampleLog(t), "hansard": hansardLog(t), "synthetic": synthetic(t, 500, 3)} {
		g := buildBytes(t, log, Options{})
		doc, err := g.JSONLD()
		if err != nil {
			t.Fatal(err)
		}
		c, err := canon.Transform(bytes.TrimSuffix(doc, []byte("\n")))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(append(c, '\n'), doc) {
			t.Fatalf("%s: JSON-LD is not canonical JSON", name)
		}
		back, err := ReadJSONLD(bytes.NewReader(doc), name+".jsonld")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		doc2, _ := back.JSONLD()
		if !bytes.Equal(doc, doc2) {
			t.Fatalf("%s: read/write round trip changed the document", name)
		}
		var a, b bytes.Buffer
		da, _ := g.WriteNQuads(&a)
		db, _ := back.WriteNQuads(&b)
		if da != db {
			t.Fatalf("%s: digest changed through JSON-LD", name)
		}
	}
}

// TestDeterministic10Runs: ten builds of the same events give the same
// bytes in every format.
func TestDeterministic10Runs(t *testing.T) {
	log := sampleLog(t)
	big := synthetic(t, 2000, 11)
	var first [4][]byte
	for i := 0; i < 10; i++ {
		g := buildBytes(t, log, Options{})
		var jl, nq, dot, st bytes.Buffer
		if err := g.WriteJSONLD(&jl); err != nil {
			t.Fatal(err)
		}
		if _, err := g.WriteNQuads(&nq); err != nil {
			t.Fatal(err)
		}
		if err := g.WriteDOT(&dot, DOTOptions{Classes: map[string]string{"e6": "violation"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := StreamNQuads(NewEventSource(bytes.NewReader(big), "big"), &st, Options{}, StreamOptions{RunBytes: 64 << 10, TempDir: t.TempDir()}); err != nil {
			t.Fatal(err)
		}
		outs := [4][]byte{jl.Bytes(), nq.Bytes(), dot.Bytes(), st.Bytes()}
		for k := range outs {
			if i == 0 {
				first[k] = outs[k]
			} else if !bytes.Equal(first[k], outs[k]) {
				t.Fatalf("run %d: output %d differs", i, k)
			}
		}
	}
}

func TestReadJSONLDErrors(t *testing.T) {
	ctx := `{"otel":"https://w3id.org/agent-trace-witness/otel#","prov":"http://www.w3.org/ns/prov#","rdf":"http://www.w3.org/1999/02/22-rdf-syntax-ns#","witness":"https://w3id.org/agent-trace-witness/ns#","xsd":"http://www.w3.org/2001/XMLSchema#"}`
	doc := func(nodes string) string { return `{"@context":` + ctx + `,"@graph":[` + nodes + `]}` }
	cases := map[string]string{
		`{"@graph":[]}`: `$["@context"]: missing`,
		`{"@context":"https://www.w3.org/ns/prov.jsonld","@graph":[]}`: `$["@context"]: missing or not the embedded witness context object`,
		doc(`{"@id":"urn:x:a"}`) + "x":                                 "not valid JSON",
		doc(`{"@id":"a b"}`):                                           `$["@graph"][0]["@id"]: `,
		doc(`{"@id":"urn:x:a","prov:used":1}`):                         `$["@graph"][0]["prov:used"]: bare number`,
		doc(`{"@id":"urn:x:a","prov:used":{"@id":"urn:x:b","x":1}}`):   `$["@graph"][0]["prov:used"]`,
		doc(`{"@id":"urn:x:a","prov:startedAtTime":{"@type":"xsd:dateTime","@value":"2026-08-30T14:33:00.000Z"}}`): "not canonical",
		doc(`{"@id":"urn:x:a","@reverse":{}}`):                                        `$["@graph"][0]["@reverse"]: keyword not allowed`,
		doc(`{"@id":"urn:x:a"},{"@id":"urn:x:a"}`):                                    "duplicate node",
		doc(`{"@id":"urn:x:a","prov:used":[]}`):                                       "empty array",
		doc(`{"@id":"urn:x:a","witness:seq":{"@type":"xsd:integer","@value":"007"}}`): "not canonical",
		`[]`: "not a JSON object",
	}
	for in, want := range cases {
		_, err := ReadJSONLD(strings.NewReader(in), "g.jsonld")
		if err == nil {
			t.Errorf("%s: no error", in)
			continue
		}
		if !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "graph g.jsonld: ") {
			t.Errorf("%s: error %q, want it to name the file and contain %q", in, err, want)
		}
		var ce *exitcode.Error
		if !errors.As(err, &ce) || ce.Code != exitcode.Tampered {
			t.Errorf("%s: error does not carry exit code Tampered", in)
		}
	}
}

// FuzzReadJSONLD: the strict reader never panics, and whatever it accepts
// writes back to a document it reads to the same graph.
func FuzzReadJSONLD(f *testing.F) {
	g := buildBytes(f, sampleLog(f), Options{})
	doc, _ := g.JSONLD()
	f.Add(doc)
	f.Add([]byte(`{"@context":{},"@graph":[]}`))
	f.Add([]byte(`{"@context":` + ContextJSON + `,"@graph":[{"@id":"urn:x:a","@type":"prov:Entity","prov:value":["a",{"@id":"urn:x:b"},{"@type":"xsd:integer","@value":"1"}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := ReadJSONLD(bytes.NewReader(data), "fuzz.jsonld")
		if err != nil {
			return
		}
		out, err := g.JSONLD()
		if err != nil {
			t.Fatalf("accepted graph does not write: %v", err)
		}
		g2, err := ReadJSONLD(bytes.NewReader(out), "rewritten.jsonld")
		if err != nil {
			t.Fatalf("rewritten document does not read: %v", err)
		}
		out2, _ := g2.JSONLD()
		if !bytes.Equal(out, out2) {
			t.Fatal("rewrite is not stable")
		}
		var nq bytes.Buffer
		if _, err := g.WriteNQuads(&nq); err != nil {
			t.Fatal(err)
		}
	})
}

func TestDOT(t *testing.T) {
	g := buildBytes(t, sampleLog(t), Options{})
	var b bytes.Buffer
	if err := g.WriteDOT(&b, DOTOptions{Classes: map[string]string{"e6": "violation", CallIRI(SessionIRI("sess-1"), "e3"): "notice"}}); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	for _, want := range []string{"shape=ellipse", "shape=box", "shape=house", `fillcolor="#e74c3c"`, `fillcolor="#5dade2"`, `label="used"`, "cluster_session"} {
		if !strings.Contains(s, want) {
			t.Errorf("DOT lacks %s", want)
		}
	}
	// the agent is drawn once and never linked to activities (no hub)
	agentNode := ""
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, `label="AI agent"`) {
			agentNode = strings.Fields(line)[0]
		}
	}
	if agentNode == "" || strings.Contains(s, "-> "+agentNode+" ") || strings.Contains(s, "-> "+agentNode+";") {
		t.Fatalf("agent node %q missing or linked:\n%s", agentNode, s)
	}
	// a large graph becomes a summary
	big := buildBytes(t, synthetic(t, 3000, 2), Options{})
	b.Reset()
	if err := big.WriteDOT(&b, DOTOptions{Classes: map[string]string{"e5": "violation"}}); err != nil {
		t.Fatal(err)
	}
	// (one cluster per time window, one node per class in it: a size
	// bounded by windows and classes, TestDOTSummaryWindows)
	if n := strings.Count(b.String(), "\n"); n > 400 || !strings.Contains(b.String(), "summary:") || !strings.Contains(b.String(), `fillcolor="#e74c3c"`) {
		t.Fatalf("summary of a large graph: %d lines\n%s", n, b.String())
	}
}
