package seal

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/internal/exitcode"
)

const pin = "7f44ccc849658890126f40e521000825b08a7f09a6f290a43d02db4e8eec6e2b"

func TestDraftRoundTrip(t *testing.T) {
	d, notes := NewDraft("be careful\n", []DraftTool{
		{Name: "read_file", DefinitionSHA256: pin, Annotations: json.RawMessage(`{ "readOnlyHint" : true, "destructiveHint": false }`)},
		{Name: ""},
		{Name: "read_file", DefinitionSHA256: strings.Repeat("0", 64)},
		{Name: "delete"},
	})
	if len(d.Tools) != 2 || len(notes) != 2 || !strings.Contains(notes[1], `"read_file" is listed twice`) {
		t.Fatalf("tools %+v notes %q", d.Tools, notes)
	}
	notes = d.AddSurface([]string{"file:///data/a.txt", "file:///data/a.txt", "not a uri"}, []string{"file:///{path}"}, []string{"p1"}, true)
	if len(notes) != 2 || !strings.Contains(notes[0], `"not a uri" is not a valid pattern`) || !strings.Contains(notes[1], "write a pattern for it by hand") {
		t.Fatalf("notes %q", notes)
	}
	b1, err := d.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := d.Marshal()
	if string(b1) != string(b2) {
		t.Fatal("not deterministic")
	}
	want := `{
  "system_prompt": "be careful\n",
  "tools": [
    {
      "name": "read_file",
      "scopes": [],
      "definition_sha256": "` + pin + `",
      "annotations": {
        "destructiveHint": false,
        "readOnlyHint": true
      }
    },
    {
      "name": "delete",
      "scopes": []
    }
  ],
  "resources": [
    "file:///data/a.txt"
  ],
  "prompts": [
    "p1"
  ]
}
`
	if string(b1) != want {
		t.Fatalf("got\n%s\nwant\n%s", b1, want)
	}
	sp, err := ParseSpec(b1, "draft", nil)
	if err != nil {
		t.Fatal(err)
	}
	if sp.SystemPrompt != "be careful\n" || sp.Tools[0].DefinitionSHA256 != pin || len(sp.Resources) != 1 || len(sp.Prompts) != 1 {
		t.Fatalf("spec %+v", sp)
	}
	// the annotations are not signed: the body is the same without them
	b, err := NewBody(sp, BodyOptions{Getenv: func(k string) string {
		if k == "ATW_WITNESS_TS" {
			return "2026-08-30T14:33:00+00:00"
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := json.Marshal(b.Tools); strings.Contains(string(c), "readOnlyHint") {
		t.Fatalf("annotations in the body: %s", c)
	}
}

func TestDraftWithoutSurfaceDescribesIt(t *testing.T) {
	d, _ := NewDraft("p", []DraftTool{{Name: "x"}})
	notes := d.AddSurface([]string{"memo://a"}, nil, []string{"greet"}, false)
	if d.Resources != nil || d.Prompts != nil || len(notes) != 2 || !strings.Contains(notes[0], "memo://a") || !strings.Contains(notes[1], "greet") {
		t.Fatalf("draft %+v notes %q", d, notes)
	}
	b, err := d.Marshal()
	if err != nil || strings.Contains(string(b), "resources") {
		t.Fatalf("%s %v", b, err)
	}
	// a server with resources capability but none listed: fill writes []
	notes = d.AddSurface([]string{}, nil, nil, true)
	if len(notes) != 0 || d.Resources == nil || len(d.Resources) != 0 || d.Prompts != nil {
		t.Fatalf("draft %+v", d)
	}
	if b, _ := d.Marshal(); !strings.Contains(string(b), `"resources": []`) {
		t.Fatalf("%s", b)
	}
}

func TestDraftRefusesWhatSealRefuses(t *testing.T) {
	for name, d := range map[string]*Draft{
		"no prompt": {Tools: []DraftTool{{Name: "x"}}},
		"no tools":  {SystemPrompt: "p"},
		"bad pin":   {SystemPrompt: "p", Tools: []DraftTool{{Name: "x", DefinitionSHA256: "ABC"}}},
		"bad ann":   {SystemPrompt: "p", Tools: []DraftTool{{Name: "x", Annotations: json.RawMessage(`[1]`)}}},
	} {
		if _, err := d.Marshal(); exitcode.Of(err) != exitcode.Usage {
			t.Errorf("%s: err %v", name, err)
		}
	}
}

func TestSpecAnnotationsMustBeAnObject(t *testing.T) {
	_, err := ParseSpec([]byte(`{"system_prompt":"p","tools":[{"name":"x","annotations":"ro"}]}`), "a.json", nil)
	if err == nil || !strings.Contains(err.Error(), "annotations") {
		t.Fatalf("err %v", err)
	}
}
