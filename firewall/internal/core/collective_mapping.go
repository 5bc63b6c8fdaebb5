package core

import (
	"fmt"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/jsontree"
)

// collectiveMappingKeys are the mapping properties of a collective step,
// accepted on send and deliver rules alike.
var collectiveMappingKeys = []string{"operationId", "deadline", "failure", "answers"}

// CollectiveRefs are the references of a send or deliver rule to a
// collective step's fields: the operation id, its deadline, an operation
// failure's reason, and a result's answers (an array of objects with
// member, outcome, text and postId).
type CollectiveRefs struct {
	OperationID FieldRef
	Deadline    FieldRef
	Failure     FieldRef
	Answers     FieldRef
}

// collectiveRefs decodes the collective properties of the rule object it at
// JSON path p.
func (d *policyDecoder) collectiveRefs(it *jsontree.Value, p string) CollectiveRefs {
	var c CollectiveRefs
	dsts := []*FieldRef{&c.OperationID, &c.Deadline, &c.Failure, &c.Answers}
	for i, k := range collectiveMappingKeys { // in order: the first error is always the same
		if v, ok := it.Lookup(k); ok {
			*dsts[i] = d.ref(v, p+"."+k)
		}
	}
	if d.err == nil && c.Answers.set && c.Answers.Path == nil {
		d.fail(it.Get("answers"), p+".answers", "must be a JSON path starting with $")
	}
	return c
}

// resolveCollective fills msg's collective fields from v.
func resolveCollective(c CollectiveRefs, v any, msg *eventlog.Message) error {
	var err error
	if msg.OperationID, err = optionalString(c.OperationID, v, "operationId"); err != nil {
		return err
	}
	if msg.Deadline, err = optionalString(c.Deadline, v, "deadline"); err != nil {
		return err
	}
	if msg.Failure, err = optionalString(c.Failure, v, "failure"); err != nil {
		return err
	}
	if !c.Answers.set {
		return nil
	}
	x, ok := c.Answers.Path.Lookup(v)
	if !ok {
		return nil // not a result
	}
	arr, ok := x.([]any)
	if !ok {
		return fmt.Errorf("answers: path %s is not an array", c.Answers.Raw)
	}
	for i, e := range arr {
		o, ok := e.(map[string]any)
		if !ok {
			return fmt.Errorf("answers: path %s[%d] is not an object", c.Answers.Raw, i)
		}
		var a eventlog.Answer
		dsts := []*string{&a.Member, &a.Outcome, &a.Text, &a.PostID}
		for j, k := range []string{"member", "outcome", "text", "postId"} {
			if s, present := o[k]; present {
				str, ok := s.(string)
				if !ok {
					return fmt.Errorf("answers: path %s[%d].%s is not a string", c.Answers.Raw, i, k)
				}
				*dsts[j] = str
			}
		}
		msg.Answers = append(msg.Answers, a)
	}
	return nil
}

// pendingIntents returns the tool calls whose send is still waiting for its
// result, in call order: unresolved outgoing intents.
func (d *deriver) pendingIntents() []string {
	var out []string
	for _, id := range d.order {
		if _, ok := d.pending[id]; ok {
			out = append(out, id)
		}
	}
	return out
}

// optionalString resolves a collective field: a path that names nothing
// leaves it empty (one delivery tool returns direct messages and
// collective steps alike); a value of the wrong type is an error.
func optionalString(r FieldRef, v any, field string) (string, error) {
	if r.Path != nil {
		if _, ok := r.Path.Lookup(v); !ok {
			return "", nil
		}
	}
	return resolveString(r, v, field)
}
