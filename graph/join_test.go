package graph_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/synthlog"
)

const frozen = "2026-09-01T10:00:00+00:00"

func buildRun(t *testing.T, logs ...[]byte) *graph.Run {
	t.Helper()
	var in []graph.LogInput
	for i, l := range logs {
		in = append(in, graph.LogInput{Name: []string{"model/events.jsonl", "fs/events.jsonl", "other/events.jsonl"}[i], Data: l})
	}
	r, err := graph.BuildRun(in, graph.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// joins returns "tool=status" of every model and MCP tool call, sorted by IRI.
func joins(g *graph.Graph) (model, mcp []string) {
	for _, n := range g.Nodes {
		st := n.Value(graph.WJoin)
		if st == "" {
			continue
		}
		s := n.Value(graph.OtelToolName) + "=" + st
		if n.HasType(graph.WModelToolCall) {
			model = append(model, s)
		} else {
			mcp = append(mcp, s)
		}
	}
	return
}

func TestJoinInjectionRun(t *testing.T) {
	model, mcp := synthlog.InjectionRun(frozen)
	r := buildRun(t, model, mcp)
	g := r.Graph
	mj, cj := joins(g)
	if strings.Join(mj, ",") != "read_text_file=linked,write_file=linked" || strings.Join(cj, ",") != "read_text_file=requested,write_file=requested" {
		t.Fatalf("joins: model %v, mcp %v", mj, cj)
	}
	// the write was informed by the second turn, whose input carries the
	// read's result back
	fs := r.Logs[1].Base
	mb := r.Logs[0].Base
	write := g.Node(graph.CallIRI(fs, "e3"))
	if got := write.Refs(graph.ProvWasInformedBy); len(got) != 1 || got[0] != graph.TurnIRI(mb, "e4") {
		t.Fatalf("write informed by %v", got)
	}
	in := g.Node(graph.MsgIRI(mb, "e3"))
	if got := in.Refs(graph.ProvWasDerivedFrom); len(got) != 1 || got[0] != graph.ResultIRI(fs, "e2") {
		t.Fatalf("second input derived from %v", got)
	}
	if !strings.Contains(r.Logs[0].Base, ";") || r.Logs[0].Label != "model" || r.Logs[1].Label != "fs" {
		t.Fatalf("logs %+v", r.Logs)
	}
}

func TestJoinDeterministic(t *testing.T) {
	model, mcp := synthlog.InjectionRun(frozen)
	var first []byte
	for i := 0; i < 10; i++ {
		var b bytes.Buffer
		if _, err := buildRun(t, model, mcp).Graph.WriteNQuads(&b); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = b.Bytes()
		} else if !bytes.Equal(first, b.Bytes()) {
			t.Fatalf("run %d differs", i)
		}
	}
}

func TestJoinRefusesSameLogAndCollidingSessions(t *testing.T) {
	model, mcp := synthlog.InjectionRun(frozen)
	_, err := graph.BuildRun([]graph.LogInput{{Name: "a/events.jsonl", Data: mcp}, {Name: "b/events.jsonl", Data: mcp}}, graph.Options{})
	if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "same log") {
		t.Fatalf("same log twice: %v", err)
	}
	// two captures of one server under a frozen time: same session id,
	// other content
	s2 := synthlog.NewMCPLog(frozen, "secure-filesystem-server", synthlog.FilesystemTools)
	s2.ToolCall("read_text_file", `{"path":"/etc/hosts"}`, "localhost")
	_, err = graph.BuildRun([]graph.LogInput{{Name: "m/events.jsonl", Data: model}, {Name: "a/events.jsonl", Data: mcp}, {Name: "b/events.jsonl", Data: s2.Bytes()}}, graph.Options{})
	if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "same session id") {
		t.Fatalf("colliding sessions: %v", err)
	}
}

func TestJoinAmbiguousAndUnrequested(t *testing.T) {
	m := synthlog.NewModelLog(frozen, "dup")
	s := synthlog.NewMCPLog(frozen, "fs", synthlog.FilesystemTools)
	m.User("read it twice")
	// the model names the same call twice with equal arguments; the agent
	// executed it once, and also made a call nobody asked for
	m.Turn("", synthlog.Call{ID: "a", Name: "read_text_file", Args: `{"path":"/x"}`}, synthlog.Call{ID: "b", Name: "read_text_file", Args: `{ "path" : "/x" }`})
	s.ToolCall("read_text_file", `{"path":"/x"}`, "x text")
	s.ToolCall("write_file", `{"path":"/y","content":"1"}`, "ok")
	// a model call never executed
	m.Turn("", synthlog.Call{ID: "c", Name: "write_file", Args: `{"path":"/z","content":"2"}`})
	r := buildRun(t, m.Bytes(), s.Bytes())
	mj, cj := joins(r.Graph)
	if strings.Join(mj, ",") != "read_text_file=ambiguous,read_text_file=ambiguous,write_file=not-executed" {
		t.Fatalf("model joins %v", mj)
	}
	if strings.Join(cj, ",") != "read_text_file=ambiguous,write_file=unrequested" {
		t.Fatalf("mcp joins %v", cj)
	}
	amb := r.Graph.Node(graph.CallIRI(r.Logs[1].Base, "e1"))
	if len(amb.Refs(graph.WJoinCandidate)) != 2 {
		t.Fatalf("candidates %v", amb.Refs(graph.WJoinCandidate))
	}
}

func TestJoinTwoRunsDoNotLink(t *testing.T) {
	model, _ := synthlog.InjectionRun(frozen)
	s := synthlog.NewMCPLog(frozen, "other-server", synthlog.FilesystemTools)
	s.ToolCall("read_text_file", `{"path":"/work/inbox/other.txt"}`, "other")
	r := buildRun(t, model, s.Bytes())
	mj, cj := joins(r.Graph)
	if strings.Join(mj, ",") != "read_text_file=not-executed,write_file=not-executed" || strings.Join(cj, ",") != "read_text_file=unrequested" {
		t.Fatalf("two runs: model %v mcp %v", mj, cj)
	}
}

func TestJoinSequentialSameCall(t *testing.T) {
	// the same call asked for twice, in two turns, executed twice: order
	// and content force each link
	m := synthlog.NewModelLog(frozen, "seq")
	s := synthlog.NewMCPLog(frozen, "fs", synthlog.FilesystemTools)
	m.User("poll")
	m.Turn("", synthlog.Call{ID: "a", Name: "read_text_file", Args: `{"path":"/x"}`})
	s.ToolCall("read_text_file", `{"path":"/x"}`, "first")
	m.ToolResult("a", "first")
	m.Turn("", synthlog.Call{ID: "b", Name: "read_text_file", Args: `{"path":"/x"}`})
	s.ToolCall("read_text_file", `{"path":"/x"}`, "second")
	m.ToolResult("b", "second")
	m.Turn("done")
	r := buildRun(t, m.Bytes(), s.Bytes())
	mj, cj := joins(r.Graph)
	if strings.Join(mj, ",") != "read_text_file=linked,read_text_file=linked" || strings.Join(cj, ",") != "read_text_file=requested,read_text_file=requested" {
		t.Fatalf("model %v mcp %v", mj, cj)
	}
}

func TestBuildRunOneLogIsBuild(t *testing.T) {
	_, mcp := synthlog.InjectionRun(frozen)
	r := buildRun(t, mcp)
	g, err := graph.Build(graph.NewEventSource(bytes.NewReader(mcp), "x"), graph.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := r.Graph.WriteNQuads(&bytes.Buffer{})
	b, _ := g.WriteNQuads(&bytes.Buffer{})
	if a != b {
		t.Fatal("one log: BuildRun differs from Build")
	}
}

func TestJoinTimeOnlyExcludes(t *testing.T) {
	// real times: the call ran after the turn started and before the
	// streamed output's end was recorded: linked
	m := synthlog.NewModelLog("2026-09-01T10:00:00+00:00", "stream")
	m.OutTS = "2026-09-01T10:00:02+00:00"
	s := synthlog.NewMCPLog("2026-09-01T10:00:01+00:00", "fs", synthlog.FilesystemTools)
	m.User("go")
	m.Turn("", synthlog.Call{ID: "a", Name: "read_text_file", Args: `{"path":"/x"}`})
	s.ToolCall("read_text_file", `{"path":"/x"}`, "x")
	r := buildRun(t, m.Bytes(), s.Bytes())
	if mj, _ := joins(r.Graph); strings.Join(mj, ",") != "read_text_file=linked" {
		t.Fatalf("streamed: %v", mj)
	}
	// a call recorded before the turn started cannot be its execution
	m = synthlog.NewModelLog("2026-09-01T10:00:05+00:00", "late")
	s = synthlog.NewMCPLog("2026-09-01T10:00:01+00:00", "fs", synthlog.FilesystemTools)
	m.User("go")
	m.Turn("", synthlog.Call{ID: "a", Name: "read_text_file", Args: `{"path":"/x"}`})
	s.ToolCall("read_text_file", `{"path":"/x"}`, "x")
	r = buildRun(t, m.Bytes(), s.Bytes())
	mj, cj := joins(r.Graph)
	if strings.Join(mj, ",") != "read_text_file=not-executed" || strings.Join(cj, ",") != "read_text_file=unrequested" {
		t.Fatalf("earlier call: %v %v", mj, cj)
	}
}
