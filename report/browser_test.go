package report

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// chromiumPath is Debian's Chromium (.ci/install-services installs it).
const chromiumPath = "/usr/bin/chromium"

// browser starts a headless Chromium with the network disabled and returns
// its tab's context and what it saw: requests for anything but the page,
// console errors and exceptions. Without Chromium the test is skipped,
// except under CI=true, where it fails.
type browser struct {
	ctx      context.Context
	mu       sync.Mutex
	requests []string
	console  []string
}

func startBrowser(t *testing.T, page string) *browser {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing under CI=true: run .ci/install-services (Debian package chromium)", chromiumPath)
		}
		t.Skipf("%s is missing: install Debian's chromium (.ci/install-services) to run the browser test", chromiumPath)
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	ctx, cancel := chromedp.NewContext(allocCtx)
	ctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelT(); cancel(); cancelAlloc() })
	b := &browser{ctx: ctx}
	pageURL := (&url.URL{Scheme: "file", Path: page}).String()
	if err := chromedp.Listen(ctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			if e.Request.URL != pageURL {
				b.requests = append(b.requests, e.Request.URL)
			}
		case *runtime.EventConsoleAPICalled:
			if e.Type == "error" || e.Type == "assert" {
				var parts []string
				for _, a := range e.Args {
					parts = append(parts, fmt.Sprint(a.Description, string(a.Value)))
				}
				b.console = append(b.console, "console."+string(e.Type)+": "+strings.Join(parts, " "))
			}
		case *cdplog.EventEntryAdded:
			if e.Entry.Level == "error" {
				b.console = append(b.console, "log "+string(e.Entry.Source)+": "+e.Entry.Text)
			}
		case *runtime.EventExceptionThrown:
			b.console = append(b.console, "exception: "+e.ExceptionDetails.Text+" "+exceptionDesc(e.ExceptionDetails))
		}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, runtime.Enable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, cdplog.Enable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{
		MatchedNetworkConditions: []*network.Conditions{{Offline: true, DownloadThroughput: -1, UploadThroughput: -1}},
	}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(pageURL), chromedp.WaitVisible(`body[data-rendered="true"]`)); err != nil {
		b.mu.Lock()
		defer b.mu.Unlock()
		t.Fatalf("the page did not render: %v; console: %q", err, b.console)
	}
	return b
}

func exceptionDesc(d *runtime.ExceptionDetails) string {
	if d.Exception != nil {
		return d.Exception.Description
	}
	return ""
}

func (b *browser) check(t *testing.T) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.requests) > 0 {
		t.Errorf("the page asked for %d resource(s) besides itself: %q", len(b.requests), b.requests)
	}
	if len(b.console) > 0 {
		t.Errorf("console errors: %q", b.console)
	}
}

func eval[T any](t *testing.T, b *browser, js string) T {
	t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

func writePage(t *testing.T, d *Data) string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteHTML(&buf, d); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBrowser loads the fixture's report in headless Chromium, offline:
// no request but the page, no console error, the verdict and findings
// shown, a click on a finding draws its chain, Tab reaches every control.
// WITNESS_REPORT_SCREENSHOT=FILE also writes a screenshot of the page.
func TestBrowser(t *testing.T) {
	d := buildFixture(t)
	page := os.Getenv("WITNESS_REPORT_PAGE") // a report to screenshot (the demo's)
	if page == "" {
		page = writePage(t, d)
	}
	b := startBrowser(t, page)
	if page == os.Getenv("WITNESS_REPORT_PAGE") {
		if err := screenshot(b, os.Getenv("WITNESS_REPORT_SCREENSHOT")); err != nil {
			t.Fatal(err)
		}
		b.check(t)
		return
	}

	if v := eval[string](t, b, `document.getElementById("verdict-badge").textContent`); v != "violation" {
		t.Errorf("verdict shown %q, want violation", v)
	}
	if n := eval[int](t, b, `document.querySelectorAll(".finding").length`); n != len(d.Findings) {
		t.Errorf("%d findings shown, want %d", n, len(d.Findings))
	}
	if c := eval[string](t, b, `document.querySelector(".finding").getAttribute("data-code")`); c != "unsealed-tool" {
		t.Errorf("first finding %q, want unsealed-tool", c)
	}
	// the failing check says why
	if s := eval[string](t, b, `Array.prototype.map.call(document.querySelectorAll("#verdict tr"), function(r){return r.children[1] && r.children[1].textContent === "fail" ? r.children[2].textContent : null}).filter(function(x){return x !== null}).join("|")`); s == "" || strings.Contains("|"+s+"|", "||") {
		t.Errorf("failing checks' why: %q", s)
	}
	// the chain is drawn on click, not before
	if n := eval[int](t, b, `document.querySelectorAll("#chain-0 .step").length`); n != 0 {
		t.Errorf("chain drawn before the click (%d steps)", n)
	}
	if err := chromedp.Do(b.ctx, chromedp.Click(chromedp.CSS(`.finding .show-chain`))); err != nil {
		t.Fatal(err)
	}
	want := len(d.Findings[0].Chain.Steps)
	if n := eval[int](t, b, `document.getElementById("chain-0").hidden ? -1 : document.querySelectorAll("#chain-0 svg .step").length`); n != want {
		t.Errorf("after the click the chain shows %d steps, want %d", n, want)
	}
	if s := eval[string](t, b, `document.querySelector("#chain-0 .chain-steps").textContent`); !strings.Contains(s, "delete_file") {
		t.Errorf("chain text %q does not name the call", s)
	}
	// an event click shows its wire bytes
	row := d.Findings[0].Row
	if err := chromedp.Do(b.ctx, chromedp.Click(chromedp.CSS(fmt.Sprintf(`.ev[data-row="%d"]`, row)))); err != nil {
		t.Fatal(err)
	}
	if s := eval[string](t, b, `(document.getElementById("wire")||{}).textContent||""`); !strings.Contains(s, `"delete_file"`) {
		t.Errorf("wire bytes shown %q", s)
	}

	// keyboard: Tab from the top reaches every control
	total := eval[int](t, b, `(function(){
		var n = 0;
		document.querySelectorAll("a[href],button,input,select,textarea,[tabindex]").forEach(function(e){
			if (e.disabled || e.tabIndex < 0 || !e.getClientRects().length) return;
			e.setAttribute("data-tab-id", String(n++));
		});
		document.activeElement && document.activeElement.blur();
		window.scrollTo(0, 0);
		return n;
	})()`)
	if total < 10 {
		t.Fatalf("only %d focusable controls", total)
	}
	reached := map[string]bool{}
	for i := 0; i < 3*total+20 && len(reached) < total; i++ {
		if err := chromedp.Do(b.ctx, chromedp.KeyEvent("\t")); err != nil {
			t.Fatal(err)
		}
		id := eval[string](t, b, `(document.activeElement && document.activeElement.getAttribute("data-tab-id")) || ""`)
		if id != "" {
			reached[id] = true
		}
	}
	if len(reached) != total {
		missed := eval[string](t, b, fmt.Sprintf(`(function(){var r=%q.split(","),m=[];document.querySelectorAll("[data-tab-id]").forEach(function(e){if(r.indexOf(e.getAttribute("data-tab-id"))<0)m.push(e.outerHTML.slice(0,80))});return m.slice(0,5).join(" | ")})()`, strings.Join(keys(reached), ",")))
		t.Errorf("Tab reached %d of %d controls; missed: %s", len(reached), total, missed)
	}
	t.Logf("Tab reached %d of %d controls", len(reached), total)
	firstScreen(t, b, d, "")
	b.check(t)
}

// TestBrowserAgentStory loads the report of the demo's agent story (three
// logs of one run, `make demo`): the injection-provenance finding is shown,
// and a click on it draws its chain back across the channels to the
// poisoned read (fs:e6, its result fs:e7).
func TestBrowserAgentStory(t *testing.T) {
	o := agentStory(t)
	if os.Getenv("WITNESS_REPORT_FIRST_SCREEN") != "" {
		// the picture names the logs as the README's story does
		// (openai-agents/model/events.jsonl), from the story's folder
		t.Chdir("../testdata/demo/agent")
		for i, e := range o.Events {
			o.Events[i] = strings.TrimPrefix(e, filepath.Join("..", "testdata", "demo", "agent")+string(filepath.Separator))
		}
	}
	d, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	fi := -1
	for i, f := range d.Findings {
		if f.Code == "injection-provenance" {
			fi = i
		}
	}
	if fi < 0 {
		t.Fatalf("no injection-provenance finding in %d findings", len(d.Findings))
	}
	b := startBrowser(t, writePage(t, d))
	if v := eval[string](t, b, `document.getElementById("verdict-badge").textContent`); v != "violation" {
		t.Errorf("verdict shown %q, want violation", v)
	}
	if n := eval[int](t, b, `document.querySelectorAll('.finding[data-code="injection-provenance"]').length`); n != 1 {
		t.Fatalf("%d injection-provenance findings shown, want 1", n)
	}
	chain := fmt.Sprintf("#chain-%d", fi)
	if n := eval[int](t, b, `document.querySelectorAll("`+chain+` .step").length`); n != 0 {
		t.Errorf("chain drawn before the click (%d steps)", n)
	}
	if err := chromedp.Do(b.ctx, chromedp.Click(chromedp.CSS(`.finding[data-code="injection-provenance"] .show-chain`))); err != nil {
		t.Fatal(err)
	}
	want := len(d.Findings[fi].Chain.Steps)
	if n := eval[int](t, b, `document.querySelector("`+chain+`").hidden ? -1 : document.querySelectorAll("`+chain+` svg .step").length`); n != want || n < 3 {
		t.Errorf("after the click the chain shows %d steps, want %d (at least 3)", n, want)
	}
	text := eval[string](t, b, `document.querySelector("`+chain+` .chain-steps").textContent`)
	for _, s := range []string{"fs:e6 · tool call · read_text_file", "fs:e7 · tool response", "model:", "tool call · write_file"} {
		if !strings.Contains(text, s) {
			t.Errorf("chain text does not name %q: %q", s, text)
		}
	}
	// the lanes name the channels, in words
	lanes := eval[string](t, b, `document.getElementById("timeline").textContent`)
	for _, l := range []string{"fs server", "everything server", "model"} {
		if !strings.Contains(lanes, l) {
			t.Errorf("timeline does not show lane %q", l)
		}
	}
	if strings.Contains(lanes, "server: ") {
		t.Errorf("a lane reads %q", "server: …")
	}
	// the story: the worst finding is the injection, its path runs from
	// the untrusted read (fs:e7) to the overwrite (fs:e8), it names what
	// the overwrite touched; the integrity tables are folded
	if d.Findings[d.Story.Worst].Code != "injection-provenance" {
		t.Errorf("worst finding %s, want injection-provenance", d.Findings[d.Story.Worst].Code)
	}
	path := eval[string](t, b, `Array.prototype.map.call(document.querySelectorAll("#story-path .sstep"), function(e){return e.className+"|"+e.textContent}).join("\n")`)
	if p := strings.Split(path, "\n"); len(p) != len(d.Story.Path) || !strings.Contains(p[0], "source") || !strings.Contains(p[0], "fs:e7") ||
		!strings.Contains(p[len(p)-1], "action") || !strings.Contains(p[len(p)-1], "fs:e8") {
		t.Errorf("story path %q, want %d steps from the source fs:e7 to the action fs:e8", path, len(d.Story.Path))
	}
	if s := eval[string](t, b, `document.getElementById("touched").textContent`); !strings.Contains(s, "precious.txt") {
		t.Errorf("what it touched: %q", s)
	}
	if n := eval[int](t, b, `document.querySelectorAll("#verdict details.log:not([open])").length`); n != len(d.Logs)+1 {
		t.Errorf("%d folded integrity blocks, want %d (the run's checks and one per log)", n, len(d.Logs)+1)
	}
	firstScreen(t, b, d, os.Getenv("WITNESS_REPORT_FIRST_SCREEN"))
	b.check(t)
}

// firstScreen: at 1280×800, scrolled to the top, the worst finding's
// sentence is on the screen whole; out != "" writes a screenshot of that
// screen (make docs-images: docs/images/report-first-screen.png).
func firstScreen(t *testing.T, b *browser, d *Data, out string) {
	t.Helper()
	if err := chromedp.Do(b.ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatal(err)
	}
	got := eval[string](t, b, `(function(){
		window.scrollTo(0, 0);
		var e = document.getElementById("story-worst");
		if (!e) return "no #story-worst";
		var r = e.getBoundingClientRect();
		return (r.top >= 0 && r.bottom <= 800 && window.innerHeight === 800 && window.innerWidth === 1280 ? "visible" : "off screen: top " + r.top + " bottom " + r.bottom + " viewport " + window.innerWidth + "x" + window.innerHeight) + "|" + e.textContent;
	})()`)
	want := "visible|" + d.Findings[d.Story.Worst].Sentence
	if got != want {
		t.Errorf("the worst finding's sentence at 1280×800: %q, want %q", got, want)
	}
	if out != "" {
		png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// screenshot writes three PNG views of the page: the top (verdict and
// integrity) as out, the timeline with the first finding's event open, and
// the findings with a chain open: the injection-provenance finding's when
// the page has one, else the first finding's (out with "-timeline" and
// "-findings" before the extension).
func screenshot(b *browser, out string) error {
	if out == "" {
		return nil
	}
	shot := func(file string) error {
		png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
		if err != nil {
			return err
		}
		return os.WriteFile(file, png, 0o644)
	}
	if err := shot(out); err != nil {
		return err
	}
	ext := filepath.Ext(out)
	if _, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`document.getElementById("timeline").scrollIntoView(), true`)); err != nil {
		return err
	}
	if err := shot(strings.TrimSuffix(out, ext) + "-timeline" + ext); err != nil {
		return err
	}
	// the injection-provenance finding when there is one (the agent
	// story), else the first
	card := `.finding[data-code="injection-provenance"]`
	if !eval0(b, `document.querySelector('`+card+`') !== null`) {
		card = `.finding`
	}
	if err := chromedp.Do(b.ctx, chromedp.Click(chromedp.CSS(card+` .show-chain`))); err != nil {
		return err
	}
	if _, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`document.querySelector('`+card+`').scrollIntoView(), true`)); err != nil {
		return err
	}
	return shot(strings.TrimSuffix(out, ext) + "-findings" + ext)
}

// eval0 evaluates a boolean, false on error.
func eval0(b *browser, js string) bool {
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](js))
	return err == nil && v
}

// TestBrowserLoadTime measures, for the report WITNESS_REPORT_BENCH names
// (scripts/bench.d/60-report.sh makes one of 100k events), the time from
// navigation to the load event and to the end of the first render, in
// headless Chromium. It only logs them: timing never decides a test.
func TestBrowserLoadTime(t *testing.T) {
	page := os.Getenv("WITNESS_REPORT_BENCH")
	if page == "" {
		t.Skip("set WITNESS_REPORT_BENCH=report.html (scripts/bench.d/60-report.sh)")
	}
	abs, err := filepath.Abs(page)
	if err != nil {
		t.Fatal(err)
	}
	b := startBrowser(t, abs)
	load := eval[float64](t, b, `performance.getEntriesByType("navigation")[0].loadEventEnd`)
	render := eval[float64](t, b, `window.witnessRenderedAt`)
	st, err := os.Stat(abs)
	if err != nil {
		t.Fatal(err)
	}
	parse := eval[float64](t, b, `(function(){var t=performance.now();JSON.parse(document.getElementById("data").textContent);return performance.now()-t})()`)
	script := render - eval[float64](t, b, `window.witnessStartedAt`)
	phases := eval[string](t, b, `JSON.stringify(window.witnessPhases)`)
	fmt.Printf("report-load bytes=%d load_ms=%.0f render_ms=%.0f script_ms=%.0f json_parse_ms=%.0f phases_ms=%s\n", st.Size(), load, render, script, parse, phases)
	b.check(t)
}
