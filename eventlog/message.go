package eventlog

import (
	"errors"
	"fmt"
	"time"
)

// Message directions and operations (docs/formats/firewall.md).
var (
	messageDirections = map[string]bool{"incoming": true, "outgoing": true}
	messageOperations = map[string]bool{"direct": true, "multicast": true, "gather": true, "all_gather": true, "answer": true,
		"request": true, "result": true, "operation_failed": true, "close": true, "claim": true, "deadline": true}
	answerOutcomes = map[string]bool{"answered": true, "invalid": true, "missing": true}
	// collectiveSteps need an operationId.
	collectiveSteps = map[string]bool{"request": true, "result": true, "operation_failed": true, "close": true, "claim": true, "deadline": true}
)

// Validate checks an application message's fields and returns the path of
// the first bad field ("message.direction") with the problem.
func (m *Message) Validate() (field string, err error) {
	if m == nil {
		return "message", errors.New("missing")
	}
	if !messageDirections[m.Direction] {
		return "message.direction", fmt.Errorf("%q is not incoming or outgoing", m.Direction)
	}
	if m.Conversation == "" {
		return "message.conversation", errors.New("missing")
	}
	if m.Sender == "" {
		return "message.sender", errors.New("missing")
	}
	if !messageOperations[m.Operation] {
		return "message.operation", fmt.Errorf("%q is not direct, multicast, gather, all_gather, answer, request, result, operation_failed, close, claim or deadline", m.Operation)
	}
	for i, r := range m.Recipients {
		if r == "" {
			return fmt.Sprintf("message.recipients[%d]", i), errors.New("empty agent id")
		}
	}
	if m.AuthorAgentID != "" && m.PostID == "" {
		return "message.postId", errors.New("missing while authorAgentId is set")
	}
	if collectiveSteps[m.Operation] && m.OperationID == "" {
		return "message.operationId", fmt.Errorf("missing: a %s names its collective operation", m.Operation)
	}
	if m.Deadline != "" {
		if _, err := time.Parse(time.RFC3339Nano, m.Deadline); err != nil {
			return "message.deadline", fmt.Errorf("%q is not an RFC 3339 time", m.Deadline)
		}
	}
	if len(m.Answers) > 0 && m.Operation != "result" {
		return "message.answers", fmt.Errorf("only a result has answers, not a %s", m.Operation)
	}
	for i, a := range m.Answers {
		if a.Member == "" {
			return fmt.Sprintf("message.answers[%d].member", i), errors.New("missing")
		}
		if !answerOutcomes[a.Outcome] {
			return fmt.Sprintf("message.answers[%d].outcome", i), fmt.Errorf("%q is not answered, invalid or missing", a.Outcome)
		}
	}
	if m.Operation == "operation_failed" && m.Failure == "" {
		return "message.failure", errors.New("missing: an operation failure names its reason")
	}
	return "", nil
}
