package report

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/aa-grade/aa-grade/grader/leaderboard"
	"github.com/aa-grade/aa-grade/internal/testsupport/golden"
	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// deref is what p points at, or nil: an unknown cost.
func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestParquetRoundTrip(t *testing.T) {
	for _, dir := range []string{opusDir, qwenDir} {
		r := load(t, dir)
		var b bytes.Buffer
		if err := WriteParquet(&b, r); err != nil {
			t.Fatal(err)
		}
		rows, err := parquet.Read[parquetRow](bytes.NewReader(b.Bytes()), int64(b.Len()))
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != len(r.Results) {
			t.Fatalf("%s: %d rows for %d episodes", dir, len(rows), len(r.Results))
		}
		for i, row := range rows {
			e := r.Results[i]
			for _, c := range []struct {
				column    string
				got, want any
			}{
				{"model", row.Model, r.Header.Model}, {"task", row.Task, e.Task}, {"repeat", row.Repeat, int64(e.Repeat)},
				{"status", row.Status, e.Status}, {"score", row.Score, e.Score}, {"turns", row.Turns, int64(e.Turns)},
				{"input_tokens", row.InputTokens, e.Tokens.Input}, {"reasoning_tokens", row.ReasoningTokens, e.Tokens.Reasoning},
				{"error", row.Error, e.Error}, {"duration_s", row.DurationS, e.Duration}, {"cost_usd", fmt.Sprint(deref(row.CostUSD)), fmt.Sprint(deref(e.CostUSD))},
				{"retries", row.Retries, int64(e.Retries)}, {"web_searches", row.WebSearches, e.Tokens.WebSearches},
				{"server_tools", row.ServerTools, e.Tokens.ServerTools}, {"provider_tools_refused", row.ProviderToolsRefused, int64(e.ProviderTools)},
				{"worst_case", row.WorstCase, e.Tokens.WorstCase},
			} {
				if c.got != c.want {
					t.Errorf("%s row %d: %s %v, the episode's %v", dir, i, c.column, c.got, c.want)
				}
			}
		}
	}
}

// TestParquetSchema: real column types, so tools need no schema of ours.
func TestParquetSchema(t *testing.T) {
	var b bytes.Buffer
	if err := WriteParquet(&b, load(t, qwenDir)); err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(b.Bytes()), int64(b.Len()))
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]string{}
	for _, field := range f.Schema().Fields() {
		kind := field.Type().Kind().String()
		if lt := field.Type().LogicalType(); lt != nil && lt.String() == "STRING" {
			kind = "STRING"
		}
		if field.Optional() {
			kind += " optional"
		}
		types[field.Name()] = kind
	}
	for name, want := range map[string]string{"model": "STRING", "task": "STRING", "repeat": "INT64", "score": "DOUBLE",
		"tp": "INT64", "tool_calls": "INT64", "input_tokens": "INT64", "cached_read_tokens": "INT64", "cached_write_tokens": "INT64",
		"output_tokens": "INT64", "reasoning_tokens": "INT64", "cost_usd": "DOUBLE optional", "duration_s": "DOUBLE",
		"model_s": "DOUBLE", "tool_s": "DOUBLE", "error": "STRING", "retries": "INT64", "web_searches": "INT64", "server_tools": "INT64",
		"provider_tools_refused": "INT64", "worst_case": "BOOLEAN"} {
		if types[name] != want {
			t.Errorf("column %s is %q, want %q", name, types[name], want)
		}
	}
	if f.NumRows() != 4 {
		t.Errorf("%d rows, want the 4 finished episodes", f.NumRows())
	}
}

func markdown(t *testing.T, r *Run) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteMarkdown(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestMarkdownFinishedRun: report.md of a finished, priced run with an episode in error, as
// testdata/opus.md has it; the run sits at its rank among the published rows.
func TestMarkdownFinishedRun(t *testing.T) {
	md := markdown(t, load(t, opusDir))
	golden.Check(t, filepath.Join("testdata", "opus.md"), md)
	// The run sits at its rank among the published rows: below 0.37, above 0.30.
	gemma, run, gemini := strings.Index(md, "Gemma 4 31B"), strings.Index(md, "| **this run** |"), strings.Index(md, "Gemini 3.1 Pro")
	if run < gemma {
		t.Errorf("the run (at %d) is above Gemma 4 31B (at %d)", run, gemma)
	}
	if gemini < run {
		t.Errorf("the run (at %d) is below Gemini 3.1 Pro (at %d)", run, gemini)
	}
	if n := strings.Count(md, "| published |"); n != len(leaderboard.Published) {
		t.Errorf("%d published rows, want %d", n, len(leaderboard.Published))
	}
}

// TestMarkdownPartialUnpricedRun: report.md of a stopped run of a model with no prices, as
// testdata/qwen.md has it: the episodes not run count 0, the cost is unknown.
func TestMarkdownPartialUnpricedRun(t *testing.T) {
	golden.Check(t, filepath.Join("testdata", "qwen.md"), markdown(t, load(t, qwenDir)))
}

// hostileRun is a run folder whose model, task ids and errors try to break out of Markdown
// and HTML.
func hostileRun(t *testing.T) *Run {
	t.Helper()
	dir := t.TempDir()
	testfs.Write(t, filepath.Join(dir, "run.json"),
		`{"model": "<script>alert(1)</script>|x", "dataset": "<b>d</b>", "tasks": ["Scenario-1<img src=x onerror=alert(2)>"], "repeats": 2, "max_turns": 100}`)
	testfs.Write(t, filepath.Join(dir, "results.jsonl"), fmt.Sprintf(`{"task":"Scenario-1<img src=x onerror=alert(2)>","repeat":1,"status":"error","error":%q,"turns":3}
{"task":"Scenario-1<img src=x onerror=alert(2)>","repeat":2,"status":"<i>odd</i>","turns":5,"tokens":{"input":10},"cost_usd":0.5}
`, "line1\n# heading </style><a href=\"https://evil.example/x.png\">x</a> `code` | cell"))
	return load(t, dir)
}

func TestMarkdownEscapesRunContent(t *testing.T) {
	md := markdown(t, hostileRun(t))
	if m := regexp.MustCompile(`(^|[^\\])[<>]`).FindString(md); m != "" {
		t.Errorf("report.md has an unescaped %q:\n%s", m, md)
	}
	if strings.Contains(md, "\n# heading") {
		t.Errorf("an error message started a heading:\n%s", md)
	}
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "| Scenario-1") {
			if cells := strings.Count(strings.ReplaceAll(line, `\|`, ""), "|"); cells != 12 {
				t.Errorf("a task id broke the table: %d cell borders in %q", cells, line)
			}
		}
	}
	if !strings.Contains(md, `\<script\>alert(1)\</script\>\|x`) {
		t.Errorf("the model name is not shown escaped:\n%s", md)
	}
}

func renderHTML(t *testing.T, runs ...*Run) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteHTML(&b, runs); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// narrowCharts are the charts drawn for windows narrower than the page (html.go's sizes after
// the first).
var narrowCharts = regexp.MustCompile(`(?s)<div class="scroll (medium|small)"><svg .*?</svg></div>`)

// renderFullHTML is report.html with its charts at the page's own size alone, as a wide window
// shows it: what the tests that count a chart's marks read.
func renderFullHTML(t *testing.T, runs ...*Run) string {
	t.Helper()
	page := renderHTML(t, runs...)
	if n := len(narrowCharts.FindAllString(page, -1)); n%2 != 0 {
		t.Fatalf("%d narrow charts: each chart is drawn at both narrow sizes", n)
	}
	return narrowCharts.ReplaceAllString(page, "")
}

func TestHTMLEscapesRunContent(t *testing.T) {
	html := renderHTML(t, hostileRun(t), load(t, opusDir))
	// Only the page's own elements, and no attribute that loads or runs anything.
	own := "html head meta title style body h1 h2 h3 p b br span code div table tr th td svg g rect line text circle"
	for _, tag := range regexp.MustCompile(`<(/?)([a-zA-Z][a-zA-Z0-9]*)[^>]*>`).FindAllStringSubmatch(html, -1) {
		if !slices.Contains(strings.Fields(own), tag[2]) {
			t.Errorf("report.html has a foreign element %s", tag[0])
		}
		if regexp.MustCompile(`(?i)\s(href|src|on\w+)=`).MatchString(tag[0]) {
			t.Errorf("report.html has a loading or scripting attribute in %s", tag[0])
		}
	}
	if n := strings.Count(html, "</style>"); n != 1 {
		t.Errorf("%d </style> tags, want only the page's own", n)
	}
	for _, want := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;|x", "Scenario-1&lt;img src=x onerror=alert(2)&gt;",
		"&lt;/style&gt;&lt;a href=&#34;https://evil.example/x.png&#34;&gt;"} {
		if !strings.Contains(html, want) {
			t.Errorf("report.html does not show %q escaped", want)
		}
	}
}

func TestHTMLSeveralRuns(t *testing.T) {
	html := renderFullHTML(t, load(t, opusDir), load(t, qwenDir))
	for _, want := range []string{"ITBench-AA report: 2 runs", "anthropic/claude-opus-4-7", "openai-api/vllm/Qwen/Qwen3-32B",
		SubsetNote, "cost unknown (no prices for the model) for Scenario-2, Scenario-16.", "2 episodes not run yet",
		"<td class=\"n w\">n/a (fewer than 5 tasks)</td>", `<b>0.250</b><br><span class="muted"> (2 not finished, counted 0)</span>`, "0.306 [95% CI n/a (fewer than 5 tasks)]",
		`default-src 'none'`} {
		if !strings.Contains(html, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if n := strings.Count(html, "published, 59 tasks"); n != 2*len(leaderboard.Published) {
		t.Errorf("published rows marked %d times, want %d (label and tooltip)", n, 2*len(leaderboard.Published))
	}
	if n := strings.Count(html, "<circle"); n != 3 {
		t.Errorf("%d scatter points, want the 3 tasks of the priced run", n)
	}
	if n := strings.Count(html, `class="cell"`); n != 6 {
		t.Errorf("%d heatmap cells, want 3 tasks x 2 runs", n)
	}
	if strings.Contains(html, `class="ci"`) {
		t.Error("an interval is drawn for runs of 3 tasks")
	}
	if !strings.Contains(html, "Scenario-38: not run yet in R2") {
		t.Error("a task not run yet is not marked in the heatmap")
	}
}

func TestHTMLOneRunAndNone(t *testing.T) {
	html := renderHTML(t, load(t, qwenDir))
	textcheck.Has(t, "the page of one unpriced run", html, "<title>ITBench-AA report: openai-api/vllm/Qwen/Qwen3-32B</title>", "No task has a known cost.")
	if err := WriteHTML(&bytes.Buffer{}, nil); err == nil {
		t.Error("a page of no run was written")
	}
}

func TestNiceScale(t *testing.T) {
	for _, c := range []struct{ most, step, top float64 }{{4.96, 1, 5}, {0.12, 0.05, 0.15}, {7, 2, 8}, {0, 0.2, 1}, {250, 50, 250}} {
		step, top := niceScale(c.most)
		if !near(step, c.step) {
			t.Errorf("niceScale(%v): step %v, want %v", c.most, step, c.step)
		}
		if !near(top, c.top) {
			t.Errorf("niceScale(%v): top %v, want %v", c.most, top, c.top)
		}
	}
}

// TestReportsShowTheJudge: a run graded by a judge says so in every report, with how often the
// judge and the rules agree, and results.parquet says which matcher decided each episode.
func TestReportsShowTheJudge(t *testing.T) {
	dir := t.TempDir()
	testfs.Write(t, filepath.Join(dir, "run.json"), `{"model": "openai/gpt-5.5", "dataset": "demo", "tasks": ["Scenario-1", "Scenario-2"], "repeats": 1, "judge": "openai/judge-x"}`)
	testfs.Write(t, filepath.Join(dir, "results.jsonl"), strings.Join([]string{
		`{"task":"Scenario-1","repeat":1,"status":"ok","score":1,"tp":1,"root_causes":1,"root_causes_found":1,"matcher":"judge","rules":{"score":1,"tp":1,"root_causes_found":1,"agreed":1}}`,
		`{"task":"Scenario-2","repeat":1,"status":"ok","score":0.5,"tp":1,"fp":1,"root_causes":1,"root_causes_found":1,"matcher":"judge","rules":{"score":0,"agreed":1,"disagreed":["otel-demo/Pod/ad-1"]}}`,
	}, "\n")+"\n")
	r := load(t, dir)
	o := r.Overview()
	if o.Grading != "judge openai/judge-x" {
		t.Errorf("grading %q, want judge openai/judge-x", o.Grading)
	}
	if o.Judge == nil {
		t.Fatal("the overview has no judge")
	}
	if o.Judge.Judged != 2 {
		t.Errorf("the judge decided %d episodes, want 2", o.Judge.Judged)
	}
	want := "judge openai/judge-x decided 2 episodes (0 fell back to the rules); judge and rules give the same score in 50% of them"
	if md := markdown(t, r); !strings.Contains(md, want) {
		t.Errorf("report.md lacks %q:\n%s", want, md)
	}
	if page := renderHTML(t, r); !strings.Contains(page, want) {
		t.Errorf("report.html lacks %q", want)
	}
	var b bytes.Buffer
	if err := WriteParquet(&b, r); err != nil {
		t.Fatal(err)
	}
	rows, err := parquet.Read[parquetRow](bytes.NewReader(b.Bytes()), int64(b.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d parquet rows, want 2", len(rows))
	}
	if rows[0].Matcher != "judge" {
		t.Errorf("the first row's matcher %q, want judge", rows[0].Matcher)
	}
}
