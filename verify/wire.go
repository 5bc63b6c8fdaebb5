package verify

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agent-trace-witness/witness/eventlog"
)

// The statuses of model events that leave what the client acted on
// unknown (docs/formats/model-events.md).
const (
	statusPartial   = "partial"
	statusAmbiguous = "ambiguous"
	statusInvalid   = "invalid"
)

// wire judges what the witness could read of one wire event, with a seal
// or without one (integrity only): an ambiguous line, a model answer read
// only in part or ambiguously, a model request whose body readers could
// disagree on or that was not read whole. Each leaves what the client (or
// the provider) acted on unknown, so the session is never verified: the
// finding's class is incomplete on every channel (docs/exit-codes.md,
// docs/design/wire-reading.md "Verdict").
func (c *checker) wire(e *eventlog.Event, line int64) {
	switch e.Kind {
	case eventlog.KindAmbiguous:
		c.add(ambiguousFinding(e, line))
	case eventlog.KindModelOutput:
		if s, probs, ok := modelStatus(e.Payload); ok && (s == statusPartial || s == statusAmbiguous) {
			code := "model-output-partial"
			if s == statusAmbiguous {
				code = "model-output-ambiguous"
			}
			c.add(Finding{
				Check: CheckWire, Code: code, Severity: SevError, Class: ClassIncomplete,
				EventID: e.ID, Line: line,
				Message: fmt.Sprintf("the model's answer was read %s: what the client acted on cannot be told from it%s", statusWords[s], problemList(probs)),
			})
		}
	case eventlog.KindModelInput:
		if e.Method != "" {
			return // a sampling request's messages: judged on the MCP side
		}
		if s, probs, ok := modelStatus(e.Payload); ok && (s == statusAmbiguous || s == statusInvalid) {
			code := "model-input-invalid"
			if s == statusAmbiguous {
				code = "model-input-ambiguous"
			}
			c.add(Finding{
				Check: CheckWire, Code: code, Severity: SevError, Class: ClassIncomplete,
				EventID: e.ID, Line: line,
				Message: fmt.Sprintf("the request to the model was %s: what the model was given cannot be told from it%s", statusWords[s], problemList(probs)),
			})
		}
	}
}

var statusWords = map[string]string{
	statusPartial:   "only in part",
	statusAmbiguous: "ambiguously (readers could disagree on its bytes)",
	statusInvalid:   "not read whole (not JSON, not the API's shape, or cut)",
}

// modelStatus reads the status and problems of a model event's payload;
// ok is false when the payload has no status (an older log, another
// shape).
func modelStatus(p json.RawMessage) (status string, problems []string, ok bool) {
	var v struct {
		Status   string   `json:"status"`
		Problems []string `json:"problems"`
	}
	if len(p) == 0 || json.Unmarshal(p, &v) != nil || v.Status == "" {
		return "", nil, false
	}
	return v.Status, v.Problems, true
}

func problemList(ps []string) string {
	if len(ps) == 0 {
		return ""
	}
	if len(ps) > 3 {
		ps = append(append([]string(nil), ps[:3]...), fmt.Sprintf("%d more", len(ps)-3))
	}
	return ": " + strings.Join(ps, "; ")
}

// ambiguousFinding is the finding of an ambiguous wire line.
func ambiguousFinding(e *eventlog.Event, line int64) Finding {
	f := Finding{Check: CheckWire, Code: "ambiguous-wire-line", Severity: SevError, Class: ClassIncomplete, EventID: e.ID, Line: line}
	a, err := eventlog.ParseAmbiguousLine(e.Payload)
	if err != nil {
		f.Message = fmt.Sprintf("a wire line has more than one reading; its record cannot be read: %v", err)
		return f
	}
	who := "the server sent"
	if a.Direction == "c2s" {
		who = "the host sent"
	}
	reasons := a.Reasons
	if len(reasons) > 3 {
		reasons = append(append([]string(nil), reasons[:3]...), fmt.Sprintf("%d more", len(a.Reasons)-3))
	}
	f.Message = fmt.Sprintf("%s a line (%d bytes, sha256 %s) with %d reading(s) a peer could act on: %s",
		who, a.Bytes, short(a.SHA256), len(a.Readings), strings.Join(reasons, "; "))
	return f
}
