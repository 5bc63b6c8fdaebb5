package graph

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// dotStatement matches a node or edge statement with an attribute list.
var dotStatement = regexp.MustCompile(`^\s*("[^"]*"|\w+)(\s*->\s*("[^"]*"|\w+))?\s*\[(.*)\];$`)

// dotAttrs splits an attribute list into keys and values, honouring quotes.
func dotAttrs(t *testing.T, list string) map[string]string {
	t.Helper()
	out := map[string]string{}
	var key, cur strings.Builder
	inQ, inKey := false, true
	flush := func() {
		k := strings.TrimSpace(key.String())
		if k == "" {
			return
		}
		if _, dup := out[k]; dup {
			t.Errorf("attribute %s repeated in [%s]", k, list)
		}
		out[k] = strings.TrimSpace(cur.String())
		key.Reset()
		cur.Reset()
		inKey = true
	}
	for i := 0; i < len(list); i++ {
		c := list[i]
		switch {
		case inQ && c == '\\' && i+1 < len(list):
			cur.WriteByte(c)
			cur.WriteByte(list[i+1])
			i++
		case c == '"':
			inQ = !inQ
			cur.WriteByte(c)
		case !inQ && c == '=' && inKey:
			inKey = false
		case !inQ && c == ',':
			flush()
		case inKey:
			key.WriteByte(c)
		default:
			cur.WriteByte(c)
		}
	}
	flush()
	return out
}

// checkDOT parses every statement with attributes and fails on a key given
// twice; it returns the node statements' attributes by node id.
func checkDOT(t *testing.T, dot string) map[string]map[string]string {
	t.Helper()
	nodes := map[string]map[string]string{}
	for _, line := range strings.Split(dot, "\n") {
		m := dotStatement.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		a := dotAttrs(t, m[4])
		if m[2] == "" {
			nodes[m[1]] = a
		}
	}
	return nodes
}

// graphviz renders dot with Graphviz when installed; skipped otherwise,
// except under CI=true.
func graphviz(t *testing.T, dot []byte) {
	t.Helper()
	path, err := exec.LookPath("dot")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("Graphviz dot is missing under CI=true: run .ci/install-services (Debian package graphviz)")
		}
		t.Log("Graphviz dot not installed: the picture is not rendered (.ci/install-services installs it)")
		return
	}
	cmd := exec.Command(path, "-Tsvg")
	cmd.Stdin = bytes.NewReader(dot)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil || errb.Len() > 0 || !bytes.Contains(out.Bytes(), []byte("<svg")) {
		t.Fatalf("dot -Tsvg: %v\n%s", err, errb.String())
	}
}

// TestDOTTimeOrder: time runs left to right (rankdir=LR, one rank per
// event position, chained in order), causal edges do not constrain ranks,
// classes replace the fill without repeating an attribute, and Graphviz
// renders it.
func TestDOTTimeOrder(t *testing.T) {
	g := buildBytes(t, sampleLog(t), Options{})
	var b bytes.Buffer
	if err := g.WriteDOT(&b, DOTOptions{Classes: map[string]string{"e6": "violation"}}); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	if !strings.Contains(s, "rankdir=LR") {
		t.Error("no rankdir=LR")
	}
	nodes := checkDOT(t, s)
	violet := 0
	for _, a := range nodes {
		if a["fillcolor"] == `"#e74c3c"` {
			violet++
			if a["style"] != `"filled,bold"` {
				t.Errorf("classified node style %s", a["style"])
			}
		}
	}
	if violet == 0 {
		t.Error("the violation is not coloured")
	}
	// rank groups in increasing seq
	rank := regexp.MustCompile(`\{ rank=same; t(\d+);((?: n\d+;)*) \}`)
	seqOf := map[string]int64{}
	for i, n := range drawnNodes(g) {
		seqOf["n"+strconv.Itoa(i)] = NodeSeq(n)
	}
	last := int64(-2)
	groups := rank.FindAllStringSubmatch(s, -1)
	if len(groups) < 3 {
		t.Fatalf("%d rank groups", len(groups))
	}
	for _, m := range groups {
		var q int64 = -3
		for _, id := range strings.Fields(strings.ReplaceAll(m[2], ";", "")) {
			if q != -3 && seqOf[id] != q {
				t.Errorf("rank t%s mixes seq %d and %d", m[1], q, seqOf[id])
			}
			q = seqOf[id]
		}
		if q <= last {
			t.Errorf("rank t%s (seq %d) after seq %d", m[1], q, last)
		}
		last = q
	}
	if strings.Count(s, "[style=invis];") != len(groups)-1 {
		t.Errorf("time chain: %d invisible edges for %d ranks", strings.Count(s, "[style=invis];"), len(groups))
	}
	graphviz(t, b.Bytes())
}

func drawnNodes(g *Graph) []*Node {
	var out []*Node
	for _, n := range g.Nodes {
		if kindOf(n) != "" {
			out = append(out, n)
		}
	}
	return out
}

// TestDOTSummaryWindows: above MaxNodes the picture has one cluster per
// time window and stays the same size whatever the number of events.
func TestDOTSummaryWindows(t *testing.T) {
	var sizes []int
	for _, n := range []int{2000, 8000} {
		g := buildBytes(t, synthetic(t, n, 3), Options{})
		var b bytes.Buffer
		if err := g.WriteDOT(&b, DOTOptions{Classes: map[string]string{"e5": "violation"}}); err != nil {
			t.Fatal(err)
		}
		checkDOT(t, b.String())
		if c := strings.Count(b.String(), "subgraph cluster_w"); c != summaryWindows {
			t.Errorf("%d events: %d windows, want %d", n, c, summaryWindows)
		}
		sizes = append(sizes, strings.Count(b.String(), "\n"))
		if n == 2000 {
			graphviz(t, b.Bytes())
		}
	}
	if sizes[1] > sizes[0]+sizes[0]/4 {
		t.Errorf("summary grows with the events: %d lines for 2000, %d for 8000", sizes[0], sizes[1])
	}
}
