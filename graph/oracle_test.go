package graph

import (
	"bytes"
	"fmt"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/graph/ldoracle"
	"github.com/agent-trace-witness/witness/internal/synthlog"
	"github.com/agent-trace-witness/witness/internal/testrepo"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// oracleCheck compares the graph's own canonical N-Quads with json-gold's
// URDNA2015 normalisation of its JSON-LD document, byte for byte, and checks
// that json-gold fetched nothing.
func oracleCheck(t *testing.T, name string, g *Graph) {
	t.Helper()
	var ours bytes.Buffer
	if _, err := g.WriteNQuads(&ours); err != nil {
		t.Fatalf("%s: nquads: %v", name, err)
	}
	doc, err := g.JSONLD()
	if err != nil {
		t.Fatalf("%s: json-ld: %v", name, err)
	}
	l := &ldoracle.Loader{}
	var theirs bytes.Buffer
	if err := ldoracle.Canonicalize(doc, l, &theirs); err != nil {
		t.Fatalf("%s: json-gold: %v", name, err)
	}
	if reqs := l.Requests(); len(reqs) > 0 {
		t.Fatalf("%s: json-gold tried to load %v", name, reqs)
	}
	if !bytes.Equal(ours.Bytes(), theirs.Bytes()) {
		a, b := strings.Split(ours.String(), "\n"), strings.Split(theirs.String(), "\n")
		for i := 0; i < len(a) && i < len(b); i++ {
			if a[i] != b[i] {
				t.Fatalf("%s: N-Quads differ from json-gold at line %d (ours %d lines, json-gold %d):\nours:      %s\njson-gold: %s", name, i+1, len(a), len(b), a[i], b[i])
			}
		}
		t.Fatalf("%s: N-Quads differ from json-gold: ours %d lines, json-gold %d", name, len(a), len(b))
	}
	if ours.Len() == 0 {
		t.Fatalf("%s: empty graph", name)
	}
}

// importATW imports an agent-trace-witness 0.1.0 fixture (event log or
// cassette) with witness import's library function.
func importATW(t testing.TB, name string) []byte {
	t.Helper()
	f, err := os.Open(filepath.Join(testrepo.Root(t), "testdata/compat/atw-0.1.0", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := derive.ImportATW(f, &buf, derive.ImportOptions{Name: name, TS: "2026-08-30T14:33:00+00:00"}); err != nil {
		t.Fatalf("import %s: %v", name, err)
	}
	return buf.Bytes()
}

// hansardLog is the HANSARD scenario of agent-trace-witness 0.1.0, imported.
func hansardLog(t testing.TB) []byte { return importATW(t, "hansard_scenario_1.jsonl") }

func synthetic(t testing.TB, n int, seed uint64) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := synthlog.Generate(&b, n, seed, fmt.Sprintf("synthetic-%d", seed)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// randomText returns random Unicode text without control characters
// (json-gold writes those raw, against RDFC-1.0; see TestEscapingRDFC10).
func randomText(r *rand.Rand, max int) string {
	n := r.IntN(max + 1)
	var sb strings.Builder
	for i := 0; i < n; i++ {
		var c rune
		switch r.IntN(6) {
		case 0:
			c = rune(0x20 + r.IntN(0x5f)) // printable ASCII, quotes and backslash included
		case 1:
			c = []rune{'"', '\\', '\t', '\n', '\r', '<', '>', '{', '}', '^', '`'}[r.IntN(11)]
		case 2:
			c = rune(0xa0 + r.IntN(0x700))
		case 3:
			c = rune(0x3000 + r.IntN(0x5000))
		case 4:
			c = rune(0x10000 + r.IntN(0x2000)) // astral plane
		default:
			c = rune(0x80 + r.IntN(0x20)) // C1 controls: not escaped by RDFC-1.0
		}
		if c == '\t' || c == '\n' || c == '\r' || c >= 0x20 {
			sb.WriteRune(c)
		}
	}
	return sb.String()
}

var randPreds = []string{ProvUsed, ProvWasGeneratedBy, ProvWasDerivedFrom, ProvWasInformedBy, ProvValue, WText, OtelToolName, WEventID, "urn:x-test:pred/a", "urn:x-test:prädikat/ü", "https://example.org/ns#p"}
var randTypes = []string{ProvEntity, ProvActivity, ProvAgent, WToolCall, "urn:x-test:Class/ζ", "https://example.org/ns#T"}

// randomGraph builds a graph of n nodes with random IRIs, types, literals
// (random Unicode) and links.
func randomGraph(t testing.TB, n int, seed uint64) *Graph {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 17))
	g := New()
	ids := make([]string, n)
	for i := range ids {
		switch r.IntN(3) {
		case 0:
			ids[i] = fmt.Sprintf("urn:witness:rand-%d/n/%d", seed, i)
		case 1:
			ids[i] = "urn:witness:" + PctEncode(randomText(r, 8)) + fmt.Sprintf("/%d", i)
		default:
			ids[i] = fmt.Sprintf("urn:x-test:ü%d/%s", i, strings.Map(func(c rune) rune {
				if c <= 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) || strings.ContainsRune("<>\"{}|^`\\%", c) {
					return 'x'
				}
				return c
			}, randomText(r, 5)))
		}
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, id := range ids {
		nd := NewNode(id)
		for k := r.IntN(3); k >= 0; k-- {
			nd.addType(randTypes[r.IntN(len(randTypes))])
		}
		for k := r.IntN(6); k > 0; k-- {
			p := randPreds[r.IntN(len(randPreds))]
			var o Term
			switch r.IntN(6) {
			case 0, 1:
				o = Ref(ids[r.IntN(n)])
			case 2:
				o = Lit(t0.Add(time.Duration(r.Int64N(1e15))).Format("2006-01-02T15:04:05.999999999Z"), xsdDateTime)
			case 3:
				o = Lit(fmt.Sprint(r.Int64()-r.Int64()), XSDInteger)
			case 4:
				o = Lit(randomText(r, 10), "urn:x-test:datatype")
			default:
				o = Str(randomText(r, 40))
			}
			nd.Add(p, o)
		}
		if len(nd.Types) == 0 && len(nd.Props) == 0 {
			nd.addType(ProvEntity)
		}
		if err := g.AddNode(nd); err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
	}
	return g
}

// TestOracleJSONGold: on 26 graphs our canonical N-Quads equal json-gold's
// URDNA2015 normalisation of our JSON-LD, byte for byte.
func TestOracleJSONGold(t *testing.T) {
	cases := []struct {
		name  string
		graph func(t *testing.T) *Graph
	}{
		{"sample", func(t *testing.T) *Graph { return buildBytes(t, sampleLog(t), Options{}) }},
		{"sample-no-payloads", func(t *testing.T) *Graph { return buildBytes(t, sampleLog(t), Options{OmitPayloads: true}) }},
		{"sample-cli-seal", func(t *testing.T) *Graph {
			return buildBytes(t, sampleLog(t), Options{Seal: &eventlog.SealRef{Digest: strings.Repeat("ab", 32), WitnessID: "wit ✓"}})
		}},
		{"hansard", func(t *testing.T) *Graph { return buildBytes(t, hansardLog(t), Options{}) }},
		{"mcp-surface", func(t *testing.T) *Graph { return buildBytes(t, surfaceLog(t), Options{}) }},
		{"mcp-surface-no-payloads", func(t *testing.T) *Graph { return buildBytes(t, surfaceLog(t), Options{OmitPayloads: true}) }},
		{"atw-cassette", func(t *testing.T) *Graph { return buildBytes(t, importATW(t, "mcp_stdio_001.jsonl"), Options{}) }},
		{"atw-cassette-live", func(t *testing.T) *Graph { return buildBytes(t, importATW(t, "mcp_stdio_live_001.jsonl"), Options{}) }},
	}
	for _, f := range capturedFixtures(t) {
		cases = append(cases, struct {
			name  string
			graph func(t *testing.T) *Graph
		}{"captured-" + filepath.Base(f), func(t *testing.T) *Graph {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			return buildBytes(t, b, Options{})
		}})
	}
	for i, n := range []int{2, 10, 100, 1000, 2500} {
		n, seed := n, uint64(i+1)
		cases = append(cases, struct {
			name  string
			graph func(t *testing.T) *Graph
		}{fmt.Sprintf("synthetic-%d", n), func(t *testing.T) *Graph { return buildBytes(t, synthetic(t, n, seed), Options{}) }})
	}
	sizes := []int{1, 2, 3, 5, 10, 30, 100, 300, 700, 1000, 2000, 4999}
	if testing.Short() {
		sizes = sizes[:8]
	}
	for i, n := range sizes {
		n, seed := n, uint64(100+i)
		cases = append(cases, struct {
			name  string
			graph func(t *testing.T) *Graph
		}{fmt.Sprintf("random-%d", n), func(t *testing.T) *Graph { return randomGraph(t, n, seed) }})
	}
	if len(cases) < 20 && !testing.Short() {
		t.Fatalf("only %d oracle graphs", len(cases))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { oracleCheck(t, c.name, c.graph(t)) })
	}
}

// capturedFixtures lists the committed real captures (server-everything).
func capturedFixtures(t testing.TB) []string {
	m, _ := filepath.Glob(filepath.Join(testrepo.Root(t), "graph", "testdata", "captured", "*.jsonl"))
	return m
}
