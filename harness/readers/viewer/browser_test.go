package viewer

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/testsupport/cdp"
	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// TestInBrowser opens the pages of a run with hostile content at 700 and 1400 pixels: no
// console error, no CSP violation, no request off the server; then uses the keys and the
// search, and watches a running episode refresh itself.
func TestInBrowser(t *testing.T) {
	dir := fixtureRun(t)
	srv := httptest.NewServer(newViewerOf(t, []string{dir}, atifSources(t)))
	defer srv.Close()
	for _, width := range []int{700, 1400} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			tb := cdp.NewTab(t, width)
			for _, page := range []struct{ name, path string }{
				{"runs", "/"}, {"episode", "/runs/1/Scenario-901/1.html"}, {"hostile", "/runs/1/task-2/1.html"}, {"running", "/runs/1/Scenario-903/1.html"},
				{"harbor", "/atif/1/1.html"}, {"atif-folder", "/atif/2/1.html"}, {"atif-malformed", "/atif/2/3.html"},
			} {
				from := tb.Open(srv.URL + page.path)
				if p := tb.Problems(from, srv.URL+"/"); len(p) > 0 {
					t.Errorf("%s: %q", page.path, p)
				}
				if got := tb.Eval(`document.querySelectorAll("img, iframe, object, embed").length`); got != "0" {
					t.Errorf("%s: %s injected elements", page.path, got)
				}
				tb.Screenshot(fmt.Sprintf("%s-%d", page.name, width))
			}
		})
	}

	tb := cdp.NewTab(t, 1400)
	tb.Open(srv.URL + "/runs/1/Scenario-901/1.html")
	tb.Key("j", false)
	tb.Key("j", false)
	tb.Key("j", false)
	tb.Key("k", false)
	if got := tb.Eval("location.hash"); got != `"#t2"` {
		t.Errorf("j j j k: at %s, want #t2", got)
	}
	tb.Key("/", false)
	tb.Call(tb.Session, "Input.insertText", map[string]any{"text": "FileNotFound"}, nil)
	if got := tb.Eval(`document.getElementById("hits").textContent`); got != `"4 matches"` { // turns 7, 14, 21, 28
		t.Errorf("search: %s", got)
	}
	tb.Key("Enter", false)
	tb.Key("Enter", false)
	tb.Key("Enter", true)
	if got := tb.Eval(`document.getElementById("hits").textContent`); got != `"1 of 4"` {
		t.Errorf("Enter Enter Shift+Enter: %s", got)
	}
	if got := tb.Eval(`CSS.highlights.get("find").size`); got != "4" {
		t.Errorf("%s matches highlighted, want 4", got)
	}
	tb.Call(tb.Session, "Runtime.evaluate", map[string]any{"expression": "document.activeElement.blur()"}, nil)
	_, from := tb.B.Events(0)
	tb.Key("n", false)
	tb.WaitLoad(from)
	if got := tb.Eval("location.pathname"); got != `"/runs/1/Scenario-901/2.html"` {
		t.Errorf("n: at %s", got)
	}

	// An ATIF document's page walks its steps and finds in them as a run's episode does.
	tb.Open(srv.URL + "/atif/1/1.html")
	tb.Key("j", false)
	tb.Key("j", false)
	tb.Key("j", false)
	if got := tb.Eval("location.hash"); got != `"#t3"` {
		t.Errorf("j j j on an ATIF page: at %s, want #t3", got)
	}
	tb.Key("/", false)
	tb.Call(tb.Session, "Input.insertText", map[string]any{"text": "crashloop"}, nil)
	if got := tb.Eval(`document.getElementById("hits").textContent`); got != `"1 match"` {
		t.Errorf("search on an ATIF page: %s", got)
	}

	// A live run: its running episode's page takes in a new turn by itself.
	host, _ := os.Hostname()
	testfs.Write(t, filepath.Join(dir, runfolder.LockFile), fmt.Sprintf(`{"pid":%d,"host":%q}`, os.Getpid(), host))
	from = tb.Open(srv.URL + "/runs/1/Scenario-903/1.html")
	f, err := os.OpenFile(filepath.Join(runfolder.EpisodeDir(dir, runfolder.Episode{Task: "Scenario-903", Repeat: 1}), runfolder.TrajectoryFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, `{"kind":"turn","turn":5,"at":"2026-05-01T09:00:40Z","reply":{"role":"assistant","content":"a new turn arrives"}}`+"\n")
	f.Close()
	for !strings.Contains(tb.Eval(`document.querySelector("main").textContent`), "a new turn arrives") {
		select {
		case <-tb.Ctx.Done():
			t.Fatal("the running episode's page never showed its new turn")
		case <-time.After(200 * time.Millisecond):
		}
	}
	if p := tb.Problems(from, srv.URL+"/"); len(p) > 0 {
		t.Errorf("live refresh: %q", p)
	}
}

// TestExportInBrowser opens the static pages from the disk: they load nothing either.
func TestExportInBrowser(t *testing.T) {
	out := t.TempDir()
	if err := newViewerOf(t, []string{fixtureRun(t)}, atifSources(t)).Export(context.Background(), out); err != nil {
		t.Fatal(err)
	}
	tb := cdp.NewTab(t, 1400)
	for _, page := range []string{"index.html", "runs/1/Scenario-901/1.html", "runs/1/task-2/1.html", "atif/1/1.html"} {
		url := "file://" + filepath.ToSlash(filepath.Join(out, page))
		from := tb.Open(url)
		if p := tb.Problems(from, url); len(p) > 0 {
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
	tb := cdp.NewTab(t, 700)
	from := tb.Open(srv.URL + "/")
	p := tb.Problems(from, srv.URL+"/")
	textcheck.Has(t, "the problems of a script the policy forbids", strings.Join(p, " "), "Content Security Policy")
	if tb.Eval("document.title") == `"ran"` {
		t.Errorf("a script the policy forbids ran")
	}
	tb.Call(tb.Session, "Page.navigate", map[string]any{"url": away.URL + "/"}, nil)
	_, err := tb.B.WaitEvent(tb.Ctx, from, func(e cdp.Event) bool {
		return e.Method == "Network.requestWillBeSent" && strings.Contains(string(e.Params), "192.0.2.1")
	})
	if err != nil {
		t.Errorf("the request to 192.0.2.1 was not seen: %v", err)
	}
}
