package graph

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/testrepo"
)

// TestGraphDocMappingPerKind holds the mapping table of
// docs/formats/graph.md to the code, row by row: every predicate an event
// adds to the graph is named in the row of its kind (not merely somewhere
// in the document). An event's statements are those the graph of the log
// up to it has and the graph of the log before it has not.
func TestGraphDocMappingPerKind(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(testrepo.Root(t), "docs", "formats", "graph.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	rowRE := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| (.*)\\|$")
	for _, m := range rowRE.FindAllStringSubmatch(string(doc), -1) {
		if _, ok := rows[m[1]]; !ok {
			rows[m[1]] = m[2]
		}
	}
	// named once for every primary node or payload, above the table
	common := map[string]bool{"rdf:type": true, "witness:eventId": true, "witness:seq": true, "witness:source": true,
		"witness:redacted": true, "prov:value": true, "witness:payloadSha256": true,
		"witness:unresolvedLink": true} // and the unresolved-link rule below it
	checked := map[eventlog.Kind]bool{}
	for _, log := range [][]byte{surfaceLog(t), sampleLog(t)} {
		var evs []*eventlog.Event
		r := eventlog.NewReader(bytes.NewReader(log), "events.jsonl")
		for {
			e, err := r.Next()
			if err != nil {
				break
			}
			evs = append(evs, e)
		}
		before := map[string]bool{}
		for i, e := range evs {
			g, err := buildEvents(evs[:i+1], Options{})
			if err != nil {
				t.Fatalf("events up to %s: %v", e.ID, err)
			}
			now := map[string]bool{}
			var added []string
			for _, n := range g.Nodes {
				for _, p := range n.Predicates() {
					k := n.ID + " " + p
					now[k] = true
					if !before[k] && !common[compact(p)] {
						added = append(added, compact(p))
					}
				}
			}
			before = now
			row, ok := rows[string(e.Kind)]
			if !ok {
				t.Errorf("graph.md has no mapping row for %s", e.Kind)
				continue
			}
			checked[e.Kind] = true
			sort.Strings(added)
			for j, p := range added {
				if j > 0 && added[j-1] == p {
					continue
				}
				if !strings.Contains(row, "`"+p+"`") && !strings.Contains(row, "`"+p+" ") {
					t.Errorf("%s (%s) writes %s, which the %s row of graph.md does not name", e.ID, e.Kind, p, e.Kind)
				}
			}
		}
	}
	for _, k := range []eventlog.Kind{eventlog.KindSessionStart, eventlog.KindToolCall, eventlog.KindToolResponse, eventlog.KindModelInput,
		eventlog.KindModelOutput, eventlog.KindExternalEffect, eventlog.KindNotification, eventlog.KindMCPRequest, eventlog.KindMCPResponse,
		eventlog.KindSessionEnd} {
		if !checked[k] {
			t.Errorf("no %s event in the test logs: its row is not checked", k)
		}
	}
}
