// Package httpproxy is the HTTP side of `witness proxy`: `witness proxy
// --listen`, the recording HTTP proxy.
//
// Run is a reverse proxy for model APIs (OpenAI, Anthropic and anything
// else over HTTP) that records every exchange into an HTTP cassette
// (package cassette, docs/formats/http-cassette.md) before it forwards a
// byte: the request body is written to the cassette as it is read from the
// client and before it goes upstream, each response chunk before it goes
// to the client, which receives it at once (server-sent events are never
// buffered to the end). Credential headers are replaced by keyed hashes
// and the body redaction rules of package derive apply, so no secret
// reaches the disk; what is forwarded is never changed (hop-by-hop headers
// aside). Beside the cassette it writes a signed event log whose events
// a derive.ExchangeDeriver makes from each recorded exchange.
//
// The servers that replay such a cassette (`witness serve --listen`) are
// package serve/httpserve; what the proxy and they share is
// internal/httplocal.
//
// docs/design/http-proxy.md explains the choices.
package httpproxy
