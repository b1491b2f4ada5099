package viewer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// fixtureRun writes the run most tests read: Scenario-901 finished (30 turns, outputs cut
// by the sandbox, two retries), the hostile task finished, Scenario-903's first repeat still
// being written and its second not started.
func fixtureRun(t testing.TB) string {
	dir := filepath.Join(t.TempDir(), "run")
	writeRun(t, dir, []string{"Scenario-901", hostileTask, "Scenario-903"}, 2,
		episodeSpec{task: "Scenario-901", repeat: 1, turns: 30, output: 50000, finished: true, retries: 2,
			submitted: []string{"otel-demo/ConfigMap/flagd-config", "otel-demo/Service/checkout", hostile}},
		episodeSpec{task: "Scenario-901", repeat: 2, turns: 3, output: 100, finished: true, old: true, submitted: []string{"otel-demo/Pod/cart-1"}},
		episodeSpec{task: hostileTask, repeat: 1, turns: 3, output: 100, finished: true, submitted: []string{hostile}},
		episodeSpec{task: "Scenario-903", repeat: 1, turns: 4, output: 100})
	return dir
}

func newTestViewer(t testing.TB, dirs ...string) *Viewer { return newViewerOf(t, dirs, nil) }

// newViewerOf is a viewer of runs and ATIF trajectories, the runs graded by groundTruth901.
func newViewerOf(t testing.TB, dirs, documents []string) *Viewer {
	v, err := New(dirs, documents, Options{GroundTruth: func(context.Context, runfolder.Header) (map[string][]byte, error) {
		return groundTruth901(t), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	return v
}

// get asks the viewer for a path as a browser on this machine would.
func get(t testing.TB, h http.Handler, path string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:7480/", nil)
	req.URL.Path, req.URL.RawPath = path, ""
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// checkSafe fails when a page lets hostile text through: markup that would run or load, or
// a control character a terminal would act on.
func checkSafe(t *testing.T, page string) {
	t.Helper()
	for _, bad := range []string{"<script>alert", "<img", "\x1b", "\x07", "\u202e", `src="http`} {
		if strings.Contains(page, bad) {
			i := strings.Index(page, bad)
			t.Errorf("the page holds %q: ...%s...", bad, page[max(0, i-80):min(len(page), i+80)])
		}
	}
	if n := len(regexp.MustCompile(`<script>`).FindAllString(page, -1)); n != 1 {
		t.Errorf("the page has %d script elements, want its own one", n)
	}
}

func TestEpisodePage(t *testing.T) {
	v := newTestViewer(t, fixtureRun(t))
	w := get(t, v, "/runs/1/Scenario-901/1.html")
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	if got := w.Header().Get("Content-Security-Policy"); !strings.HasPrefix(got, "default-src 'none'; style-src 'sha256-") || !strings.Contains(got, "frame-ancestors 'none'") {
		t.Errorf("Content-Security-Policy %q", got)
	}
	page := w.Body.String()
	checkSafe(t, page)
	for _, want := range []string{
		"Turn 1<", "Turn 30<", // every turn
		"the alerts point at cart", // reasoning, from Anthropic's thinking blocks
		"Looking at the events (step 2).",
		"grep -n &#39;BackOff&#39; k8s_events_raw.tsv | head -n 3", // a command
		`<span class="badge bad">exit 1</span>`, `<span class="badge good">exit 0</span>`,
		`<mark class="cut">`, "output truncated: 50000 characters in all", // the cut the model saw
		"FileNotFoundError",                            // stderr
		`\x1b[2J\x1b]0;owned\x07\u202e`,                // terminal sequences and bidi marks shown, not passed on
		"&lt;/pre&gt;&lt;script&gt;alert(&#39;x&#39;)", // markup shown as text
		"retried: attempt 1, waited 2s: 529 overloaded_error", "retried: attempt 2",
		`<details class="retries"><summary class="retry">retried 2 times; the first: attempt 1, waited 2s: 529 overloaded_error: Overloaded</summary>`, // folded
		"System and task prompts",
		`<pre class="result" data-search>Submitted agent_output.json.</pre>`, // the finish call's result, after the last turn
		"matches the root-cause group flagd-config-1",
		"matches group checkout-service-1, which is not a root cause",
		"matches no group of the ground truth",
		`href="1.trajectory.jsonl.zst"`,
		"1,200 in (1,000 cached), 400 out (250 reasoning)", // tokens per turn
		"+7.0 s", // time per turn
		`id="next" rel="next"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the episode page lacks %q", want)
		}
	}
	if strings.Contains(page, `id="prev"`) {
		t.Error("the first episode links a previous one")
	}
	if strings.Contains(page, "no result recorded") {
		t.Error("a call of the last turn shows no result")
	}
	// A trajectory written before the last turn's results were kept still reads, saying why
	// its finish call has none.
	old := get(t, v, "/runs/1/Scenario-901/2.html").Body.String()
	if !strings.Contains(old, "no result recorded") || !strings.Contains(old, "Turn 3<") {
		t.Error("the page of an older trajectory does not say its last call has no result recorded")
	}
}

// TestHarnessMessagesSetApart checks the turn warnings of the last 20 turns show as the
// harness's, not the model's.
func TestHarnessMessagesSetApart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	writeRun(t, dir, []string{"Scenario-901"}, 1, episodeSpec{task: "Scenario-901", repeat: 1, turns: 83, output: 10, finished: true})
	page := get(t, newTestViewer(t, dir), "/runs/1/Scenario-901/1.html").Body.String()
	if got := strings.Count(page, `<div class="harness"><span class="who">harness</span><pre data-search>You have `); got != 3 {
		t.Errorf("%d turn warnings set apart, want 3 (turns 81 to 83)", got)
	}
}

func TestRunsPage(t *testing.T) {
	dir := fixtureRun(t)
	other := filepath.Join(t.TempDir(), "other")
	writeRun(t, other, []string{"Scenario-901"}, 1, episodeSpec{task: "Scenario-901", repeat: 1, turns: 2, output: 10, finished: true})
	header, _ := os.ReadFile(filepath.Join(other, runfolder.HeaderFile)) // run 2 followed the reference loop
	testfs.Write(t, filepath.Join(other, runfolder.HeaderFile), strings.Replace(string(header), "{", `{"loop":"reference",`, 1))
	v := newTestViewer(t, dir, other)
	w := get(t, v, "/")
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	page := w.Body.String()
	checkSafe(t, page)
	for _, want := range []string{
		`href="runs/1/Scenario-901/1.html"`, `href="runs/1/Scenario-901/2.html"`,
		`href="runs/1/task-2/1.html"`, `href="runs/1/task-2/2.html"`, // the hostile task, by its place
		`href="runs/1/Scenario-903/1.html"`, `href="runs/1/Scenario-903/2.html"`,
		`href="runs/2/Scenario-901/1.html"`,
		"95% CI n/a (fewer than 5 tasks)",                                                                  // run 2's, finished
		"<b>score 0.500 over 3 of 6 finished</b>", "3 ok", "3 unfinished", "$3.75 for the scored episodes", // three finished episodes at $1.25
		"spent in all (every model call, spend.jsonl): not recorded", // a folder without a ledger
		"run 1", "run 2",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the runs page lacks %q", want)
		}
	}
	// Run 2 against run 1: Scenario-901 is the one task both ended (the hostile task only run
	// 1 has, Scenario-903 is not finished), over its first repeat only.
	for _, want := range []string{"Against run 1", "+0.000", "95% CI n/a, p n/a: fewer than 5 shared tasks", "over 1 task x 1 repeat",
		"1 task only in " + dir + " left out", "1 shared task compared over the repeats both ended only (Scenario-901)"} {
		if !strings.Contains(html.UnescapeString(page), want) {
			t.Errorf("the runs page lacks %q", want)
		}
	}
	if n := strings.Count(page, "Against run 1"); n != 1 {
		t.Errorf("%d runs compared with run 1, want 1", n)
	}
	// Run 1, recorded with no loop, followed the lenient one; run 2 the reference loop.
	if n := strings.Count(page, "Not comparable with the published leaderboard"); n != 1 {
		t.Errorf("the runs page marks %d runs as not comparable, want 1", n)
	}
	if w := get(t, v, "/runs/1/task-2/1.html"); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `../&lt;img src=http://192.0.2.1/t.png onerror=alert(1)&gt;\x1b[31m`) {
		t.Errorf("the hostile task's page: %d", w.Code)
	} else {
		checkSafe(t, w.Body.String())
	}
}

// TestOnlyGivenFolders asks for everything a page should not reach: other runs, other files
// of the run folder, paths out of it, links out of it, episodes the run does not name.
func TestOnlyGivenFolders(t *testing.T) {
	dir := fixtureRun(t)
	secret := filepath.Join(t.TempDir(), "secret.txt")
	testfs.Write(t, secret, `{"kind":"turn","turn":1,"reply":{"content":"SECRET-OUTSIDE"}}`+"\n")
	// Scenario-903 repeat 1's trajectory becomes a link out of the run folder.
	link := filepath.Join(runfolder.EpisodeDir(dir, runfolder.Episode{Task: "Scenario-903", Repeat: 1}), runfolder.TrajectoryFile)
	os.Remove(link)
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	testfs.Write(t, filepath.Join(filepath.Dir(dir), "sibling", "run.json"), `{"model":"x"}`)
	v := newTestViewer(t, dir)
	for _, path := range []string{
		"/runs/2/Scenario-901/1.html", "/runs/0/Scenario-901/1.html", "/runs/01/Scenario-901/1.html",
		"/runs/1/Scenario-901/9.html", "/runs/1/Scenario-999/1.html",
		"/runs/1/../../sibling/run.json", "/runs/1/Scenario-901/../../run.json", "/run.json", "/results.jsonl",
		"/runs/1/..%2F..%2Frun.json/1.html", "/runs/1/" + hostileTask + "/1.html",
		"/runs/1/Scenario-901/1.agent_output.json", "/runs/1/Scenario-901/1.trajectory.jsonl.zst/x",
		"/runs/1/Scenario-903/1.trajectory.jsonl", // the link out
		"/etc/passwd", "/episodes/Scenario-901/1/trajectory.jsonl.zst",
	} {
		if w := get(t, v, path); w.Code != http.StatusNotFound {
			t.Errorf("%s: status %d, want 404", path, w.Code)
		}
	}
	page := get(t, v, "/runs/1/Scenario-903/1.html").Body.String()
	if strings.Contains(page, "SECRET-OUTSIDE") || !strings.Contains(page, "open the trajectory") {
		t.Errorf("the page of an episode whose trajectory links out of the folder:\n%s", page[strings.Index(page, "<main>"):])
	}
	w := get(t, v, "/runs/1/Scenario-901/1.trajectory.jsonl.zst")
	if w.Code != http.StatusOK {
		t.Errorf("the raw trajectory: status %d, want 200", w.Code)
	}
	if !strings.HasPrefix(w.Body.String(), "\x28\xb5\x2f\xfd") {
		t.Errorf("the raw trajectory does not start with zstd's magic number: %q", w.Body.String()[:min(8, w.Body.Len())])
	}
	textcheck.Has(t, "the raw trajectory's Content-Disposition", w.Header().Get("Content-Disposition"), "attachment")
}

func TestRequestsRefused(t *testing.T) {
	v := newTestViewer(t, fixtureRun(t))
	for host, want := range map[string]int{"127.0.0.1:7480": 200, "localhost:7480": 200, "[::1]:7480": 200, "127.0.0.1": 200,
		"evil.example:7480": http.StatusMisdirectedRequest, "evil.example": http.StatusMisdirectedRequest, "192.168.1.5:7480": http.StatusMisdirectedRequest} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Host = host
		w := httptest.NewRecorder()
		v.ServeHTTP(w, req)
		if w.Code != want {
			t.Errorf("Host %s: status %d, want %d", host, w.Code, want)
		}
	}
	w := httptest.NewRecorder()
	v.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "http://127.0.0.1/", strings.NewReader("x")))
	if w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: status %d", w.Code)
	}
}

func TestListenLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:0", "example.com:0"} {
		if ln, err := Listen(addr); !errors.Is(err, ErrNotLoopback) && addr != ":0" {
			if ln != nil {
				ln.Close()
			}
			t.Errorf("Listen(%q): %v, want ErrNotLoopback", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0", "0", ":0"} {
		ln, err := Listen(addr)
		if err != nil {
			t.Errorf("Listen(%q): %v", addr, err)
			continue
		}
		if got := ln.Addr().String(); !strings.HasPrefix(got, "127.0.0.1:") {
			t.Errorf("Listen(%q) listens on %s", addr, got)
		}
		ln.Close()
	}
	if _, err := Listen("not an address"); err == nil {
		t.Error("Listen took a malformed address")
	}
}

// TestLive: a run whose lock names a live process on this machine (this test's) is being
// written: its pages say so and carry the version a page polls with, answered 304 until a
// file changes.
func TestLive(t *testing.T) {
	dir := fixtureRun(t)
	v := newTestViewer(t, dir)
	if page := get(t, v, "/").Body.String(); strings.Contains(page, "data-live") {
		t.Fatal("a run no process holds is shown live")
	}
	host, _ := os.Hostname()
	testfs.Write(t, filepath.Join(dir, runfolder.LockFile), fmt.Sprintf(`{"pid":%d,"host":%q,"started":"2026-05-01T09:00:00Z"}`, os.Getpid(), host))
	w := get(t, v, "/")
	tag := w.Header().Get("ETag")
	if !strings.Contains(w.Body.String(), `data-live="`+strings.ReplaceAll(tag, `"`, "&#34;")+`"`) || !strings.Contains(w.Body.String(), `class="c st-running"`) {
		t.Fatalf("a live run's page has no version (ETag %s) or no running episode", tag)
	}
	// The card counts the episodes running as the grid shows them, apart from those not run.
	running := strings.Count(w.Body.String(), `class="c st-running"`)
	textcheck.Has(t, "the live card", w.Body.String(), fmt.Sprintf(`<span class="badge st-running">%d running</span>`, running),
		fmt.Sprintf(`<span class="badge st-unfinished">%d unfinished</span>`, 3-running))
	if w := get(t, v, "/", "If-None-Match", tag); w.Code != http.StatusNotModified {
		t.Errorf("unchanged runs page: status %d, want 304", w.Code)
	}
	ep := get(t, v, "/runs/1/Scenario-903/1.html")
	epTag := ep.Header().Get("ETag")
	if !strings.Contains(ep.Body.String(), `<span class="badge st-running">running</span>`) || !strings.Contains(ep.Body.String(), "data-live=") {
		t.Error("the running episode is not shown running")
	}
	f, err := os.OpenFile(filepath.Join(runfolder.EpisodeDir(dir, runfolder.Episode{Task: "Scenario-903", Repeat: 1}), runfolder.TrajectoryFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(f, `{"kind":"turn","turn":5,"reply":{"role":"assistant","content":"a new turn arrives"}}`+"\n")
	f.Close()
	ep = get(t, v, "/runs/1/Scenario-903/1.html", "If-None-Match", epTag)
	if ep.Code != http.StatusOK || !strings.Contains(ep.Body.String(), "a new turn arrives") {
		t.Errorf("after a new turn: status %d, want the new page", ep.Code)
	}
	if w := get(t, v, "/runs/1/Scenario-901/1.html"); strings.Contains(w.Body.String(), "data-live") {
		t.Error("a finished episode of a live run polls")
	}
}

func TestExport(t *testing.T) {
	out := filepath.Join(t.TempDir(), "pages")
	v := newTestViewer(t, fixtureRun(t))
	if err := v.Export(context.Background(), out); err != nil {
		t.Fatal(err)
	}
	var files []string
	filepath.WalkDir(filepath.Dir(out), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(out, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	want := "index.html runs/1/Scenario-901/1.html runs/1/Scenario-901/1.trajectory.jsonl.zst runs/1/Scenario-901/2.html runs/1/Scenario-901/2.trajectory.jsonl.zst " +
		"runs/1/Scenario-903/1.html runs/1/Scenario-903/1.trajectory.jsonl runs/1/Scenario-903/2.html " +
		"runs/1/task-2/1.html runs/1/task-2/1.trajectory.jsonl.zst runs/1/task-2/2.html"
	if got := strings.Join(files, " "); got != want {
		t.Errorf("exported\n%s\nwant\n%s", got, want)
	}
	page, _ := os.ReadFile(filepath.Join(out, "runs/1/Scenario-901/1.html"))
	textcheck.Has(t, "an exported page", string(page), `<meta http-equiv="Content-Security-Policy" content="default-src &#39;none&#39;`, `href="../../../index.html"`)
	textcheck.Lacks(t, "an exported page", string(page), "data-live")
	t.Run("safe", func(t *testing.T) { checkSafe(t, string(page)) })
}

// TestReadTurnsDamaged: a damaged line is named and skipped, a line cut by a crash is named,
// and what could be read is shown.
func TestReadTurnsDamaged(t *testing.T) {
	text := `{"kind":"request","body":{"messages":[]}}` + "\n" +
		`{"kind":"turn","turn":1,"reply":{"content":"one"}}` + "\n" +
		"not json\n" +
		`{"kind":"retry","attempt":1,"wait":1000000000,"error":"503"}` + "\n" +
		`{"kind":"turn","turn":2,"reply":{"content":"two"}}` + "\n" +
		`{"kind":"turn","turn":3,"rep`
	turns, _, problems := readTurns(strings.NewReader(text), nil)
	if len(turns) != 2 {
		t.Errorf("%d turns, want 2: %+v", len(turns), turns)
	} else {
		if turns[1].Text != "two" {
			t.Errorf("the second turn's text %q, want two", turns[1].Text)
		}
		if len(turns[1].Retries) != 1 {
			t.Errorf("the second turn's retries %+v, want one", turns[1].Retries)
		}
	}
	wantProblems(t, problems, "line 3 is not JSON", "line 6 is cut short")
}

// TestReadTurnsOfAnAgent: an agent's turns show its system blocks and first user message as
// the prompts, its later messages apart; its end is read, and a damaged end is named.
func TestReadTurnsOfAnAgent(t *testing.T) {
	text := `{"kind":"turn","turn":1,"input":[{"role":"system","content":"billing"},{"role":"system","content":"You are a CLI."},` +
		`{"role":"user","content":"Investigate."},{"role":"user","content":"<reminder>"}],"reply":{"role":"assistant","content":"ok"}}` + "\n" +
		`{"kind":"agent","agent":"claude-code","exit_code":3,"timed_out":true,"duration_s":2,"stdout":"out","stderr":"err","stdout_chars":3,"stderr_chars":3}` + "\n" +
		`{"kind":"agent","exit_code":"three"}` + "\n"
	turns, agent, problems := readTurns(strings.NewReader(text), nil)
	if len(turns) != 1 {
		t.Errorf("%d turns, want 1: %+v", len(turns), turns)
	} else {
		if len(turns[0].Prompts) != 3 {
			t.Errorf("the turn's prompts %+v, want 3", turns[0].Prompts)
		}
		if h := turns[0].Harness; len(h) != 1 || h[0].Content != "<reminder>" {
			t.Errorf("the turn's harness messages %+v, want the reminder alone", h)
		}
	}
	if agent == nil {
		t.Errorf("no agent's end")
	} else if got, want := fmt.Sprintf("%s exit %d timed out %v, stdout %q, stderr %q", agent.Agent, agent.ExitCode, agent.TimedOut, agent.Out.Head, agent.Err.Head),
		`claude-code exit 3 timed out true, stdout "out", stderr "err"`; got != want {
		t.Errorf("the agent's end: %s, want %s", got, want)
	}
	wantProblems(t, problems, "line 3")
}

// wantProblems checks that readTurns told one problem for each of wants, in order, each
// holding its want.
func wantProblems(t *testing.T, problems []string, wants ...string) {
	t.Helper()
	if len(problems) != len(wants) {
		t.Errorf("problems %q, want %d", problems, len(wants))
		return
	}
	for i, want := range wants {
		textcheck.Has(t, fmt.Sprintf("problem %d", i+1), problems[i], want)
	}
}

// TestEpisodePageSaysWhenThePromptSetIsNotKept: a run made with a prompt set of its own whose
// folder lacks prompts.txt says so on each episode page, beside what the trajectory shows.
func TestEpisodePageSaysWhenThePromptSetIsNotKept(t *testing.T) {
	dir := fixtureRun(t)
	h, err := runfolder.ReadHeader(dir)
	if err != nil {
		t.Fatal(err)
	}
	h.PromptSHA256 = strings.Repeat("ab", 32) // not the built-in set's
	b, _ := json.Marshal(h)
	testfs.Write(t, filepath.Join(dir, runfolder.HeaderFile), string(b))
	page := get(t, newTestViewer(t, dir), "/runs/1/Scenario-901/1.html").Body.String()
	if !strings.Contains(page, "does not keep the prompt set it ran with") || !strings.Contains(page, "Turn 30<") {
		t.Errorf("the page does not say the prompt set is missing, or lost the turns:\n%.2000s", page)
	}
}

// TestEpisodePageOfAHugeSubmission: a submission of thousands of entities makes a page of
// bounded size, which grades the first grader.MaxEntities and says how many more there were,
// with a ground truth and without.
func TestEpisodePageOfAHugeSubmission(t *testing.T) {
	names := []string{"otel-demo/ConfigMap/flagd-config"}
	for i := range 20000 {
		names = append(names, fmt.Sprintf("otel-demo/Pod/noise-%d", i))
	}
	dir := filepath.Join(t.TempDir(), "run")
	writeRun(t, dir, []string{"Scenario-901", "Scenario-902"}, 1,
		episodeSpec{task: "Scenario-901", repeat: 1, turns: 1, output: 10, finished: true, submitted: names},
		episodeSpec{task: "Scenario-902", repeat: 1, turns: 1, output: 10, finished: true, submitted: names})
	sub, _ := os.ReadFile(filepath.Join(dir, "episodes", "Scenario-901", "1", grader.SubmissionFile))
	v := newTestViewer(t, dir)
	for _, path := range []string{"/runs/1/Scenario-901/1.html", "/runs/1/Scenario-902/1.html"} { // 902 has no ground truth
		page := get(t, v, path).Body.String()
		if len(page) > 512<<10 {
			t.Errorf("%s: a page of %d bytes for a submission of %d", path, len(page), len(sub))
		}
		if rows := strings.Count(page, "<tr><td><code>"); rows != grader.MaxEntities {
			t.Errorf("%s: %d entities listed, want %d", path, rows, grader.MaxEntities)
		}
		for _, want := range []string{grader.DroppedNote(len(names) - grader.MaxEntities), "more bytes not shown"} {
			if !strings.Contains(page, want) {
				t.Errorf("%s lacks %q", path, want)
			}
		}
	}
}

// TestRunsPageOfAShard: shard 1/2 of 2 tasks x 3 repeats holds Scenario-901's repeats 1 and 3
// and Scenario-902's repeat 2: each episode sits under its repeat, blank cells where the shard
// has none, the mean in the mean column, and the card says what the count is over.
func TestRunsPageOfAShard(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shard")
	writeRun(t, dir, []string{"Scenario-901", "Scenario-902"}, 3,
		episodeSpec{task: "Scenario-901", repeat: 1, turns: 2, output: 10, finished: true},
		episodeSpec{task: "Scenario-901", repeat: 3, turns: 2, output: 10, finished: true},
		episodeSpec{task: "Scenario-902", repeat: 2, turns: 2, output: 10, finished: true})
	header, _ := os.ReadFile(filepath.Join(dir, runfolder.HeaderFile))
	testfs.Write(t, filepath.Join(dir, runfolder.HeaderFile), strings.Replace(string(header), "{", `{"shard":"1/2",`, 1))
	page := html.UnescapeString(get(t, newTestViewer(t, dir), "/").Body.String())
	rows := map[string]*regexp.Regexp{
		"Scenario-901": regexp.MustCompile(`<th class="task">Scenario-901</th><td class="c [^"]*"><a href="runs/1/Scenario-901/1.html"[^>]*>[^<]*</a></td><td class="c none"></td><td class="c [^"]*"><a href="runs/1/Scenario-901/3.html"[^>]*>[^<]*</a></td><td class="mean">0.5</td>`),
		"Scenario-902": regexp.MustCompile(`<th class="task">Scenario-902</th><td class="c none"></td><td class="c [^"]*"><a href="runs/1/Scenario-902/2.html"[^>]*>[^<]*</a></td><td class="c none"></td><td class="mean">0.5</td>`),
	}
	for task, row := range rows {
		if !row.MatchString(page) {
			t.Errorf("the grid's row of %s is not by repeat:\n%s", task, page[strings.Index(page, "<tbody>"):])
		}
	}
	for _, want := range []string{"3 of the 6 episodes of 2 tasks x 3 repeats", "aa-grade merge joins the folders of a sharded run"} {
		if !strings.Contains(page, want) {
			t.Errorf("the runs page lacks %q", want)
		}
	}
}

// TestPagesNameTheAgent: an agent run's card and episode pages name the agent beside the
// model.
func TestPagesNameTheAgent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "agent")
	writeRun(t, dir, []string{"Scenario-901"}, 1, episodeSpec{task: "Scenario-901", repeat: 1, turns: 2, output: 10, finished: true})
	header, _ := os.ReadFile(filepath.Join(dir, runfolder.HeaderFile))
	agent := `{"agent":{"spec":"codex","version":"codex-cli 0.171.0","timeout":"1h0m0s","protocol":"OpenAI Responses"},`
	testfs.Write(t, filepath.Join(dir, runfolder.HeaderFile), strings.Replace(string(header), "{", agent, 1))
	v := newTestViewer(t, dir)
	runs := html.UnescapeString(get(t, v, "/").Body.String())
	for _, want := range []string{`<span class="agent">by codex codex-cli 0.171.0</span>`, "<dt>Agent</dt><dd>codex codex-cli 0.171.0", "OpenAI Responses"} {
		if !strings.Contains(runs, want) {
			t.Errorf("the runs page lacks %q", want)
		}
	}
	if episode := html.UnescapeString(get(t, v, "/runs/1/Scenario-901/1.html").Body.String()); !strings.Contains(episode, "by codex codex-cli 0.171.0</span>") {
		t.Errorf("the episode page does not name the agent:\n%s", episode[:min(len(episode), 2000)])
	}
}

// TestEpisodePageNamesMissedRootCauses: an episode whose answer misses a root cause names it,
// with what it matches; one that found them all names none.
func TestEpisodePageNamesMissedRootCauses(t *testing.T) {
	v := newTestViewer(t, fixtureRun(t))
	missed := get(t, v, "/runs/1/Scenario-901/2.html").Body.String() // answered Pod/cart-1 only
	if !strings.Contains(missed, "Missed root cause: <code>flagd-config-1</code> (ConfigMap otel-demo/flagd-config)") {
		t.Errorf("the page of an episode that missed flagd-config does not name it:\n%s", missed[strings.Index(missed, "<main>"):])
	}
	if found := get(t, v, "/runs/1/Scenario-901/1.html").Body.String(); strings.Contains(found, "Missed root cause") {
		t.Error("the page of an episode that found every root cause names a missed one")
	}
}

// TestUnknownPageHasAPageOfItsOwn: a path the viewer has no page for answers 404 with a page
// of the viewer's (its style, a way back to the runs, the path shown escaped), not a bare
// line of text.
func TestUnknownPageHasAPageOfItsOwn(t *testing.T) {
	v := newTestViewer(t, fixtureRun(t))
	for _, p := range []string{"/runs/1/Scenario-999/1.html", "/nowhere", "/runs/1/<script>alert(1)</script>/1.html"} {
		w := get(t, v, p)
		page := w.Body.String()
		if w.Code != http.StatusNotFound {
			t.Errorf("%s: status %d, want 404", p, w.Code)
		}
		if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
			t.Errorf("%s: Content-Type %q, want text/html", p, ct)
		}
		if !textcheck.Has(t, p, page, "<title>Not found", `href="/"`, "is not a page of this viewer") {
			continue
		}
		checkSafe(t, page)
	}
}
