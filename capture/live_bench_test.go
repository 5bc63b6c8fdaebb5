package capture

import (
	"encoding/json"
	"github.com/agent-trace-witness/witness/cassette"
	"github.com/agent-trace-witness/witness/derive"
	"io"
	"testing"
)

// BenchmarkLiveToolCall measures one recorded tools/call round trip against
// the go-sdk fixture server: write and record the request, the server's
// answer, record and parse it, derive and chain the two events.
func BenchmarkLiveToolCall(b *testing.B) {
	bin := lvBuildTestServer(b, "testdata/servers/gosdk")
	l, err := openLive(LiveOptions{Command: bin, Env: lvServerEnv(), Cassette: io.Discard, Events: io.Discard, Getenv: lvFrozenEnv})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	args := json.RawMessage(`{"name":"bench"}`)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := l.CallTool("greet", args); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDeriveToolCall measures deriving the events of one tools/call
// request and its response from cassette records (no process).
func BenchmarkDeriveToolCall(b *testing.B) {
	d := derive.NewDeriver(io.Discard, cassette.Header{Started: lvFrozenTS, Frozen: true}, derive.Options{})
	req := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello"}}}`)
	resp := []byte(`{"result":{"content":[{"type":"text","text":"Echo: hello"}]},"jsonrpc":"2.0","id":1}`)
	var off int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r1 := &cassette.Record{Seq: int64(2 * i), Dir: cassette.C2S, Off: off, Data: req}
		r2 := &cassette.Record{Seq: int64(2*i + 1), Dir: cassette.S2C, Off: off, Data: resp}
		off += int64(len(req) + 1)
		if err := d.Feed(r1); err != nil {
			b.Fatal(err)
		}
		if err := d.Feed(r2); err != nil {
			b.Fatal(err)
		}
	}
}
