package core

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"unicode"

	"github.com/agent-trace-witness/witness/internal/canon"
)

// RulesEdition names the edition of the built-in rules and questions of this
// witness. It is part of every built-in middleware revision and of the
// installation, so that a change of the rules moves the revisions.
const RulesEdition = "witness-firewall-rules/1"

// QuestionEdition names the edition of the English questions.
const QuestionEdition = "witness-firewall-questions/1"

// Built-in rule ids.
const (
	RuleAcknowledgement        = "acknowledgement"
	RuleAllowedSender          = "allowed-sender"
	RuleCredentials            = "credentials"
	RulePlainLanguage          = "plain-language"
	RuleFacilitatorStarts      = "facilitator-starts-collectives"
	RuleOneOpenRequest         = "one-open-request"
	RuleNoAcknowledgementPosts = "no-acknowledgement-posts"
	RuleOneGather              = "one-gather"
	RuleAnnounceOnce           = "announce-once"
	RuleResultSettles          = "result-settles"
)

// BuiltinRuleIDs lists every rule id the built-in middleware declare; English
// rules of a policy may not use them.
func BuiltinRuleIDs() []string {
	return []string{RuleAcknowledgement, RuleAllowedSender, RuleCredentials, RulePlainLanguage,
		RuleFacilitatorStarts, RuleOneOpenRequest, RuleNoAcknowledgementPosts,
		RuleOneGather, RuleAnnounceOnce, RuleResultSettles}
}

// RuleDecl is a rule a middleware declares.
type RuleDecl struct {
	ID       string
	Kind     string
	English  bool   // assessed through the decision provider
	From     string // code | fixed | editable
	Text     string // English rules only
	Guidance string
	Feedback *Feedback
}

// middlewareDef is an installed middleware: its id, revision and rules.
type middlewareDef struct {
	ID        string
	Revision  string
	Use       string
	Direction string
	Spec      MiddlewareSpec
	Rules     []RuleDecl
}

var (
	declAcknowledgement = RuleDecl{ID: RuleAcknowledgement, Kind: KindNorm, From: "code",
		Guidance: "This message is an empty acknowledgement; it needs no response."}
	declAllowedSender = RuleDecl{ID: RuleAllowedSender, Kind: KindSafety, From: "code",
		Feedback: &Feedback{Text: "The sender is not on the owner's list of allowed senders.", NextAction: NextStop}}
	declCredentials = RuleDecl{ID: RuleCredentials, Kind: KindNorm, From: "code",
		Guidance: "Never send credentials or secret values.",
		Feedback: &Feedback{Text: "Remove the credential or secret value from the message and send it again; a status word such as \"set\" or \"rotated\" is fine.", NextAction: NextRevise}}
	declPlainLanguage = RuleDecl{ID: RulePlainLanguage, Kind: KindNorm, From: "code",
		Guidance: "Write to other agents in plain language.",
		Feedback: &Feedback{Text: "Write the message in plain language: no raw JSON, no tool names and no tool invocations.", NextAction: NextRevise}}
	declFacilitatorStarts = RuleDecl{ID: RuleFacilitatorStarts, Kind: KindNorm, From: "code",
		Guidance: "Only the facilitator starts collective operations.",
		Feedback: &Feedback{Text: "Only the facilitator starts a gather or all_gather; wait for the facilitator to start it.", NextAction: NextWait}}
	declOneOpenRequest = RuleDecl{ID: RuleOneOpenRequest, Kind: KindNorm, From: "code",
		Guidance: "Keep at most one collective request open in a conversation.",
		Feedback: &Feedback{Text: "A collective request is already open in this conversation; wait until it settles before asking again.", NextAction: NextWait}}
	declNoAckPosts = RuleDecl{ID: RuleNoAcknowledgementPosts, Kind: KindNorm, From: "code",
		Guidance: "Do not post empty acknowledgements to the group.",
		Feedback: &Feedback{Text: "Do not post an empty acknowledgement; send nothing unless you have something to add.", NextAction: NextStop}}
	// The English rules of the collective norm bundle. The Client's own
	// wording is not public; this is ours (docs/formats/firewall.md).
	declOneGather = RuleDecl{ID: RuleOneGather, Kind: KindNorm, English: true, From: "fixed",
		Text:     "A collective question is asked with one gather; members do not start another gather for the same question.",
		Guidance: "Answer the open gather instead of starting another one for the same question."}
	declAnnounceOnce = RuleDecl{ID: RuleAnnounceOnce, Kind: KindNorm, English: true, From: "fixed",
		Text:     "A result or decision is announced to the group once and not repeated.",
		Guidance: "Announce a result once; do not repeat an announcement the group already has."}
	declResultSettles = RuleDecl{ID: RuleResultSettles, Kind: KindNorm, English: true, From: "fixed",
		Text:     "A collective result settles its question; it is not reopened without new information.",
		Guidance: "Treat the collective result as settled unless there is new information."}
)

func middlewareID(use string) string { return "org.social-harness/" + use }

// builtinMiddleware returns the definition of the built-in middleware m
// selects in direction dir.
func builtinMiddleware(m MiddlewareSpec, dir string, p *Policy) middlewareDef {
	def := middlewareDef{ID: middlewareID(m.Use), Use: m.Use, Direction: dir, Spec: m}
	switch m.Use {
	case UseAcknowledgements:
		def.Rules = []RuleDecl{declAcknowledgement}
	case UseAllowedSenders:
		def.Rules = []RuleDecl{declAllowedSender}
	case UseCredentials:
		def.Rules = []RuleDecl{declCredentials}
	case UsePlainLanguage:
		def.Rules = []RuleDecl{declPlainLanguage}
	case UseCollectiveNorms:
		if dir == "outgoing" {
			def.Rules = []RuleDecl{declFacilitatorStarts, declOneOpenRequest, declNoAckPosts, declOneGather, declAnnounceOnce, declResultSettles}
		} else {
			def.Rules = []RuleDecl{declAcknowledgement, declOneGather, declAnnounceOnce, declResultSettles}
		}
	}
	var rev any
	if m.Use == UseCollectiveNorms {
		// one revision for both directions: the edition, the English rules
		// of both registrations and the provider's provenance; the
		// facilitator is provenance, not revision.
		var prov *ProviderSpec
		if p != nil {
			prov = p.DecisionProvider
		}
		rev = map[string]any{"edition": RulesEdition, "english": []RuleDecl{declOneGather, declAnnounceOnce, declResultSettles}, "decisionProvider": prov}
	} else {
		rev = map[string]any{"edition": RulesEdition, "middleware": def.ID, "parameters": m}
	}
	b, _ := canon.Marshal(rev)
	def.Revision = sha256Hex(b)
	return def
}

// englishMiddleware returns the English middleware over fixed plus editable
// rules, or false when the policy has no English rules.
func englishMiddleware(p *Policy) (middlewareDef, bool) {
	if p.English == nil || len(p.English.FixedRules)+len(p.English.InitialRules) == 0 {
		return middlewareDef{}, false
	}
	def := middlewareDef{ID: EnglishMiddlewareID, Use: "english"}
	for _, r := range p.English.FixedRules {
		def.Rules = append(def.Rules, RuleDecl{ID: r.ID, Kind: r.Kind, English: true, From: "fixed", Text: r.Text, Guidance: r.Guidance, Feedback: r.Feedback})
	}
	for _, r := range p.English.InitialRules {
		def.Rules = append(def.Rules, RuleDecl{ID: r.ID, Kind: r.Kind, English: true, From: "editable", Text: r.Text, Guidance: r.Guidance, Feedback: r.Feedback})
	}
	b, _ := canon.Marshal(map[string]any{"edition": QuestionEdition, "policy": EnglishPolicyID, "fixed": p.English.FixedRules, "editable": p.English.InitialRules, "decisionProvider": p.DecisionProvider})
	def.Revision = sha256Hex(b)
	return def, true
}

// ---- acknowledgements ----

var ackPhrases = []string{
	"thanks", "thank you", "thank you so much", "thanks so much", "thanks a lot", "many thanks", "thx", "ty", "tysm",
	"ok", "okay", "k", "got it", "noted", "ack", "acknowledged", "received", "cheers", "great", "perfect",
	"sounds good", "will do", "roger", "understood", "cool", "nice", "appreciated", "much appreciated",
	"all good", "no problem", "np",
}

// ackPhraseSet is ackPhrases as a set (read only).
var ackPhraseSet = func() map[string]bool {
	m := make(map[string]bool, len(ackPhrases))
	for _, p := range ackPhrases {
		m[p] = true
	}
	return m
}()

// IsEmptyAcknowledgement reports whether text is exactly an empty
// acknowledgement ("Thanks", "ok, got it!", "👍"): one or two acknowledgement
// phrases and nothing else but punctuation, whitespace and emoji.
func IsEmptyAcknowledgement(text string) bool {
	var b strings.Builder
	sawEmoji := false
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		case r == '\'':
			// drop apostrophes
		case unicode.IsSpace(r) || unicode.IsPunct(r):
			b.WriteRune(' ')
		case unicode.Is(unicode.So, r) || unicode.Is(unicode.Sk, r) || r == '\u200d' || r == '\ufe0f':
			sawEmoji = true
			b.WriteRune(' ')
		default:
			return false
		}
	}
	words := strings.Fields(b.String())
	if len(words) == 0 {
		return sawEmoji // an emoji alone ("👍") acknowledges; empty text is not a message
	}
	norm := strings.Join(words, " ")
	set := ackPhraseSet
	if set[norm] {
		return true
	}
	// two phrases: "ok thanks", "got it thank you"
	for i := 1; i < len(words); i++ {
		if set[strings.Join(words[:i], " ")] && set[strings.Join(words[i:], " ")] {
			return true
		}
	}
	return false
}

// asksSomething reports whether text asks a question.
func asksSomething(text string) bool { return strings.Contains(text, "?") }

// ---- credentials ----

var credentialPatterns = []struct {
	name string
	re   *regexp.Regexp
}{
	{"AWS access key id", regexp.MustCompile(`\b(AKIA|ASIA)[0-9A-Z]{16}\b`)},
	{"GitHub token", regexp.MustCompile(`\b(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}\b|\bgithub_pat_[A-Za-z0-9_]{40,}\b`)},
	{"Slack token", regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9-]{10,}\b`)},
	{"API secret key", regexp.MustCompile(`\b(sk|rk)[-_](live[-_]|test[-_]|proj[-_])?[A-Za-z0-9_-]{20,}\b`)},
	{"Google API key", regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}\b`)},
	{"JSON web token", regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b`)},
	{"private key block", regexp.MustCompile(`-----BEGIN ([A-Z]+ )?PRIVATE KEY-----`)},
	{"bearer token", regexp.MustCompile(`(?i)\bbearer\s+[A-Za-z0-9._~+/-]{20,}=*`)},
	{"password in a URL", regexp.MustCompile(`\b[a-z][a-z0-9+.-]*://[^\s/:@]+:[^\s/@]+@`)},
}

var labelledCredential = regexp.MustCompile(`(?i)\b(password|passwd|passphrase|passcode|pwd|pin|secret|client[ _-]?secret|token|access[ _-]?token|api[ _-]?key|access[ _-]?key|secret[ _-]?key|private[ _-]?key|credentials?)\b\s*(?:is|was|=|:|->)\s*["'\x60]?([^\s"'\x60,;]+)`)

var statusWords = map[string]bool{
	"set": true, "unset": true, "redacted": true, "hidden": true, "none": true, "null": true, "empty": true,
	"missing": true, "required": true, "expired": true, "revoked": true, "valid": true, "invalid": true,
	"rotated": true, "changed": true, "updated": true, "reset": true, "ok": true, "n/a": true, "na": true,
	"pending": true, "configured": true, "present": true, "absent": true, "provided": true, "removed": true,
	"true": true, "false": true, "enabled": true, "disabled": true, "active": true, "inactive": true,
	"correct": true, "incorrect": true, "wrong": true, "stored": true, "saved": true, "needed": true,
	"unknown": true, "available": true, "unavailable": true, "sent": true, "shared": true, "secret": true,
	"private": true, "confidential": true, "locked": true, "unlocked": true, "verified": true, "working": true,
	"broken": true, "fine": true, "good": true, "bad": true, "weak": true, "strong": true, "the": true, "a": true,
	"in": true, "not": true, "still": true, "now": true, "that": true, "safe": true, "here": true,
	"below": true, "attached": true, "ready": true, "done": true, "same": true, "fixed": true,
}

// credentialFinding returns a description of the credential in text, or "".
func credentialFinding(text string) string {
	for _, p := range credentialPatterns {
		if p.re.MatchString(text) {
			return "credential-shaped text (" + p.name + ")"
		}
	}
	for _, m := range labelledCredential.FindAllStringSubmatch(text, -1) {
		v := strings.ToLower(strings.TrimRight(m[2], ".!?)]}"))
		if v == "" || statusWords[v] || strings.Trim(v, "*x•#") == "" || strings.HasPrefix(v, "<") || strings.HasPrefix(v, "[") {
			continue
		}
		return "labelled credential value (" + strings.ToLower(m[1]) + ")"
	}
	return ""
}

// ---- plain-language ----

// rawJSONFinding reports raw JSON in text: a JSON object with at least one
// member, an array holding an object or array, or a whole message that is a
// JSON array.
func rawJSONFinding(text string) bool {
	trimmed := strings.TrimSpace(text)
	if strings.HasPrefix(trimmed, "[") && json.Valid([]byte(trimmed)) {
		return true
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c != '{' && c != '[' {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader([]byte(text[i:])))
		var v any
		if err := dec.Decode(&v); err != nil {
			continue
		}
		switch t := v.(type) {
		case map[string]any:
			if len(t) > 0 {
				return true
			}
		case []any:
			for _, e := range t {
				switch e.(type) {
				case map[string]any, []any:
					return true
				}
			}
		}
	}
	return false
}

func isNameChar(b byte) bool {
	return b == '_' || b == '-' || (b >= '0' && b <= '9') || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z')
}

// findName returns the byte offsets where name occurs as a whole name.
func findName(text, name string) []int {
	var out []int
	if name == "" {
		return out
	}
	for i := 0; i+len(name) <= len(text); {
		j := strings.Index(text[i:], name)
		if j < 0 {
			break
		}
		at := i + j
		end := at + len(name)
		if (at == 0 || !isNameChar(text[at-1])) && (end == len(text) || !isNameChar(text[end])) {
			out = append(out, at)
		}
		i = at + 1
	}
	return out
}

// plainLanguageFinding returns what makes text not plain, or "".
func plainLanguageFinding(text string, m MiddlewareSpec) string {
	if rawJSONFinding(text) {
		return "raw JSON"
	}
	for _, n := range m.ToolNames {
		if len(findName(text, n)) > 0 {
			return "tool name " + n
		}
	}
	for _, pre := range m.ToolNamePrefixes {
		for i := 0; i+len(pre) <= len(text); {
			j := strings.Index(text[i:], pre)
			if j < 0 {
				break
			}
			at := i + j
			if at == 0 || !isNameChar(text[at-1]) {
				end := at + len(pre)
				for end < len(text) && isNameChar(text[end]) {
					end++
				}
				return "tool name " + text[at:end] + " (prefix " + pre + ")"
			}
			i = at + 1
		}
	}
	for _, n := range m.InvocationToolNames {
		for _, at := range findName(text, n) {
			end := at + len(n)
			rest := strings.TrimLeft(text[end:], " \t")
			if strings.HasPrefix(rest, "(") {
				return "tool " + n + " invoked"
			}
			if at > 0 && text[at-1] == '`' {
				return "tool " + n + " formatted as code"
			}
			if inBackticks(text, at) {
				return "tool " + n + " formatted as code"
			}
		}
	}
	return ""
}

// inBackticks reports whether offset at lies inside a `code span`.
func inBackticks(text string, at int) bool {
	return strings.Count(text[:at], "`")%2 == 1 && strings.Contains(text[at:], "`")
}
