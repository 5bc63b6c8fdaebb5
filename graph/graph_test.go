package graph

import (
	"bytes"
	"testing"
)

func TestBuildSample(t *testing.T) {
	g := buildBytes(t, sampleLog(t), Options{})
	var jl bytes.Buffer
	if err := g.WriteJSONLD(&jl); err != nil {
		t.Fatal(err)
	}
	var nq bytes.Buffer
	d, err := g.WriteNQuads(&nq)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d nodes, digest %s\n%s\n%s", g.Len(), d, jl.String(), nq.String())
	call := g.Node(CallIRI(SessionIRI("sess-1"), "e3"))
	if call == nil || !call.HasType(ProvActivity) {
		t.Fatalf("no call activity e3: %+v", call)
	}
	if got := call.Refs(ProvUsed); len(got) != 2 {
		t.Errorf("e3 used %v", got)
	}
}
