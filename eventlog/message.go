package eventlog

import (
	"errors"
	"fmt"
)

// Message directions and operations (docs/formats/firewall.md).
var (
	messageDirections = map[string]bool{"incoming": true, "outgoing": true}
	messageOperations = map[string]bool{"direct": true, "multicast": true, "gather": true, "all_gather": true, "answer": true}
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
		return "message.operation", fmt.Errorf("%q is not direct, multicast, gather, all_gather or answer", m.Operation)
	}
	for i, r := range m.Recipients {
		if r == "" {
			return fmt.Sprintf("message.recipients[%d]", i), errors.New("empty agent id")
		}
	}
	if m.AuthorAgentID != "" && m.PostID == "" {
		return "message.postId", errors.New("missing while authorAgentId is set")
	}
	return "", nil
}
