package viewer

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/harness"
	"github.com/aa-grade/aa-grade/harness/runfolder"
	"github.com/aa-grade/aa-grade/internal/testsupport/cdp"
	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
)

// tab is one page of a headless Chromium, with what it reported.
type tab struct {
	t       *testing.T
	b       *cdp.Browser
	session string
	ctx     context.Context
}

func newTab(t *testing.T, width int) *tab {
	b, err := cdp.Launch(cdp.Chromium(t), "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--user-data-dir="+t.TempDir(),
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--disable-default-apps", "--mute-audio")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	tb := &tab{t: t, b: b, ctx: ctx}
	var target struct{ TargetID string }
	tb.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var attached struct{ SessionID string }
	tb.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached)
	tb.session = attached.SessionID
	for _, domain := range []string{"Page", "Runtime", "Log", "Network"} {
		tb.call(tb.session, domain+".enable", nil, nil)
	}
	tb.call(tb.session, "Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": 1000, "deviceScaleFactor": 1, "mobile": false}, nil)
	return tb
}

func (tb *tab) call(session, method string, params, result any) {
	tb.t.Helper()
	if err := tb.b.Call(tb.ctx, session, method, params, result); err != nil {
		tb.t.Fatal(err)
	}
}

// open loads url and waits for its load event; it returns the index of the first event of
// the page.
func (tb *tab) open(url string) int {
	tb.t.Helper()
	_, from := tb.b.Events(0)
	tb.call(tb.session, "Page.navigate", map[string]any{"url": url}, nil)
	tb.waitLoad(from)
	return from
}

func (tb *tab) waitLoad(from int) {
	tb.t.Helper()
	if _, err := tb.b.WaitEvent(tb.ctx, from, func(e cdp.Event) bool { return e.Method == "Page.loadEventFired" }); err != nil {
		tb.t.Fatalf("waiting for the page to load: %v", err)
	}
}

// eval runs a JavaScript expression in the page and returns its value as JSON.
func (tb *tab) eval(expr string) string {
	tb.t.Helper()
	var res struct {
		Result struct {
			Value json.RawMessage
		}
		ExceptionDetails *struct{ Text string }
	}
	tb.call(tb.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &res)
	if res.ExceptionDetails != nil {
		tb.t.Fatalf("%s: %s", expr, res.ExceptionDetails.Text)
	}
	return string(res.Result.Value)
}

// key presses a key with its text, as typing does.
func (tb *tab) key(key string, shift bool) {
	tb.t.Helper()
	text, modifiers := key, 0
	if key == "Enter" {
		text = "\r"
	}
	if shift {
		modifiers = 8
	}
	tb.call(tb.session, "Input.dispatchKeyEvent", map[string]any{"type": "keyDown", "key": key, "text": text, "modifiers": modifiers,
		"windowsVirtualKeyCode": map[string]int{"Enter": 13}[key]}, nil)
	tb.call(tb.session, "Input.dispatchKeyEvent", map[string]any{"type": "keyUp", "key": key, "modifiers": modifiers}, nil)
}

// problems lists, from the from-th event on, what a clean page never causes: console errors
// and warnings (a Content-Security-Policy violation is one), uncaught exceptions, and any
// request that does not go to origin.
func (tb *tab) problems(from int, origin string) []string {
	events, _ := tb.b.Events(from)
	var out []string
	for _, e := range events {
		var p struct {
			Type      string
			Args      []struct{ Value any }
			Entry     struct{ Level, Text, URL string }
			Request   struct{ URL string }
			Exception struct{ Text string }
		}
		json.Unmarshal(e.Params, &p)
		switch e.Method {
		case "Runtime.consoleAPICalled":
			if p.Type == "error" || p.Type == "warning" || p.Type == "assert" {
				out = append(out, fmt.Sprintf("console.%s %v", p.Type, p.Args))
			}
		case "Runtime.exceptionThrown":
			out = append(out, "exception: "+string(e.Params))
		case "Log.entryAdded":
			if p.Entry.Level == "error" || p.Entry.Level == "warning" {
				out = append(out, fmt.Sprintf("log %s: %s %s", p.Entry.Level, p.Entry.Text, p.Entry.URL))
			}
		case "Network.requestWillBeSent":
			if !strings.HasPrefix(p.Request.URL, origin) {
				out = append(out, "request to "+p.Request.URL)
			}
		}
	}
	return out
}

// screenshot takes the whole page at the tab's width and keeps it where VIEWER_SHOTS says
// (for people to look at); it checks the page drew something.
func (tb *tab) screenshot(name string) {
	tb.t.Helper()
	var shot struct{ Data string }
	tb.call(tb.session, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true}, &shot)
	b, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		tb.t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		tb.t.Fatalf("%s: %v", name, err)
	}
	bg, inked := img.At(0, 0), 0
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y += 4 {
		for x := bounds.Min.X; x < bounds.Max.X; x += 4 {
			if img.At(x, y) != bg {
				inked++
			}
		}
	}
	if inked < 200 {
		tb.t.Errorf("%s looks blank (%d sampled pixels drawn)", name, inked)
	}
	if dir := os.Getenv("VIEWER_SHOTS"); dir != "" {
		testfs.Write(tb.t, filepath.Join(dir, name+".png"), string(b))
	}
}

// TestInBrowser opens the pages of a run with hostile content at 700 and 1400 pixels: no
// console error, no CSP violation, no request off the server; then uses the keys and the
// search, and watches a running episode refresh itself.
func TestInBrowser(t *testing.T) {
	dir := fixtureRun(t)
	srv := httptest.NewServer(newTestViewer(t, dir))
	defer srv.Close()
	for _, width := range []int{700, 1400} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			tb := newTab(t, width)
			for _, page := range []struct{ name, path string }{
				{"runs", "/"}, {"episode", "/runs/1/Scenario-901/1.html"}, {"hostile", "/runs/1/task-2/1.html"}, {"running", "/runs/1/Scenario-903/1.html"},
			} {
				from := tb.open(srv.URL + page.path)
				if p := tb.problems(from, srv.URL+"/"); len(p) > 0 {
					t.Errorf("%s: %q", page.path, p)
				}
				if got := tb.eval(`document.querySelectorAll("img, iframe, object, embed").length`); got != "0" {
					t.Errorf("%s: %s injected elements", page.path, got)
				}
				tb.screenshot(fmt.Sprintf("%s-%d", page.name, width))
			}
		})
	}

	tb := newTab(t, 1400)
	tb.open(srv.URL + "/runs/1/Scenario-901/1.html")
	tb.key("j", false)
	tb.key("j", false)
	tb.key("j", false)
	tb.key("k", false)
	if got := tb.eval("location.hash"); got != `"#t2"` {
		t.Errorf("j j j k: at %s, want #t2", got)
	}
	tb.key("/", false)
	tb.call(tb.session, "Input.insertText", map[string]any{"text": "FileNotFound"}, nil)
	if got := tb.eval(`document.getElementById("hits").textContent`); got != `"4 matches"` { // turns 7, 14, 21, 28
		t.Errorf("search: %s", got)
	}
	tb.key("Enter", false)
	tb.key("Enter", false)
	tb.key("Enter", true)
	if got := tb.eval(`document.getElementById("hits").textContent`); got != `"1 of 4"` {
		t.Errorf("Enter Enter Shift+Enter: %s", got)
	}
	if got := tb.eval(`CSS.highlights.get("find").size`); got != "4" {
		t.Errorf("%s matches highlighted, want 4", got)
	}
	tb.call(tb.session, "Runtime.evaluate", map[string]any{"expression": "document.activeElement.blur()"}, nil)
	_, from := tb.b.Events(0)
	tb.key("n", false)
	tb.waitLoad(from)
	if got := tb.eval("location.pathname"); got != `"/runs/1/Scenario-901/2.html"` {
		t.Errorf("n: at %s", got)
	}

	// A live run: its running episode's page takes in a new turn by itself.
	host, _ := os.Hostname()
	testfs.Write(t, filepath.Join(dir, runfolder.LockFile), fmt.Sprintf(`{"pid":%d,"host":%q}`, os.Getpid(), host))
	from = tb.open(srv.URL + "/runs/1/Scenario-903/1.html")
	f, err := os.OpenFile(filepath.Join(runfolder.EpisodeDir(dir, runfolder.Episode{Task: "Scenario-903", Repeat: 1}), harness.TrajectoryFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, `{"kind":"turn","turn":5,"at":"2026-05-01T09:00:40Z","reply":{"role":"assistant","content":"a new turn arrives"}}`+"\n")
	f.Close()
	for !strings.Contains(tb.eval(`document.querySelector("main").textContent`), "a new turn arrives") {
		select {
		case <-tb.ctx.Done():
			t.Fatal("the running episode's page never showed its new turn")
		case <-time.After(200 * time.Millisecond):
		}
	}
	if p := tb.problems(from, srv.URL+"/"); len(p) > 0 {
		t.Errorf("live refresh: %q", p)
	}
}

// TestExportInBrowser opens the static pages from the disk: they load nothing either.
func TestExportInBrowser(t *testing.T) {
	out := t.TempDir()
	if err := newTestViewer(t, fixtureRun(t)).Export(context.Background(), out); err != nil {
		t.Fatal(err)
	}
	tb := newTab(t, 1400)
	for _, page := range []string{"index.html", "runs/1/Scenario-901/1.html", "runs/1/task-2/1.html"} {
		url := "file://" + filepath.ToSlash(filepath.Join(out, page))
		from := tb.open(url)
		if p := tb.problems(from, url); len(p) > 0 {
			t.Errorf("%s: %q", page, p)
		}
	}
}

// TestBrowserChecksFail proves the checks above can fail: a page that loads an image from
// elsewhere is seen making the request, and an inline script the policy does not allow is
// seen refused.
func TestBrowserChecksFail(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", securityHeaders["Content-Security-Policy"])
		fmt.Fprint(w, `<!doctype html><body><script>document.title="ran"</script><p>x</p></body>`)
	}))
	defer srv.Close()
	away := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><body><img src="http://192.0.2.1/pixel.png"><p>x</p></body>`)
	}))
	defer away.Close()
	tb := newTab(t, 700)
	from := tb.open(srv.URL + "/")
	if p := tb.problems(from, srv.URL+"/"); len(p) == 0 || !strings.Contains(strings.Join(p, " "), "Content Security Policy") || tb.eval("document.title") == `"ran"` {
		t.Errorf("a script the policy forbids: %q", p)
	}
	tb.call(tb.session, "Page.navigate", map[string]any{"url": away.URL + "/"}, nil)
	_, err := tb.b.WaitEvent(tb.ctx, from, func(e cdp.Event) bool {
		return e.Method == "Network.requestWillBeSent" && strings.Contains(string(e.Params), "192.0.2.1")
	})
	if err != nil {
		t.Errorf("the request to 192.0.2.1 was not seen: %v", err)
	}
}
