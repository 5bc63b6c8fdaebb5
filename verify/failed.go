package verify

import (
	"encoding/json"
	"fmt"

	"github.com/agent-trace-witness/witness/eventlog"
)

// statusError is a model answer the provider failed: an HTTP error, an
// error event mid-stream, a failed response (docs/formats/model-events.md).
const statusError = "error"

// failedCall is a tool call of a failed model answer: the model_output
// that asked for it, its status and the tool's name.
type failedCall struct {
	event, status, tool string
}

// failedAnswers judges a failed model answer the client went on to act on
// (issue 31 item 4): a model_output of status error, partial or ambiguous
// whose tool call a later model_input answers with a tool result. The
// real SDKs reject such an answer as a whole (they throw on an error
// event, a cut stream, a body they read otherwise), though their stream
// events may have handed the host a call before the failure: a host that
// ran it acted on part of an unfinished answer, so the session is
// incomplete, never verified. The finding names both events.
func (c *checker) failedAnswers(e *eventlog.Event, line int64) {
	switch {
	case e.Kind == eventlog.KindModelOutput && e.Method == "":
		s, _, ok := modelStatus(e.Payload)
		if !ok || (s != statusError && s != statusPartial && s != statusAmbiguous) {
			return
		}
		var out struct {
			ToolCalls []struct {
				ID   string `json:"id"`
				Name string `json:"name"`
			} `json:"tool_calls"`
		}
		if json.Unmarshal(e.Payload, &out) != nil {
			return
		}
		for _, tc := range out.ToolCalls {
			if tc.ID == "" {
				continue
			}
			if _, known := c.failed[tc.ID]; !known && len(c.failed) >= maxAnswersKept {
				c.failedOverflow(e, line)
				continue
			}
			if c.failed == nil {
				c.failed = map[string]failedCall{}
			}
			c.failed[tc.ID] = failedCall{event: e.ID, status: s, tool: tc.Name}
		}
	case e.Kind == eventlog.KindModelInput && e.Method == "" && len(c.failed) > 0:
		for _, id := range toolResultIDs(e.Payload) {
			fc, ok := c.failed[id]
			if !ok {
				continue
			}
			delete(c.failed, id) // one finding per call
			c.add(Finding{
				Check: checkWire, Code: "failed-answer-acted-on", Severity: SevError, Class: classIncomplete,
				EventID: e.ID, Tool: fc.tool, Line: line,
				Message: fmt.Sprintf("the host sent back a result for call %q (%s) of the model answer %s, whose status is %s: the host acted on part of an answer that did not complete (%s), which the SDKs reject as a whole (their final message or completion throws, whatever parts they handed over before), so whether what it ran is what the model meant cannot be told from the evidence",
					id, fc.tool, fc.event, fc.status, failedWhy[fc.status]),
			})
		}
	}
}

// failedOverflow reports, once, that the failed answers' tool calls
// outgrew the bound remembered: a log that floods it (many failed answers
// holding calls nobody acts on) would otherwise hide a later one that is
// acted on, so the check says it can no longer follow them (incomplete)
// rather than pass in silence.
func (c *checker) failedOverflow(e *eventlog.Event, line int64) {
	if c.failedFull {
		return
	}
	c.failedFull = true
	c.add(Finding{
		Check: checkWire, Code: "failed-answers-overflow", Severity: SevError, Class: classIncomplete,
		EventID: e.ID, Line: line,
		Message: fmt.Sprintf("more than %d tool calls of failed model answers (status error, partial or ambiguous) are open at once; from the answer %s on, their calls are not followed, so whether the host acted on one cannot be told from the evidence", maxAnswersKept, e.ID),
	})
}

var failedWhy = map[string]string{
	statusError:     "the provider failed it: an HTTP error, an error event mid-stream or a failed response",
	statusPartial:   "it was read only in part: cut, or without its terminal event",
	statusAmbiguous: "readers could disagree on its bytes",
}

// toolResultIDs are the call ids of a model_input's tool_result parts,
// in order.
func toolResultIDs(p json.RawMessage) []string {
	var in struct {
		Messages []struct {
			Content []struct {
				Type   string `json:"type"`
				CallID string `json:"call_id"`
			} `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(p, &in) != nil {
		return nil
	}
	var ids []string
	for _, m := range in.Messages {
		for _, part := range m.Content {
			if part.Type == "tool_result" && part.CallID != "" {
				ids = append(ids, part.CallID)
			}
		}
	}
	return ids
}
