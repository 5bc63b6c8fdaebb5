// Command firehose is a hostile MCP server for memory tests: it writes N
// notifications/message lines (first argument, default 1000000) as fast as
// it can while it reads its stdin to the end in chunks (a line without end
// costs it nothing), then reports on stderr how many bytes it read
// ("firehose: read N bytes") and exits.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
)

func main() {
	n := 1000000
	if len(os.Args) > 1 {
		if v, err := strconv.Atoi(os.Args[1]); err == nil {
			n = v
		}
	}
	done := make(chan struct{})
	go func() {
		w := bufio.NewWriterSize(os.Stdout, 64<<10)
		for i := 0; i < n; i++ {
			fmt.Fprintf(w, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"firehose %d"}}`+"\n", i)
		}
		w.Flush()
		close(done)
	}()
	read, _ := io.Copy(io.Discard, os.Stdin)
	<-done
	fmt.Fprintf(os.Stderr, "firehose: read %d bytes\n", read)
}
