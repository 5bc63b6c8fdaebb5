package serve

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/agent-trace-witness/witness/internal/canon"
)

// maxDiffLines bounds the line diff; longer inputs are shown side by side.
const maxDiffLines = 400

// requestDiff returns a line diff, "-" recorded and "+" incoming, of the
// indented canonical JSON of two requests (method and params). The output
// is deterministic.
func requestDiff(recorded, incoming key) string {
	return LineDiff(indentKey(recorded), indentKey(incoming))
}

// answerDiff is requestDiff for two answers to a server request: the
// indented canonical JSON of {"result": ...} or {"error": ...}.
func answerDiff(recorded, incoming answer) string {
	return LineDiff(indentAnswer(recorded), indentAnswer(incoming))
}

// LineDiff returns a line diff of two texts, "-" for lines only in
// recorded, "+" for lines only in incoming, "  " for common lines
// (deterministic; beyond 400 lines, both texts in full). witness serve
// explains its misses with it, for stdio and HTTP cassettes alike.
func LineDiff(recorded, incoming string) string {
	a := strings.Split(recorded, "\n")
	b := strings.Split(incoming, "\n")
	if len(a) > maxDiffLines || len(b) > maxDiffLines {
		return "- " + strings.Join(a, "\n- ") + "\n+ " + strings.Join(b, "\n+ ")
	}
	// longest common subsequence of lines
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			out.WriteString("  " + a[i] + "\n")
			i, j = i+1, j+1
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			out.WriteString("- " + a[i] + "\n")
			i++
		default:
			out.WriteString("+ " + b[j] + "\n")
			j++
		}
	}
	return strings.TrimRight(out.String(), "\n")
}

func indentAnswer(a answer) string {
	raw, err := json.Marshal(map[string]json.RawMessage{a.Member: json.RawMessage(a.Value)})
	if err != nil {
		return a.String()
	}
	return indentJSON(raw, a.String())
}

func indentKey(k key) string {
	params := json.RawMessage("null")
	if k.Params != "" {
		params = json.RawMessage(k.Params)
	}
	raw, err := json.Marshal(struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}{k.Method, params})
	if err != nil {
		return k.String()
	}
	return indentJSON(raw, k.String())
}

// indentJSON renders raw as indented canonical JSON, or fallback.
func indentJSON(raw []byte, fallback string) string {
	c, err := canon.Transform(raw)
	if err != nil {
		return fallback
	}
	ind, err := canon.Indent(c)
	if err != nil {
		return string(c)
	}
	return string(bytes.TrimRight(ind, "\n"))
}
