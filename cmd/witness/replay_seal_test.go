package main

import (
	"bytes"
	"encoding/json"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/synthlog"
	"github.com/agent-trace-witness/witness/internal/testrepo"
	"github.com/agent-trace-witness/witness/replay"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// sealCase is one graph replayed with --seal by both paths.
type sealCase struct {
	name   string
	graph  string   // graph file
	remove []string // --remove
	// changed is the verdict overlay's expected "changed"
	changed bool
	// reread: verify cannot scan the document (unsorted, or a dangling
	// reference) and reads it whole on both readings
	reread bool
}

// TestReplaySealStreamed: 'witness replay --graph G --seal S --remove X'
// judges the graph file without holding it (the engine read by
// replay.NewEngineJSONLD, verify's scan of the file and of its filtered
// reading); its JSON and text outputs are byte for byte those of the
// in-memory path (the graph read whole, the counterfactual graph built,
// each re-serialised and verified), on the fixtures, the compat cassettes
// made into graphs, synthetic logs of several sizes, documents verify
// must read whole, and runs whose verdict changes or does not; the
// relation nodes the counterfactual drops are found without reading the
// file again (the referrers kept by the engine's builder).
func TestReplaySealStreamed(t *testing.T) {
	cases, seal, env := sealCases(t)
	relations := 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := newApp(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}, func(k string) string { return env[k] })
			// the streamed path is taken: an engine without its graph
			o := replaySealOptions(c, seal, "json")
			eng, err := replayEngine(a, &o)
			if err != nil {
				t.Fatal(err)
			}
			if eng.CounterfactualGraph(&replay.Result{}) != nil {
				t.Fatal("replay --graph --seal read the graph whole")
			}
			// the engine's scan judged the observed run
			j, ok := o.judge.(*replay.SealJudge)
			if observed, _ := j.Held(); !ok || !observed {
				t.Fatalf("the engine's scan made no judgement of the observed run (judge %T)", o.judge)
			}
			// the relation nodes the counterfactual drops come from the
			// referrers the engine's builder kept: the file is not read
			// for them
			sj := &scanCountingJudge{SealJudge: j}
			if _, err := eng.Counterfactual(replay.Options{Remove: c.remove, Judge: sj}); err != nil {
				t.Fatal(err)
			}
			if sj.scans != 0 {
				t.Errorf("the file was read %d times to find the relation nodes dropped", sj.scans)
			}
			relations += droppedRelations(t, c)
			for _, format := range []string{"json", "text"} {
				streamed := runSealPath(t, a, c, seal, format, false)
				inMemory := runSealPath(t, a, c, seal, format, true)
				if !bytes.Equal(streamed, inMemory) {
					t.Errorf("--format %s: streamed output differs from the in-memory path's\nstreamed:  %s\nin memory: %s", format, streamed, inMemory)
				}
				if format == "json" {
					var r replay.Result
					if err := json.Unmarshal(streamed, &r); err != nil {
						t.Fatal(err)
					}
					if r.Verdicts == nil || r.Drift == nil {
						t.Fatalf("no verdict overlay: %s", streamed)
					}
					if r.Verdicts.Changed != c.changed {
						t.Errorf("verdict changed %v (%s -> %s), want %v", r.Verdicts.Changed, r.Verdicts.Observed, r.Verdicts.Counterfactual, c.changed)
					}
					rereads := strings.Contains(string(streamed), "graph-dangling") || c.name == "unsorted"
					if rereads != c.reread {
						t.Errorf("reread case %v, output says %v", c.reread, rereads)
					}
				}
			}
		})
	}
	if relations == 0 {
		t.Error("no case drops a relation node: the relation rule is not exercised")
	}
}

// TestReplaySealCounterfactualFromScan: replay --seal judges the
// counterfactual from the projection of the engine's scan
// (verify.GraphScan.CheckWithout): with the graph file renamed away once
// the engine is built, the counterfactual and its overlays are made all
// the same, equal to those of a judge without the projection, which
// reads the file again; the projection is let go once used. On the
// documents verify must read whole, the projection cannot say it: with
// the file gone the counterfactual fails, with the file there it is the
// rereading judge's.
func TestReplaySealCounterfactualFromScan(t *testing.T) {
	cases, seal, env := sealCases(t)
	fromScan := 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := newApp(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}, func(k string) string { return env[k] })
			// a copy of the graph, of the same name, to take away
			b, err := os.ReadFile(c.graph)
			if err != nil {
				t.Fatal(err)
			}
			c.graph = filepath.Join(t.TempDir(), filepath.Base(c.graph))
			if err := os.WriteFile(c.graph, b, 0o644); err != nil {
				t.Fatal(err)
			}
			// counterfactual builds an engine and its judge from the file
			// and replays c with it, the projection kept or not, the
			// file there or not
			counterfactual := func(keep, gone bool) ([]byte, error) {
				o := replaySealOptions(c, seal, "json")
				eng, err := replayEngine(a, &o)
				if err != nil {
					t.Fatal(err)
				}
				j, ok := o.judge.(*replay.SealJudge)
				if _, held := j.Held(); !ok || !held {
					t.Fatalf("the engine's scan kept no projection (judge %T)", o.judge)
				}
				if !keep {
					j.DropProjection()
				}
				if gone {
					if err := os.Rename(c.graph, c.graph+".gone"); err != nil {
						t.Fatal(err)
					}
					defer func() {
						if err := os.Rename(c.graph+".gone", c.graph); err != nil {
							t.Fatal(err)
						}
					}()
				}
				r, err := eng.Counterfactual(replay.Options{Remove: slices.Clone(c.remove), Judge: j})
				if err != nil {
					return nil, err
				}
				if _, held := j.Held(); held {
					t.Error("the projection is held after the counterfactual's judgement")
				}
				var out bytes.Buffer
				if err := replay.WriteJSON(&out, r); err != nil {
					t.Fatal(err)
				}
				return out.Bytes(), nil
			}
			reread, err := counterfactual(false, false)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(reread, []byte(`"verdicts"`)) {
				t.Fatalf("no verdict overlay: %s", reread)
			}
			got, err := counterfactual(true, true)
			if c.reread {
				if err == nil {
					t.Fatal("a document verify reads whole was judged without its file")
				}
				got, err = counterfactual(true, false)
			} else {
				fromScan++
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, reread) {
				t.Errorf("the counterfactual judged from the projection differs from the file's reread:\nprojection: %s\nreread:     %s", got, reread)
			}
		})
	}
	if fromScan < 15 {
		t.Errorf("only %d counterfactuals judged without the file", fromScan)
	}
}

// sealCases are the graphs replayed with --seal by the tests of the
// streamed path, with the seal and the environment they are judged with:
// the replay fixture, the compat cassettes made into graphs, synthetic
// logs of several sizes, runs whose verdict changes or does not, and
// documents verify must read whole.
func sealCases(t *testing.T) ([]sealCase, string, map[string]string) {
	t.Helper()
	root := testrepo.Root(t)
	dir := t.TempDir()
	seal := filepath.Join(root, "testdata", "compat", "atw-0.1.0", "seal_without_damaging_tool.json")
	env := map[string]string{
		"ATW_WITNESS_TS":  "2026-08-30T14:33:00+00:00",
		"ATW_WITNESS_KEY": "0000000000000000000000000000000000000000000000000000000000000000",
	}
	var cases []sealCase
	add := func(c sealCase) { cases = append(cases, c) }

	// the replay fixture (bound seal: association nodes, which go with
	// the activity that alone refers to them)
	session := filepath.Join(root, "replay", "testdata", "session.jsonld")
	for _, rm := range [][]string{{"e1"}, {"e2"}, {"e3", "e5"}} {
		add(sealCase{name: "session-" + strings.Join(rm, "+"), graph: session, remove: rm})
	}
	// the compat cassettes, imported and graphed
	for _, f := range []string{"hansard_scenario_1.jsonl", "mcp_stdio_001.jsonl", "mcp_stdio_live_001.jsonl"} {
		g := importedGraph(t, dir, filepath.Join(root, "testdata", "compat", "atw-0.1.0", f))
		for _, rm := range []string{"e1", "e2", "e4"} {
			// the MCP cassettes' one violation goes with their first call
			changed := rm == "e1" && strings.HasPrefix(f, "mcp_stdio")
			add(sealCase{name: f + "-" + rm, graph: g, remove: []string{rm}, changed: changed})
		}
	}
	// synthetic logs of several sizes
	for _, n := range []int{10, 200, 3000} {
		var log bytes.Buffer
		if err := synthlog.Generate(&log, n, uint64(n), "synth"); err != nil {
			t.Fatal(err)
		}
		g := writeGraphFile(t, dir, "synth"+strconv.Itoa(n), &log)
		for _, rm := range []string{"e2", "e5", "e" + strconv.Itoa(n/2+1)} {
			add(sealCase{name: "synth" + strconv.Itoa(n) + "-" + rm, graph: g, remove: []string{rm}})
		}
	}
	// a run whose verdict changes: its one unsealed call removed
	mcp := synthlog.NewMCPLog("2026-08-30T14:33:00Z", "files", [][2]string{{"read_file", ""}, {"delete_file", `{"destructiveHint":true}`}})
	mcp.ToolCall("read_file", `{"path":"/data/a.txt"}`, "a")
	del := mcp.ToolCall("delete_file", `{"path":"/data/b.txt"}`, "done")
	mcp.ToolCall("read_file", `{"path":"/data/c.txt"}`, "c")
	changes := writeGraphFile(t, dir, "changes", bytes.NewReader(mcp.Bytes()))
	add(sealCase{name: "verdict-changes", graph: changes, remove: []string{del}, changed: true})
	add(sealCase{name: "verdict-stays", graph: changes, remove: []string{"e1"}})
	// documents verify reads whole: nodes out of order, and a dangling
	// reference (the agent node cut out)
	add(sealCase{name: "unsorted", graph: editGraph(t, dir, "unsorted", changes, func(nodes []json.RawMessage) []json.RawMessage {
		slices.Reverse(nodes)
		return nodes
	}), remove: []string{del}, changed: true, reread: true})
	add(sealCase{name: "dangling", graph: editGraph(t, dir, "dangling", session, func(nodes []json.RawMessage) []json.RawMessage {
		return slices.DeleteFunc(nodes, func(n json.RawMessage) bool {
			var id struct {
				ID string `json:"@id"`
			}
			return json.Unmarshal(n, &id) == nil && strings.HasSuffix(id.ID, "/agent")
		})
	}), remove: []string{"e2"}, reread: true})

	return cases, seal, env
}

// replaySealOptions are the options of 'witness replay --graph G --seal S
// --remove X --format F' for c.
func replaySealOptions(c sealCase, seal, format string) replayOptions {
	o := replayOptions{graphFile: c.graph, remove: slices.Clone(c.remove), sealFile: seal, format: format}
	o.output.stdout = true
	o.keys.use = keyUse{Legacy: true}
	return o
}

// runSealPath runs replay on c, streamed (the CLI's path) or in memory
// (a judge given beforehand keeps the graph, as before the streamed
// path), and returns its output.
func runSealPath(t *testing.T, a *app, c sealCase, seal, format string, inMemory bool) []byte {
	t.Helper()
	var out bytes.Buffer
	a.stdout = &out
	o := replaySealOptions(c, seal, format)
	if inMemory {
		j, err := newVerifyJudge(a, &o)
		if err != nil {
			t.Fatal(err)
		}
		o.judge = replayJudgeOnly{j}
	}
	if err := runReplay(a, &o); err != nil {
		t.Fatalf("in memory %v: %v", inMemory, err)
	}
	return out.Bytes()
}

// scanCountingJudge is a replay.SealJudge that counts its ScanDocument calls.
type scanCountingJudge struct {
	*replay.SealJudge
	scans int
}

func (s *scanCountingJudge) ScanDocument(visit func(v *graph.NodeView) error) error {
	s.scans++
	return s.SealJudge.ScanDocument(visit)
}

// replayJudgeOnly hides the document methods of a judge: it judges
// graphs only, as the judge of the in-memory path did.
type replayJudgeOnly struct{ j replay.Judge }

func (r replayJudgeOnly) Judge(g *graph.Graph) (*replay.Judgement, error) { return r.j.Judge(g) }

// droppedRelations counts the nodes the in-memory counterfactual graph of
// c drops beyond its compensation set (relation nodes).
func droppedRelations(t *testing.T, c sealCase) int {
	t.Helper()
	f, err := os.Open(c.graph)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g, err := graph.ReadJSONLD(f, filepath.Base(c.graph))
	if err != nil {
		t.Fatal(err)
	}
	e, err := replay.NewEngine(g)
	if err != nil {
		t.Fatal(err)
	}
	r, err := e.Counterfactual(replay.Options{Remove: c.remove})
	if err != nil {
		t.Fatal(err)
	}
	return g.Len() - len(r.CompensationSet) - e.CounterfactualGraph(r).Len()
}

// importedGraph imports a 0.1.0 log and writes its graph in dir.
func importedGraph(t *testing.T, dir, src string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	if _, err := derive.ImportATW(bytes.NewReader(b), &log, derive.ImportOptions{Name: filepath.Base(src), TS: "2026-08-30T14:33:00+00:00"}); err != nil {
		t.Fatal(err)
	}
	return writeGraphFile(t, dir, strings.TrimSuffix(filepath.Base(src), ".jsonl"), &log)
}

// writeGraphFile builds the graph of a log and writes it in dir as
// name.jsonld.
func writeGraphFile(t *testing.T, dir, name string, log interface{ Read([]byte) (int, error) }) string {
	t.Helper()
	g, err := graph.Build(eventlog.NewReader(log, name+".jsonl"), graph.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := g.WriteJSONLD(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".jsonld")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// editGraph writes a copy of the graph document src with its node
// elements edited by edit.
func editGraph(t *testing.T, dir, name, src string, edit func([]json.RawMessage) []json.RawMessage) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Context json.RawMessage   `json:"@context"`
		Graph   []json.RawMessage `json:"@graph"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	doc.Graph = edit(doc.Graph)
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".jsonld")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
