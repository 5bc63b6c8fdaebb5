package seal

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"
	"unicode/utf8"

	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/jsontree"
)

// Spec is an agent spec: what the seal is made from.
type Spec struct {
	SystemPrompt string
	Tools        []Tool
	WitnessID    string
	// The MCP surface the agent may use (Body has the same fields and
	// rules): nil lists and bools when the spec does not say.
	Resources   []string
	Prompts     []string
	Sampling    *bool
	Elicitation *bool
	// Untrusted marks external-content sources (Body.Untrusted).
	Untrusted []string
	// PromptFile is the file system_prompt_file named, as LoadSpec read
	// it ("" when the prompt is inline); writers list it as an input.
	PromptFile string
}

// defaultWitnessID is used when no flag, spec field or ATW_WITNESS_ID gives one.
const defaultWitnessID = "witness-cli-local"

// LoadSpec reads an agent spec file; system_prompt_file is read relative to
// the spec file's folder.
func LoadSpec(path string) (*Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, exitcode.Input("read agent spec", err, "check the path given to --spec")
	}
	dir := filepath.Dir(path)
	var read string
	sp, err := ParseSpec(data, path, func(rel string) ([]byte, error) {
		p := rel
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, rel)
		}
		read = p
		return os.ReadFile(p)
	})
	if sp != nil {
		sp.PromptFile = read
	}
	return sp, err
}

// ParseSpec strictly parses an agent spec (named name in errors). Errors
// carry exitcode.Usage: a spec is configuration, not evidence. readFile
// resolves system_prompt_file (nil refuses it).
func ParseSpec(data []byte, name string, readFile func(string) ([]byte, error)) (*Spec, error) {
	bad := func(err error) error {
		return exitcode.New(exitcode.Usage, fmt.Errorf("agent spec %w", err), "see docs/formats/seal.md for the agent spec format")
	}
	root, err := jsontree.Parse(data, name)
	if err != nil {
		return nil, bad(err)
	}
	var perr error
	r := jsontree.NewObjectReader(name, "", root, &perr)
	sp := &Spec{}
	hasPrompt, hasFile := r.Has("system_prompt"), r.Has("system_prompt_file")
	switch {
	case hasPrompt && hasFile:
		r.Fail("system_prompt_file", "give system_prompt or system_prompt_file, not both")
	case hasPrompt:
		sp.SystemPrompt = r.String("system_prompt", true)
		if perr == nil && sp.SystemPrompt == "" {
			r.Fail("system_prompt", "must be a non-empty string")
		}
	case hasFile:
		f := r.String("system_prompt_file", true)
		if perr == nil {
			switch {
			case f == "":
				r.Fail("system_prompt_file", "must be a non-empty path")
			case readFile == nil:
				r.Fail("system_prompt_file", "not supported here")
			default:
				b, err := readFile(f)
				switch {
				case err != nil:
					r.Fail("system_prompt_file", fmt.Sprintf("cannot read %s: %v", f, err))
				case len(b) == 0:
					r.Fail("system_prompt_file", fmt.Sprintf("%s is empty", f))
				case !utf8.Valid(b):
					r.Fail("system_prompt_file", fmt.Sprintf("%s is not valid UTF-8", f))
				default:
					sp.SystemPrompt = string(b)
				}
			}
		}
	default:
		r.Fail("system_prompt", "missing (give system_prompt or system_prompt_file)")
	}
	seen := map[string]bool{}
	n := r.Objects("tools", true, func(i int, t *jsontree.ObjectReader) {
		tool := Tool{Name: t.String("name", true), Scopes: t.Strings("scopes", false)}
		if tool.Scopes == nil {
			tool.Scopes = []string{}
		}
		if t.Has("definition_sha256") {
			tool.DefinitionSHA256 = t.String("definition_sha256", true)
			if perr == nil && !isLowerHex(tool.DefinitionSHA256, 64) {
				t.Fail("definition_sha256", "want 64 lowercase hex digits (sha256 of the canonical JSON of the tool definition)")
			}
		}
		// the server's annotations, as `witness seal init` copies them:
		// informational, never signed
		t.Object("annotations", false)
		t.Done()
		if perr == nil && tool.Name == "" {
			t.Fail("name", "must be non-empty")
		}
		if perr == nil && seen[tool.Name] {
			t.Fail("name", fmt.Sprintf("tool %q is listed twice", tool.Name))
		}
		seen[tool.Name] = true
		sp.Tools = append(sp.Tools, tool)
	})
	if r.Has("witness_id") {
		sp.WitnessID = r.String("witness_id", true)
	}
	sp.Resources, sp.Prompts, sp.Sampling, sp.Elicitation = readSurface(r, &perr, name)
	sp.Untrusted = readUntrusted(r, &perr, name)
	r.Done()
	if perr == nil && n == 0 {
		r.Fail("tools", "must list at least one tool")
	}
	if perr != nil {
		return nil, bad(perr)
	}
	return sp, nil
}

// BodyOptions say how a body is made from a spec.
type BodyOptions struct {
	// WitnessID from a flag; wins over the spec and the environment.
	WitnessID string
	// Getenv reads ATW_WITNESS_ID and ATW_WITNESS_TS.
	Getenv func(string) string
	// Now is the clock when ATW_WITNESS_TS is unset (default time.Now).
	Now func() time.Time
}

// pythonISO formats t as Python's datetime.isoformat() of a UTC time:
// YYYY-MM-DDTHH:MM:SS[.ffffff]+00:00, the fraction only when non-zero.
func pythonISO(t time.Time) string {
	t = t.UTC().Truncate(time.Microsecond)
	if t.Nanosecond() == 0 {
		return t.Format("2006-01-02T15:04:05+00:00")
	}
	return t.Format("2006-01-02T15:04:05.000000+00:00")
}

// NewBody makes the body to sign: prompt hash, tools in spec order,
// created_at from ATW_WITNESS_TS or the clock, witness_id from the flag,
// the spec, ATW_WITNESS_ID, else witness-cli-local.
func NewBody(sp *Spec, opts BodyOptions) (Body, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	b := Body{}
	sum := sha256.Sum256([]byte(sp.SystemPrompt))
	b.SystemPromptSHA256 = hex.EncodeToString(sum[:])
	b.Tools = append([]Tool(nil), sp.Tools...)
	b.Resources, b.Prompts = cloneList(sp.Resources), cloneList(sp.Prompts)
	b.Untrusted = cloneList(sp.Untrusted)
	b.Sampling, b.Elicitation = cloneBool(sp.Sampling), cloneBool(sp.Elicitation)
	switch {
	case opts.WitnessID != "":
		b.WitnessID = opts.WitnessID
	case sp.WitnessID != "":
		b.WitnessID = sp.WitnessID
	case getenv("ATW_WITNESS_ID") != "":
		b.WitnessID = getenv("ATW_WITNESS_ID")
	default:
		b.WitnessID = defaultWitnessID
	}
	if ts := getenv("ATW_WITNESS_TS"); ts != "" {
		if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
			return Body{}, exitcode.New(exitcode.Usage, fmt.Errorf("ATW_WITNESS_TS %q is not an RFC 3339 timestamp", ts),
				"use the form 2026-08-30T14:33:00+00:00")
		}
		b.CreatedAt = ts
	} else {
		b.CreatedAt = pythonISO(now())
	}
	return b, nil
}
