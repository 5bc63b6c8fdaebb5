package verify

// Plan is what the checks need from a seal: its digest, witness id, sealed
// system-prompt hash and tools. PlanFromSeal builds it from a loaded seal.
type Plan struct {
	Ref                string // sha256 hex of the seal's canonical JSON (0.1.0's seal_ref)
	WitnessID          string
	SystemPromptSHA256 string
	Tools              []PlanTool

	// The MCP surface the seal allows (seal.Body): nil when the seal says
	// nothing, so the check is reported as not checkable; an empty list
	// allows nothing.
	Resources   []string // resource URI patterns (seal.ResourcePattern)
	Prompts     []string // prompt names
	Sampling    *bool    // may the host answer sampling/createMessage
	Elicitation *bool    // may the host answer elicitation/create
	// Untrusted are the seal's untrusted sources (seal.UntrustedSource):
	// nil when the seal marks none.
	Untrusted []string
}

// PlanTool is one sealed tool.
type PlanTool struct {
	Name             string
	Scopes           []string
	DefinitionSHA256 string // pinned tool definition, "" when not pinned
}
