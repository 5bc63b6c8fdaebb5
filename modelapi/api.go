package modelapi

import "strings"

// API names a model API wire format.
type API string

// The APIs modelapi reads. APINone is a request that is none of them.
const (
	APINone              API = ""
	apiOpenAIChat        API = "openai.chat"
	apiOpenAIResponses   API = "openai.responses"
	apiAnthropicMessages API = "anthropic.messages"
)

// Detect names the API of an HTTP request by its method and path. Only POST
// counts. The query is ignored, and any prefix before the API's own path is
// allowed, since SDKs take a base URL (a gateway's /openai/v1/..., Azure's
// /openai/deployments/{name}/chat/completions):
//
//   - a path ending in /chat/completions is OpenAI Chat Completions;
//   - a path ending in /v1/responses or /openai/responses is OpenAI Responses;
//   - a path ending in /v1/messages is Anthropic Messages.
//
// The path must end exactly there: /v1/messages/count_tokens,
// /v1/responses/{id} and /v1/threads/{id}/messages are not model calls.
func Detect(method, path string) API {
	if method != "POST" {
		return APINone
	}
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	switch {
	case strings.HasSuffix(path, "/chat/completions"):
		return apiOpenAIChat
	case strings.HasSuffix(path, "/v1/responses"), strings.HasSuffix(path, "/openai/responses"):
		return apiOpenAIResponses
	case strings.HasSuffix(path, "/v1/messages"):
		return apiAnthropicMessages
	}
	return APINone
}

func (a API) valid() bool {
	return a == apiOpenAIChat || a == apiOpenAIResponses || a == apiAnthropicMessages
}

// limits bound what one exchange may cost. A limit that is reached is
// reported in the payload's problems and makes the output partial; the
// bytes themselves stay in the cassette.
type limits struct {
	// MaxEventBytes is the largest server-sent event (all its lines) that
	// is read; a longer one is skipped, without being buffered.
	MaxEventBytes int
	// MaxBodyBytes is the largest non-streamed body that is read.
	MaxBodyBytes int
	// MaxTextBytes bounds the assembled text, refusal, reasoning and tool
	// call arguments of one output together.
	MaxTextBytes int
	// MaxParts bounds the tool calls, content blocks and output items of
	// one output.
	MaxParts int
}

// defaultLimits returns the limits NewAssembler, ParseResponse and Read
// use: events up to 16 MiB, bodies up to 64 MiB, 64 MiB of assembled text,
// 1024 parts.
func defaultLimits() limits {
	return limits{
		MaxEventBytes: 16 << 20,
		MaxBodyBytes:  64 << 20,
		MaxTextBytes:  64 << 20,
		MaxParts:      1024,
	}
}
