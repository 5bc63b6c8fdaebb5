package core

import (
	"fmt"
	"sort"
)

// History visibilities (docs/formats/firewall.md, "The daemon's history").
const (
	// VisibleRuntime: the runtime was shown the record: an inbox-admitted
	// message or request, an answer an admitted result showed, local
	// evidence, or an outgoing post with proven runtime origin.
	VisibleRuntime = "runtime-visible"
	// VisibleAssessor: certified history the runtime was never shown
	// (assessor evidence only).
	VisibleAssessor = "assessor"
	// VisibleWithheld: a peer statement a check withheld from the runtime.
	VisibleWithheld = "withheld"
)

// SocialHarness is the attribution of local evidence entries (admitted
// results and operation failures): the endpoint's own text, not a peer's.
const SocialHarness = "social-harness"

// historyEntry is one record of a conversation's window and how the
// runtime saw it.
type historyEntry struct {
	c   Candidate
	vis string
}

// daemonHistory keeps, per conversation, the recent records a check's
// window is built from, as the daemon builds it: certified records in
// certification (log) order, merged with the local evidence of admitted
// results and failures at their position, each marked runtime-visible,
// assessor or withheld. Refused sends never bound and are not records.
type daemonHistory struct {
	max     int
	recs    map[string][]*historyEntry
	omitted map[string]bool
	byPost  map[string]*historyEntry // author \x00 postId
	byEvent map[string]*historyEntry
}

func newDaemonHistory(max int) *daemonHistory {
	return &daemonHistory{max: max, recs: map[string][]*historyEntry{}, omitted: map[string]bool{},
		byPost: map[string]*historyEntry{}, byEvent: map[string]*historyEntry{}}
}

func postKey(author, postID string) string { return author + "\x00" + postID }

// window returns the records of conversation conv a check sees (a copy),
// the marks of those that are not runtime-visible, and whether older
// records were omitted. With cut set, the window ends before that entry
// (an answer checked against the window before its certified record).
func (h *daemonHistory) window(conv string, cut *historyEntry) ([]Candidate, map[string]string, bool) {
	var out []Candidate
	var marks map[string]string
	for _, e := range h.recs[conv] {
		if e == cut {
			break
		}
		out = append(out, e.c)
		if e.vis != VisibleRuntime {
			if marks == nil {
				marks = map[string]string{}
			}
			marks[e.c.Event] = e.vis
		}
	}
	return out, marks, h.omitted[conv]
}

// add appends c to its conversation's window with visibility vis, cutting
// the oldest record beyond the window size.
func (h *daemonHistory) add(c Candidate, vis string) *historyEntry {
	_, _ = c.canonical() // cache the bytes every later check hashes
	e := &historyEntry{c: c, vis: vis}
	conv := c.Message.Conversation
	r := append(h.recs[conv], e)
	if len(r) > h.max {
		r = append([]*historyEntry(nil), r[len(r)-h.max:]...)
		h.omitted[conv] = true
	}
	h.recs[conv] = r
	if p := c.Message.PostID; p != "" {
		author := c.Message.AuthorAgentID
		if author == "" {
			author = c.Message.Sender
		}
		h.byPost[postKey(author, p)] = e
	}
	h.byEvent[c.Event] = e
	return e
}

// post returns the entry of a certified post, or nil when the window has no
// such record.
func (h *daemonHistory) post(author, postID string) *historyEntry {
	if postID == "" {
		return nil
	}
	return h.byPost[postKey(author, postID)]
}

// visibilityOf is the visibility a checked record leaves: a withheld
// incoming message is withheld evidence; an admitted incoming one reached
// the inbox; an admitted outgoing post is runtime-visible only with proven
// runtime origin (it came from an agent's tool call), otherwise assessor
// evidence.
func visibilityOf(c Candidate, disposition string) string {
	if c.Message.Direction == Incoming {
		if disposition == DispositionAdmitted {
			return VisibleRuntime
		}
		return VisibleWithheld
	}
	if c.cause != "" {
		return VisibleRuntime
	}
	return VisibleAssessor
}

// intentGaps are the evidence gaps of sends whose intent was unresolved
// when c was read: a concurrent send may have committed without certified
// history yet.
func intentGaps(c Candidate) []string {
	var out []string
	for _, id := range c.pending {
		out = append(out, fmt.Sprintf("unresolved outgoing intent: %s", id))
	}
	return out
}

// sortedKeys returns the keys of m in order.
func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
