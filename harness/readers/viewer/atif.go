package viewer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/aa-grade/aa-grade/harness/readers/report"
	"github.com/aa-grade/aa-grade/harness/vocab/atif"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/internal/english"
)

// trajectories is a folder of ATIF trajectories given to the viewer, or one document: another
// harness's, a Harbor job's (atif.Find's layouts, atif.FindDocuments's), or aa-grade's export.
// Its documents are found again for every page, as a job still going adds to them.
type trajectories struct {
	n    int    // its number in the pages' paths, from 1
	path string // as given
}

// atifPath is the page of a source's i-th document (from 0), from the root of the pages.
func atifPath(n, i int) string { return fmt.Sprintf("atif/%d/%d.html", n, i+1) }

// trajectoryCard is a source of ATIF trajectories on the first page: what its documents
// say, each document a row. Nothing in them is aa-grade's grade: a Harbor trial's reward is
// its verifier's.
type trajectoryCard struct {
	N        int
	Path     string
	Layout   string
	Models   []string // the models the documents name, in the order met
	Agents   []string // the agents that wrote them
	Reward   string   // the mean reward of the trials that have one, "" when none has
	Rows     []trajectoryRow
	Problems []string // the files the layout left out, each with why
	// found is the documents as the card found them, row by row: the export builds their pages
	// of it, so that each page is its row's document and the folder is searched once.
	found atif.Found
}

// trajectoryRow is one document in its source's table.
type trajectoryRow struct {
	Task    string
	Repeat  int
	Href    string
	Model   string
	Steps   int
	Calls   int
	Tokens  string
	Cost    string
	Outcome string // the trial's reward, its exception, or "not graded"
	Problem string // why the document could not be read
}

// found finds the source's documents as they stand.
func (s *trajectories) found() (atif.Found, error) {
	f, err := atif.FindDocuments(s.path)
	if err != nil {
		return f, fmt.Errorf("%s: %w", s.path, err)
	}
	return f, nil
}

// card reads every document of the source for the first page.
func (s *trajectories) card() (trajectoryCard, error) {
	f, err := s.found()
	if err != nil {
		return trajectoryCard{}, err
	}
	c := trajectoryCard{N: s.n, Path: s.path, Layout: f.Layout, Problems: f.Problems, found: f}
	var rewards []float64
	for i, e := range f.Episodes {
		row := trajectoryRow{Task: e.Task, Repeat: e.Repeat, Href: atifPath(s.n, i), Outcome: "not graded"}
		doc, err := atif.Read(e.Path)
		if err != nil {
			row.Problem = err.Error()
			c.Rows = append(c.Rows, row)
			continue
		}
		row.Model = doc.Model()
		if row.Model != "" && !slices.Contains(c.Models, row.Model) {
			c.Models = append(c.Models, row.Model)
		}
		if a := agentName(doc.Agent); a != "" && !slices.Contains(c.Agents, a) {
			c.Agents = append(c.Agents, a)
		}
		row.Steps = len(doc.Steps)
		for _, st := range doc.Steps {
			row.Calls += len(st.ToolCalls)
		}
		row.Tokens, row.Cost = totals(doc)
		o, err := atif.TrialOutcome(e.Path)
		row.Outcome, _ = outcomeText(doc, o, err)
		if r, ok := o.Rewards["reward"]; ok {
			rewards = append(rewards, r)
		}
		c.Rows = append(c.Rows, row)
	}
	if len(rewards) > 0 {
		sum := 0.0
		for _, r := range rewards {
			sum += r
		}
		c.Reward = fmt.Sprintf("mean reward %.3f over %s (Harbor's verifier; not aa-grade's score)",
			sum/float64(len(rewards)), english.Count(len(rewards), "trial"))
	}
	return c, nil
}

func agentName(a atif.Agent) string { return strings.TrimSpace(a.Name + " " + a.Version) }

// totals are a document's tokens and cost: its final metrics' where they carry them, else the
// sum over its agent steps. What no step carries is "unknown", never 0; a sum that some agent
// steps lack says "at least" and how many carried it, so that a partial sum is not read as
// the whole.
func totals(doc *atif.Trajectory) (tokenText, costText string) {
	var u model.Usage
	var usd float64
	calls, withTokens, withCost := 0, 0, 0
	for _, s := range doc.Steps {
		noCall := s.LLMCallCount != nil && *s.LLMCallCount == 0 // no model wrote it: it has no metrics
		if s.Source != atif.SourceAgent || s.IsCopiedContext || noCall {
			continue
		}
		calls++
		if su, ok := stepUsage(s.Metrics); ok {
			u.Input, u.CachedRead, u.Output = u.Input+su.Input, u.CachedRead+su.CachedRead, u.Output+su.Output
			withTokens++
		}
		if s.Metrics != nil && s.Metrics.CostUSD != nil {
			usd += *s.Metrics.CostUSD
			withCost++
		}
	}
	tokenText = partial(withTokens, calls, "tokens", tokens(u))
	costText = partial(withCost, calls, "a cost", report.FormatUSD(&usd))
	if m := doc.FinalMetrics; m != nil {
		if m.TotalPromptTokens != nil && m.TotalCompletionTokens != nil {
			tokenText = tokens(model.Usage{Input: *m.TotalPromptTokens, CachedRead: deref(m.TotalCachedTokens),
				Output: *m.TotalCompletionTokens})
		}
		if m.TotalCostUSD != nil {
			costText = report.FormatUSD(m.TotalCostUSD)
		}
	}
	return tokenText, costText
}

// partial says sum, a sum over the n of all agent steps that carry what it sums: "unknown"
// when none does, "at least" the sum when some do not.
func partial(n, all int, what, sum string) string {
	switch {
	case n == 0:
		return "unknown"
	case n < all:
		return fmt.Sprintf("at least %s (%d of %s carry %s)", sum, n, english.Count(all, "agent step"), what)
	}
	return sum
}

// stepUsage is a step's tokens, when its metrics carry both the prompt's and the completion's
// (a count that is not there is unknown, not 0); the cached among the prompt's, when given.
func stepUsage(m *atif.Metrics) (model.Usage, bool) {
	if m == nil || m.PromptTokens == nil || m.CompletionTokens == nil {
		return model.Usage{}, false
	}
	return model.Usage{Input: *m.PromptTokens, CachedRead: deref(m.CachedTokens), Output: *m.CompletionTokens}, true
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// outcomeText says how a document's episode ended, and who said so: a Harbor trial's verifier
// rewards and the exception that stopped it; the grade aa-grade's export recorded in a document
// of its own; else "not graded" (another harness's document, a trial not verified yet).
func outcomeText(doc *atif.Trajectory, o atif.Outcome, err error) (outcome, by string) {
	if err != nil {
		return "reward not read: " + err.Error(), "the trial's verifier (Harbor), not aa-grade"
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(o.Rewards)) {
		parts = append(parts, fmt.Sprintf("%s %s", name, strconv.FormatFloat(o.Rewards[name], 'g', 4, 64)))
	}
	if o.Exception != "" {
		parts = append(parts, "exception "+o.Exception)
	}
	if len(parts) > 0 {
		return strings.Join(parts, ", "), "the trial's verifier (Harbor), not aa-grade"
	}
	status, _ := doc.Extra["status"].(string)
	if score, ok := doc.Extra["score"].(float64); ok && status != "" && doc.Agent.Name == atif.ExportAgent {
		return fmt.Sprintf("%s, score %.3f", label(status), score),
			"aa-grade, when the run was graded (the export recorded it)"
	}
	return "not graded", "not graded (aa-grade grade scores the answer against a dataset)"
}

// atifPage is one ATIF document, step by step.
type atifPage struct {
	N          int
	Source     string
	Task       string
	Repeat     int
	File       string // the document's path
	Raw        string // the raw document's link, beside the page
	Root       string
	Prev, Next string
	Agent      string
	Model      string
	Outcome    string
	GradedBy   string
	Tokens     string
	Cost       string
	Notes      string
	Steps      []atifStep
	Problems   []string
}

// atifStep is one step: the prompt, a message, or an agent's turn with its calls and what
// answered them.
type atifStep struct {
	ID        int
	Source    string
	At        string
	Model     string
	Copied    bool
	Message   string
	Reasoning string
	Calls     []atifCall
	Results   []string // results answering no call of the step
	Metrics   string
}

// atifCall is a tool call and the results that answer it.
type atifCall struct {
	Name, Arguments string
	Command         string // the shell command, when the arguments hold one
	Results         []string
}

// buildATIFPage reads the i-th document of the source as f found them (i within them); a
// document that does not read is named on its page.
func (s *trajectories) buildATIFPage(f atif.Found, i int) atifPage {
	e := f.Episodes[i]
	p := atifPage{N: s.n, Source: s.path, Task: e.Task, Repeat: e.Repeat, File: e.Path, Root: "../../",
		Raw: strconv.Itoa(i+1) + ".json"}
	if i > 0 {
		p.Prev = p.Root + atifPath(s.n, i-1)
	}
	if i+1 < len(f.Episodes) {
		p.Next = p.Root + atifPath(s.n, i+1)
	}
	doc, err := atif.Read(e.Path)
	if err != nil {
		p.Problems = append(p.Problems, err.Error())
		p.Outcome, p.Raw = "not graded", ""
		return p
	}
	p.Agent, p.Model, p.Notes = agentName(doc.Agent), doc.Model(), doc.Notes
	p.Tokens, p.Cost = totals(doc)
	o, err := atif.TrialOutcome(e.Path)
	p.Outcome, p.GradedBy = outcomeText(doc, o, err)
	for _, st := range doc.Steps {
		p.Steps = append(p.Steps, newATIFStep(st))
	}
	return p
}

// newATIFStep reads one step, giving each call the results that name it.
func newATIFStep(s atif.Step) atifStep {
	st := atifStep{ID: s.StepID, Source: s.Source, At: s.Timestamp, Model: s.ModelName, Copied: s.IsCopiedContext,
		Message: string(s.Message), Reasoning: s.ReasoningContent}
	byID := map[string]int{}
	for _, c := range s.ToolCalls {
		call := atifCall{Name: c.FunctionName, Arguments: string(c.Arguments)}
		var b bytes.Buffer
		if json.Compact(&b, c.Arguments) == nil {
			call.Arguments = b.String()
		}
		call.Command, _ = model.ShellCommand(string(c.Arguments))
		byID[c.ToolCallID] = len(st.Calls)
		st.Calls = append(st.Calls, call)
	}
	if s.Observation != nil {
		for _, r := range s.Observation.Results {
			content := "(no content)"
			if r.Content != nil {
				content = string(*r.Content)
			}
			if j, ok := byID[r.SourceCallID]; ok && r.SourceCallID != "" {
				st.Calls[j].Results = append(st.Calls[j].Results, content)
			} else {
				st.Results = append(st.Results, content)
			}
		}
	}
	var parts []string
	if u, ok := stepUsage(s.Metrics); ok {
		parts = append(parts, tokens(u))
	}
	if s.Metrics != nil && s.Metrics.CostUSD != nil {
		parts = append(parts, report.FormatUSD(s.Metrics.CostUSD))
	}
	st.Metrics = strings.Join(parts, " · ")
	return st
}

// locateATIF reads atif/N/I.html or atif/N/I.json: the source and the document's index, and
// whether the raw document is asked for.
func (v *Viewer) locateATIF(p string) (s *trajectories, i int, raw bool, err error) {
	parts := strings.Split(p, "/")
	if len(parts) != 3 || parts[0] != "atif" {
		return nil, 0, false, errNotFound
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil || n < 1 || n > len(v.trajectories) || strconv.Itoa(n) != parts[1] {
		return nil, 0, false, errNotFound
	}
	name, ext := strings.TrimSuffix(parts[2], path.Ext(parts[2])), path.Ext(parts[2])
	i, err = strconv.Atoi(name)
	if err != nil || i < 1 || strconv.Itoa(i) != name || (ext != ".html" && ext != ".json") {
		return nil, 0, false, errNotFound
	}
	return v.trajectories[n-1], i - 1, ext == ".json", nil
}
