package graph

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/graph/ldoracle"
	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/internal/testrepo"
)

// peers returns the pinned npm peers directory, or fails (CI=true) or skips
// when node or the node_modules are missing.
func peers(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(testrepo.Root(t), "testdata", "peers")
	missing := ""
	if _, err := exec.LookPath("node"); err != nil {
		missing = "node is not installed"
	} else {
		for _, m := range []string{"n3", "jsonld"} {
			if _, err := os.Stat(filepath.Join(dir, "node_modules", m, "package.json")); err != nil {
				missing = "testdata/peers/node_modules/" + m + " is missing (run 'make peers')"
			}
		}
	}
	if missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s; CI needs the pinned npm peers", missing)
		}
		t.Skip(missing)
	}
	return dir
}

func node(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("node", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %v: %v\n%s", args, err, stderr.String())
	}
	return out
}

func interopGraphs(t *testing.T) map[string]*Graph {
	t.Helper()
	gs := map[string]*Graph{
		"sample":   buildBytes(t, sampleLog(t), Options{}),
		"hansard":  buildBytes(t, hansardLog(t), Options{}),
		"random":   randomGraph(t, 300, 42),
		"controls": buildBytes(t, controlLog(t), Options{}),
		"surface":  buildBytes(t, surfaceLog(t), Options{}),
	}
	// controls/: real captures with raw control characters (DEL) in
	// payloads, where json-gold is not an oracle
	for _, pat := range []string{"captured/*.jsonl", "controls/*.jsonl"} {
		files, _ := filepath.Glob(filepath.Join(testrepo.Root(t), "graph", "testdata", pat))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			gs[filepath.Base(f)] = buildBytes(t, b, Options{})
		}
	}
	return gs
}

// TestN3ParsesSameTriples: the n3 library (npm, pinned) parses our N-Quads
// into exactly the statements of our model.
func TestN3ParsesSameTriples(t *testing.T) {
	dir := peers(t)
	for name, g := range interopGraphs(t) {
		t.Run(name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "g.nq")
			var nq bytes.Buffer
			if _, err := g.WriteNQuads(&nq); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f, nq.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			got := strings.Split(strings.TrimSuffix(string(node(t, dir, "n3-triples.mjs", f)), "\n"), "\n")
			var want []string
			row := func(s, p string, o Term) {
				var r []string
				if o.IRI != "" {
					r = []string{s, p, "NamedNode", o.IRI, "", "", ""}
				} else {
					r = []string{s, p, "Literal", o.Lex, o.datatype(), "", ""}
				}
				b, err := canon.Marshal(r) // JSON.stringify's escaping
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, string(b))
			}
			for _, n := range g.Nodes {
				for _, ty := range n.Types {
					row(n.ID, RDFType, Ref(ty))
				}
				for p, vals := range n.Props {
					for _, v := range vals {
						row(n.ID, p, v)
					}
				}
			}
			sort.Strings(want)
			// n3 sorts by UTF-16 code units (JavaScript); compare as sets
			sort.Strings(got)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				for i := range want {
					if i >= len(got) || got[i] != want[i] {
						g := "<none>"
						if i < len(got) {
							g = got[i]
						}
						t.Fatalf("n3 triples differ at %d (n3 %d, ours %d):\nn3:   %s\nours: %s", i, len(got), len(want), g, want[i])
					}
				}
				t.Fatalf("n3 has %d triples, ours %d", len(got), len(want))
			}
		})
	}
}

// TestJSONLDjsCanonizeEqual: jsonld.js's RDFC-1.0 canonicalisation of our
// JSON-LD equals our N-Quads byte for byte, control characters included
// (rdf-canonize escapes them as RDFC-1.0 says; json-gold does not).
func TestJSONLDjsCanonizeEqual(t *testing.T) {
	dir := peers(t)
	for name, g := range interopGraphs(t) {
		t.Run(name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "g.jsonld")
			doc, err := g.JSONLD()
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f, doc, 0o644); err != nil {
				t.Fatal(err)
			}
			var nq bytes.Buffer
			if _, err := g.WriteNQuads(&nq); err != nil {
				t.Fatal(err)
			}
			got := node(t, dir, "jsonld-canon.mjs", f)
			if !bytes.Equal(got, nq.Bytes()) {
				t.Fatalf("jsonld.js canonize differs from our N-Quads (%d vs %d bytes)", len(got), nq.Len())
			}
		})
	}
}

// TestEscapingRDFC10: literal escaping per RDFC-1.0 (W3C rdf-canon test060
// rules): \b \t \n \f \r \" \\ short, other C0 controls and DEL as \u00XX
// upper-case, everything else raw.
func TestEscapingRDFC10(t *testing.T) {
	cases := map[string]string{
		"plain ü 𝄞":          "plain ü 𝄞",
		"\b\t\n\f\r\"\\":     `\b\t\n\f\r\"\\`,
		"\x00\x01\x07\x0b":   `\u0000\u0001\u0007\u000B`,
		"\x0e\x1b[31m\x1f":   `\u000E\u001B[31m\u001F`,
		"\x7f":               `\u007F`,
		"\u0080\u0085\u2028": "\u0080\u0085\u2028",
		"'<>{}^`|":           "'<>{}^`|",
	}
	for in, want := range cases {
		if got := string(AppendEscaped(nil, in)); got != want {
			t.Errorf("escape %q = %q, want %q", in, got, want)
		}
	}
}

// controlLog is a session whose decoded strings (an agent message, an
// effect target) carry raw control characters, as ANSI tool output does.
func controlLog(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := eventlog.NewWriter(&buf, "controls")
	evs := []*eventlog.Event{
		{Kind: eventlog.KindToolCall, TS: "2026-08-30T14:33:00Z", Source: eventlog.SourceObserved, Tool: "run", Payload: json.RawMessage(`{"cmd":"ls"}`)},
		{Kind: eventlog.KindExternalEffect, TS: "2026-08-30T14:33:01Z", Source: eventlog.SourceObserved, Tool: "run", Call: "e0",
			Effect: &eventlog.Effect{Op: "exec", Target: "\x1b[31mred\x1b[0m bell\x07 del\x7f vt\x0b ff\f bs\b nul\x00 c1\u0085 ls\u2028"}},
		{Kind: eventlog.KindMessage, TS: "2026-08-30T14:33:02Z", Source: eventlog.SourceReported, Cause: "e1",
			Message: &eventlog.Message{Direction: "outgoing", Conversation: "c", Sender: "a", Text: "\x1b[1mbold\x1b[0m\r\n\x01\x1f", Operation: "direct"}},
	}
	for _, e := range evs {
		if err := w.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// TestJSONGoldControlCharacterTrap documents why json-gold is not the
// oracle for control characters: it writes ESC, BEL... raw, where RDFC-1.0
// (and we, and jsonld.js: TestJSONLDjsCanonizeEqual) escape them.
func TestJSONGoldControlCharacterTrap(t *testing.T) {
	g := buildBytes(t, controlLog(t), Options{})
	var ours, gold bytes.Buffer
	if _, err := g.WriteNQuads(&ours); err != nil {
		t.Fatal(err)
	}
	doc, _ := g.JSONLD()
	if err := ldoracle.Canonicalize(doc, &ldoracle.Loader{}, &gold); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(ours.Bytes(), []byte(`\u001B[31mred\u001B[0m bell\u0007 del\u007F vt\u000B ff\f bs\b nul\u0000 c1`+"\u0085"+` ls`+"\u2028")) {
		t.Fatalf("our N-Quads do not escape the effect target per RDFC-1.0:\n%s", ours.String())
	}
	for _, c := range []rune{0x00, 0x01, 0x07, 0x0b, 0x1b, 0x1f, 0x7f} {
		if bytes.ContainsRune(ours.Bytes(), c) {
			t.Fatalf("our N-Quads contain the raw control character %U", c)
		}
	}
	if bytes.Equal(ours.Bytes(), gold.Bytes()) {
		t.Log("json-gold now escapes control characters like RDFC-1.0")
	} else if !bytes.ContainsRune(gold.Bytes(), 0x1b) {
		t.Fatal("json-gold differs from us for another reason than raw control characters")
	}
}

// TestExpandsToPROVO: json-gold expands our JSON-LD (offline) to PROV-O
// IRIs, and never calls the document loader.
func TestExpandsToPROVO(t *testing.T) {
	g := buildBytes(t, sampleLog(t), Options{})
	doc, err := g.JSONLD()
	if err != nil {
		t.Fatal(err)
	}
	l := &ldoracle.Loader{}
	exp, err := ldoracle.Expand(doc, l)
	if err != nil {
		t.Fatal(err)
	}
	if r := l.Requests(); len(r) != 0 {
		t.Fatalf("expansion loaded %v", r)
	}
	raw, _ := json.Marshal(exp)
	for _, iri := range []string{ProvActivity, ProvEntity, ProvAgent, ProvPlan, ProvAssociation, ProvUsed, ProvWasGeneratedBy,
		provWasAssociatedWith, ProvWasInformedBy, ProvWasDerivedFrom, provQualifiedAssociation, provHadPlan, provStartedAtTime,
		provEndedAtTime, OtelToolName, otelJSONRPCRequestID, OtelMCPMethodName, xsdDateTime} {
		if !bytes.Contains(raw, []byte(`"`+iri+`"`)) {
			t.Errorf("expanded document lacks %s", iri)
		}
	}
	// the activity uses its arguments: PROV-O direction Activity -> Entity
	var nodes []map[string]any
	_ = json.Unmarshal(raw, &nodes)
	found := false
	for _, n := range nodes {
		if n["@id"] == CallIRI(SessionIRI("sess-1"), "e3") {
			for _, u := range n[ProvUsed].([]any) {
				if u.(map[string]any)["@id"] == argsIRI(SessionIRI("sess-1"), "e3") {
					found = true
				}
			}
		}
	}
	if !found {
		t.Fatal("call e3 does not prov:used its arguments after expansion")
	}
}

// TestLoaderRefusesEveryURL: a document naming a remote context is not
// fetched: the loader is asked, records the URL and refuses, and
// expansion fails.
func TestLoaderRefusesEveryURL(t *testing.T) {
	for _, url := range []string{"https://www.w3.org/ns/prov.jsonld", "http://127.0.0.1:1/ctx", "/etc/passwd", "file:///etc/hosts"} {
		l := &ldoracle.Loader{}
		doc := []byte(`{"@context":"` + url + `","@id":"urn:x:a","used":{"@id":"urn:x:b"}}`)
		if _, err := ldoracle.Expand(doc, l); err == nil {
			t.Fatalf("%s: expansion succeeded without the context", url)
		}
		if r := l.Requests(); len(r) != 1 || r[0] != url {
			t.Fatalf("%s: loader requests %v", url, r)
		}
	}
}
