package seal

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"

	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/jsontree"
	"github.com/agent-trace-witness/witness/keyring"
)

// Tool is one tool the agent may use, with its scopes.
type Tool struct {
	Name   string   `json:"name"`
	Scopes []string `json:"scopes"`
	// DefinitionSHA256 optionally pins the MCP tool definition: the sha256
	// (lowercase hex) of the canonical JSON of the definition object as the
	// server lists it. Omitted when empty, so 0.1.0 bodies are unchanged.
	DefinitionSHA256 string `json:"definition_sha256,omitempty"`
}

// Body is the signed part of a seal: exactly these fields. The MCP surface
// members (Resources, Prompts, Sampling, Elicitation) are signed only when
// set, so a body without them is exactly 0.1.0's (docs/formats/seal.md).
type Body struct {
	CreatedAt          string `json:"created_at"`
	SystemPromptSHA256 string `json:"system_prompt_sha256"`
	Tools              []Tool `json:"tools"`
	WitnessID          string `json:"witness_id"`

	// Resources lists the resource URI patterns (ResourcePattern) the
	// agent may read or subscribe to. nil: the seal says nothing, and
	// resource reads are not checked; empty (non-nil): no resource may be
	// read.
	Resources []string `json:"-"`
	// Prompts lists the prompt names the agent may get (prompts/get),
	// with the same nil and empty rule as Resources.
	Prompts []string `json:"-"`
	// Sampling says whether the host may answer the server's
	// sampling/createMessage requests; nil: the seal says nothing.
	Sampling *bool `json:"-"`
	// Elicitation says whether the host may answer the server's
	// elicitation/create requests (ask the user); nil: the seal says
	// nothing.
	Elicitation *bool `json:"-"`
	// Untrusted marks the sources whose output is external content
	// (UntrustedSource): "tool:NAME", "tool:NAME:SCOPE",
	// "resource:URI-PATTERN". nil: the seal says nothing (signed only
	// when set, like Resources).
	Untrusted []string `json:"-"`
}

// signedFields returns the signed members: the four 0.1.0 keys, and each
// MCP surface member that is set.
func (b Body) signedFields() map[string]any {
	m := map[string]any{
		"created_at":           b.CreatedAt,
		"system_prompt_sha256": b.SystemPromptSHA256,
		"tools":                toolsForJSON(b.Tools),
		"witness_id":           b.WitnessID,
	}
	if b.Resources != nil {
		m["resources"] = b.Resources
	}
	if b.Prompts != nil {
		m["prompts"] = b.Prompts
	}
	if b.Sampling != nil {
		m["sampling"] = *b.Sampling
	}
	if b.Elicitation != nil {
		m["elicitation"] = *b.Elicitation
	}
	if b.Untrusted != nil {
		m["untrusted"] = b.Untrusted
	}
	return m
}

// cloneList copies a list, keeping nil nil and empty empty (the two mean
// different things in a seal).
func cloneList(l []string) []string {
	if l == nil {
		return nil
	}
	return append([]string{}, l...)
}

func cloneBool(b *bool) *bool {
	if b == nil {
		return nil
	}
	v := *b
	return &v
}

// Cosignature is another witness's signature over the same canonical body.
type Cosignature struct {
	KeyID string `json:"key_id"`
	Alg   string `json:"alg"` // hmac-sha256 | ed25519
	Sig   string `json:"sig"` // lowercase hex (hmac) | standard base64 (ed25519)
	// PublicKey is the signer's Ed25519 public key (base64), for
	// information only: verification uses the verifier's trusted keys.
	PublicKey string `json:"public_key,omitempty"`
}

// Sealed is a signed seal as stored in a seal file.
type Sealed struct {
	Body
	// Signature is "hmac-sha256:<64 lowercase hex>" or "ed25519:<base64>".
	Signature string
	// KeyID names the signing key; "" for seals made with a legacy
	// ATW_WITNESS_KEY key or by 0.1.0. Not signed.
	KeyID string
	// Cosignatures by other keys over the same body. Not signed.
	Cosignatures []Cosignature
}

// Signature algorithm tags.
const (
	algHMACSHA256 = keyring.SigHMACSHA256
	algEd25519    = keyring.SigEd25519
)

// canonicalBody returns the signed bytes: the canonical JSON of the body.
func (b Body) canonicalBody() ([]byte, error) {
	return canon.Marshal(b.signedFields())
}

// Digest is the sha256 (hex) of the canonical body: the in-toto subject.
func (b Body) Digest() (string, error) {
	c, err := b.canonicalBody()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}

// splitSignature splits "alg:value" at the first colon.
func splitSignature(sig string) (alg, value string, ok bool) {
	return strings.Cut(sig, ":")
}

// Ref is 0.1.0's seal_ref: sha256 hex of the canonical JSON of the five
// keys created_at, signature, system_prompt_sha256, tools and witness_id,
// and of the MCP surface members when set (never key_id, never
// cosignatures, so cosigning keeps the ref).
func (s *Sealed) Ref() string {
	m := s.signedFields()
	m["signature"] = s.Signature
	c, err := canon.Marshal(m)
	if err != nil {
		// Only invalid UTF-8 can fail, and Parse refuses it.
		return ""
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:])
}

func toolsForJSON(tools []Tool) []Tool {
	out := make([]Tool, len(tools))
	for i, t := range tools {
		if t.Scopes == nil {
			t.Scopes = []string{}
		}
		out[i] = t
	}
	return out
}

// allowsTool returns the sealed tool with that name.
func (s *Sealed) allowsTool(name string) (Tool, bool) {
	for _, t := range s.Tools {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

// Marshal returns the seal file bytes: indented JSON with sorted keys and
// raw UTF-8, no trailing newline (as 0.1.0 writes it), with key_id and
// cosignatures beside the signed fields when present.
func (s *Sealed) Marshal() ([]byte, error) {
	m := s.signedFields()
	m["signature"] = s.Signature
	if s.KeyID != "" {
		m["key_id"] = s.KeyID
	}
	if len(s.Cosignatures) > 0 {
		m["cosignatures"] = s.Cosignatures
	}
	c, err := canon.Marshal(m)
	if err != nil {
		return nil, err
	}
	return canon.Indent(c)
}

// Load reads and strictly parses a seal file. Every error carries
// exitcode.Tampered: a seal that does not parse is invalid evidence.
func Load(path string) (*Sealed, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, exitcode.Input("read seal", err, "check the path of the seal file")
	}
	return Parse(data, path)
}

func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Parse strictly parses seal file content (named name in errors): required
// fields, exact types, no unknown fields, a known signature algorithm.
func Parse(data []byte, name string) (*Sealed, error) {
	bad := func(err error) error {
		return exitcode.New(exitcode.Tampered, fmt.Errorf("seal %w", err),
			"the seal file is not a valid witness seal; use the file 'witness seal' wrote")
	}
	root, err := jsontree.Parse(data, name)
	if err != nil {
		return nil, bad(err)
	}
	var perr error
	r := jsontree.NewObjectReader(name, "", root, &perr)
	s := &Sealed{}
	s.CreatedAt = r.String("created_at", true)
	s.SystemPromptSHA256 = r.String("system_prompt_sha256", true)
	n := r.Objects("tools", true, func(i int, t *jsontree.ObjectReader) {
		tool := Tool{Name: t.String("name", true), Scopes: t.Strings("scopes", true)}
		if t.Has("definition_sha256") {
			tool.DefinitionSHA256 = t.String("definition_sha256", true)
			if perr == nil && !isLowerHex(tool.DefinitionSHA256, 64) {
				t.Fail("definition_sha256", "want 64 lowercase hex digits")
			}
		}
		t.Done()
		s.Tools = append(s.Tools, tool)
	})
	s.WitnessID = r.String("witness_id", true)
	s.Resources, s.Prompts, s.Sampling, s.Elicitation = readSurface(r, &perr, name)
	s.Untrusted = readUntrusted(r, &perr, name)
	s.Signature = r.String("signature", true)
	if r.Has("key_id") {
		s.KeyID = r.String("key_id", true)
		if perr == nil && s.KeyID == "" {
			r.Fail("key_id", "must be non-empty when present")
		}
	}
	if r.Has("cosignatures") {
		r.Objects("cosignatures", true, func(i int, c *jsontree.ObjectReader) {
			cs := Cosignature{KeyID: c.String("key_id", true), Alg: c.String("alg", true), Sig: c.String("sig", true)}
			if c.Has("public_key") {
				cs.PublicKey = c.String("public_key", true)
			}
			c.Done()
			if perr == nil && cs.Alg != algHMACSHA256 && cs.Alg != algEd25519 {
				c.Fail("alg", fmt.Sprintf("unknown algorithm %q (known: hmac-sha256, ed25519)", cs.Alg))
			}
			if perr == nil && cs.KeyID == "" {
				c.Fail("key_id", "must be non-empty")
			}
			s.Cosignatures = append(s.Cosignatures, cs)
		})
	}
	r.Done()
	if perr == nil {
		switch {
		case n == 0:
			r.Fail("tools", "must list at least one tool")
		case !isLowerHex(s.SystemPromptSHA256, 64):
			r.Fail("system_prompt_sha256", "want 64 lowercase hex digits")
		}
	}
	if perr == nil {
		alg, _, ok := splitSignature(s.Signature)
		switch {
		case !ok:
			r.Fail("signature", `want "ALGORITHM:VALUE" (e.g. "hmac-sha256:<64 hex>")`)
		case alg != algHMACSHA256 && alg != algEd25519:
			r.Fail("signature", fmt.Sprintf("unknown algorithm %q (known: hmac-sha256, ed25519)", alg))
		}
	}
	if perr != nil {
		return nil, bad(perr)
	}
	return s, nil
}
