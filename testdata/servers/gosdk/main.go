// Command gosdk is a stdio MCP server built with the official Go SDK
// (github.com/modelcontextprotocol/go-sdk), used by the witness tests and
// the demo as a real, independently implemented peer. It pages tools/list
// two tools at a time, has a tool that returns isError, a destructive tool,
// and a tool whose call makes the server send notifications/tools/list_changed.
//
// With GOSDK_TRACE set to a file name, every tool the server runs appends
// one line {"tool":NAME,"arguments":RAW,"id":ID} to that file: the ground
// truth of what the server did, which the hostile-host tests compare with
// the witness's evidence.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type greetIn struct {
	Name string `json:"name" jsonschema:"who to greet"`
}
type greetOut struct {
	Greeting string `json:"greeting"`
}

type addIn struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}
type addOut struct {
	Sum float64 `json:"sum"`
}

type failIn struct {
	Why string `json:"why,omitempty"`
}

type deleteIn struct {
	Path string `json:"path" jsonschema:"file to delete (nothing is deleted: a fixture)"`
}

type sleepIn struct {
	Ms int `json:"ms"`
}

type empty struct{}

// trace appends what the server is about to run to $GOSDK_TRACE.
func trace(req *mcp.CallToolRequest) {
	name := os.Getenv("GOSDK_TRACE")
	if name == "" || req == nil || req.Params == nil {
		return
	}
	args := req.Params.Arguments
	if len(args) == 0 {
		args = json.RawMessage("null")
	}
	line, err := json.Marshal(struct {
		Tool      string          `json:"tool"`
		Arguments json.RawMessage `json:"arguments"`
	}{req.Params.Name, args})
	if err != nil {
		log.Printf("trace: %v", err)
		return
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		log.Printf("trace: %v", err)
		return
	}
	defer f.Close()
	if _, err := f.Write(append(line, '\n')); err != nil {
		log.Printf("trace: %v", err)
	}
}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "witness-gosdk-fixture", Version: "1.0.0"}, &mcp.ServerOptions{PageSize: 2})
	mcp.AddTool(s, &mcp.Tool{Name: "greet", Description: "say hi", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in greetIn) (*mcp.CallToolResult, greetOut, error) {
			trace(req)
			return nil, greetOut{Greeting: "Hi " + in.Name}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "add two numbers", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
			trace(req)
			return nil, addOut{Sum: in.A + in.B}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "always fails with a tool execution error (isError)"},
		func(ctx context.Context, req *mcp.CallToolRequest, in failIn) (*mcp.CallToolResult, any, error) {
			trace(req)
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "failed on purpose: " + in.Why}}}, nil, nil
		})
	yes := true
	mcp.AddTool(s, &mcp.Tool{Name: "delete_file", Description: "pretends to delete a file", Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes}},
		func(ctx context.Context, req *mcp.CallToolRequest, in deleteIn) (*mcp.CallToolResult, any, error) {
			trace(req)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("deleted %q", in.Path)}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "sleep", Description: "sleeps ms milliseconds"},
		func(ctx context.Context, req *mcp.CallToolRequest, in sleepIn) (*mcp.CallToolResult, any, error) {
			trace(req)
			select {
			case <-time.After(time.Duration(in.Ms) * time.Millisecond):
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "slept"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add_tool", Description: "adds a tool named extra; the server then sends notifications/tools/list_changed"},
		func(ctx context.Context, req *mcp.CallToolRequest, in empty) (*mcp.CallToolResult, any, error) {
			trace(req)
			mcp.AddTool(s, &mcp.Tool{Name: "extra", Description: "added at run time"},
				func(ctx context.Context, req *mcp.CallToolRequest, in empty) (*mcp.CallToolResult, any, error) {
					trace(req)
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "extra"}}}, nil, nil
				})
			// the SDK sends list_changed after a short delay; wait so that it
			// precedes this reply and sessions are deterministic
			time.Sleep(150 * time.Millisecond)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "added extra"}}}, nil, nil
		})
	fmt.Fprintln(os.Stderr, "gosdk fixture: ready")
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Printf("server exit: %v", err)
	}
}
