package replay

import (
	"bytes"
	"testing"

	"github.com/agent-trace-witness/witness/graph"
)

func TestSmallSeedGraph(t *testing.T) {
	doc := `{"@context":` + graph.ContextJSON + `,"@graph":[{"@id":"urn:x:d","@type":["prov:Activity","witness:ToolCall"],"otel:gen_ai.tool.name":"rm","prov:used":[{"@id":"urn:x:t"}]},{"@id":"urn:x:e","@type":["prov:Entity","witness:ExternalEffect"],"prov:wasGeneratedBy":{"@id":"urn:x:d"},"witness:effectOp":"delete"},{"@id":"urn:x:t","@type":["prov:Entity","witness:ToolDefinition"],"witness:annotations":"{\"destructiveHint\":true}"}]}`
	g, err := graph.ReadJSONLD(bytes.NewReader([]byte(doc)), "seed")
	if err != nil {
		t.Fatal(err)
	}
	e, _ := NewEngine(g)
	rk := e.Rank(0)
	if len(rk.Ranking) != 1 || rk.Ranking[0].NotReplayable != 2 || rk.Ranking[0].CompensationSize != 2 {
		t.Fatalf("%+v", rk.Ranking)
	}
}

func TestReadOnlyHintWins(t *testing.T) {
	doc := `{"@context":` + graph.ContextJSON + `,"@graph":[{"@id":"urn:x:d","@type":["prov:Activity","witness:ToolCall"],"otel:gen_ai.tool.name":"greet","prov:used":[{"@id":"urn:x:t"}]},{"@id":"urn:x:t","@type":["prov:Entity","witness:ToolDefinition"],"witness:annotations":"{\"idempotentHint\":false,\"readOnlyHint\":true}"}]}`
	g, err := graph.ReadJSONLD(bytes.NewReader([]byte(doc)), "seed")
	if err != nil {
		t.Fatal(err)
	}
	e, _ := NewEngine(g)
	r, err := e.Counterfactual(Options{Remove: []string{"urn:x:d"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.NotReplayable) != 0 {
		t.Fatalf("a read-only tool was flagged: %+v", r.NotReplayable)
	}
}
