package verify

// Plan is what the checks need from a seal: its digest, witness id, sealed
// system-prompt hash and tools. PlanFromSeal builds it from a loaded seal.
type Plan struct {
	Ref                string // sha256 hex of the seal's canonical JSON (0.1.0's seal_ref)
	WitnessID          string
	SystemPromptSHA256 string
	Tools              []PlanTool
}

// PlanTool is one sealed tool.
type PlanTool struct {
	Name             string
	Scopes           []string
	DefinitionSHA256 string // pinned tool definition, "" when not pinned
}
