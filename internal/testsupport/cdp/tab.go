package cdp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Tab is one page of a headless Chromium at a given width, for a test: it opens pages,
// evaluates JavaScript, types keys, lists what a clean page never causes and takes
// screenshots.
type Tab struct {
	T       *testing.T
	B       *Browser
	Session string
	Ctx     context.Context
}

// NewTab launches Chromium (skipping the test without it, see Chromium) with one page of
// width x 1000 pixels.
func NewTab(t *testing.T, width int) *Tab {
	b, err := Launch(Chromium(t), "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--user-data-dir="+t.TempDir(),
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--disable-default-apps", "--mute-audio")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() }) // always nil
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	tb := &Tab{T: t, B: b, Ctx: ctx}
	var target struct{ TargetID string }
	tb.Call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var attached struct{ SessionID string }
	tb.Call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached)
	tb.Session = attached.SessionID
	for _, domain := range []string{"Page", "Runtime", "Log", "Network"} {
		tb.Call(tb.Session, domain+".enable", nil, nil)
	}
	tb.Call(tb.Session, "Emulation.setDeviceMetricsOverride",
		map[string]any{"width": width, "height": 1000, "deviceScaleFactor": 1, "mobile": false}, nil)
	return tb
}

func (tb *Tab) Call(session, method string, params, result any) {
	tb.T.Helper()
	if err := tb.B.Call(tb.Ctx, session, method, params, result); err != nil {
		tb.T.Fatal(err)
	}
}

// Open loads url and waits for its load event; it returns the index of the first event of
// the page.
func (tb *Tab) Open(url string) int {
	tb.T.Helper()
	_, from := tb.B.Events(0)
	tb.Call(tb.Session, "Page.navigate", map[string]any{"url": url}, nil)
	tb.WaitLoad(from)
	return from
}

func (tb *Tab) WaitLoad(from int) {
	tb.T.Helper()
	loaded := func(e Event) bool { return e.Method == "Page.loadEventFired" }
	if _, err := tb.B.WaitEvent(tb.Ctx, from, loaded); err != nil {
		tb.T.Fatalf("waiting for the page to load: %v", err)
	}
}

// Eval runs a JavaScript expression in the page and returns its value as JSON.
func (tb *Tab) Eval(expr string) string {
	tb.T.Helper()
	var res struct {
		Result struct {
			Value json.RawMessage
		}
		ExceptionDetails *struct{ Text string }
	}
	tb.Call(tb.Session, "Runtime.evaluate",
		map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &res)
	if res.ExceptionDetails != nil {
		tb.T.Fatalf("%s: %s", expr, res.ExceptionDetails.Text)
	}
	return string(res.Result.Value)
}

// Key presses a key with its text, as typing does.
func (tb *Tab) Key(key string, shift bool) {
	tb.T.Helper()
	text, modifiers := key, 0
	if key == "Enter" {
		text = "\r"
	}
	if shift {
		modifiers = 8
	}
	tb.Call(tb.Session, "Input.dispatchKeyEvent",
		map[string]any{"type": "keyDown", "key": key, "text": text, "modifiers": modifiers,
			"windowsVirtualKeyCode": map[string]int{"Enter": 13}[key]}, nil)
	tb.Call(tb.Session, "Input.dispatchKeyEvent", map[string]any{"type": "keyUp", "key": key, "modifiers": modifiers}, nil)
}

// Problems lists, from the from-th event on, what a clean page never causes: console errors
// and warnings (a Content-Security-Policy violation is one), uncaught exceptions, and any
// request that does not go to origin.
func (tb *Tab) Problems(from int, origin string) []string {
	events, _ := tb.B.Events(from)
	var out []string
	for _, e := range events {
		var p struct {
			Type      string
			Args      []struct{ Value any }
			Entry     struct{ Level, Text, URL string }
			Request   struct{ URL string }
			Exception struct{ Text string }
		}
		_ = json.Unmarshal(e.Params, &p) // the browser's own JSON; fields it lacks stay empty
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

// Screenshot takes the whole page at the tab's width and keeps it where BROWSER_SHOTS says
// (for people to look at); it checks the page drew something.
func (tb *Tab) Screenshot(name string) {
	tb.T.Helper()
	var shot struct{ Data string }
	tb.Call(tb.Session, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true}, &shot)
	b, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		tb.T.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		tb.T.Fatalf("%s: %v", name, err)
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
		tb.T.Errorf("%s looks blank (%d sampled pixels drawn)", name, inked)
	}
	if dir := os.Getenv("BROWSER_SHOTS"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, name+".png"), b, 0o644); err != nil {
			tb.T.Fatal(err)
		}
	}
}
