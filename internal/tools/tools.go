//go:build tools

// Package tools records module dependencies that only test fixtures use:
// testdata/servers/gosdk, the MCP server the capture and proxy tests build
// with the official Go SDK. Go ignores testdata folders, so without this
// import `go mod tidy` would drop the SDK from go.mod and those builds would
// fail.
package tools

import (
	_ "github.com/modelcontextprotocol/go-sdk/mcp"
)
