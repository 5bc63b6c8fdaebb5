package core

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/jsonlimit"
	"github.com/agent-trace-witness/witness/internal/jsonpath"
	"github.com/agent-trace-witness/witness/internal/jsontree"
)

// PolicyFormat is the format string of a message-policy file.
const PolicyFormat = "org.social-harness/message-policy/v1"

// MaxPolicyBytes is the largest message-policy file the seed allows (1 MiB).
const MaxPolicyBytes = 1 << 20

// Modes of a policy.
const (
	ModeGuidance    = "guidance"
	ModeEnforcement = "enforcement"
)

// Middleware uses (built-in code middleware a document may select).
const (
	UseAcknowledgements = "acknowledgements"
	UseAllowedSenders   = "allowed-senders"
	UseCredentials      = "credentials"
	UsePlainLanguage    = "plain-language"
	UseCollectiveNorms  = "collective-norms"
)

// Rule kinds.
const (
	KindNorm     = "norm"
	KindAutonomy = "autonomy"
	KindSafety   = "safety"
)

// Next actions a decision or a rule's feedback may name.
const (
	NextRevise       = "revise"
	NextWait         = "wait"
	NextStop         = "stop"
	NextSeekApproval = "seek-approval"
)

// Defaults and limits the seed names, and the ones we chose (docs/formats/firewall.md).
const (
	DefaultMaximumHistoryRecords   = 256
	MinMaximumHistoryRecords       = 1
	MaxMaximumHistoryRecords       = 1024
	DefaultMaximumConcurrentChecks = 4 // our reading: the Daemon.withFirewall example value
	MaxMaximumConcurrentChecks     = 64
	DefaultMinimumProbability      = 0.5
	DefaultMaximumRequestBytes     = 384000
	DefaultEnglishTimeoutMs        = 15000
	DefaultCheckTimeoutMs          = 150000
	DefaultMiddlewareTimeoutMs     = 70000
	DefaultMaximumInputBytes       = 512000
	DefaultMaximumResultBytes      = 2000000
	MaxEditableRules               = 256
	maxSettingInteger              = 1 << 40
)

// EnglishMiddlewareID is the reserved id of the English middleware.
const EnglishMiddlewareID = "org.social-harness/english"

// EnglishPolicyID is the policy id of the English middleware.
const EnglishPolicyID = "org.social-harness/english-policy.v1"

// Policy is a decoded message-policy file with every default filled in.
type Policy struct {
	Format                  string
	Mode                    string
	Incoming                []MiddlewareSpec
	Outgoing                []MiddlewareSpec
	English                 *EnglishSpec // nil when the document has no "english"
	DecisionProvider        *ProviderSpec
	EnglishSettings         EnglishSettings
	Settings                Settings
	Facts                   []string
	MaximumHistoryRecords   int
	MaximumConcurrentChecks int
}

// MiddlewareSpec is one entry of the incoming or outgoing chain.
type MiddlewareSpec struct {
	Use                 string   `json:"use"`
	AgentIDs            []string `json:"agentIds,omitempty"`            // allowed-senders
	ToolNames           []string `json:"toolNames,omitempty"`           // plain-language
	ToolNamePrefixes    []string `json:"toolNamePrefixes,omitempty"`    // plain-language
	InvocationToolNames []string `json:"invocationToolNames,omitempty"` // plain-language
	Facilitator         string   `json:"facilitator,omitempty"`         // collective-norms, outgoing
}

// EnglishSpec holds the English rules of a policy.
type EnglishSpec struct {
	FixedRules   []EnglishRule `json:"fixedRules"`
	InitialRules []EnglishRule `json:"initialRules"`
}

// EnglishRule is an English rule: {id, kind, text, guidance?, feedback?}.
type EnglishRule struct {
	ID       string    `json:"id"`
	Kind     string    `json:"kind"`
	Text     string    `json:"text"`
	Guidance string    `json:"guidance,omitempty"`
	Feedback *Feedback `json:"feedback,omitempty"`
}

// Feedback is a rule's registered send-error feedback.
type Feedback struct {
	Text       string `json:"text"`
	NextAction string `json:"nextAction"`
}

// ProviderSpec is the decisionProvider property.
type ProviderSpec struct {
	Kind  string `json:"kind"` // jev | unavailable
	Model string `json:"model,omitempty"`
}

// EnglishSettings is EnglishPolicySettings.
type EnglishSettings struct {
	MinimumProbability  float64 `json:"minimumProbability"`
	MaximumRequestBytes int64   `json:"maximumRequestBytes"`
	TimeoutMilliseconds int64   `json:"timeoutMilliseconds"`
}

// Settings is FirewallSettings.
type Settings struct {
	CheckTimeoutMilliseconds      int64 `json:"checkTimeoutMilliseconds"`
	MiddlewareTimeoutMilliseconds int64 `json:"middlewareTimeoutMilliseconds"`
	MaximumInputBytes             int64 `json:"maximumInputBytes"`
	MaximumResultBytes            int64 `json:"maximumResultBytes"`
}

// PolicyError is a refusal of a message-policy or mapping file, naming the
// file, its line and column and the JSON path of the field (the one
// positioned error of witness's readers).
type PolicyError = jsontree.Error

const policyHint = "see docs/formats/firewall.md for the message-policy/v1 properties, their defaults and ranges"

// LoadPolicy reads and decodes a message-policy file. Errors carry the Usage
// exit code (a policy is a configuration input) except I/O failures.
func LoadPolicy(path string) (*Policy, error) {
	data, err := readConfig(path, "policy", "check the path of the message-policy file", MaxPolicyBytes)
	if err != nil {
		return nil, err
	}
	return DecodePolicy(data, path)
}

// readConfig reads at most max+1 bytes of the configuration file path (the
// decoders refuse what is over max). A file that cannot be opened is a usage
// error with notFoundHint; a failed read is a failure.
func readConfig(path, what, notFoundHint string, max int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, exitcode.Input("read "+what, err, notFoundHint)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, int64(max)+1))
	if err != nil {
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("read %s %s: %w", what, path, err), "")
	}
	return data, nil
}

// checkConfigDepth refuses a configuration document nested deeper than
// jsonlimit.MaxDepth, in one pass, before any other check: a usage error
// naming file, line and column, with hint.
func checkConfigDepth(data []byte, name, hint string) error {
	if err := jsonlimit.CheckIn(data, name, 1); err != nil {
		le := err.(*jsonlimit.Error)
		return exitcode.New(exitcode.Usage, &jsontree.Error{File: name, Line: int64(le.Line), Col: le.Col,
			Msg: fmt.Sprintf("nesting deeper than %d levels", jsonlimit.MaxDepth), Err: le}, hint)
	}
	return nil
}

// parseConfigTree parses a configuration document into its tree; a syntax
// error is a usage error naming file, line and column, with hint.
func parseConfigTree(data []byte, name, hint string) (*jsontree.Value, error) {
	if err := checkConfigDepth(data, name, hint); err != nil {
		return nil, err
	}
	root, err := jsontree.Parse(data, name)
	if err != nil {
		return nil, exitcode.New(exitcode.Usage, err, hint)
	}
	return root, nil
}

// DecodePolicy decodes a message-policy document. name is used in errors.
func DecodePolicy(data []byte, name string) (*Policy, error) {
	if err := checkConfigDepth(data, name, policyHint); err != nil {
		return nil, err
	}
	if len(data) > MaxPolicyBytes {
		return nil, exitcode.New(exitcode.Usage, &jsontree.Error{File: name, Msg: fmt.Sprintf("document exceeds %d bytes (1 MiB)", MaxPolicyBytes)}, policyHint)
	}
	root, err := parseConfigTree(data, name, policyHint)
	if err != nil {
		return nil, err
	}
	d := &policyDecoder{data: data, name: name}
	p := d.policy(root)
	if d.err != nil {
		return nil, exitcode.New(exitcode.Usage, d.err, policyHint)
	}
	return p, nil
}

type policyDecoder struct {
	data []byte
	name string
	err  *jsontree.Error
}

func (d *policyDecoder) fail(n *jsontree.Value, path, format string, args ...any) {
	if d.err != nil {
		return
	}
	e := &jsontree.Error{File: d.name, Field: path, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Col = int64(n.Line), n.Col
	}
	d.err = e
}

// object checks that n is an object whose properties are all in allowed,
// naming the first unknown property with its path.
func (d *policyDecoder) object(n *jsontree.Value, path string, allowed ...string) bool {
	if n.Kind != jsontree.Object {
		d.fail(n, path, "expected an object, got %s", n.Kind.String())
		return false
	}
	for _, m := range n.Obj {
		k := m.Key
		known := false
		for _, a := range allowed {
			if k == a {
				known = true
				break
			}
		}
		if !known {
			e := &jsontree.Error{File: d.name, Field: jsonpath.Member(path, k), Line: int64(m.KeyLine), Col: m.KeyCol,
				Msg: fmt.Sprintf("unknown property %q: the format does not name it", k)}
			if d.err == nil {
				d.err = e
			}
			return false
		}
	}
	return true
}

func (d *policyDecoder) str(n *jsontree.Value, path string, nonEmpty bool) string {
	if n.Kind != jsontree.String {
		d.fail(n, path, "expected a string, got %s", n.Kind.String())
		return ""
	}
	if nonEmpty && strings.TrimSpace(n.Str) == "" {
		d.fail(n, path, "must be a non-empty string")
	}
	return n.Str
}

func (d *policyDecoder) strList(n *jsontree.Value, path string) []string {
	if n.Kind != jsontree.Array {
		d.fail(n, path, "expected an array of strings, got %s", n.Kind.String())
		return nil
	}
	out := []string{}
	for i, it := range n.Arr {
		out = append(out, d.str(it, fmt.Sprintf("%s[%d]", path, i), true))
	}
	return out
}

func (d *policyDecoder) integer(n *jsontree.Value, path string, lo, hi int64) int64 {
	if n.Kind != jsontree.Number {
		d.fail(n, path, "expected an integer, got %s", n.Kind.String())
		return 0
	}
	v, err := strconv.ParseInt(string(n.Num), 10, 64)
	if err != nil {
		f, ferr := n.Num.Float64()
		if ferr != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			d.fail(n, path, "expected an integer, got %s", n.Num)
			return 0
		}
		v = int64(f)
	}
	if v < lo || v > hi {
		d.fail(n, path, "%d is out of range %d-%d", v, lo, hi)
	}
	return v
}

func (d *policyDecoder) policy(root *jsontree.Value) *Policy {
	p := &Policy{
		Incoming:                []MiddlewareSpec{},
		Outgoing:                []MiddlewareSpec{},
		Facts:                   []string{},
		MaximumHistoryRecords:   DefaultMaximumHistoryRecords,
		MaximumConcurrentChecks: DefaultMaximumConcurrentChecks,
		EnglishSettings: EnglishSettings{
			MinimumProbability:  DefaultMinimumProbability,
			MaximumRequestBytes: DefaultMaximumRequestBytes,
			TimeoutMilliseconds: DefaultEnglishTimeoutMs,
		},
		Settings: Settings{
			CheckTimeoutMilliseconds:      DefaultCheckTimeoutMs,
			MiddlewareTimeoutMilliseconds: DefaultMiddlewareTimeoutMs,
			MaximumInputBytes:             DefaultMaximumInputBytes,
			MaximumResultBytes:            DefaultMaximumResultBytes,
		},
	}
	if !d.object(root, "$", "format", "mode", "incoming", "outgoing", "english", "decisionProvider",
		"englishSettings", "settings", "facts", "maximumHistoryRecords", "maximumConcurrentChecks") {
		return nil
	}
	f := root.Lookup
	if n, ok := f("format"); !ok {
		d.fail(root, "$.format", "required property is missing (want %q)", PolicyFormat)
	} else if s := d.str(n, "$.format", false); d.err == nil && s != PolicyFormat {
		d.fail(n, "$.format", "unsupported format %q (want %q)", s, PolicyFormat)
	} else {
		p.Format = s
	}
	if n, ok := f("mode"); !ok {
		d.fail(root, "$.mode", "required property is missing (want \"guidance\" or \"enforcement\")")
	} else if s := d.str(n, "$.mode", false); d.err == nil && s != ModeGuidance && s != ModeEnforcement {
		d.fail(n, "$.mode", "unknown mode %q (want \"guidance\" or \"enforcement\")", s)
	} else {
		p.Mode = s
	}
	if n, ok := f("incoming"); ok {
		p.Incoming = d.chain(n, "$.incoming", "incoming")
	}
	if n, ok := f("outgoing"); ok {
		p.Outgoing = d.chain(n, "$.outgoing", "outgoing")
	}
	if n, ok := f("english"); ok {
		p.English = d.english(n, "$.english")
	}
	if n, ok := f("decisionProvider"); ok {
		p.DecisionProvider = d.provider(n, "$.decisionProvider")
	}
	if n, ok := f("englishSettings"); ok && d.object(n, "$.englishSettings", "minimumProbability", "maximumRequestBytes", "timeoutMilliseconds") {
		if v, ok := n.Lookup("minimumProbability"); ok {
			if v.Kind != jsontree.Number {
				d.fail(v, "$.englishSettings.minimumProbability", "expected a number, got %s", v.Kind.String())
			} else if x, err := v.Num.Float64(); err != nil || x <= 0 || x > 1 || math.IsNaN(x) {
				d.fail(v, "$.englishSettings.minimumProbability", "%s is out of range: must be greater than 0 and at most 1", v.Num)
			} else {
				p.EnglishSettings.MinimumProbability = x
			}
		}
		if v, ok := n.Lookup("maximumRequestBytes"); ok {
			p.EnglishSettings.MaximumRequestBytes = d.integer(v, "$.englishSettings.maximumRequestBytes", 1, maxSettingInteger)
		}
		if v, ok := n.Lookup("timeoutMilliseconds"); ok {
			p.EnglishSettings.TimeoutMilliseconds = d.integer(v, "$.englishSettings.timeoutMilliseconds", 1, maxSettingInteger)
		}
	}
	if n, ok := f("settings"); ok && d.object(n, "$.settings", "checkTimeoutMilliseconds", "middlewareTimeoutMilliseconds", "maximumInputBytes", "maximumResultBytes") {
		set := func(k string, dst *int64) {
			if v, ok := n.Lookup(k); ok {
				*dst = d.integer(v, "$.settings."+k, 1, maxSettingInteger)
			}
		}
		set("checkTimeoutMilliseconds", &p.Settings.CheckTimeoutMilliseconds)
		set("middlewareTimeoutMilliseconds", &p.Settings.MiddlewareTimeoutMilliseconds)
		set("maximumInputBytes", &p.Settings.MaximumInputBytes)
		set("maximumResultBytes", &p.Settings.MaximumResultBytes)
	}
	if n, ok := f("facts"); ok {
		p.Facts = d.strList(n, "$.facts")
	}
	if n, ok := f("maximumHistoryRecords"); ok {
		p.MaximumHistoryRecords = int(d.integer(n, "$.maximumHistoryRecords", MinMaximumHistoryRecords, MaxMaximumHistoryRecords))
	}
	if n, ok := f("maximumConcurrentChecks"); ok {
		p.MaximumConcurrentChecks = int(d.integer(n, "$.maximumConcurrentChecks", 1, MaxMaximumConcurrentChecks))
	}
	if d.err != nil {
		return nil
	}
	// cross-field rules
	needsProvider := p.English != nil || p.usesCollectiveNorms()
	if needsProvider && p.DecisionProvider == nil {
		d.fail(root, "$.decisionProvider", "required with \"english\" or the collective norms (not-configured): want {\"kind\": \"jev\", \"model\": ...} or {\"kind\": \"unavailable\"}")
		return nil
	}
	if p.English != nil {
		d.checkRuleIDs(p, root.Get("english"))
	}
	if d.err != nil {
		return nil
	}
	return p
}

func (p *Policy) usesCollectiveNorms() bool {
	for _, m := range p.Incoming {
		if m.Use == UseCollectiveNorms {
			return true
		}
	}
	for _, m := range p.Outgoing {
		if m.Use == UseCollectiveNorms {
			return true
		}
	}
	return false
}

func (d *policyDecoder) chain(n *jsontree.Value, path, direction string) []MiddlewareSpec {
	out := []MiddlewareSpec{}
	if n.Kind != jsontree.Array {
		d.fail(n, path, "expected an array of middleware, got %s", n.Kind.String())
		return out
	}
	seen := map[string]bool{}
	for i, it := range n.Arr {
		ip := fmt.Sprintf("%s[%d]", path, i)
		if it.Kind != jsontree.Object {
			d.fail(it, ip, "expected an object {\"use\": ...}, got %s", it.Kind.String())
			return out
		}
		un, ok := it.Lookup("use")
		if !ok {
			d.fail(it, ip+".use", "required property is missing")
			return out
		}
		use := d.str(un, ip+".use", false)
		if d.err != nil {
			return out
		}
		var allowed []string
		dirOK := false
		switch use {
		case UseAcknowledgements:
			allowed, dirOK = []string{"use"}, direction == "incoming"
		case UseAllowedSenders:
			allowed, dirOK = []string{"use", "agentIds"}, direction == "incoming"
		case UseCredentials:
			allowed, dirOK = []string{"use"}, direction == "outgoing"
		case UsePlainLanguage:
			allowed, dirOK = []string{"use", "toolNames", "toolNamePrefixes", "invocationToolNames"}, direction == "outgoing"
		case UseCollectiveNorms:
			dirOK = true
			if direction == "outgoing" {
				allowed = []string{"use", "facilitator"}
			} else {
				allowed = []string{"use"}
			}
		default:
			d.fail(un, ip+".use", "unknown built-in middleware %q (want acknowledgements, allowed-senders, credentials, plain-language or collective-norms)", use)
			return out
		}
		if !dirOK {
			d.fail(un, ip+".use", "middleware %q is not available in the %s direction", use, direction)
			return out
		}
		if seen[use] {
			d.fail(un, ip+".use", "middleware %q is already installed in the %s chain", use, direction)
			return out
		}
		seen[use] = true
		if !d.object(it, ip, allowed...) {
			return out
		}
		m := MiddlewareSpec{Use: use}
		switch use {
		case UseAllowedSenders:
			v, ok := it.Lookup("agentIds")
			if !ok {
				d.fail(it, ip+".agentIds", "required property is missing (an empty list admits none)")
				return out
			}
			m.AgentIDs = d.strList(v, ip+".agentIds")
		case UsePlainLanguage:
			m.ToolNames, m.ToolNamePrefixes, m.InvocationToolNames = []string{}, []string{}, []string{}
			if v, ok := it.Lookup("toolNames"); ok {
				m.ToolNames = d.strList(v, ip+".toolNames")
			}
			if v, ok := it.Lookup("toolNamePrefixes"); ok {
				m.ToolNamePrefixes = d.strList(v, ip+".toolNamePrefixes")
			}
			if v, ok := it.Lookup("invocationToolNames"); ok {
				m.InvocationToolNames = d.strList(v, ip+".invocationToolNames")
			}
		case UseCollectiveNorms:
			if direction == "outgoing" {
				v, ok := it.Lookup("facilitator")
				if !ok {
					d.fail(it, ip+".facilitator", "required property is missing: the outgoing collective norms name the facilitator's agent id")
					return out
				}
				m.Facilitator = d.str(v, ip+".facilitator", true)
			}
		}
		if d.err != nil {
			return out
		}
		out = append(out, m)
	}
	return out
}

func (d *policyDecoder) english(n *jsontree.Value, path string) *EnglishSpec {
	e := &EnglishSpec{FixedRules: []EnglishRule{}, InitialRules: []EnglishRule{}}
	if !d.object(n, path, "fixedRules", "initialRules") {
		return e
	}
	if v, ok := n.Lookup("fixedRules"); ok {
		e.FixedRules = d.rules(v, path+".fixedRules")
	}
	if v, ok := n.Lookup("initialRules"); ok {
		e.InitialRules = d.rules(v, path+".initialRules")
		if len(e.InitialRules) > MaxEditableRules {
			d.fail(v, path+".initialRules", "%d rules exceed the editable document's limit of %d", len(e.InitialRules), MaxEditableRules)
		}
	}
	return e
}

func (d *policyDecoder) rules(n *jsontree.Value, path string) []EnglishRule {
	out := []EnglishRule{}
	if n.Kind != jsontree.Array {
		d.fail(n, path, "expected an array of English rules, got %s", n.Kind.String())
		return out
	}
	for i, it := range n.Arr {
		ip := fmt.Sprintf("%s[%d]", path, i)
		if !d.object(it, ip, "id", "kind", "text", "guidance", "feedback") {
			return out
		}
		var r EnglishRule
		for _, req := range []string{"id", "kind", "text"} {
			if _, ok := it.Lookup(req); !ok {
				d.fail(it, ip+"."+req, "required property is missing")
				return out
			}
		}
		r.ID = d.str(it.Get("id"), ip+".id", true)
		r.Kind = d.str(it.Get("kind"), ip+".kind", false)
		if d.err == nil && r.Kind != KindNorm && r.Kind != KindAutonomy && r.Kind != KindSafety {
			d.fail(it.Get("kind"), ip+".kind", "unknown rule kind %q (want norm, autonomy or safety)", r.Kind)
		}
		r.Text = d.str(it.Get("text"), ip+".text", true)
		if v, ok := it.Lookup("guidance"); ok {
			r.Guidance = d.str(v, ip+".guidance", false)
		}
		if d.err == nil && r.Kind == KindNorm && strings.TrimSpace(r.Guidance) == "" {
			at := it
			if v, ok := it.Lookup("guidance"); ok {
				at = v
			}
			d.fail(at, ip+".guidance", "a norm requires a non-empty guidance template")
		}
		if v, ok := it.Lookup("feedback"); ok && d.err == nil {
			if d.object(v, ip+".feedback", "text", "nextAction") {
				fb := &Feedback{}
				for _, req := range []string{"text", "nextAction"} {
					if _, ok := v.Lookup(req); !ok {
						d.fail(v, ip+".feedback."+req, "required property is missing")
						return out
					}
				}
				fb.Text = d.str(v.Get("text"), ip+".feedback.text", true)
				fb.NextAction = d.str(v.Get("nextAction"), ip+".feedback.nextAction", false)
				switch fb.NextAction {
				case NextRevise, NextWait, NextStop, NextSeekApproval:
				default:
					if d.err == nil {
						d.fail(v.Get("nextAction"), ip+".feedback.nextAction", "unknown next action %q (want revise, wait, stop or seek-approval)", fb.NextAction)
					}
				}
				r.Feedback = fb
			}
		}
		if d.err != nil {
			return out
		}
		out = append(out, r)
	}
	return out
}

func (d *policyDecoder) provider(n *jsontree.Value, path string) *ProviderSpec {
	if n.Kind != jsontree.Object {
		d.fail(n, path, "expected an object, got %s", n.Kind.String())
		return nil
	}
	kn, ok := n.Lookup("kind")
	if !ok {
		d.fail(n, path+".kind", "required property is missing (want \"jev\" or \"unavailable\")")
		return nil
	}
	kind := d.str(kn, path+".kind", false)
	if d.err != nil {
		return nil
	}
	switch kind {
	case "jev":
		if !d.object(n, path, "kind", "model") {
			return nil
		}
		mn, ok := n.Lookup("model")
		if !ok {
			d.fail(n, path+".model", "required property is missing for kind \"jev\"")
			return nil
		}
		return &ProviderSpec{Kind: kind, Model: d.str(mn, path+".model", true)}
	case "unavailable":
		if !d.object(n, path, "kind") {
			return nil
		}
		return &ProviderSpec{Kind: kind}
	}
	d.fail(kn, path+".kind", "unknown decision provider kind %q (want \"jev\" or \"unavailable\")", kind)
	return nil
}

func (d *policyDecoder) checkRuleIDs(p *Policy, en *jsontree.Value) {
	builtin := map[string]bool{}
	for _, id := range BuiltinRuleIDs() {
		builtin[id] = true
	}
	seenFixed := map[string]bool{}
	for i, r := range p.English.FixedRules {
		at := en.Get("fixedRules").Arr[i]
		path := fmt.Sprintf("$.english.fixedRules[%d].id", i)
		if builtin[r.ID] {
			d.fail(at.Get("id"), path, "rule id %q collides with a built-in code rule id", r.ID)
			return
		}
		if seenFixed[r.ID] {
			d.fail(at.Get("id"), path, "duplicate rule id %q", r.ID)
			return
		}
		seenFixed[r.ID] = true
	}
	seen := map[string]bool{}
	for i, r := range p.English.InitialRules {
		at := en.Get("initialRules").Arr[i]
		path := fmt.Sprintf("$.english.initialRules[%d].id", i)
		if builtin[r.ID] {
			d.fail(at.Get("id"), path, "rule id %q collides with a built-in code rule id", r.ID)
			return
		}
		if seenFixed[r.ID] {
			d.fail(at.Get("id"), path, "rule id %q collides with a fixed English rule id (fixed-rule)", r.ID)
			return
		}
		if seen[r.ID] {
			d.fail(at.Get("id"), path, "duplicate rule id %q in the editable document", r.ID)
			return
		}
		seen[r.ID] = true
	}
}

// Installation returns the canonical installation: the decoded document
// with every default filled in, plus the provenance of each middleware
// (id, revision, declared rules) and the fixed English rule ids. Its
// canonical JSON is what ActiveRevision hashes.
func (p *Policy) Installation() map[string]any {
	chain := func(dir string, ms []MiddlewareSpec) []any {
		out := []any{}
		for _, m := range ms {
			mw := builtinMiddleware(m, dir, p)
			rules := []any{}
			for _, r := range mw.Rules {
				rules = append(rules, map[string]any{"id": r.ID, "kind": r.Kind, "english": r.English})
			}
			out = append(out, map[string]any{
				"use":        m.Use,
				"parameters": m,
				"middleware": mw.ID,
				"revision":   mw.Revision,
				"rules":      rules,
			})
		}
		return out
	}
	inst := map[string]any{
		"format":                  p.Format,
		"mode":                    p.Mode,
		"incoming":                chain("incoming", p.Incoming),
		"outgoing":                chain("outgoing", p.Outgoing),
		"english":                 nil,
		"decisionProvider":        nil,
		"englishSettings":         p.EnglishSettings,
		"settings":                p.Settings,
		"facts":                   p.Facts,
		"maximumHistoryRecords":   p.MaximumHistoryRecords,
		"maximumConcurrentChecks": p.MaximumConcurrentChecks,
		"questionEdition":         QuestionEdition,
	}
	if p.English != nil {
		fixed := []string{}
		for _, r := range p.English.FixedRules {
			fixed = append(fixed, r.ID)
		}
		inst["english"] = map[string]any{
			"middleware":   EnglishMiddlewareID,
			"policy":       EnglishPolicyID,
			"fixedRules":   p.English.FixedRules,
			"initialRules": p.English.InitialRules,
			"fixedRuleIds": fixed,
		}
	}
	if p.DecisionProvider != nil {
		inst["decisionProvider"] = p.DecisionProvider
	}
	return inst
}

// CanonicalInstallation returns the canonical JSON bytes of the installation.
func (p *Policy) CanonicalInstallation() ([]byte, error) {
	b, err := canon.Marshal(p.Installation())
	if err != nil {
		return nil, fmt.Errorf("canonical installation: %w", err)
	}
	return b, nil
}

// ActiveRevision is the SHA-256 (lowercase hex) of the canonical JSON of the
// installation: identical installations have identical revisions.
func (p *Policy) ActiveRevision() (string, error) {
	b, err := p.CanonicalInstallation()
	if err != nil {
		return "", err
	}
	return sha256Hex(b), nil
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
