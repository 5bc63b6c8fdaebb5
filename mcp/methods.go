package mcp

// The MCP methods the witness spells, once: every non-test Go file names a
// method by these constants (internal/archtest TestMethodNamesSpeltOnce
// checks it).
const (
	MethodInitialize             = "initialize"
	MethodPing                   = "ping"
	MethodToolsCall              = "tools/call"
	MethodToolsList              = "tools/list"
	MethodResourcesList          = "resources/list"
	MethodResourcesRead          = "resources/read"
	MethodResourcesSubscribe     = "resources/subscribe"
	MethodResourcesUnsubscribe   = "resources/unsubscribe"
	MethodResourcesTemplatesList = "resources/templates/list"
	MethodPromptsList            = "prompts/list"
	MethodPromptsGet             = "prompts/get"
	methodCompletionComplete     = "completion/complete"
	methodLoggingSetLevel        = "logging/setLevel"
	MethodRootsList              = "roots/list"
	MethodSamplingCreateMessage  = "sampling/createMessage"
	MethodElicitationCreate      = "elicitation/create"

	NotificationInitialized          = "notifications/initialized"
	NotificationCancelled            = "notifications/cancelled"
	NotificationProgress             = "notifications/progress"
	NotificationMessage              = "notifications/message"
	NotificationToolsListChanged     = "notifications/tools/list_changed"
	notificationPromptsListChanged   = "notifications/prompts/list_changed"
	notificationResourcesListChanged = "notifications/resources/list_changed"
	notificationResourcesUpdated     = "notifications/resources/updated"
	notificationRootsListChanged     = "notifications/roots/list_changed"
)
