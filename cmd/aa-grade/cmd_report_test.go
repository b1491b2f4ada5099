package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/internal/testsupport/cdp"
	"github.com/aa-grade/aa-grade/internal/testsupport/golden"
	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// The fixtures (testdata/runs): opus is finished and priced, with one episode in error;
// qwen is unpriced and stopped with 2 of its 6 episodes not run.
var fixtureRuns = []string{"testdata/runs/opus", "testdata/runs/qwen"}

func TestReportRuns(t *testing.T) {
	r := aaGrade(t, nil, append([]string{"report"}, fixtureRuns...)...)
	r.wantExit(t, 1)
	if !textcheck.Has(t, "stderr of incomplete runs", r.stderr,
		"testdata/runs/opus has 1 episode in error or not run", "testdata/runs/qwen has 2 episodes in error or not run") {
		t.FailNow()
	}
	golden.Check(t, "testdata/report-runs.txt", r.stdout)

	j := aaGrade(t, []string{"AA_GRADE_JSON=true"}, append([]string{"report"}, fixtureRuns...)...)
	if j.code != 1 {
		t.Fatalf("--json: exit %d: %s", j.code, j.stderr)
	}
	golden.Check(t, "testdata/report-runs.json", j.stdout)
}

func TestReportCompleteRunAndHTML(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	if r := aaGrade(t, []string{"XDG_CACHE_HOME=" + t.TempDir()}, "run", "--dataset", "demo", "--model", "builtin/baseline",
		"--tasks", "902,903", "--repeats", "1", "--out", out); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	for _, f := range []string{"results.parquet", "report.md", "report.html"} {
		if info, err := os.Stat(filepath.Join(out, f)); err != nil || info.Size() == 0 {
			t.Errorf("aa-grade run did not write %s: %v", f, err)
		}
	}
	md, _ := os.ReadFile(filepath.Join(out, "report.md"))
	if !strings.Contains(string(md), "**0.500** over 2 tasks x 1 repeat = 2 episodes; 95% CI n/a (fewer than 5 tasks).") || !strings.Contains(string(md), "$0 in total") {
		t.Errorf("report.md of the baseline run:\n%s", md)
	}
	page := filepath.Join(t.TempDir(), "sub", "compare.html")
	r := aaGrade(t, []string{"AA_GRADE_HTML=" + page}, "report", out, "testdata/runs/qwen")
	r.wantExit(t, 1)
	if !textcheck.Has(t, "the report", r.stdout, "builtin/baseline", "0.500") {
		t.FailNow()
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatalf("--html: %v", err)
	}
	if !textcheck.Has(t, "the --html page", string(html), "builtin/baseline", "openai-api/vllm/Qwen/Qwen3-32B") {
		t.FailNow()
	}
	if r := aaGrade(t, nil, "report", out); r.code != 0 || r.stderr != "" {
		t.Fatalf("a complete run: exit %d\n%s", r.code, r.stderr)
	}
}

func TestReportErrors(t *testing.T) {
	corrupt := t.TempDir()
	testfs.Write(t, filepath.Join(corrupt, "run.json"), `{"model": "openai/gpt-5.5", "tasks": [`)
	file := filepath.Join(t.TempDir(), "file")
	testfs.Write(t, file, "x")
	for name, c := range map[string]struct {
		args []string
		code int
		want string
	}{
		"no run":         {[]string{"report"}, 2, "at least one RUN"},
		"absent":         {[]string{"report", "testdata/absent"}, 2, "testdata/absent: not a run folder"},
		"not a run":      {[]string{"report", "README.md"}, 2, "README.md: not a run folder"},
		"corrupt header": {[]string{"report", corrupt}, 1, filepath.Join(corrupt, "run.json")},
		"html unwritable": {[]string{"report", "--html", filepath.Join(file, "page.html"), "testdata/runs/opus"}, 3,
			"--html: write " + filepath.Join(file, "page.html")},
	} {
		t.Run(name, func(t *testing.T) {
			r := aaGrade(t, nil, c.args...)
			r.wantExit(t, c.code)
			textcheck.Has(t, "stderr", r.stderr, c.want)
			if n := strings.Count(strings.TrimSpace(r.stderr), "\n"); n != 0 {
				t.Errorf("stderr has %d lines, want one:\n%s", n+1, r.stderr)
			}
		})
	}
}

// TestReportSkipsFoldersThatAreNotRuns: a folder that is not a run (an export beside the runs)
// is named with why, and the runs given with it are reported all the same (exit 1); a folder
// of runs stands for its runs, the folders in it that are not runs named and no failure.
func TestReportSkipsFoldersThatAreNotRuns(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	opus, export := filepath.Join(runs, "opus"), filepath.Join(runs, "opus-atif")
	if err := os.CopyFS(opus, os.DirFS("../../testdata/runs/opus")); err != nil {
		t.Fatal(err)
	}
	testfs.Write(t, filepath.Join(export, "Scenario-2", "1", "trajectory.json"), "{}")

	r := aaGrade(t, nil, "report", "--json", opus, export)
	r.wantExit(t, 1)
	var got []struct{ Dir string }
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("report --json: %v\n%s", err, r.stdout)
	}
	if len(got) != 1 || got[0].Dir != opus {
		t.Errorf("report --json of a run and an export reported %+v, want %s", got, opus)
	}
	textcheck.Has(t, "stderr", r.stderr, "warning: skipped "+export+": not a run folder (no run.json), nor a folder of runs",
		"aa-grade: 1 folder not reported; see the warnings above")

	r = aaGrade(t, nil, "report", "--json", runs)
	got = nil
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("report --json: %v\n%s", err, r.stdout)
	}
	if len(got) != 1 || got[0].Dir != opus {
		t.Errorf("report --json of a folder of runs reported %+v, want %s", got, opus)
	}
	textcheck.Has(t, "its stderr", r.stderr, "note: left out "+export+": not a run folder (no run.json)")
	textcheck.Lacks(t, "its stderr", r.stderr, "skipped", "not reported")
}

// TestReportHTMLInChromium opens report.html of several runs, one of them hostile, in
// headless Chromium: the page draws (a good share of non-background pixels, several colours)
// and loads nothing: every request Chromium makes goes to a proxy on 127.0.0.1 that answers
// none and records what was asked. A control page with an external image proves the proxy
// sees such a request, and that the blank check fails on an empty page.
func TestReportHTMLInChromium(t *testing.T) {
	browser := cdp.Chromium(t)
	dir := t.TempDir()
	hostile := filepath.Join(dir, "hostile")
	testfs.Write(t, filepath.Join(hostile, "run.json"),
		`{"model": "<script>fetch('http://127.0.0.1:9/x')</script>", "tasks": ["Scenario-1<img src=http://127.0.0.1:9/y.png>"], "repeats": 1, "max_turns": 100}`)
	testfs.Write(t, filepath.Join(hostile, "results.jsonl"),
		`{"task":"Scenario-1<img src=http://127.0.0.1:9/y.png>","repeat":1,"status":"error","error":"</style><link rel=stylesheet href=https://example.com/x.css>","turns":4}`+"\n")
	page := filepath.Join(dir, "report.html")
	if r := aaGrade(t, nil, append([]string{"report", "--html", page, hostile}, fixtureRuns...)...); r.code != 1 {
		t.Fatalf("report: exit %d\n%s", r.code, r.stderr)
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if refs := externalReferences(string(html)); len(refs) > 0 {
		t.Fatalf("report.html refers to %v", refs)
	}

	shot, requests := screenshot(t, browser, page)
	if len(requests) != 0 {
		t.Errorf("report.html made network requests: %q", requests)
	}
	if err := drawn(shot); err != nil {
		t.Errorf("report.html: %v", err)
	}

	control := filepath.Join(dir, "control.html")
	testfs.Write(t, control, `<!doctype html><img src="http://192.0.2.1/pixel.png" width="1" height="1">`)
	if len(externalReferences(`<img src="http://192.0.2.1/pixel.png">`)) != 1 {
		t.Error("the static check misses an external image")
	}
	shot, requests = screenshot(t, browser, control)
	if !slices.ContainsFunc(requests, func(r string) bool { return strings.Contains(r, "192.0.2.1") }) {
		t.Errorf("the control page's image never reached the proxy (it saw %q): the check proves nothing", requests)
	}
	if drawn(shot) == nil {
		t.Error("the blank control page passed the drawn check")
	}
}

// externalReferences finds what would make a page load something: src and href attributes,
// CSS url() and @import, stylesheets and scripts.
func externalReferences(html string) []string {
	return regexp.MustCompile(`(?i)<[a-z][^>]*\s(src|href|srcset|xlink:href|action|formaction|poster|data)\s*=[^>]*>|url\s*\(|@import|<link\b|<script\b|<iframe\b|<object\b|<embed\b`).FindAllString(html, -1)
}

// browserService matches the hosts Chromium itself calls in the background (component
// updates, network time, sign-in), whatever the page: their requests are not the page's.
var browserService = regexp.MustCompile(`^(CONNECT |[A-Z]+ http://)([a-z0-9-]+\.)*(google\.com|googleapis\.com|gvt1\.com)[:/ ]`)

// screenshot renders file in headless Chromium with every request sent to a proxy on
// 127.0.0.1 that refuses them all, and returns the PNG and the request lines the page caused.
func screenshot(t *testing.T, browser, file string) ([]byte, []string) {
	t.Helper()
	proxy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var requests []string
	var handlers sync.WaitGroup
	go func() {
		for {
			c, err := proxy.Accept()
			if err != nil {
				return
			}
			handlers.Go(func() {
				defer c.Close()
				c.SetReadDeadline(time.Now().Add(10 * time.Second)) // a preconnected socket that never asks is no request
				line, err := bufio.NewReader(c).ReadString('\n')
				if err != nil || browserService.MatchString(line) {
					return
				}
				mu.Lock()
				requests = append(requests, strings.TrimSpace(line))
				mu.Unlock()
			})
		}
	}()
	shot := filepath.Join(t.TempDir(), "shot.png")
	cmd := exec.Command(browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--user-data-dir="+t.TempDir(), "--no-first-run", "--disable-background-networking", "--disable-component-update",
		"--disable-sync", "--disable-extensions", "--disable-default-apps",
		"--proxy-server=http://"+proxy.Addr().String(), "--proxy-bypass-list=<-loopback>",
		"--screenshot="+shot, "--window-size=1200,1600", "file://"+file)
	out, err := cmd.CombinedOutput()
	proxy.Close()
	handlers.Wait()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	png, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("chromium wrote no screenshot: %v\n%s", err, out)
	}
	return png, requests
}

// drawn checks a screenshot is a 1200x1600 page with content: at least 5% of its pixels
// differ from the background (the top-left pixel) and it has at least 8 distinct colours.
func drawn(shot []byte) error {
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		return err
	}
	b := img.Bounds()
	if b.Dx() != 1200 || b.Dy() != 1600 {
		return fmt.Errorf("screenshot is %v, want 1200x1600", b.Size())
	}
	background := img.At(b.Min.X, b.Min.Y)
	colours := map[[3]uint32]bool{}
	inked := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := img.At(x, y)
			if c != background {
				inked++
			}
			r, g, bl, _ := c.RGBA()
			colours[[3]uint32{r >> 12, g >> 12, bl >> 12}] = true
		}
	}
	if share := float64(inked) / float64(b.Dx()*b.Dy()); share < 0.05 || len(colours) < 8 {
		return fmt.Errorf("looks blank: %.1f%% of pixels drawn, %d colours", 100*share, len(colours))
	}
	return nil
}

// layoutFaults is JavaScript listing what breaks a page's layout: a page wider than the
// window; unless boxes may scroll (a phone's window, where the tables scroll in their own box),
// a box that hides part of its content until scrolled sideways (a table or chart too wide for
// the window); and a table cell whose text is broken letter by letter (more lines than words,
// with fewer than 8 characters a line: a long path wrapped over two lines is fine).
const layoutFaults = `((boxesMayScroll) => {
	const out = [];
	const width = document.documentElement.scrollWidth;
	if (width > innerWidth + 1) out.push("the page is " + width + " px wide in a window of " + innerWidth);
	for (const box of document.querySelectorAll("body *")) {
		const overflow = getComputedStyle(box).overflowX;
		if (!boxesMayScroll && overflow !== "visible" && box.scrollWidth > box.clientWidth + 1) {
			const section = [...document.querySelectorAll("h2")].filter(h => h.compareDocumentPosition(box) & Node.DOCUMENT_POSITION_FOLLOWING).pop();
			out.push("a " + (box.firstElementChild ? box.firstElementChild.tagName : box.tagName).toLowerCase() + " under " +
				JSON.stringify(section ? section.innerText : "the title") + " hides " + (box.scrollWidth - box.clientWidth) + " px to its right");
		}
	}
	for (const cell of document.querySelectorAll("td, th")) {
		const text = cell.innerText.trim();
		if (!text) continue;
		const range = document.createRange();
		range.selectNodeContents(cell);
		const lines = new Set([...range.getClientRects()].map(r => Math.round(r.top))).size;
		const words = text.split(/\s+/).length, chars = text.replace(/\s+/g, "").length;
		if (lines > words + 1 && chars / lines < 8) out.push(JSON.stringify(text.slice(0, 40)) + " takes " + lines + " lines for " + words + " words");
	}
	return out;
})`

// phoneWidth is the window narrower than which boxes may scroll sideways (layoutFaults).
const phoneWidth = 700

// pageLayoutFaults lists what breaks the layout of the page open in tb, a width pixels wide
// window (layoutFaults).
func pageLayoutFaults(tb *cdp.Tab, width int) string {
	return tb.Eval("(" + layoutFaults + ")(" + strconv.FormatBool(width < phoneWidth) + ")")
}

// chartText is JavaScript measuring the text of the charts shown, as the window draws it: the
// font's size times the scale its chart is drawn at; the smallest, where it is, and how many
// texts each chart (by its aria-label) has.
const chartText = `(() => {
	let least = 1000, where = "";
	const charts = {};
	for (const svg of document.querySelectorAll("svg.chart")) {
		if (svg.getBoundingClientRect().width === 0) continue; // a size the window does not show
		const name = svg.getAttribute("aria-label");
		for (const text of svg.querySelectorAll("text")) {
			const m = text.getScreenCTM(); // a rotated axis title's scale too
			const size = parseFloat(getComputedStyle(text).fontSize) * Math.hypot(m.a, m.b);
			charts[name] = (charts[name] || 0) + 1;
			if (size < least) { least = size; where = name + ": " + text.textContent; }
		}
	}
	return {least, where, charts};
})()`

// chartMeasure is what chartText measured.
type chartMeasure struct {
	Least  float64
	Where  string
	Charts map[string]int // texts measured, by chart
}

// chartTextSize measures the charts' text of the page open in tb (chartText).
func chartTextSize(t *testing.T, tb *cdp.Tab) chartMeasure {
	t.Helper()
	var m chartMeasure
	if err := json.Unmarshal([]byte(tb.Eval(chartText)), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// chartTextReadable fails the test when the charts shown in tb draw text under 11 px, or
// when one of the charts named is not shown (no text of it measured).
func chartTextReadable(t *testing.T, tb *cdp.Tab, width int, charts ...string) {
	t.Helper()
	m := chartTextSize(t, tb)
	for _, c := range charts {
		if m.Charts[c] == 0 {
			t.Errorf("at %d px, no text of the chart %q measured (%v): it is not shown", width, c, m.Charts)
		}
	}
	if m.Least < 11 {
		t.Errorf("at %d px, chart text drawn at %.1f px (%s), want 11 or more", width, m.Least, m.Where)
	}
}

// TestReportHTMLLayout opens report.html of several runs of one model at a phone's 390, 700 and
// 1400 pixels: the page fits the window (at 390 the tables scroll in their own box; wider,
// nothing hides behind a sideways scroll), no table breaks a name letter by letter, and the
// charts' text is drawn at 11 px or more (a chart laid out 1100 wide and shrunk to the window
// once drew it at 6). Control pages with a crushed column, a chart wider than its box, a page
// wider than the window and a chart shrunk to the window prove the checks find them.
func TestReportHTMLLayout(t *testing.T) {
	dir := t.TempDir()
	var runs []string
	for _, name := range []string{"opus-a-long-folder-name-for-the-first-run", "opus-b"} {
		to := filepath.Join(dir, name)
		if err := os.CopyFS(to, os.DirFS(filepath.Join(moduleRoot, fixtureRuns[0]))); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, to)
	}
	page := filepath.Join(dir, "report.html")
	if r := aaGrade(t, nil, append([]string{"report", "--html", page}, append(runs, fixtureRuns...)...)...); r.code != 1 {
		t.Fatalf("report: exit %d\n%s", r.code, r.stderr)
	}
	control := filepath.Join(dir, "control.html")
	testfs.Write(t, control, `<!doctype html><table><tr><td style="width:1px;word-break:break-all">anthropic/claude-opus-4-7</td></tr></table>`)
	wideControl := filepath.Join(dir, "wide.html")
	testfs.Write(t, wideControl, `<!doctype html><h2>Chart</h2><div style="overflow-x:auto"><svg width="1600" height="20"></svg></div>`)
	widePageControl := filepath.Join(dir, "wide-page.html")
	testfs.Write(t, widePageControl, `<!doctype html><p class="legend" style="white-space:nowrap">R1 `+
		strings.Repeat("anthropic/claude-opus-4-7 ", 40)+`</p>`)
	shrunkControl := filepath.Join(dir, "shrunk.html")
	testfs.Write(t, shrunkControl, `<!doctype html><svg class="chart" width="1100" height="40" viewBox="0 0 1100 40" `+
		`style="max-width:100%;height:auto;font:12px sans-serif" aria-label="shrunk"><text y="20">a label</text></svg>`)
	for _, width := range []int{390, 700, 1400} {
		tb := openLaidOut(t, page, width)
		tb.Screenshot(fmt.Sprintf("report-%d", width))
		chartTextReadable(t, tb, width, "leaderboard", "score against cost per task", "turns per episode",
			"task by run heatmap")
		tb.Open("file://" + shrunkControl)
		if least := chartTextSize(t, tb).Least; width < 1100 && least >= 11 {
			t.Errorf("at %d px, the control chart shrunk to the window measured %.1f px: the check proves nothing", width, least)
		}
		tb.Open("file://" + control)
		if faults := pageLayoutFaults(tb, width); !strings.Contains(faults, "lines for 1 words") {
			t.Errorf("at %d px, the control page's crushed column was not found (%s): the check proves nothing", width, faults)
		}
		tb.Open("file://" + wideControl)
		faults := pageLayoutFaults(tb, width)
		if width >= phoneWidth && !strings.Contains(faults, `a svg under \"Chart\" hides`) {
			t.Errorf("the control page's chart wider than its box was not found (%s): the check proves nothing", faults)
		}
		tb.Open("file://" + widePageControl)
		if faults := pageLayoutFaults(tb, width); !strings.Contains(faults, "the page is") {
			t.Errorf("at %d px, the control page wider than the window was not found (%s): the check proves nothing", width, faults)
		}
	}
}

// writeComparedRuns writes two finished run folders over the same six tasks, one repeat
// each, b scoring 1 where a scores 0, and a third over the first two
// tasks only; it returns their folders.
func writeComparedRuns(t *testing.T) (a, b, few string) {
	t.Helper()
	base := t.TempDir()
	write := func(name string, tasks int, score func(i int) int) string {
		dir := filepath.Join(base, name)
		var names, lines []string
		for i := range tasks {
			task := fmt.Sprintf("Scenario-%d", i+1)
			names = append(names, `"`+task+`"`)
			lines = append(lines, fmt.Sprintf(`{"task":%q,"repeat":1,"status":"ok","score":%d,"turns":3}`, task, score(i)))
		}
		testfs.Write(t, filepath.Join(dir, "run.json"), fmt.Sprintf(`{"model":"m/%s","dataset":"demo","tasks":[%s],"repeats":1,"max_turns":100}`,
			name, strings.Join(names, ",")))
		testfs.Write(t, filepath.Join(dir, "results.jsonl"), strings.Join(lines, "\n")+"\n")
		return dir
	}
	a = write("a", 6, func(int) int { return 0 })
	b = write("b", 6, func(int) int { return 1 })
	few = write("few", 2, func(int) int { return 1 })
	return a, b, few
}

// TestReportComparesRuns: each run after the first gets its paired difference with the
// first, an interval and a p-value (n/a, with the reason, over too few shared tasks), and a
// warning naming what the runs do not share.
func TestReportComparesRuns(t *testing.T) {
	a, b, few := writeComparedRuns(t)
	r := aaGrade(t, nil, "report", a, b, few)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	// b - a: +1 on each of six tasks; exact sign-flip p = 2/64 (only the all-positive and
	// all-negative patterns reach the observed mean).
	for _, want := range []string{"paired sign-flip permutation test", "+1.000", "0.031", "6 tasks x 1 repeat",
		"n/a: fewer than 5 shared tasks", "4 tasks only in " + a + " left out"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("report text lacks %q:\n%s", want, r.stdout)
		}
	}
	j := aaGrade(t, []string{"AA_GRADE_JSON=true"}, "report", a, b, few)
	var got []struct {
		Dir         string
		VersusFirst *struct {
			Against    string
			Tasks      int
			Difference float64
			CI95       *[2]float64
			PValue     *float64 `json:"p_value"`
			NoInterval string   `json:"no_interval"`
			Warning    string
			OnlyA      []string `json:"only_a"`
		} `json:"versus_first"`
	}
	if err := json.Unmarshal([]byte(j.stdout), &got); err != nil || len(got) != 3 {
		t.Fatalf("--json: %v\n%s", err, j.stdout)
	}
	if got[0].VersusFirst != nil {
		t.Errorf("the first run is compared with itself: %+v", got[0].VersusFirst)
	}
	if v := got[1].VersusFirst; v == nil {
		t.Error("b is not compared with a")
	} else {
		if v.Against != a {
			t.Errorf("b is compared with %s, want %s", v.Against, a)
		}
		if v.Tasks != 6 {
			t.Errorf("b against a: %d tasks, want 6", v.Tasks)
		}
		if v.PValue == nil {
			t.Error("b against a: no p-value")
		} else if *v.PValue != 2.0/64 {
			t.Errorf("b against a: p-value %v, want 2/64", *v.PValue)
		}
		if v.CI95 == nil {
			t.Error("b against a: no interval")
		}
		if v.Warning != "" {
			t.Errorf("b against a: warning %q, want none", v.Warning)
		}
	}
	if v := got[2].VersusFirst; v == nil {
		t.Error("few is not compared with a")
	} else {
		if v.Tasks != 2 {
			t.Errorf("few against a: %d tasks, want 2", v.Tasks)
		}
		if v.PValue != nil {
			t.Errorf("few against a: p-value %v, want none", *v.PValue)
		}
		if v.CI95 != nil {
			t.Errorf("few against a: interval %v, want none", *v.CI95)
		}
		if v.NoInterval == "" {
			t.Error("few against a: no reason for the missing interval")
		}
		if len(v.OnlyA) != 4 {
			t.Errorf("few against a: %d tasks only in a, want 4: %v", len(v.OnlyA), v.OnlyA)
		}
		textcheck.Has(t, "the warning of few against a", v.Warning, "4 tasks only in")
	}

}

// TestReportHTMLWithAnalysisLayout opens the report.html aa-grade run writes (with its
// analysis section: wide tables and charts), and the page `analyze --html` writes of the run,
// at 390, 700 and 1400 pixels: each page fits the window (wide parts scroll in their own box),
// no table breaks a name letter by letter, and the text of every chart is drawn at 11 px or
// more.
func TestReportHTMLWithAnalysisLayout(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	if r := aaGrade(t, []string{"XDG_CACHE_HOME=" + t.TempDir()}, "run", "--dataset", "demo", "--model", "builtin/baseline",
		"--tasks", "901,902,903", "--repeats", "2", "--out", out); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	page := filepath.Join(out, "report.html")
	if html, err := os.ReadFile(page); err != nil || !bytes.Contains(html, []byte("First turn that named a root cause")) {
		t.Fatalf("report.html has no analysis: %v", err)
	}
	analysisPage := filepath.Join(t.TempDir(), "analysis.html")
	if r := aaGrade(t, nil, "analyze", "--html", analysisPage, out); r.code != 0 {
		t.Fatalf("analyze: exit %d\n%s", r.code, r.stderr)
	}
	analysisCharts := []string{"first-hit turn distribution", "false positives by class", "source coverage per model"}
	for _, width := range []int{390, 700, 1400} {
		tb := openLaidOut(t, page, width)
		// At 1400 px every table fits: none needs its own scroll bar.
		if wide := tb.Eval(`[...document.querySelectorAll(".scroll")].filter(e => e.querySelector("table") && e.scrollWidth > e.clientWidth + 1).map(e => e.scrollWidth + " px in " + e.clientWidth)`); width == 1400 && wide != "[]" {
			t.Errorf("at %d px, tables wider than the page: %s", width, wide)
		}
		tb.Screenshot(fmt.Sprintf("report-analysis-%d", width))
		chartTextReadable(t, tb, width, append([]string{"turns per episode", "task by run heatmap"}, analysisCharts...)...)
		tb = openLaidOut(t, analysisPage, width)
		chartTextReadable(t, tb, width, analysisCharts...)
	}
}

// openLaidOut opens page in a tab width pixels wide and fails the test on a layout fault or a
// problem the page met (a script error, a request leaving it).
func openLaidOut(t *testing.T, page string, width int) *cdp.Tab {
	t.Helper()
	tb := cdp.NewTab(t, width)
	from := tb.Open("file://" + page)
	if faults := pageLayoutFaults(tb, width); faults != "[]" {
		t.Errorf("at %d px: %s", width, faults)
	}
	if problems := tb.Problems(from, "file://"); len(problems) > 0 {
		t.Errorf("at %d px: %v", width, problems)
	}
	return tb
}
