package httpproxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agent-trace-witness/witness/cassette"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/httplocal"
	"github.com/agent-trace-witness/witness/internal/memtest"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestBudgetLease(t *testing.T) {
	b := newBudget(100)
	l1, l2 := lease{b: b}, lease{b: b}
	if !l1.grow(60) || l2.grow(41) || !l2.setTo(40) {
		t.Fatalf("grants: %+v %+v", l1, l2)
	}
	if l1.grow(1) {
		t.Error("granted past the limit")
	}
	l1.setTo(10) // gives 50 back
	if !l2.grow(50) {
		t.Error("bytes given back were not granted again")
	}
	l1.release()
	l2.release()
	l2.release() // twice: nothing more
	used, peak, refused := b.stats()
	if used != 0 || peak != 100 || refused != 2 {
		t.Errorf("used %d, peak %d, refused %d; want 0, 100, 2", used, peak, refused)
	}
	var free lease // no budget: no limit
	if !free.grow(1 << 40) {
		t.Error("a lease without a budget refused")
	}
}

// hostileStreams is a Streamable HTTP server that answers initialize with
// a session of its own, then, on each session's GET stream, sends perSession
// notifications of size bytes as soon as the session's client has begun a
// POST, whose body the client holds open meanwhile: the proxy must hold
// them (the request precedes its answer in the session cassette) or write
// them at once.
type hostileStreams struct {
	perSession, size int

	mu      sync.Mutex
	n       int
	started map[string]chan struct{} // closed when the session's POST arrived
}

func (h *hostileStreams) begun(sid string) chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.started[sid] == nil {
		h.started[sid] = make(chan struct{})
	}
	return h.started[sid]
}

func (h *hostileStreams) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get(httplocal.HeaderMcpSessionID)
	switch {
	case r.Method == http.MethodPost && sid == "":
		io.Copy(io.Discard, r.Body)
		h.mu.Lock()
		h.n++
		sid = fmt.Sprintf("s%d", h.n)
		h.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set(httplocal.HeaderMcpSessionID, sid)
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-03-26","capabilities":{},"serverInfo":{"name":"hostile","version":"1"}}}`)
	case r.Method == http.MethodPost:
		close(h.begun(sid)) // the body is still open
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusAccepted)
	case r.Method == http.MethodGet:
		w.Header().Set("Content-Type", httplocal.ContentTypeEventStream)
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-h.begun(sid):
		case <-r.Context().Done():
			return
		}
		pad := strings.Repeat("x", h.size)
		for i := range h.perSession {
			fmt.Fprintf(w, "event: message\ndata: %s\n\n", notification(sid, i, pad))
			w.(http.Flusher).Flush()
		}
		fmt.Fprintf(w, "event: message\ndata: %s\n\n", notification(sid, -1, ""))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
}

func notification(sid string, i int, pad string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"%s/%d/%s"}}`, sid, i, pad)
}

// sessionRecords returns the records of session n's cassette, "c2s DATA"
// and "s2c DATA".
func sessionRecords(t *testing.T, dir string, n int) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, MCPDir, fmt.Sprint(n), derive.CassetteFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cr, err := cassette.NewReader(f, path.Join(MCPDir, fmt.Sprint(n), derive.CassetteFile))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for {
		rec, err := cr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(rec.Dir)+" "+string(rec.Data))
	}
}

// TestMCPSessionsShareOneBudget: 64 MCP sessions each hold a request body
// open while a hostile server streams their answers: without a shared
// budget each session's queue would hold them all (64 x 512 KiB here, up
// to 64 x 16 MiB in general). With a budget of 4 MiB the live heap stays
// under the budget plus the proxy's fixed buffers; every message is in the
// HTTP cassette and in its session's cassette; the sessions that wrote
// answers in the wire's order say so in their logs, and the proxy's log
// names them. The same run with a budget over what is sent holds it all:
// the bound can fail.
func TestMCPSessionsShareOneBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("64 sessions, 32 MiB")
	}
	const sessions, perSession, size = 64, 128, 8 << 10
	sent := uint64(sessions * perSession * size)
	for _, tc := range []struct {
		name   string
		budget int64
	}{
		{name: "budget 8 MiB", budget: 8 << 20},
		{name: "budget over what is sent", budget: 1 << 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			grew, fellBack := sharedBudget(t, tc.budget, sessions, perSession, size)
			// the fixed buffers: per exchange a 32 KiB read buffer, HTTP
			// connection buffers on both sides, per session its cassette
			// and deriver; measured 9 MiB for the 192 exchanges, 12 MiB under -race
			bound := uint64(tc.budget) + 24<<20
			t.Logf("budget %d MiB: live heap grew %d MiB while %d MiB waited to be written (bound %d MiB); %d session(s) fell back to the wire's order", tc.budget>>20, grew>>20, sent>>20, bound>>20, fellBack)
			if tc.budget < int64(sent) {
				if grew > bound {
					t.Errorf("the live heap grew by %d MiB, want under %d MiB (the budget %d MiB plus the fixed buffers)", grew>>20, bound>>20, tc.budget>>20)
				}
				if fellBack == 0 {
					t.Error("no session fell back to the wire's order")
				}
			} else {
				if grew < sent {
					t.Errorf("with a budget over what is sent, the live heap grew by %d MiB, under the %d MiB that waited: the test does not see the queues", grew>>20, sent>>20)
				}
				if fellBack != 0 {
					t.Errorf("%d session(s) fell back with room in the budget", fellBack)
				}
			}
		})
	}
}

// sharedBudget runs the sessions through a proxy with budget; it returns
// the growth of the live heap while every answer waited, and how many
// sessions fell back to the wire's order.
func sharedBudget(t *testing.T, budget int64, sessions, perSession, size int) (uint64, int) {
	up := &hostileStreams{perSession: perSession, size: size, started: map[string]chan struct{}{}}
	srv := httptest.NewServer(up)
	defer srv.Close()
	var used, peak int64 = -1, -1
	s := startProxy(t, srv.URL, Options{ShutdownGrace: 200 * time.Millisecond, MemoryBudget: budget, budgetEnd: func(u, p, _ int64) { used, peak = u, p }})
	keepOnFailure(t, s.Dir)
	tr := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 2 * sessions}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	defer debug.SetGCPercent(debug.SetGCPercent(10))
	base := memtest.Live()

	const call = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","arguments":{}}}`
	var (
		ready, done sync.WaitGroup
		measured    = make(chan struct{})
		errs        = make(chan error, sessions)
	)
	ready.Add(sessions)
	done.Add(sessions)
	for i := range sessions {
		go func() {
			defer done.Done()
			readyOnce := sync.OnceFunc(ready.Done)
			defer readyOnce()
			err := func() error {
				req, _ := http.NewRequest(http.MethodPost, s.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`))
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					return err
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				sid := resp.Header.Get(httplocal.HeaderMcpSessionID)
				if sid == "" {
					return fmt.Errorf("session %d: no session id", i)
				}
				get, _ := http.NewRequest(http.MethodGet, s.URL+"/mcp", nil)
				get.Header.Set(httplocal.HeaderMcpSessionID, sid)
				stream, err := client.Do(get)
				if err != nil {
					return err
				}
				defer stream.Body.Close()
				pr, pw := io.Pipe()
				posted := make(chan error, 1)
				go func() {
					req, _ := http.NewRequest(http.MethodPost, s.URL+"/mcp", pr)
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set(httplocal.HeaderMcpSessionID, sid)
					resp, err := client.Do(req)
					if err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
					posted <- err
				}()
				if _, err := io.WriteString(pw, call[:20]); err != nil {
					return err
				}
				// every notification and the last one came through
				br := bufio.NewReader(stream.Body)
				for got := 0; got <= perSession; {
					l, err := br.ReadString('\n')
					if err != nil {
						return fmt.Errorf("session %d: stream: %v after %d events", i, err, got)
					}
					if strings.HasPrefix(l, "data: ") {
						got++
					}
				}
				readyOnce()
				<-measured
				io.WriteString(pw, call[20:])
				pw.Close()
				return <-posted
			}()
			if err != nil {
				errs <- err
			}
		}()
	}
	ready.Wait()
	live := memtest.Live()
	close(measured)
	done.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	res, err := s.stop()
	if err != nil {
		t.Fatal(err)
	}
	if used != 0 || peak > budget || peak <= 0 {
		t.Errorf("the budget held %d bytes at the end, at most %d at once; want 0, and at most %d", used, peak, budget)
	}
	if res.MCPSessions != sessions {
		t.Fatalf("%d MCP sessions, want %d", res.MCPSessions, sessions)
	}

	// the HTTP cassette: every notification, once
	_, xs, _ := s.cassette()
	var data []byte
	for _, x := range xs {
		if x.Response != nil {
			data = append(data, x.Response.Body()...)
		}
	}
	seen := map[string]int{}
	for rest := data; ; {
		i := bytes.Index(rest, []byte(`"data":"s`))
		if i < 0 {
			break
		}
		rest = rest[i+len(`"data":"`):]
		id, _, _ := bytes.Cut(rest, []byte(`/x`))
		id, _, _ = bytes.Cut(id, []byte(`/"`))
		seen[string(id)]++
	}
	for n := 1; n <= sessions; n++ {
		for i := -1; i < perSession; i++ {
			if c := seen[fmt.Sprintf("s%d/%d", n, i)]; c != 1 {
				t.Fatalf("the HTTP cassette holds notification %d of session s%d %d times", i, n, c)
			}
		}
	}
	if len(seen) != sessions*(perSession+1) {
		t.Fatalf("the HTTP cassette holds %d notifications, want %d", len(seen), sessions*(perSession+1))
	}
	// the proxy's log names the sessions that fell back
	_, logData := s.verifyEvents()
	lines := bytes.Split(bytes.TrimSpace(logData), []byte("\n"))
	var last eventlog.Event
	if err := json.Unmarshal(lines[len(lines)-1], &last); err != nil || last.End == nil {
		t.Fatalf("the proxy's log's last line: %v", err)
	}
	named := map[int]bool{}
	if _, list, ok := strings.Cut(last.End.Reason, "; MCP session(s) "); ok {
		list, _, _ = strings.Cut(list, " wrote")
		for _, f := range strings.Split(list, ", ") {
			var n int
			fmt.Sscan(f, &n)
			named[n] = true
		}
	}
	// each session cassette: the call and every notification; the call
	// first unless the session's log says it fell back
	fellBack := 0
	for n := 1; n <= sessions; n++ {
		recs := sessionRecords(t, s.Dir, n)
		sid, call := "", -1
		notes := 0
		for j, r := range recs {
			switch {
			case strings.HasPrefix(r, "c2s ") && strings.Contains(r, "tools/call"):
				call = j
			case strings.HasPrefix(r, "s2c ") && strings.Contains(r, "notifications/message"):
				if notes == 0 {
					sid, _, _ = strings.Cut(strings.TrimPrefix(r[strings.Index(r, `"data":"`):], `"data":"`), "/")
				}
				if call < 0 && notes == 0 {
					call = -2 // a notification came first
				}
				notes++
			}
		}
		if notes != perSession+1 || call == -1 {
			t.Logf("%s", strings.Join(recs, "\n")[:min(2000, len(strings.Join(recs, "\n")))])
			t.Fatalf("session %d (%s): %d notifications, call at %d; want %d and the call", n, sid, notes, call, perSession+1)
		}
		evs, rep := sessionEvents(t, s.Dir, n)
		if !rep.Ended || rep.Signatures[0].Status != "valid" {
			t.Errorf("session %d: log ended %v, %+v", n, rep.Ended, rep.Signatures)
		}
		failure := evs[len(evs)-1].End.Failure
		said := strings.Contains(failure, "memory budget") && strings.Contains(failure, "precede the request they answer")
		if said {
			fellBack++
			if !named[n] {
				t.Errorf("the proxy's log does not name session %d: %q", n, last.End.Reason)
			}
		} else if call == -2 {
			t.Errorf("session %d: a notification precedes the call, and its log does not say so (failure %q)", n, failure)
		}
	}
	if len(named) != fellBack {
		t.Errorf("the proxy's log names %d session(s), %d said they fell back: %q", len(named), fellBack, last.End.Reason)
	}
	return memtest.Grown(base, live), fellBack
}

// TestMCPSessionPerAnswer: a server that hands out a new Mcp-Session-Id
// with every answer, and a client that follows it, would open a session
// (two open files, a deriver) every other exchange for as long as the
// proxy runs. Past MaxMCPSessions the exchanges are in the HTTP cassette
// only, and the proxy's log says how many, from which exchange on.
func TestMCPSessionPerAnswer(t *testing.T) {
	var mu sync.Mutex
	n := 0
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		n++
		sid := fmt.Sprintf("s%d", n)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set(httplocal.HeaderMcpSessionID, sid)
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	defer up.Close()
	const capN, exchanges = 8, 40
	s := startProxy(t, up.URL, Options{MaxMCPSessions: capN})
	keepOnFailure(t, s.Dir)
	sid := ""
	for range exchanges {
		h := map[string]string{"Content-Type": "application/json"}
		if sid != "" {
			h[httplocal.HeaderMcpSessionID] = sid
		}
		resp, _ := post(t, s.URL+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, h)
		if sid = resp.Header.Get(httplocal.HeaderMcpSessionID); sid == "" {
			t.Fatal("no session id")
		}
	}
	res, err := s.stop()
	if err != nil {
		t.Fatal(err)
	}
	// exchange 1 opens s1, 2 carries s1, 3 carries s2 (never seen) and
	// opens s3, ...: sessions open at the odd exchanges up to the cap
	// (exchange 15), every exchange after is refused
	refused := exchanges - 2*capN
	dirs, _ := os.ReadDir(filepath.Join(s.Dir, MCPDir))
	if res.MCPSessions != capN || len(dirs) != capN || res.Exchanges != exchanges {
		t.Errorf("%d sessions, %d directories, %d exchanges; want %d, %d, %d", res.MCPSessions, len(dirs), res.Exchanges, capN, capN, exchanges)
	}
	want := fmt.Sprintf("the cap of %d MCP sessions was reached: %d later exchange(s) of new sessions (the first: exchange %d, session %q)", capN, refused, 2*capN+1, fmt.Sprintf("s%d", 2*capN+1))
	if !strings.Contains(res.Failure, want) {
		t.Errorf("failure %q, want it to say %q", res.Failure, want)
	}
	// signed, and incomplete: what was not read into mcp/ is missing there
	rep, _ := s.verifyEvents()
	if _, why := verified(rep); !rep.Ended || rep.Signatures[0].Status != "valid" || !strings.Contains(why, "incomplete") {
		t.Errorf("the proxy's log: ended %v, %+v, %s", rep.Ended, rep.Signatures, why)
	}
	if _, xs, _ := s.cassette(); len(xs) != exchanges || xs[exchanges-1].Response == nil || string(xs[exchanges-1].Response.Body()) != `{"jsonrpc":"2.0","id":1,"result":{}}` {
		t.Errorf("the HTTP cassette: %d exchanges", len(xs))
	}
}

// TestDeriveBodiesShareOneBudget: 16 clients each hold a 4 MiB model API
// request open; the deriver of `witness proxy --listen` keeps up to
// derive.MaxDeriveBody (16 MiB) of each body, so 16 exchanges could hold 64 MiB
// (256 MiB in general). With a budget of 8 MiB the live heap stays under
// the budget plus the fixed buffers; every byte is in the HTTP cassette,
// and the model_input of a body the budget did not keep says it was not
// read whole. The upstream has read 4 MiB of each body when the heap is
// taken: the proxy forwards only what it recorded (and kept).
func TestDeriveBodiesShareOneBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("64 MiB")
	}
	const clients, held = 16, 4 << 20
	for _, tc := range []struct {
		name   string
		budget int64
	}{
		{name: "budget 8 MiB", budget: 8 << 20},
		{name: "budget over what is held", budget: 1 << 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got sync.WaitGroup
			got.Add(clients)
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if _, err := io.ReadFull(r.Body, make([]byte, held)); err != nil {
					t.Error(err)
				}
				got.Done()
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
			}))
			defer up.Close()
			var used, peak int64 = -1, -1
			s := startProxy(t, up.URL, Options{Deriver: derive.ModelDeriver{}, MemoryBudget: tc.budget, budgetEnd: func(u, p, _ int64) { used, peak = u, p }})
			keepOnFailure(t, s.Dir)
			defer debug.SetGCPercent(debug.SetGCPercent(10))
			base := memtest.Live()
			pad := strings.Repeat("x", held)
			head := `{"model":"m","messages":[{"role":"user","content":"`
			var done sync.WaitGroup
			release := make(chan struct{})
			errs := make(chan error, clients)
			for range clients {
				done.Add(1)
				go func() {
					defer done.Done()
					pr, pw := io.Pipe()
					go func() {
						io.WriteString(pw, head+pad[len(head):])
						<-release
						io.WriteString(pw, `"}]}`)
						pw.Close()
					}()
					req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/chat/completions", pr)
					req.Header.Set("Content-Type", "application/json")
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						errs <- err
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}()
			}
			got.Wait()
			live := memtest.Live()
			close(release)
			done.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			if _, err := s.stop(); err != nil {
				t.Fatal(err)
			}
			grew := memtest.Grown(base, live)
			bound := uint64(tc.budget) + 24<<20
			_, logData := s.verifyEvents()
			cut := bytes.Count(logData, []byte("the deriver's limit, or the proxy's memory budget"))
			t.Logf("budget %d MiB: live heap grew %d MiB while %d MiB of bodies were kept (bound %d MiB); %d model_input(s) not read whole; budget peak %d bytes", tc.budget>>20, grew>>20, clients*held>>20, bound>>20, cut, peak)
			if used != 0 || peak > tc.budget {
				t.Errorf("the budget held %d bytes at the end, at most %d at once", used, peak)
			}
			if tc.budget < clients*held {
				if grew > bound {
					t.Errorf("the live heap grew by %d MiB, want under %d MiB", grew>>20, bound>>20)
				}
				if cut == 0 {
					t.Error("no model_input says its body was not read whole")
				}
			} else if grew < clients*held || cut != 0 {
				t.Errorf("with room in the budget the live heap grew by %d MiB (the bodies: %d MiB), %d body(ies) not read whole", grew>>20, clients*held>>20, cut)
			}
			_, xs, _ := s.cassette()
			for _, x := range xs {
				if x.Request.Bytes != held+4 || x.Response == nil {
					t.Errorf("exchange %d: %d request bytes in the HTTP cassette, want %d", x.X, x.Request.Bytes, held+4)
				}
			}
		})
	}
}

// TestTapBudget: with redaction, a line is held until its end; a line
// longer than the budget leaves is recorded in pieces, the tap says so
// once, and gives its bytes back.
func TestTapBudget(t *testing.T) {
	b := newBudget(1 << 20)
	l := lease{b: b}
	line := bytes.Repeat([]byte("a"), 4<<20)
	src := bytes.NewReader(append(append(line, '\n'), "short\n"...))
	var pieces []int
	cuts := 0
	tp := &tap{src: src, lines: true, max: maxRedactLine, mem: &l, cut: func() { cuts++ }, record: func(raw []byte) error {
		pieces = append(pieces, len(raw))
		return nil
	}}
	n, err := io.Copy(io.Discard, tp)
	if err != nil || n != int64(len(line)+7) {
		t.Fatalf("%d bytes, %v", n, err)
	}
	_, peak, _ := b.stats()
	if cuts != 1 || len(pieces) < 4 || peak > 1<<20 || l.n != 0 {
		t.Errorf("%d cut note(s), pieces %v, budget peak %d, lease %d at the end; want 1 note, 4 pieces or more, at most 1 MiB, 0", cuts, pieces, peak, l.n)
	}
	for _, p := range pieces[:len(pieces)-1] {
		if p > 1<<20+chunkSize {
			t.Errorf("a piece of %d bytes, over the budget", p)
		}
	}
}
