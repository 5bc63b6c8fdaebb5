package verify

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
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
	c.failedAnswers(e, line)
	switch e.Kind {
	case eventlog.KindAmbiguous:
		c.add(ambiguousFinding(e, line))
	case eventlog.KindToolResponse, eventlog.KindMCPResponse:
		if len(e.RPCID) > 0 && len(c.answered) < maxAnswersKept {
			if c.answered == nil {
				c.answered = map[string]string{}
			}
			k := answerDir(e) + " " + string(e.RPCID)
			if _, ok := c.answered[k]; !ok {
				c.answered[k] = e.ID
			}
		}
	case eventlog.KindNotification:
		if e.Method == eventlog.MethodUnmatchedResponse {
			c.add(c.unpaired(e, line))
		}
	case eventlog.KindModelOutput:
		if s, probs, ok := modelStatus(e.Payload); ok && (s == statusPartial || s == statusAmbiguous) {
			code := "model-output-partial"
			if s == statusAmbiguous {
				code = "model-output-ambiguous"
			}
			c.add(Finding{
				Check: checkWire, Code: code, Severity: SevError, Class: classIncomplete,
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
				Check: checkWire, Code: code, Severity: SevError, Class: classIncomplete,
				EventID: e.ID, Line: line,
				Message: fmt.Sprintf("the request to the model was %s: what the model was given cannot be told from it%s", statusWords[s], problemList(probs)),
			})
		}
	}
}

// numericID is the number a JavaScript client's Number(id) makes of an id
// token that is not its canonical integer text: a decimal string ("1"), a
// number written otherwise (1.0, 1e0). ok is false for canonical integers
// (exact pairing already treats them as the client does) and for what
// Number would not make an integer of.
func numericID(tok json.RawMessage) (string, bool) {
	var v any
	dec := json.NewDecoder(strings.NewReader(string(tok)))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return "", false
	}
	var lit string
	switch x := v.(type) {
	case json.Number:
		lit = x.String()
	case string:
		lit = strings.TrimSpace(x)
	default:
		return "", false
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return "", false
	}
	n := strconv.FormatInt(int64(f), 10)
	if n == string(tok) {
		return "", false
	}
	return n, true
}

// answerDir is the direction an answer travelled: as written, or s2c for
// the events that carry none (a tool_response always comes from the
// server).
func answerDir(e *eventlog.Event) string {
	if e.Direction == "" {
		return "s2c"
	}
	return e.Direction
}

// maxAnswersKept bounds the answers remembered to name the one an
// unpaired answer competes with.
const maxAnswersKept = 1 << 16

// unpaired is the finding of an answer no open request explains: the log
// cannot say which answer the client used, so the session is never
// verified (incomplete, the class of every reading in doubt, on stdio and
// HTTP alike). It names the answer it competes with when the same id was
// answered before.
func (c *checker) unpaired(e *eventlog.Event, line int64) Finding {
	var p struct {
		ID json.RawMessage `json:"id"`
	}
	json.Unmarshal(e.Payload, &p)
	who := "the server"
	if e.Direction == "c2s" {
		who = "the host"
	}
	id := "without an id"
	if len(p.ID) > 0 {
		id = "to id " + string(p.ID)
	}
	msg := fmt.Sprintf("%s sent an answer %s that pairs with no open request", who, id)
	if n, ok := numericID(p.ID); ok {
		msg += fmt.Sprintf(" by its exact token; a client that compares ids as numbers (the TypeScript SDK: Number(id)) takes it for the answer to request %s", n)
	}
	if first, ok := c.answered[answerDir(e)+" "+string(p.ID)]; ok && len(p.ID) > 0 {
		msg += fmt.Sprintf("; it competes with %s, which answered that id first", first)
	} else {
		msg += " (an id never asked, or asked by an ambiguous line)"
	}
	return Finding{
		Check: checkWire, Code: "unpaired-answer", Severity: SevError, Class: classIncomplete, EventID: e.ID, RPCID: p.ID, Line: line,
		Message: msg + ": which answer the client used cannot be told from the log",
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
	f := Finding{Check: checkWire, Code: "ambiguous-wire-line", Severity: SevError, Class: classIncomplete, EventID: e.ID, Line: line}
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
