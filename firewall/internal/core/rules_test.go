package core

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/eventlog"
)

// tableProvider answers by "rule/stage" (or "*/stage"), with a default of a
// settled, harmless answer per stage.
type tableProvider map[string]Judgment

func (tableProvider) Provenance() map[string]string { return map[string]string{"kind": "table"} }

func (t tableProvider) Decide(q Question) (Judgment, error) {
	if j, ok := t[q.Rule+"/"+q.Stage]; ok {
		if j.Choice == "" {
			return Judgment{}, ErrUnavailable
		}
		return j, nil
	}
	if j, ok := t["*/"+q.Stage]; ok {
		return j, nil
	}
	switch q.Stage {
	case "applicability":
		return Judgment{Choice: "applies", Probability: 0.9}, nil
	case "safety":
		return Judgment{Choice: "compliant", Probability: 0.9}, nil
	case "autonomy":
		return Judgment{Choice: "autonomous", Probability: 0.9}, nil
	case "expectation":
		return Judgment{Choice: "permitted", Probability: 0.9}, nil
	case "conformance":
		return Judgment{Choice: "conforms", Probability: 0.9}, nil
	}
	return Judgment{}, ErrUnavailable
}

func j(choice string, p float64, dist ...any) Judgment {
	out := Judgment{Choice: choice, Probability: p}
	if len(dist) > 0 {
		out.Distribution = map[string]float64{}
		for i := 0; i+1 < len(dist); i += 2 {
			out.Distribution[dist[i].(string)] = dist[i+1].(float64)
		}
	}
	return out
}

// pol builds a policy document.
func pol(mode, incoming, outgoing, extra string) string {
	if incoming == "" {
		incoming = "[]"
	}
	if outgoing == "" {
		outgoing = "[]"
	}
	if extra != "" {
		extra = "," + extra
	}
	return fmt.Sprintf(`{"format":"org.social-harness/message-policy/v1","mode":%q,"incoming":%s,"outgoing":%s%s}`, mode, incoming, outgoing, extra)
}

const (
	codeIn  = `[{"use":"acknowledgements"},{"use":"allowed-senders","agentIds":["agent:peer","agent:fac","agent:bo"]}]`
	codeOut = `[{"use":"credentials"},{"use":"plain-language","toolNames":["policy_read"],"toolNamePrefixes":["fixture_"],"invocationToolNames":["send"]}]`
	collOut = `[{"use":"collective-norms","facilitator":"agent:fac"}]`
	jevProv = `"decisionProvider":{"kind":"jev","model":"jev-1.13.0"}`
	unavail = `"decisionProvider":{"kind":"unavailable"}`
)

func englishRules(rules ...string) string {
	return `"english":{"fixedRules":[` + strings.Join(rules, ",") + `]}`
}

const (
	safetyRule   = `{"id":"no-calendar","kind":"safety","text":"Do not share calendar details with strangers."}`
	autonomyRule = `{"id":"spend","kind":"autonomy","text":"Spending money needs approval.","feedback":{"text":"Ask the owner first.","nextAction":"seek-approval"}}`
	normRule     = `{"id":"brief","kind":"norm","text":"Replies are brief.","guidance":"Keep it brief."}`
	normRule2    = `{"id":"quiet","kind":"norm","text":"Do not answer broadcast chatter.","guidance":"Stay quiet."}`
)

func gatherMsg(sender, text string, recipients ...string) eventlog.Message {
	dir := Outgoing
	if sender != "agent:me" {
		dir = Incoming
	}
	return eventlog.Message{Direction: dir, Conversation: "g1", Sender: sender, Recipients: recipients, Text: text, Operation: "gather"}
}

func answerMsg(sender, text string) eventlog.Message {
	dir := Outgoing
	if sender != "agent:me" {
		dir = Incoming
	}
	return eventlog.Message{Direction: dir, Conversation: "g1", Sender: sender, Recipients: []string{"agent:fac"}, Text: text, Operation: "answer"}
}

func withOp(m eventlog.Message, op string) eventlog.Message { m.Operation = op; return m }

type ruleCase struct {
	name        string // the seed sentence the case comes from
	policy      string
	prov        Provider
	msgs        []eventlog.Message // the last one is the checked candidate
	disposition string
	reason      string
	decidedBy   string // comma-separated rule ids
	cause       string
	next        string
	expectation string // incoming guidance expectation, when expected
}

func TestRules(t *testing.T) {
	enf := func(in, out, extra string) string { return pol("enforcement", in, out, extra) }
	gui := func(in, out, extra string) string { return pol("guidance", in, out, extra) }
	codeP := enf(codeIn, codeOut, "")
	collP := enf("", collOut, jevProv)
	cases := []ruleCase{
		// credentials: "asks for revision of credential-shaped text or a labelled credential value other than a status word"
		{name: "credentials: credential-shaped text (AWS key id)", policy: codeP, msgs: []eventlog.Message{out("c", "key AKIAIOSFODNN7EXAMPLE for you")}, disposition: "refused", reason: ReasonNormViolation, decidedBy: "credentials", cause: CauseCode, next: NextRevise},
		{name: "credentials: credential-shaped text (GitHub token)", policy: codeP, msgs: []eventlog.Message{out("c", "ghp_16C7e42F292c6912E7710c838347Ae178B4a")}, disposition: "refused", reason: ReasonNormViolation, decidedBy: "credentials", cause: CauseCode, next: NextRevise},
		{name: "credentials: credential-shaped text (private key block)", policy: codeP, msgs: []eventlog.Message{out("c", "-----BEGIN RSA PRIVATE KEY-----\nMIIE")}, disposition: "refused", reason: ReasonNormViolation, decidedBy: "credentials", cause: CauseCode, next: NextRevise},
		{name: "credentials: credential-shaped text (JWT)", policy: codeP, msgs: []eventlog.Message{out("c", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U")}, disposition: "refused", reason: ReasonNormViolation, decidedBy: "credentials", cause: CauseCode, next: NextRevise},
		{name: "credentials: credential-shaped text (password in a URL)", policy: codeP, msgs: []eventlog.Message{out("c", "try https://admin:s3cr3t@db.example.com/x")}, disposition: "refused", reason: ReasonNormViolation, decidedBy: "credentials", cause: CauseCode, next: NextRevise},
		{name: "credentials: labelled credential value (password: hunter2)", policy: codeP, msgs: []eventlog.Message{out("c", "the password: hunter2")}, disposition: "refused", reason: ReasonNormViolation, decidedBy: "credentials", cause: CauseCode, next: NextRevise},
		{name: "credentials: labelled credential value (api_key=...)", policy: codeP, msgs: []eventlog.Message{out("c", "api_key=9f8e7d6c5b")}, disposition: "refused", reason: ReasonNormViolation, decidedBy: "credentials", cause: CauseCode, next: NextRevise},
		{name: "credentials: other than a status word (password is set)", policy: codeP, msgs: []eventlog.Message{out("c", "Deploy done; the password is set.")}, disposition: "admitted", reason: ReasonAdmission, cause: CauseDefault},
		{name: "credentials: other than a status word (API key: rotated)", policy: codeP, msgs: []eventlog.Message{out("c", "API key: rotated")}, disposition: "admitted", reason: ReasonAdmission, cause: CauseDefault},
		{name: "credentials: other than a status word (token: <redacted>)", policy: codeP, msgs: []eventlog.Message{out("c", "token: <redacted>")}, disposition: "admitted", reason: ReasonAdmission, cause: CauseDefault},
		{name: "credentials: a word without a value is not a credential", policy: codeP, msgs: []eventlog.Message{out("c", "Let us discuss the password policy tomorrow.")}, disposition: "admitted", reason: ReasonAdmission, cause: CauseDefault},
		// plain-language: "a plain send that carries raw JSON, a name in toolNames, a name starting with one of toolNamePrefixes, or a name in invocationToolNames formatted or invoked as a tool"
		{name: "plain-language: raw JSON object", policy: codeP, msgs: []eventlog.Message{out("c", `status {"ok":true}`)}, disposition: "refused", reason: ReasonNormViolation, decidedBy: "plain-language", cause: CauseCode, next: NextRevise},
		{name: "plain-language: raw JSON array of objects", policy: codeP, msgs: []eventlog.Message{out("c", `[{"day":"Tue"}]`)}, disposition: "refused", reason: ReasonNormViolation, decidedBy: "plain-language", cause: CauseCode, next: NextRevise},
		{name: "plain-language: a bracketed citation is not raw JSON", policy: codeP, msgs: []eventlog.Message{out("c", "as agreed [1], Tuesday")}, disposition: "admitted", reason: ReasonAdmission, cause: CauseDefault},
		{name: "plain-language: a name in toolNames", policy: codeP, msgs: []eventlog.Message{out("c", "please run policy_read")}, disposition: "refused", reason: ReasonNormViolation, decidedBy: "plain-language", cause: CauseCode, next: NextRevise},
		{name: "plain-language: a longer word is not the tool name", policy: codeP, msgs: []eventlog.Message{out("c", "the policy_reader team agreed")}, disposition: "admitted", reason: ReasonAdmission, cause: CauseDefault},
		{name: "plain-language: a name starting with one of toolNamePrefixes", policy: codeP, msgs: []eventlog.Message{out("c", "I used fixture_calendar for that")}, disposition: "refused", reason: ReasonNormViolation, decidedBy: "plain-language", cause: CauseCode, next: NextRevise},
		{name: "plain-language: invocationToolNames invoked as a tool", policy: codeP, msgs: []eventlog.Message{out("c", "I will send(report) later")}, disposition: "refused", reason: ReasonNormViolation, decidedBy: "plain-language", cause: CauseCode, next: NextRevise},
		{name: "plain-language: invocationToolNames formatted as a tool", policy: codeP, msgs: []eventlog.Message{out("c", "I used `send` for it")}, disposition: "refused", reason: ReasonNormViolation, decidedBy: "plain-language", cause: CauseCode, next: NextRevise},
		{name: "plain-language: invocationToolNames in prose is plain", policy: codeP, msgs: []eventlog.Message{out("c", "I will send it tomorrow")}, disposition: "admitted", reason: ReasonAdmission, cause: CauseDefault},
		// acknowledgements: "an exact empty acknowledgement, such as "Thanks", needs no response unless the agent's own later message asked its sender something"
		{name: "acknowledgement: an exact empty acknowledgement, such as Thanks, needs no response", policy: codeP, msgs: []eventlog.Message{in("c", "agent:peer", "Thanks")}, disposition: "admitted", reason: ReasonAdmission, cause: CauseDefault, expectation: "none"},
		{name: "acknowledgement: ok, got it 👍 is an exact empty acknowledgement", policy: codeP, msgs: []eventlog.Message{in("c", "agent:peer", "ok, got it 👍")}, disposition: "admitted", reason: ReasonAdmission, cause: CauseDefault, expectation: "none"},
		{name: "acknowledgement: thanks plus a question is not empty", policy: codeP, msgs: []eventlog.Message{in("c", "agent:peer", "Thanks, and can you send the report?")}, disposition: "admitted", reason: ReasonAdmission, cause: CauseDefault},
		{name: "acknowledgement: unless the agent's own later message asked its sender something", policy: codeP, msgs: []eventlog.Message{in("c", "agent:peer", "hello"), out("c", "Could you check the build?"), in("c", "agent:peer", "Thanks!")}, disposition: "admitted", reason: ReasonAdmission, cause: CauseDefault},
		{name: "acknowledgement: our question already answered, the thanks needs no response", policy: codeP, msgs: []eventlog.Message{out("c", "Could you check the build?"), in("c", "agent:peer", "It is green."), in("c", "agent:peer", "Thanks!")}, disposition: "admitted", reason: ReasonAdmission, cause: CauseDefault, expectation: "none"},
		// allowed-senders: "blocks any certified sender outside agentIds; an empty list admits none"
		{name: "allowed-senders: blocks any certified sender outside agentIds", policy: codeP, msgs: []eventlog.Message{in("c", "agent:mallory", "hi")}, disposition: "withheld", reason: ReasonProhibition, decidedBy: "allowed-sender", cause: CauseCode, next: NextStop},
		{name: "allowed-senders: an empty list admits none", policy: enf(`[{"use":"allowed-senders","agentIds":[]}]`, "", ""), msgs: []eventlog.Message{in("c", "agent:peer", "hi")}, disposition: "withheld", reason: ReasonProhibition, decidedBy: "allowed-sender", cause: CauseCode, next: NextStop},
		{name: "allowed-senders: a sender in agentIds is admitted", policy: codeP, msgs: []eventlog.Message{in("c", "agent:peer", "hi")}, disposition: "admitted", reason: ReasonAdmission, cause: CauseDefault},
		{name: "guidance mode: the guidance arm applies no policy withholding (outside sender)", policy: gui(codeIn, codeOut, ""), msgs: []eventlog.Message{in("c", "agent:mallory", "hi")}, disposition: "admitted", reason: ReasonProhibition, decidedBy: "allowed-sender", cause: CauseCode, next: NextStop},
		{name: "guidance mode: the guidance arm applies no refusal (credential)", policy: gui(codeIn, codeOut, ""), msgs: []eventlog.Message{out("c", "password: hunter2")}, disposition: "admitted", reason: ReasonNormViolation, decidedBy: "credentials", cause: CauseCode, next: NextRevise},
		// collective norms
		{name: "collective-norms: facilitator-starts-collectives (a non-facilitator all_gather)", policy: collP, prov: tableProvider{}, msgs: []eventlog.Message{withOp(out("g1", "Which day?", "agent:bo"), "all_gather")}, disposition: "refused", reason: ReasonNormViolation, decidedBy: "facilitator-starts-collectives", cause: CauseCode, next: NextWait},
		{name: "collective-norms: the facilitator may start a gather", policy: enf("", `[{"use":"collective-norms","facilitator":"agent:me"}]`, jevProv), prov: tableProvider{}, msgs: []eventlog.Message{gatherMsg("agent:me", "Which day?", "agent:bo")}, disposition: "admitted", reason: ReasonAdmission, cause: CauseDefault},
		{name: "collective-norms: one-open-request (a second open request)", policy: enf("", `[{"use":"collective-norms","facilitator":"agent:me"}]`, jevProv), prov: tableProvider{}, msgs: []eventlog.Message{gatherMsg("agent:me", "Which day?", "agent:bo", "agent:cy"), answerMsg("agent:bo", "Tue"), gatherMsg("agent:me", "Which hotel?", "agent:bo", "agent:cy")}, disposition: "refused", reason: ReasonNormViolation, decidedBy: "one-open-request", cause: CauseCode, next: NextWait},
		{name: "collective-norms: one-open-request once every member answered", policy: enf("", `[{"use":"collective-norms","facilitator":"agent:me"}]`, jevProv), prov: tableProvider{}, msgs: []eventlog.Message{gatherMsg("agent:me", "Which day?", "agent:bo", "agent:cy"), answerMsg("agent:bo", "Tue"), answerMsg("agent:cy", "Wed"), gatherMsg("agent:me", "Which hotel?", "agent:bo", "agent:cy")}, disposition: "admitted", reason: ReasonAdmission, cause: CauseDefault},
		{name: "collective-norms: no-acknowledgement-posts", policy: collP, prov: tableProvider{}, msgs: []eventlog.Message{withOp(out("g1", "Thanks!", "agent:bo", "agent:cy"), "multicast")}, disposition: "refused", reason: ReasonNormViolation, decidedBy: "no-acknowledgement-posts", cause: CauseCode, next: NextStop},
		{name: "collective-norms: English rules are assessed only when no code rule refused the send", policy: collP, prov: UnavailableProvider{}, msgs: []eventlog.Message{withOp(out("g1", "Thanks!", "agent:bo"), "multicast")}, disposition: "refused", reason: ReasonNormViolation, decidedBy: "no-acknowledgement-posts", cause: CauseCode, next: NextStop},
		// composition: "known safety/autonomy prohibition; required operational/evidence hold; norm repair; missing approval; otherwise admission"
		{name: "composition: prohibition before norm repair", policy: enf("", codeOut, jevProv+","+englishRules(safetyRule)), prov: tableProvider{"no-calendar/safety": j("prohibited", 0.9)}, msgs: []eventlog.Message{out("c", "password: hunter2, calendar Tue 10:00")}, disposition: "refused", reason: ReasonProhibition, decidedBy: "no-calendar", cause: CauseJudgment, next: NextStop},
		{name: "composition: required hold before norm repair", policy: enf("", codeOut, unavail+","+englishRules(normRule)), prov: UnavailableProvider{}, msgs: []eventlog.Message{out("c", "password: hunter2")}, disposition: "refused", reason: ReasonUnavailable, decidedBy: "brief", cause: CauseUnavailable, next: NextWait},
		{name: "composition: norm repair before missing approval", policy: enf("", codeOut, jevProv+","+englishRules(autonomyRule)), prov: tableProvider{"spend/autonomy": j("approval-required", 0.9)}, msgs: []eventlog.Message{out("c", "I pay $90 via policy_read")}, disposition: "refused", reason: ReasonNormViolation, decidedBy: "plain-language", cause: CauseCode, next: NextRevise},
		{name: "composition: missing approval", policy: enf("", codeOut, jevProv+","+englishRules(autonomyRule)), prov: tableProvider{"spend/autonomy": j("approval-required", 0.9)}, msgs: []eventlog.Message{out("c", "I will pay $90 for the room")}, disposition: "refused", reason: ReasonApprovalRequired, decidedBy: "spend", cause: CauseJudgment, next: NextSeekApproval},
		{name: "composition: approval cannot override a prohibition (autonomy prohibited)", policy: enf("", "", jevProv+","+englishRules(autonomyRule)), prov: tableProvider{"spend/autonomy": j("prohibited", 0.9)}, msgs: []eventlog.Message{out("c", "I will pay $9000")}, disposition: "refused", reason: ReasonProhibition, decidedBy: "spend", cause: CauseJudgment, next: NextStop},
		{name: "composition: conflicting response expectations hold for review", policy: enf("", "", jevProv+","+englishRules(normRule, normRule2)), prov: tableProvider{"brief/expectation": j("required", 0.9), "quiet/expectation": j("none", 0.9)}, msgs: []eventlog.Message{in("c", "agent:peer", "Anyone around?")}, disposition: "withheld", reason: ReasonUnresolvedEvidence, decidedBy: "brief,quiet", cause: CauseJudgment, next: NextWait},
		{name: "composition: a conformance violation still asks for revision", policy: enf("", "", jevProv+","+englishRules(normRule)), prov: tableProvider{"brief/conformance": j("violates", 0.9)}, msgs: []eventlog.Message{out("c", "a very long reply")}, disposition: "refused", reason: ReasonNormViolation, decidedBy: "brief", cause: CauseJudgment, next: NextRevise},
		{name: "composition: a settled expectation still becomes guidance", policy: enf("", "", jevProv+","+englishRules(normRule)), prov: tableProvider{"brief/expectation": j("required", 0.9)}, msgs: []eventlog.Message{in("c", "agent:peer", "Can you confirm?")}, disposition: "admitted", reason: ReasonAdmission, cause: CauseDefault, expectation: "required"},
		// uncertainty: "its choice is unresolved, its probability is below minimumProbability, or another option is more probable"
		{name: "uncertain: a safety answer below minimumProbability holds", policy: enf("", "", jevProv+","+englishRules(safetyRule)), prov: tableProvider{"no-calendar/safety": j("compliant", 0.4)}, msgs: []eventlog.Message{out("c", "hello")}, disposition: "refused", reason: ReasonUnresolvedEvidence, decidedBy: "no-calendar", cause: CauseUncertain, next: NextWait},
		{name: "uncertain: an unresolved safety answer holds", policy: enf("", "", jevProv+","+englishRules(safetyRule)), prov: tableProvider{"no-calendar/safety": j("unresolved", 0.9)}, msgs: []eventlog.Message{in("c", "agent:peer", "hello")}, disposition: "withheld", reason: ReasonUnresolvedEvidence, decidedBy: "no-calendar", cause: CauseUncertain, next: NextWait},
		{name: "uncertain: another option more probable (autonomy) holds", policy: enf("", "", jevProv+","+englishRules(autonomyRule)), prov: tableProvider{"spend/autonomy": j("autonomous", 0.5, "autonomous", 0.5, "approval-required", 0.51)}, msgs: []eventlog.Message{out("c", "ok I pay")}, disposition: "refused", reason: ReasonUnresolvedEvidence, decidedBy: "spend", cause: CauseUncertain, next: NextWait},
		{name: "uncertain: its applicability included (uncertain applicability of a safety rule holds)", policy: enf("", "", jevProv+","+englishRules(safetyRule)), prov: tableProvider{"no-calendar/applicability": j("applies", 0.3)}, msgs: []eventlog.Message{out("c", "hello")}, disposition: "refused", reason: ReasonUnresolvedEvidence, decidedBy: "no-calendar", cause: CauseUncertain, next: NextWait},
		{name: "uncertain: an uncertain norm never holds the candidate (enforcement admits, reason uncertain)", policy: enf("", "", jevProv+","+englishRules(normRule)), prov: tableProvider{"brief/conformance": j("conforms", 0.3)}, msgs: []eventlog.Message{out("c", "hello")}, disposition: "admitted", reason: ReasonAdmission, decidedBy: "brief", cause: CauseUncertain},
		{name: "uncertain: a norm whose expectation is uncertain is left out of conformance", policy: enf("", "", jevProv+","+englishRules(normRule)), prov: tableProvider{"brief/expectation": j("unresolved", 0.9), "brief/conformance": j("violates", 0.99)}, msgs: []eventlog.Message{out("c", "hello")}, disposition: "admitted", reason: ReasonAdmission, decidedBy: "brief", cause: CauseUncertain},
		// providers: "unavailable installs the English rules with no service, so every English check is unavailable: enforcement holds the message and guidance admits it"
		{name: "unavailable provider: enforcement holds the message", policy: enf("", "", unavail+","+englishRules(safetyRule, normRule)), prov: UnavailableProvider{}, msgs: []eventlog.Message{in("c", "agent:peer", "hello")}, disposition: "withheld", reason: ReasonUnavailable, decidedBy: "no-calendar,brief", cause: CauseUnavailable, next: NextWait},
		{name: "unavailable provider: guidance admits it", policy: gui("", "", unavail+","+englishRules(safetyRule, normRule)), prov: UnavailableProvider{}, msgs: []eventlog.Message{out("c", "hello")}, disposition: "admitted", reason: ReasonUnavailable, decidedBy: "no-calendar,brief", cause: CauseUnavailable, next: NextWait},
		{name: "provider: invalid output cannot produce admission", policy: enf("", "", jevProv+","+englishRules(safetyRule)), prov: tableProvider{"no-calendar/safety": j("maybe", 0.9)}, msgs: []eventlog.Message{out("c", "hello")}, disposition: "refused", reason: ReasonUnavailable, decidedBy: "no-calendar", cause: CauseUnavailable, next: NextWait},
		{name: "provider: a serialized request byte budget holds an oversized request", policy: enf("", "", jevProv+","+englishRules(safetyRule)+`,"englishSettings":{"maximumRequestBytes":100}`), prov: tableProvider{}, msgs: []eventlog.Message{out("c", "hello")}, disposition: "refused", reason: ReasonUnavailable, decidedBy: "no-calendar", cause: CauseUnavailable, next: NextWait},
		{name: "settings: a check input over maximumInputBytes is held (required omitted context causes a hold)", policy: enf("", "", `"settings":{"maximumInputBytes":200}`), msgs: []eventlog.Message{out("c", "first message, long enough"), out("c", "second message, long enough to pass the bound")}, disposition: "refused", reason: ReasonUnresolvedEvidence, cause: CauseEndpoint, next: NextWait},
		{name: "admission: an admission no rule qualified has cause default", policy: enf("", "", ""), msgs: []eventlog.Message{out("c", "hello")}, disposition: "admitted", reason: ReasonAdmission, cause: CauseDefault},
	}
	if len(cases) < 40 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := mustPolicy(t, tc.policy)
			cs := evalAll(t, p, tc.prov, nil, tc.msgs...)
			c := cs[len(cs)-1]
			d := c.Decision
			ids := []string{}
			for _, r := range d.DecidedBy {
				ids = append(ids, r.ID)
			}
			got := fmt.Sprintf("%s %s [%s] %s %s", d.Disposition, d.Reason, strings.Join(ids, ","), d.Cause, d.NextAction)
			want := fmt.Sprintf("%s %s [%s] %s %s", tc.disposition, tc.reason, tc.decidedBy, tc.cause, tc.next)
			if got != want {
				t.Errorf("got  %s\nwant %s\nfindings: %+v", got, want, d.Findings)
			}
			if tc.expectation != "" {
				if d.Guidance == nil || d.Guidance.Expectation != tc.expectation {
					t.Errorf("guidance %+v, want expectation %q", d.Guidance, tc.expectation)
				}
			}
			if !CheckIDPattern.MatchString(c.CheckID) {
				t.Errorf("check id %q", c.CheckID)
			}
			// every declared rule returns a finding
			chain := p.Incoming
			if c.Input.Direction == Outgoing {
				chain = p.Outgoing
			}
			for _, m := range chain {
				for _, r := range builtinMiddleware(m, c.Input.Direction, p).Rules {
					if !hasFinding(d.Findings, r.ID) {
						t.Errorf("rule %s returned no finding", r.ID)
					}
				}
			}
			if p.English != nil {
				for _, r := range append(append([]EnglishRule{}, p.English.FixedRules...), p.English.InitialRules...) {
					if !hasFinding(d.Findings, r.ID) {
						t.Errorf("English rule %s returned no finding", r.ID)
					}
				}
			}
			if d.Disposition != DispositionAdmitted && d.Guidance != nil {
				t.Errorf("a held candidate carries guidance %+v", d.Guidance)
			}
		})
	}
}

func hasFinding(fs []Finding, rule string) bool {
	for _, f := range fs {
		if f.Rule == rule {
			return true
		}
	}
	return false
}

// "each uncertain finding whose rule registers guidance reaches the agent as
// an instruction carrying the rule, that choice and probability, and the
// rule's guidance"
func TestUncertainNormGuidance(t *testing.T) {
	p := mustPolicy(t, pol("enforcement", "", "", jevProv+","+englishRules(normRule)))
	cs := evalAll(t, p, tableProvider{"brief/expectation": j("required", 0.45)}, nil, in("c", "agent:peer", "hello?"))
	g := cs[0].Decision.Guidance
	if g == nil || len(g.Instructions) != 1 {
		t.Fatalf("guidance %+v", g)
	}
	ins := g.Instructions[0]
	if ins.Rule != "brief" || ins.Text != "Keep it brief." || ins.Choice != "required" || ins.Probability == nil || *ins.Probability != 0.45 {
		t.Errorf("instruction %+v", ins)
	}
	var f *Finding
	for i := range cs[0].Decision.Findings {
		if cs[0].Decision.Findings[i].Stage == "expectation" {
			f = &cs[0].Decision.Findings[i]
		}
	}
	if f == nil || f.Outcome != OutcomePass || f.Reason != "uncertain" || f.Choice != "required" {
		t.Errorf("finding %+v", f)
	}
}

// "History contains the most recent endpoint-certified records of the
// candidate's own conversation, strictly before the candidate ... when it
// does, the assessor receives earlierHistoryOmitted: true"
func TestHistoryWindow(t *testing.T) {
	p := mustPolicy(t, pol("enforcement", "", "", `"maximumHistoryRecords":2`))
	cs := evalAll(t, p, nil, nil,
		out("a", "a1"), out("b", "b1"), out("a", "a2"), out("a", "a3"), out("b", "b2"), out("a", "a4"))
	type want struct {
		refs    string
		omitted bool
	}
	wants := []want{{"", false}, {"", false}, {"e1", false}, {"e1,e3", false}, {"e2", false}, {"e3,e4", true}}
	for i, c := range cs {
		got := want{strings.Join(c.Input.History, ","), c.Input.EarlierHistoryOmitted}
		if got != wants[i] {
			t.Errorf("check %d (%s): history %+v, want %+v", i, c.Input.Candidate.Event, got, wants[i])
		}
	}
}

// "The window also has a 2 MiB bound on whole retained record/membership
// bytes. Exceeding that byte bound is an explicit evidence gap."
func TestHistoryByteBoundIsEvidenceGap(t *testing.T) {
	p := mustPolicy(t, pol("enforcement", "", "", `"settings":{"maximumInputBytes":100000000}`))
	big := strings.Repeat("x", 1<<20)
	cs := evalAll(t, p, nil, nil, out("a", big), out("a", big), out("a", "small"))
	d := cs[2].Decision
	if d.Reason != ReasonUnresolvedEvidence || d.Cause != CauseEndpoint || d.Disposition != DispositionRefused || len(cs[2].Input.EvidenceGaps) != 1 {
		t.Errorf("decision %s %s %s gaps %v", d.Reason, d.Cause, d.Disposition, cs[2].Input.EvidenceGaps)
	}
}

// "References use chk_ followed by 64 lowercase hexadecimal characters";
// determinism: same input, same bytes, ten times.
func TestDeterministicAudit(t *testing.T) {
	p := mustPolicy(t, pol("enforcement", codeIn, codeOut, ""))
	var first []byte
	for i := 0; i < 10; i++ {
		var buf bytes.Buffer
		evalAll(t, p, nil, &buf, sampleMessagesFor("agent:me")...)
		if i == 0 {
			first = append([]byte(nil), buf.Bytes()...)
			continue
		}
		if !bytes.Equal(first, buf.Bytes()) {
			t.Fatalf("run %d wrote different bytes", i)
		}
	}
}

func sampleMessagesFor(local string) []eventlog.Message {
	ms := sampleMessages()
	for i := range ms {
		if ms[i].Sender == "agent:ada" {
			ms[i].Sender = local
		}
	}
	return ms
}

// The recorded provider answers from the judgments of an earlier snapshot:
// re-evaluating gives the same decisions; a question it has no record of is
// unavailable.
func TestRecordedProviderRoundTrip(t *testing.T) {
	doc := pol("enforcement", `[{"use":"acknowledgements"},{"use":"collective-norms"}]`, `[{"use":"credentials"},{"use":"collective-norms","facilitator":"agent:fac"}]`,
		jevProv+","+englishRules(safetyRule, autonomyRule, normRule))
	p := mustPolicy(t, doc)
	msgs := sampleMessagesFor("agent:me")
	var audit bytes.Buffer
	want := evalAll(t, p, scriptedProvider{}, &audit, msgs...)
	var js []Judgment
	_, err := VerifyAudit(bytes.NewReader(audit.Bytes()), "audit", func(l AuditLine) error {
		var rec CheckRecord
		if err := jsonUnmarshal(l.Raw, &rec); err != nil {
			return err
		}
		js = append(js, rec.Trace...)
		return nil
	})
	if err != nil || len(js) == 0 {
		t.Fatalf("judgments: %v (%d)", err, len(js))
	}
	rp := NewRecordedProvider("audit", js)
	got := evalAll(t, p, rp, nil, msgs...)
	for i := range want {
		a, b := want[i].Decision, got[i].Decision
		if a.Reason != b.Reason || a.Disposition != b.Disposition || a.Cause != b.Cause || len(a.DecidedBy) != len(b.DecidedBy) {
			t.Errorf("check %d: recorded %s/%s/%s, original %s/%s/%s", i, b.Reason, b.Disposition, b.Cause, a.Reason, a.Disposition, a.Cause)
		}
	}
	// a new message has no record: its English checks are unavailable
	extra := append(append([]eventlog.Message{}, msgs...), out("dm:new", "a brand new question nobody asked before?"))
	got = evalAll(t, p, rp, nil, extra...)
	last := got[len(got)-1].Decision
	if last.Reason != ReasonUnavailable || last.Cause != CauseUnavailable || last.Disposition != DispositionRefused {
		t.Errorf("unrecorded question: %s %s %s", last.Reason, last.Cause, last.Disposition)
	}
}
