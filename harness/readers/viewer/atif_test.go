package viewer

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/harness/vocab/atif"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// atifSources writes a Harbor job, a folder of ATIF documents with a malformed one, and a lone
// document, the three kinds view takes beside runs.
func atifSources(t testing.TB) []string {
	dir := t.TempDir()
	job := writeHarborJob(t, dir)
	folder := writeATIFFolder(t, dir)
	one := filepath.Join(dir, "one.json")
	if err := os.WriteFile(one, atifDocument("google/gemini-3-pro", "one", "no answer"), 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{job, folder, one}
}

// TestATIFIndex: the first page lists each source's documents with the model, steps, tool
// calls, tokens and cost the documents carry, a Harbor trial's reward (from result.json, or
// from its verifier's reward.txt), "not graded" where there is none (never a score of 0),
// and names the malformed document while showing the others.
func TestATIFIndex(t *testing.T) {
	sources := atifSources(t)
	w := get(t, newViewerOf(t, nil, sources), "/")
	if w.Code != http.StatusOK {
		t.Fatalf("status %d", w.Code)
	}
	page := w.Body.String()
	checkSafe(t, page)
	textcheck.Has(t, "the first page", page,
		"openai/gpt-5", "anthropic/claude-opus-4-7", "google/gemini-3-pro", "terminus-2 2.0.0",
		`href="atif/1/1.html"`, `href="atif/1/2.html"`, `href="atif/2/2.html"`, `href="atif/3/1.html"`,
		"scenario-901", "reward 1<", "reward 0.25<", "mean reward 0.625 over 2 trials",
		"episode-a", "episode-b", "not graded<",
		"2,700 in (1,000 cached), 120 out", "$0.003<",
		"episode-c.json: not an ATIF document",
	)
	textcheck.Lacks(t, "the first page", page, "score 0", `class="grid"><table>
<thead>
<tr><th rowspan`)
	if n := strings.Count(page, "not graded<"); n != 3 { // episode-a, episode-b, one
		t.Errorf("%d documents not graded, want 3", n)
	}
}

// TestATIFSourceGone: a source removed while the viewer runs is named on its card, with why,
// and the other sources' documents are still listed.
func TestATIFSourceGone(t *testing.T) {
	sources := atifSources(t)
	v := newViewerOf(t, nil, sources)
	if err := os.RemoveAll(sources[1]); err != nil {
		t.Fatal(err)
	}
	w := get(t, v, "/")
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body.String())
	}
	textcheck.Has(t, "the first page", w.Body.String(), sources[1], "no such file or directory",
		`href="atif/1/1.html"`, `href="atif/3/1.html"`)
}

// TestATIFEpisodePage: a document's page shows its steps in order: the prompts, the agent's
// reasoning and message, each tool call with the observation that answers it (content parts
// joined), the model and each step's metrics, and the trial's reward; hostile text is escaped.
func TestATIFEpisodePage(t *testing.T) {
	v := newViewerOf(t, nil, atifSources(t))
	w := get(t, v, "/atif/1/1.html")
	if w.Code != http.StatusOK {
		t.Fatalf("status %d", w.Code)
	}
	page := w.Body.String()
	checkSafe(t, page)
	textcheck.Has(t, "a Harbor trial's page", page,
		"Step 1", "You are an SRE agent.", "Diagnose the incident.",
		"The alerts name cart", "Looking at the pods first.",
		"bash_command", "kubectl get pods -n otel-demo", "CrashLoopBackOff",
		"mark_task_complete", "Task marked complete.",
		"openai/gpt-5", "1,200 in (1,000 cached), 80 out · $0.002<",
		"reward 1", "the trial&#39;s verifier (Harbor), not aa-grade",
		`href="1.json"`, `id="next"`,
	)
	textcheck.Has(t, "a document's page with no trial", get(t, v, "/atif/3/1.html").Body.String(),
		"not graded", "google/gemini-3-pro", `id="up"`)

	bad := get(t, v, "/atif/2/3.html")
	if bad.Code != http.StatusOK {
		t.Fatalf("the malformed document's page: status %d", bad.Code)
	}
	textcheck.Has(t, "the malformed document's page", bad.Body.String(), "episode-c.json: not an ATIF document", "No steps.")

	raw := get(t, v, "/atif/1/1.json")
	textcheck.Has(t, "the raw document", raw.Body.String(), `"schema_version": "ATIF-v1.5"`)
	textcheck.Has(t, "the raw document's disposition", raw.Header().Get("Content-Disposition"), "attachment")
	for _, p := range []string{"/atif/1/3.html", "/atif/4/1.html", "/atif/0/1.html", "/atif/1/01.html", "/atif/1/1.txt",
		"/atif/1/0.json", "/atif/2/../1/1.html", "/atif/1/1"} {
		if code := get(t, v, p).Code; code != http.StatusNotFound {
			t.Errorf("%s: status %d, want 404", p, code)
		}
	}
}

// TestATIFBesideRuns: runs and trajectories share the first page; exported, the documents'
// pages and the documents themselves are written beside the runs'.
func TestATIFBesideRuns(t *testing.T) {
	v := newViewerOf(t, []string{fixtureRun(t)}, atifSources(t)[:1])
	textcheck.Has(t, "the first page", get(t, v, "/").Body.String(), `href="runs/1/Scenario-901/1.html"`, `href="atif/1/2.html"`)
	out := t.TempDir()
	if err := v.Export(context.Background(), out); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"index.html", "runs/1/Scenario-901/1.html", "atif/1/1.html", "atif/1/1.json", "atif/1/2.html"} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Errorf("export: %v", err)
		}
	}
}

// TestATIFRefused: a path with no trajectories is an error naming it and the layouts looked
// for.
func TestATIFRefused(t *testing.T) {
	empty := t.TempDir()
	_, err := New(nil, []string{empty}, Options{})
	if err == nil {
		t.Fatal("no error for a folder with no trajectories")
	}
	textcheck.Has(t, "the error", err.Error(), empty, "no ATIF trajectory", "<trial>/agent/trajectory.json")
}

// TestATIFExportedGrade: a document of aa-grade's export shows the grade it recorded, said to
// be aa-grade's; the same extra in another harness's document is not taken for one.
func TestATIFExportedGrade(t *testing.T) {
	dir := t.TempDir()
	for name, agent := range map[string]string{"ours.json": "aa-grade", "theirs.json": "terminus-2"} {
		doc := `{"schema_version": "ATIF-v1.7", "agent": {"name": "` + agent + `", "version": "1"},
			"steps": [{"step_id": 1, "source": "user", "message": "go"}], "extra": {"status": "max_turns", "score": 0}}`
		if err := os.WriteFile(filepath.Join(dir, name), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v := newViewerOf(t, nil, []string{dir})
	textcheck.Has(t, "the export's document", get(t, v, "/atif/1/1.html").Body.String(),
		"max turns, score 0.000", "aa-grade, when the run was graded")
	textcheck.Has(t, "another harness's document", get(t, v, "/atif/1/2.html").Body.String(), "not graded")
	textcheck.Lacks(t, "another harness's document", get(t, v, "/atif/1/2.html").Body.String(), "score 0.000")
}

// TestATIFTotals: a document's tokens and cost are its final metrics' where it has them, else
// the sum of its agent steps'; a count a step lacks is unknown, not 0; a sum some agent steps
// lack says "at least" and how many carried it; a step no model wrote (llm_call_count 0) has
// none to lack.
func TestATIFTotals(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	usd := func(v float64) *float64 { return &v }
	zero := 0
	agent := func(m *atif.Metrics) atif.Step { return atif.Step{Source: atif.SourceAgent, Metrics: m} }
	priced := agent(&atif.Metrics{PromptTokens: n(100), CompletionTokens: n(10), CostUSD: usd(0.25)})
	for _, c := range []struct {
		name         string
		doc          atif.Trajectory
		tokens, cost string
	}{
		{"no metrics", atif.Trajectory{Steps: []atif.Step{agent(nil)}}, "unknown", "unknown"},
		{"every step", atif.Trajectory{Steps: []atif.Step{priced, priced, {Source: atif.SourceUser}}},
			"200 in, 20 out", "$0.500"},
		{"a step without", atif.Trajectory{Steps: []atif.Step{priced, agent(nil)}},
			"at least 100 in, 10 out (1 of 2 agent steps carry tokens)",
			"at least $0.250 (1 of 2 agent steps carry a cost)"},
		{"the completion's count missing", atif.Trajectory{Steps: []atif.Step{agent(&atif.Metrics{PromptTokens: n(100)})}},
			"unknown", "unknown"},
		{"a step no model wrote", atif.Trajectory{Steps: []atif.Step{priced,
			{Source: atif.SourceAgent, LLMCallCount: &zero}}}, "100 in, 10 out", "$0.250"},
		{"final metrics without a cost", atif.Trajectory{Steps: []atif.Step{priced},
			FinalMetrics: &atif.FinalMetrics{TotalPromptTokens: n(7), TotalCompletionTokens: n(3)}},
			"7 in, 3 out", "$0.250"},
	} {
		tokens, cost := totals(&c.doc)
		if tokens != c.tokens {
			t.Errorf("%s: tokens %q, want %q", c.name, tokens, c.tokens)
		}
		if cost != c.cost {
			t.Errorf("%s: cost %q, want %q", c.name, cost, c.cost)
		}
	}
}
